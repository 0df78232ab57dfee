"""Shared fixtures: real Prometheus processes and a real Celery worker over Redis."""

from __future__ import annotations

import pytest

from tests.support.prometheus import start_prometheus


@pytest.fixture
def prometheus_factory():
    """Start real Prometheus servers for a test: ``prometheus_factory(config_dict)``."""
    started = []

    def factory(config: dict):
        running = start_prometheus(config)
        started.append(running)
        return running

    yield factory
    for running in started:
        running.stop()


@pytest.fixture
def celery_worker_thread(transactional_db, settings):
    """A real Celery worker (thread) consuming from the Redis broker of the test settings."""
    from celery.contrib.testing.worker import start_worker

    from netaware_site.celery import app

    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING") as worker:
        yield worker
