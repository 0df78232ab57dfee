"""On a PostgreSQL configured by nobody, netaware sets up its own access, migrates and serves.

A cluster made by ``pg_createcluster`` keeps Debian's packaged authentication (``peer`` on the socket,
``scram-sha-256`` on 127.0.0.1, no ``trust``), which is what a fresh Debian 12 machine has and what
broke both README commands before. The database bootstrap of ``scripts/lib.sh`` runs against it
exactly as ``scripts/up.sh`` runs it (no ``DATABASE_URL``), then netaware passes ``manage.py check``,
migrates, and a gunicorn on a free port answers ``/healthz`` and ``/readyz``. The shared cluster on
5432 is never touched; the throw-away cluster is dropped afterwards (tests/support/debian_pg.py).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import requests

from tests.support import debian_pg
from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def debian_cluster():
    with debian_pg.fresh_cluster() as cluster:
        yield cluster


def bootstrap(cluster: debian_pg.DebianCluster, state: Path) -> subprocess.CompletedProcess[str]:
    """The database steps of scripts/up.sh, on a machine where DATABASE_URL is not set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "PG"))}
    env.update(NETAWARE_STATE_DIR=str(state), NETAWARE_PG_PORT=str(cluster.port))
    script = ('source scripts/lib.sh; prepare_state; check_local_postgres netaware; require_root_if_needed; '
              'ensure_database netaware NOCREATEDB netaware "$SECRETS/database-url"')
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_debian_default_auth_gets_a_netaware_role_and_netaware_migrates_and_serves(
        debian_cluster, tmp_path, prometheus_factory):
    # The cluster really has Debian's defaults: peer / scram-sha-256, no trust, no password-less TCP.
    rules = debian_cluster.hba_rules()
    assert rules and not [rule for rule in rules if rule[-1] == "trust"], rules
    assert ["host", "all", "all", "127.0.0.1/32", "scram-sha-256"] in rules
    refused = subprocess.run(["psql", "-X", "-w", "-h", "127.0.0.1", "-p", str(debian_cluster.port), "-U", "postgres",
                              "-d", "postgres", "-c", "select 1"], capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if not k.startswith("PG")})
    assert refused.returncode != 0 and "password" in refused.stderr, refused.stderr

    state = tmp_path / "state"
    first = bootstrap(debian_cluster, state)
    assert first.returncode == 0, first.stdout + first.stderr
    url_file = state / "secrets" / "database-url"
    url = url_file.read_text().strip()
    assert url.startswith("postgres://netaware:") and f"@127.0.0.1:{debian_cluster.port}/netaware" in url

    # Secrets are the owner's only; the role is a plain login role owning its database.
    assert stat.S_IMODE((state / "secrets").stat().st_mode) == 0o700
    for secret in (url_file, state / "secrets" / "postgres-netaware"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret
    with psycopg.connect(url, connect_timeout=5) as conn:
        flags = conn.execute("select rolsuper, rolcreatedb, rolcreaterole from pg_roles "
                             "where rolname = current_user").fetchone()
        owner = conn.execute("select pg_get_userbyid(datdba) from pg_database "
                             "where datname = current_database()").fetchone()
    assert flags == (False, False, False)
    assert owner == ("netaware",)

    # A second run (the next `up.sh`) keeps the role and its password.
    again = bootstrap(debian_cluster, state)
    assert again.returncode == 0, again.stdout + again.stderr
    assert url_file.read_text().strip() == url

    prometheus = prometheus_factory({"global": {"scrape_interval": "15s"}, "scrape_configs": []})
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DATABASE_URL_FILE=str(url_file), PROMETHEUS_URL=prometheus.url, DEBUG="false")
    for command in (["check"], ["migrate", "--noinput"]):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"manage.py {' '.join(command)}: {done.stdout}{done.stderr}"

    port = free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    server = subprocess.Popen([gunicorn, "netaware_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
                               "--workers", "1", "--log-level", "warning"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        # Generous bounds: the machine may be busy; this is about serving at all, not speed.
        deadline = time.monotonic() + 90
        health = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                health = requests.get(f"{base}/healthz", timeout=10)
                break
            except requests.RequestException:
                time.sleep(0.2)
        assert health is not None and health.status_code == 200, "gunicorn did not serve /healthz"
        ready = requests.get(f"{base}/readyz", timeout=30)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"database": "ok", "redis": "ok", "prometheus": "ok"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
