"""A throw-away PostgreSQL cluster created the way Debian creates one on a fresh machine.

``pg_createcluster`` writes Debian's packaged ``pg_hba.conf``: ``peer`` on the local socket and
``scram-sha-256`` on 127.0.0.1, no ``trust`` anywhere. The cluster listens on a free port of its own
(never the shared one on 5432) and is dropped with ``pg_dropcluster --stop`` afterwards. Its name
carries the pytest pid, so parallel sessions do not collide and clusters left by a killed session
are dropped by the next one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.prometheus import free_port

PREFIX = "naw_fresh_"


@dataclass(frozen=True)
class DebianCluster:
    version: str
    name: str
    port: int

    @property
    def hba_path(self) -> Path:
        return Path("/etc/postgresql") / self.version / self.name / "pg_hba.conf"

    def psql_as_postgres(self, sql: str) -> subprocess.CompletedProcess[str]:
        """SQL through the local socket as the postgres system user (peer authentication)."""
        return subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-X", "-w", "-tA", "-v", "ON_ERROR_STOP=1",
                               "-p", str(self.port), "-d", "postgres"],
                              input=sql, capture_output=True, text=True, timeout=60, cwd="/")


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "creating a PostgreSQL cluster needs root"
    for tool in ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters", "runuser"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (Debian package postgresql-common)"
    if not newest_version():
        return "no PostgreSQL server is installed (/usr/lib/postgresql/*/bin/postgres)"
    return None


def newest_version() -> str:
    versions = [p.parent.parent.name for p in Path("/usr/lib/postgresql").glob("*/bin/postgres")]
    return max(versions, key=lambda v: [int(x) for x in re.findall(r"\d+", v)], default="")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def drop_stale_clusters() -> None:
    """Drop clusters of ours whose pytest process is gone."""
    listing = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith(PREFIX):
            continue
        pid = fields[1][len(PREFIX):]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["pg_dropcluster", "--stop", fields[0], fields[1]], capture_output=True, timeout=120)


def create_cluster() -> DebianCluster:
    drop_stale_clusters()
    version = newest_version()
    name = f"{PREFIX}{os.getpid()}"
    subprocess.run(["pg_dropcluster", "--stop", version, name], capture_output=True, timeout=120)
    port = free_port()
    env = _clean_env()
    created = subprocess.run(["pg_createcluster", version, name, "-p", str(port)], env=env,
                             capture_output=True, text=True, timeout=180)
    assert created.returncode == 0, created.stdout + created.stderr
    started = subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    return DebianCluster(version=version, name=name, port=port)


def drop_cluster(cluster: DebianCluster) -> None:
    subprocess.run(["pg_dropcluster", "--stop", cluster.version, cluster.name], env=_clean_env(),
                   capture_output=True, timeout=180)


@contextmanager
def fresh_cluster() -> Iterator[DebianCluster]:
    """A Debian-default cluster for one test (skipped, and so failed in CI, where none can be made)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    cluster = create_cluster()
    try:
        yield cluster
    finally:
        drop_cluster(cluster)
