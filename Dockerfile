# spread-scheduler: a secondary scheduler image.
#   docker build -t spread-scheduler:0.1.0 .
# Dependencies are pinned by constraints.txt; e2e/test_image_install.py runs these same pip steps
# in a fresh venv, since no Docker engine is available where the tests run.
# Base: the official image, by tag and multi-platform index digest (amd64 and arm64). The digest was
# taken from public pins of this tag (2026-09), not checked against the registry from here; to bump:
#   docker buildx imagetools inspect python:3.11-slim-bookworm | grep Digest
ARG PYTHON_IMAGE=python:3.11.16-slim-bookworm@sha256:528257d48c1da0dcecc2e725d1ae34498d60c965f1241e39cd6a85a8859bdf84
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY scheduler ./scheduler
RUN pip install --no-cache-dir --prefix=/install --constraint constraints.txt .

FROM ${PYTHON_IMAGE}
COPY --from=build /install /usr/local
# Non-root; nothing is written at run time, so the root filesystem can be read-only.
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 10259
ENTRYPOINT ["spread-scheduler", "run"]
CMD ["--config", "/etc/spread-scheduler/config.yaml"]
