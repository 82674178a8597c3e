# gpu-topology-labeler image: the slinky_topology package (with the NVML extra) on Python 3.11.
#   docker build -t ghcr.io/slinky-suite/gpu-topology-labeler:0.1.0 .
# Entry point: python -m slinky_topology.labeler (controller; `discover` for the per-node agent).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml ./
COPY scripts/ scripts/
# pyproject names README.md as the package readme; the image does not need its text.
RUN test -f README.md || printf '# slinky-suite\n' > README.md \
 && pip install --no-cache-dir --prefix=/install ".[nvml]"

FROM python:3.11-slim
LABEL org.opencontainers.image.title="gpu-topology-labeler" \
      org.opencontainers.image.description="Slurm topology labeler for Slinky (Node labels, topology.slinky.slurm.net/spec, topology.yaml ConfigMap)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
COPY --from=build /install /usr/local
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["python", "-m", "slinky_topology.labeler"]
