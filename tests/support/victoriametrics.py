"""Start a real single-node VictoriaMetrics (Debian ``victoria-metrics``) for a test, scraping with its
Prometheus-compatible scrape support (``-promscrape.config``) and serving the Prometheus query API."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from tests.support.processes import wait_until_ready
from tests.support.prometheus import RunningPrometheus, free_port

VICTORIA_BIN = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"


def start_victoriametrics(config: dict, *, extra: tuple[str, ...] = (), timeout: float = 30.0) -> RunningPrometheus:
    """``config``: a prometheus.yml (as a dict); returns a handle whose ``url`` serves /api/v1/*.

    ``-search.latencyOffset=1s``: VictoriaMetrics hides the newest 30 s by default, longer than the
    tests' pull windows (docs/scale.md says what to set in production).
    """
    workdir = Path(tempfile.mkdtemp(prefix="netaware-vm-"))
    (workdir / "scrape.yml").write_text(yaml.safe_dump({"scrape_configs": config["scrape_configs"]}))
    port = free_port()
    process = subprocess.Popen(
        [VICTORIA_BIN, f"-httpListenAddr=127.0.0.1:{port}", f"-storageDataPath={workdir / 'data'}",
         f"-promscrape.config={workdir / 'scrape.yml'}", "-retentionPeriod=1d", "-search.latencyOffset=1s",
         "-loggerLevel=WARN", *extra],
        stdout=(workdir / "victoria-metrics.log").open("wb"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    running = RunningPrometheus(url=url, process=process, workdir=workdir)
    try:
        wait_until_ready(process, url=f"{url}/health", log=workdir / "victoria-metrics.log",
                         name="victoria-metrics", timeout=timeout)
    except BaseException:
        running.stop()
        raise
    return running
