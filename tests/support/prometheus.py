"""Start a real Prometheus (Debian package) for a test, with a generated scrape config."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import requests
import yaml

from tests.support.processes import stop_process, wait_until_ready

PROMETHEUS_BIN = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ScrapeTarget:
    address: str  # host:port
    labels: Mapping[str, str]
    metrics_path: str = "/metrics"


@dataclass
class RunningPrometheus:
    url: str
    process: subprocess.Popen
    workdir: Path

    def halt(self) -> None:
        """Stop the server, keeping its data directory (a restart replays the TSDB's WAL)."""
        stop_process(self.process)

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self, *, timeout: float = 30.0) -> None:
        """Start it again after :meth:`halt`: same port, configuration and data directory."""
        config = yaml.safe_load((self.workdir / "prometheus.yml").read_text())
        port = int(self.url.rsplit(":", 1)[1])
        self.process = start_prometheus(config, port=port, timeout=timeout, workdir=self.workdir).process

    def wait_for_series(self, query: str, *, minimum: int = 1, timeout: float = 30.0) -> int:
        """Poll an instant query until it returns at least ``minimum`` series."""
        deadline = time.monotonic() + timeout
        count = 0
        while time.monotonic() < deadline:
            resp = requests.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5)
            if resp.ok:
                count = len(resp.json()["data"]["result"])
                if count >= minimum:
                    return count
            time.sleep(0.5)
        raise TimeoutError(f"{query!r} returned {count} series after {timeout}s (wanted {minimum})")


def scrape_config(targets: Iterable[ScrapeTarget], *, interval: str = "1s", job: str = "netaware-probe") -> dict:
    static_configs = []
    for target in targets:
        labels = dict(target.labels)
        if target.metrics_path != "/metrics":
            labels["__metrics_path__"] = target.metrics_path
        static_configs.append({"targets": [target.address], "labels": labels})
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [{"job_name": job, "scrape_interval": interval, "static_configs": static_configs}],
    }


def start_prometheus(config: dict, *, port: int | None = None, timeout: float = 30.0,
                     extra_args: tuple[str, ...] = (), workdir: Path | None = None) -> RunningPrometheus:
    workdir = workdir or Path(tempfile.mkdtemp(prefix="netaware-prom-"))
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = port or free_port()
    process = subprocess.Popen(
        [
            PROMETHEUS_BIN,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-lifecycle",
            "--storage.tsdb.retention.time=1d",
            *extra_args,
        ],
        stdout=(workdir / "prometheus.log").open("ab"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    running = RunningPrometheus(url=url, process=process, workdir=workdir)
    try:
        wait_until_ready(process, url=f"{url}/-/ready", log=workdir / "prometheus.log", name="prometheus",
                         timeout=timeout)
    except BaseException:
        running.stop()
        raise
    return running
