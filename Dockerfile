# spread-scheduler: a secondary scheduler image.
#   docker build -t spread-scheduler:0.1.0 .
# Dependencies are pinned by constraints.txt; e2e/test_image_install.py runs these same pip steps
# in a fresh venv, since no Docker engine is available where the tests run.
FROM python:3.11.7-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY scheduler ./scheduler
RUN pip install --no-cache-dir --prefix=/install --constraint constraints.txt .

FROM python:3.11.7-slim-bookworm
COPY --from=build /install /usr/local
# Non-root; nothing is written at run time, so the root filesystem can be read-only.
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 10259
ENTRYPOINT ["spread-scheduler", "run"]
CMD ["--config", "/etc/spread-scheduler/config.yaml"]
