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
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import privilege
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

    def hba_rules(self) -> list[list[str]]:
        """The cluster's pg_hba.conf rules (the file is the postgres user's: read as root)."""
        text = privilege.run("cat", str(self.hba_path), timeout=30).stdout
        return [line.split() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]

    def psql_as_postgres(self, sql: str) -> subprocess.CompletedProcess[str]:
        """SQL through the local socket as the postgres system user (peer authentication), the way
        scripts/lib.sh creates netaware's role: the only superuser access a Debian cluster has."""
        return privilege.run("runuser", "-u", "postgres", "--", "psql", "-X", "-w", "-tA", "-v", "ON_ERROR_STOP=1",
                             "-p", str(self.port), "-d", "postgres", input=sql, check=False, timeout=60)


def unavailable_reason() -> str | None:
    if (reason := privilege.unavailable()) is not None:
        return f"creating a PostgreSQL cluster: {reason}"
    for tool in ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters", "runuser"):
        if privilege.which(tool) is None:
            return f"{tool} is missing (Debian package postgresql-common)"
    if not newest_version():
        return "no PostgreSQL server is installed (/usr/lib/postgresql/*/bin/postgres)"
    return None


def newest_version() -> str:
    versions = [p.parent.parent.name for p in Path("/usr/lib/postgresql").glob("*/bin/postgres")]
    return max(versions, key=lambda v: [int(x) for x in re.findall(r"\d+", v)], default="")


def drop_stale_clusters() -> None:
    """Drop clusters of ours whose pytest process is gone."""
    listing = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith(PREFIX):
            continue
        pid = fields[1][len(PREFIX):]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            privilege.run("pg_dropcluster", "--stop", fields[0], fields[1], check=False)


def create_cluster() -> DebianCluster:
    drop_stale_clusters()
    version = newest_version()
    name = f"{PREFIX}{os.getpid()}"
    privilege.run("pg_dropcluster", "--stop", version, name, check=False)
    port = free_port()
    # (through sudo the environment is reset anyway; as root, PG* variables of ours must not leak in)
    ours = [f"--unset={var}" for var in os.environ if var.startswith("PG")]
    created = privilege.run("env", *ours, "pg_createcluster", version, name, "-p", str(port), check=False,
                            timeout=180)
    assert created.returncode == 0, created.stdout + created.stderr
    started = privilege.run("pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start", check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    return DebianCluster(version=version, name=name, port=port)


def drop_cluster(cluster: DebianCluster) -> None:
    privilege.run("pg_dropcluster", "--stop", cluster.version, cluster.name, check=False, timeout=180)


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
