"""Shared fixtures: real Prometheus processes and a real Celery worker over Redis.

Before Django reads its settings, the session isolates itself from a running ``scripts/up.sh`` and
from other test sessions: its own redis-server, database name and Celery queue
(tests/support/isolation.py). That is why ``DJANGO_SETTINGS_MODULE`` is set here and not in the
pytest configuration.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.support.isolation import IsolationError, isolate
from tests.support.prometheus import start_prometheus

if "django.conf" in sys.modules and sys.modules["django.conf"].settings.configured:
    raise pytest.UsageError(
        "Django's settings were read before the test session could isolate itself (own Redis, database "
        "name and Celery queue): DJANGO_SETTINGS_MODULE or --ds was given. Unset it; tests/conftest.py sets it."
    )
# Every test connects from 127.0.0.1 and many send wrong credentials on purpose (the fuzz tests by
# the hundred), and each failure extends the address counter's cool-off: the per-address cap is off
# for the suite except where it is tested (test_repeated_failed_logins_are_locked_out.py sets one for
# its server and connects from addresses of its own).
os.environ.setdefault("NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT", "0")
try:
    ISOLATION = isolate()
except IsolationError as exc:
    raise pytest.UsageError(str(exc)) from exc
os.environ["DJANGO_SETTINGS_MODULE"] = "netaware_site.settings"

from django.conf import settings as _settings  # after the isolation, on purpose

_settings.DATABASES  # noqa: B018  (read the settings now; pytest-django sets Django up in pytest_configure)


def pytest_configure(config):
    # A cleanup registered now runs after pytest's own (LIFO), i.e. after its final garbage collection,
    # whose Celery AsyncResult finalizers still talk to this Redis.
    config.add_cleanup(ISOLATION.stop)
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        # The xdist controller runs no tests; each worker it spawns isolates itself from scratch.
        ISOLATION.restore_environment()


def pytest_report_header(config):
    return (f"isolation: redis {ISOLATION.redis_url}, database test_{ISOLATION.database_url.rsplit('/', 1)[-1]}, "
            f"celery queue {ISOLATION.celery_queue}")


_SEEDED: dict[str, str] = {}
_BLOCKER: list = []


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Remember what the migrations seeded (built-in profiles, beat schedules, roles) once they ran;
    at the end, end every other session on the test database so that it can be dropped.

    Under pytest-xdist's ``--dist loadfile`` a worker runs whole files in turn, so a plain ``db`` test
    can follow a transactional one whose teardown flushed every table; pytest_runtest_teardown below
    puts the seeded rows back after each transactional test, as a serial run's ordering would."""
    from django.db import connection

    _flush_with_delete()
    with django_db_blocker.unblock():
        _SEEDED[connection.alias] = connection.creation.serialize_db_to_string()
    _BLOCKER.append(django_db_blocker)
    yield django_db_setup
    # Before pytest-django drops the test database: a connection some thread of this session still holds
    # (a runtime's loader, a server's leftover) made the DROP fail with "being accessed by other users"
    # and left the database behind. The role may end its own client sessions, and only those: an
    # autovacuum worker on the database is a superuser process ("must be a superuser to terminate").
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                       "AND usename = current_user AND backend_type = 'client backend'")


