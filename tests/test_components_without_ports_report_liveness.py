"""Beat, the cluster watcher and the AppGroup sync loop have no HTTP port; their Kubernetes
liveness probe is a heartbeat file their main loop touches (netaware_core/heartbeat.py). Each runs
here as a real process (real Celery beat on the test database, the watcher and sync against the
fake Kubernetes API) and the probe command says "alive" while they run and "dead" once they stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

ROOT = Path(__file__).resolve().parent.parent
CHECKER = ROOT / "netaware_core" / "heartbeat.py"


def probe(name: str, directory: Path, max_age: float) -> subprocess.CompletedProcess:
    """The exact command of the manifests' exec probes (only the standard library)."""
    env = {"PATH": os.environ.get("PATH", ""), "NETAWARE_HEARTBEAT_DIR": str(directory)}
    return subprocess.run([sys.executable, "-I", str(CHECKER), name, "--max-age", str(max_age)],
                          env=env, capture_output=True, text=True, timeout=30)


def test_probe_command_semantics(tmp_path):
    assert probe("beat", tmp_path, 60).returncode == 1  # never beaten
    (tmp_path / "netaware-heartbeat-beat").touch()
    assert probe("beat", tmp_path, 60).returncode == 0
    old = time.time() - 120
    os.utime(tmp_path / "netaware-heartbeat-beat", (old, old))
    result = probe("beat", tmp_path, 60)
    # 120 s, or a second or two more when the checker starts slowly on a busy machine
    assert result.returncode == 1 and re.search(r"last beat 12[0-9] s ago", result.stderr), result.stderr
    env = {"PATH": os.environ.get("PATH", "")}
    unset = subprocess.run([sys.executable, "-I", str(CHECKER), "beat", "--max-age", "5"], env=env,
                           capture_output=True, text=True, timeout=30)
    assert unset.returncode == 2 and "NETAWARE_HEARTBEAT_DIR" in unset.stderr


def database_url() -> str:
    db = django_settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def start(args: list[str], heartbeats: Path, **extra: str) -> subprocess.Popen:
    env = {**os.environ, "NETAWARE_HEARTBEAT_DIR": str(heartbeats), "DATABASE_URL": database_url(), **extra}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_alive(proc: subprocess.Popen, name: str, heartbeats: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited early: {proc.stdout.read() if proc.stdout else ''}")
        if probe(name, heartbeats, 30).returncode == 0:
            return
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"no heartbeat from {name} within {timeout} s: {proc.communicate()[0][-2000:]}")


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def assert_beats_again_then_dies(proc: subprocess.Popen, name: str, heartbeats: Path, period: float) -> None:
    path = heartbeats / f"netaware-heartbeat-{name}"
    first = path.stat().st_mtime
    deadline = time.monotonic() + period * 4 + 10
    while path.stat().st_mtime == first and time.monotonic() < deadline:
        time.sleep(0.3)
    assert path.stat().st_mtime > first, f"{name}'s loop touched its heartbeat only once"
    stop(proc)
    time.sleep(2.5)
    assert probe(name, heartbeats, 2).returncode == 1  # stopped: the probe now fails


def assert_loop_beats(args: list[str], name: str, heartbeats: Path, period: float, **extra: str) -> None:
    """Start the loop, see it alive and beating, stop it and see the probe fail."""
    proc = start(args, heartbeats, **extra)
    try:
        wait_alive(proc, name, heartbeats)
        assert_beats_again_then_dies(proc, name, heartbeats, period=period)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.django_db(transaction=True)
def test_celery_beat_beats_while_it_schedules(tmp_path):
    assert_loop_beats([sys.executable, "-m", "celery", "-A", "netaware_site", "beat", "--loglevel", "WARNING",
                       "--scheduler", "netaware_site.beat:HeartbeatScheduler", "--pidfile=",
                       "--max-interval", "1"], "beat", tmp_path, period=1)


@pytest.mark.django_db(transaction=True)
def test_cluster_watcher_beats_per_watch_round(tmp_path, fake_kube):
    fake_kube.add_node("n1", zone="A", region="r1")
    assert_loop_beats([sys.executable, "manage.py", "watch_cluster", "--watch-timeout", "1"], "watch_cluster",
                      tmp_path, period=1, KUBE_API_URL=fake_kube.url)


@pytest.mark.django_db(transaction=True)
def test_appgroup_sync_beats_per_pass(tmp_path, fake_kube):
    assert_loop_beats([sys.executable, "manage.py", "sync_appgroups", "--watch", "--resync", "1", "--watch-timeout",
                       "1"], "sync_appgroups", tmp_path, period=2, KUBE_API_URL=fake_kube.url)
