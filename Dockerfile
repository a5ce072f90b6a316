# spread-scheduler: a secondary scheduler image.
#   docker build -t spread-scheduler:0.1.0 .
# Every dependency comes from a lock with exact versions and hashes (requirements.lock for the
# runtime, build-requirements.lock for the build backend); e2e/test_image_install.py runs these same
# pip steps in a fresh venv, since no Docker engine is available where the tests run.
# Base: the official image, by tag and multi-platform index digest (amd64 and arm64). The digest was
# taken from public pins of this tag (2026-09), not checked against the registry from here; to bump:
#   docker buildx imagetools inspect python:3.11-slim-bookworm | grep Digest
ARG PYTHON_IMAGE=python:3.11.16-slim-bookworm@sha256:528257d48c1da0dcecc2e725d1ae34498d60c965f1241e39cd6a85a8859bdf84
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md requirements.lock build-requirements.lock ./
COPY scheduler ./scheduler
# --require-hashes --no-deps: only what the locks list, each file checked against its hash (that the
# lock is the whole dependency set is tests/test_lock.py's and the install test's `pip check`); the
# build backend stays in this stage.
RUN pip install --no-cache-dir --require-hashes --no-deps -r build-requirements.lock \
 && pip install --no-cache-dir --require-hashes --no-deps --prefix=/install -r requirements.lock \
 && pip install --no-cache-dir --no-deps --no-build-isolation --prefix=/install .

FROM ${PYTHON_IMAGE}
COPY --from=build /install /usr/local
# Non-root; nothing is written at run time, so the root filesystem can be read-only.
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 10259
ENTRYPOINT ["spread-scheduler", "run"]
CMD ["--config", "/etc/spread-scheduler/config.yaml"]
