"""Start and stop the real services tests run (Prometheus, VictoriaMetrics, redis-server)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import requests


def stop_process(process: subprocess.Popen, *, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within ``timeout``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_ready(process: subprocess.Popen, *, url: str, log: Path, name: str, timeout: float) -> None:
    """Poll ``url`` until it answers 2xx; raise with the log's tail if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if requests.get(url, timeout=1).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{name} did not become ready")
