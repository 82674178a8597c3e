# gpu-topology-labeler image: the slinky_topology package (with its labeler and NVML extras) and its
# runtime dependencies in a virtual environment, on a Python 3.11 base. Nothing else of the
# repository goes in (.dockerignore sends only pyproject.toml, LICENSE and scripts/slinky_topology/;
# tests/unit/packaging checks that list): no harness, CRD generator, tests, charts, pip or setuptools.
#   docker build -t ghcr.io/slinky-suite/gpu-topology-labeler:0.1.0 --build-arg VERSION=0.1.0 .
# The release workflow (.github/workflows/release.yaml) builds it for linux/amd64 and linux/arm64.
# Entry point: python -m slinky_topology.labeler (the controller; `discover` for the per-node agent).
# Runs as 65532:65532 and needs no writable path (read-only root filesystem).

# Any image with python3 >= 3.11 and its venv module on PATH; both stages use the same one, because
# the virtual environment points at the base's interpreter. The cluster tier builds on a base it
# makes from Debian packages (slinky_harness.image).
ARG BASE_IMAGE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
# Build-time only, never in the final image: a package index or CA bundle for builds behind a
# mirror or a TLS-inspecting proxy (the harness passes the host's when it has one).
ARG PIP_INDEX_URL
ARG PIP_CERT
WORKDIR /src
COPY pyproject.toml LICENSE ./
COPY scripts/slinky_topology/ scripts/slinky_topology/
# pyproject names README.md as the package readme; the image does not need its text.
RUN printf '# slinky-suite\n' > README.md \
 && python3 -m venv /opt/labeler \
 && /opt/labeler/bin/python -m pip install --no-cache-dir --disable-pip-version-check ".[labeler,nvml]" \
 && /opt/labeler/bin/python -m pip uninstall --yes --quiet pip setuptools \
 && rm -f /opt/labeler/bin/activate* /opt/labeler/bin/Activate.ps1

FROM ${BASE_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="gpu-topology-labeler" \
      org.opencontainers.image.description="Slurm topology labeler for Slinky (Node labels, topology.slinky.slurm.net/spec, topology.yaml ConfigMap)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /opt/labeler /opt/labeler
ENV PATH=/opt/labeler/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/opt/labeler/bin/python", "-m", "slinky_topology.labeler"]
