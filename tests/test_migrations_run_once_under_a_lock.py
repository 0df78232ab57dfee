"""Migrations run once: ``migrate_locked`` applies them under a PostgreSQL advisory lock (a second
run waits, then has nothing to do), and ``migrate_locked --wait`` (every component's init container)
never changes the schema, only waits until it matches the code. Real PostgreSQL, fresh database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from netaware_site.migrate_locked import LOCK_KEY
from tests.support.isolation import database_url
from tests.support.processes import wait_for
from tests.support.stack import drop_database, with_database

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fresh_database():
    # The session's credentials (the CREATEDB role scripts/test.sh sets up), another database.
    admin = database_url({**connection.settings_dict, "NAME": "postgres"})
    name = f"netaware_migrate_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(admin, name)
    drop_database(admin, name)


def run(url: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": url, "NETAWARE_ENV": "development"}
    return subprocess.Popen([sys.executable, "-m", "netaware_site.migrate_locked", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def applied(url: str) -> int:
    with psycopg.connect(url) as conn:
        exists = conn.execute("SELECT to_regclass('django_migrations') IS NOT NULL").fetchone()[0]
        return conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0] if exists else 0


def test_wait_reports_pending_migrations_and_changes_nothing(fresh_database):
    proc = run(fresh_database, "--wait", "--timeout", "2", "--interval", "0.5")
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "still pending" in err and "appgroups.0001_initial" in err
    assert applied(fresh_database) == 0


def test_two_concurrent_runs_migrate_once_and_waiters_then_pass(fresh_database):
    waiter = run(fresh_database, "--wait", "--timeout", "300", "--interval", "0.5")
    first, second = run(fresh_database), run(fresh_database)
    outputs = [p.communicate(timeout=300) for p in (first, second)]
    assert first.returncode == 0, outputs[0][1]
    assert second.returncode == 0, outputs[1][1]
    # Exactly one of them applied migrations; the other found nothing to do.
    applying = [out for out, _ in outputs if "Applying " in out]
    assert len(applying) == 1, outputs
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert "schema is up to date" in out
    count = applied(fresh_database)
    assert count > 10
    # A later rollout's Job is a no-op.
    again = run(fresh_database)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "No migrations to apply" in out and applied(fresh_database) == count


def test_a_run_waits_for_the_lock_holder(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        proc = run(fresh_database)
        # Until it waits on the lock (Django's start-up takes seconds on a busy machine), then a while.
        wait_for(lambda: proc.poll() is not None or holder.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())").fetchone()[0] > 0,
            120, "migrate_locked to wait for the advisory lock")
        time.sleep(2)
        assert proc.poll() is None, "migrate_locked did not wait for the lock"
        assert applied(fresh_database) == 0
        holder.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "waited" in out and applied(fresh_database) > 10
