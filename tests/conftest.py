"""Shared fixtures: real Prometheus processes and a real Celery worker over Redis."""

from __future__ import annotations

import os

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


@pytest.fixture
def fake_kube(settings):
    """A running fake Kubernetes API server (tests/support/fake_kube.py) that netaware_site.kube
    talks to: the CRDs in k8s/crds/ are registered (schemas enforced) plus fallbacks for our and the
    diktyo AppGroup/NetworkTopology kinds."""
    from pathlib import Path

    from netaware_site import kube
    from tests.support.fake_kube import FakeKube

    server = FakeKube().start()
    crd_dir = Path(settings.BASE_DIR) / "k8s" / "crds"
    for path in sorted(crd_dir.glob("*.y*ml")) if crd_dir.is_dir() else ():
        server.register_crd_file(path)
    server.register_defaults()
    settings.NETAWARE = {
        **settings.NETAWARE,
        "KUBE_API_URL": server.url,
        "KUBE_TOKEN": "",
        "KUBE_CA_FILE": "",
    }
    kube.reset_clients()
    yield server
    server.stop()
    kube.reset_clients()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With NETAWARE_FAIL_ON_SKIP=1 (scripts/test.sh sets it) a skipped test fails the run.

    Tests skip themselves only when the machine cannot run them (not root, no ``ip``, no chromium);
    scripts/test.sh installs all of that, so in CI a skip means a requirement went unproven.
    """
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("NETAWARE_FAIL_ON_SKIP") == "1" and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped, but NETAWARE_FAIL_ON_SKIP=1 requires every test to run: {reason}"