def _flush_with_delete() -> None:
    """Transactional tests' flushes empty every table with DELETE in one transaction instead of TRUNCATE.

    A flush runs after every transactional test (twice, with the seeded rows put back: below). TRUNCATE
    gives each of the ~50 tables and their indexes new files, ~0.1-0.3 s on this machine and seconds when
    the disk is busy; the tables hold a few rows, which DELETE removes in milliseconds. Every foreign key
    Django creates on PostgreSQL is DEFERRABLE INITIALLY DEFERRED, so the order does not matter. Sequences
    are not reset either way (``reset_sequences`` keeps TRUNCATE ... RESTART IDENTITY)."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED",
                *(f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(t))};" for t in tables)]

    DatabaseOperations.sql_flush = sql_flush


def _transactional(item) -> bool:
    """Whether the test's database teardown flushes every table: the transactional fixtures, or
    ``@pytest.mark.django_db(transaction=True)`` (which requests no fixture by name)."""
    if any(name in getattr(item, "fixturenames", ()) for name in ("transactional_db", "live_server")):
        return True
    marker = item.get_closest_marker("django_db")
    return bool(marker and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if nextitem is None or not _SEEDED or not _transactional(item):
        return  # (after the last test the session's teardown has already dropped the test database)
    from django.core.management import call_command
    from django.db import connection

    with _BLOCKER[0].unblock():
        # The teardown flushed and re-ran post_migrate (content types, permissions): flush once more
        # without it so the serialized rows load without unique conflicts.
        call_command("flush", verbosity=0, interactive=False, reset_sequences=False,
                     allow_cascade=False, inhibit_post_migrate=True, database=connection.alias)
        connection.creation.deserialize_db_from_string(_SEEDED[connection.alias])


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
def agents():
    """Probe agents a test starts (``agents.append(start_agent(...))``), stopped when it ends."""
    started = []
    yield started
    for agent in started:
        agent.stop()


@pytest.fixture
def celery_worker_thread(transactional_db, settings):
    """A real Celery worker (thread) consuming from the Redis broker of the test settings."""
    from celery.contrib.testing.worker import start_worker

    from netaware_site.celery import app

    # Tasks an earlier test left in this session's queue (retries with a countdown, follow-ups it
    # enqueued) must not run inside this test, nor this test's in the next.
    app.control.purge()
    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING") as worker:
        yield worker
    app.control.purge()


@pytest.fixture
def fake_kube(settings):
    """A running fake Kubernetes API server (apps/demo/kubeapi.py) that netaware_core.kube
    talks to: the CRDs in k8s/crds/ are registered (schemas enforced) plus fallbacks for our and the
    diktyo AppGroup/NetworkTopology kinds."""
    from pathlib import Path

    from apps.demo.kubeapi import FakeKube
    from netaware_core import kube

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


@pytest.fixture(autouse=True)
def _extender_runtime_per_test():
    """No extender runtime (threads, cache) survives a test: each test that reaches the extender starts
    its own (tests/support/extender_runtime.py), stopped here before the next one."""
    from apps.scheduler import runtime as extender_runtime

    extender_runtime.reset_runtime()
    yield
    extender_runtime.reset_runtime()
    _forget_queued_decisions()


@pytest.fixture
def start_extender(transactional_db, settings):
    """``start_extender(**NETAWARE overrides)``: this process's extender runtime, started as production
    runs it (tests/support/extender_runtime.py). Stopped before the database is flushed (its threads
    must not read or write across the next test's setup)."""
    from apps.scheduler.runtime import reset_runtime
    from tests.support.extender_runtime import start_extender as start

    yield lambda **overrides: start(settings, **overrides)
    reset_runtime()


def _forget_queued_decisions() -> None:
    """Decisions a test queued in Redis must not be drained into the next test's database. The
    session's Redis, not ``settings.REDIS_URL``: a test may still point that at a stopped server."""
    import contextlib

    import redis

    from apps.scheduler import decisionlog

    with contextlib.suppress(redis.RedisError), redis.Redis.from_url(ISOLATION.redis_url) as client:
        client.delete(decisionlog.DECISION_QUEUE_KEY)


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


@pytest.fixture
def client(db):
    """A Django test client logged in as an administrator: every page and API needs a user
    (apps/accounts). Tests about refusals use ``anonymous_client`` or log in a role themselves."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.filter(username="test-admin").first() or get_user_model().objects.create_superuser(
        "test-admin", "admin@example.com", "test-admin-password")
    logged_in = Client()
    logged_in.force_login(user)
    return logged_in


@pytest.fixture
def anonymous_client():
    from django.test import Client

    return Client()


def pytest_collection_modifyitems(config, items):
    """Files holding a ``slow`` test run first. scripts/test.sh runs the suite with ``--dist loadfile``:
    each file goes whole to one worker in collection order, so a long file collected late (the run
    command's stack tests sort under ``test_r…``) used to run nearly alone at the end, two cores idle.
    The sort is stable: every file's tests stay together and in their order."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
