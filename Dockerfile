# netaware: one image for the web server, the extender, Celery worker/beat, the cluster watcher, the
# sync loop and the probe agent (k8s/base, docker-compose.yml).
#
# Base pinned by digest (python:3.11-slim-bookworm, linux/amd64 + arm64 index). The digest was taken
# from public references; this repository's machines cannot reach a container registry to confirm
# it. To verify or move to a newer patch release:
#   docker buildx imagetools inspect python:3.11-slim-bookworm   # prints the index digest
# and replace the digest below (docs/deploy.md, "Image").
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

# --- build: dependencies into a virtualenv, static files collected --------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
# requirements.txt is the hashed lock of the runtime dependencies (scripts/lock.sh): every package,
# transitive ones included, at one version with its sha256.
COPY requirements.txt ./
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --no-deps -r requirements.txt
COPY . .
# Development settings are enough to collect static files; nothing is written at run time.
RUN /opt/venv/bin/python manage.py collectstatic --noinput \
 && find /app /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

# --- runtime: no compiler, no pip cache, owned by root, run as 10001 -------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# iperf3 for the probe agent's bandwidth tests (the RTT probes are UDP echo: no ping, no raw sockets).
RUN apt-get update \
 && apt-get install -y --no-install-recommends iperf3 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 netaware \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin netaware
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
# The code is root's and read-only for the service user; /tmp is the only place it writes
# (an emptyDir / tmpfs with a read-only root filesystem).
USER 10001:10001
EXPOSE 8000
CMD ["python", "manage.py", "run_web", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4"]
