# netaware: one image for the web server, Celery worker/beat, cluster watcher, sync loop and the probe agent.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends iperf3 iputils-ping curl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt /app/requirements.txt
RUN pip install --no-cache-dir -r requirements.txt
COPY . /app
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput
RUN useradd --system --uid 10001 netaware && chown -R netaware /app
USER netaware
EXPOSE 8000
CMD ["gunicorn", "netaware_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--timeout", "30"]
