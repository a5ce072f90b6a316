# spread-scheduler: a secondary scheduler image. Build: docker build -t spread-scheduler:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# Non-root, read-only root filesystem friendly: nothing is written at run time.
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 10251
ENTRYPOINT ["spread-scheduler"]
CMD ["run", "--config", "/etc/spread-scheduler/config.yaml"]
