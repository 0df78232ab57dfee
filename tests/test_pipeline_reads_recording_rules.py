"""The shipped recording rules are valid and make the pull read one precomputed series per pair:
a real Prometheus evaluates deploy/prometheus/netaware-rules.yml over histogram-exporting agents, the
pipeline pulls with deploy/prometheus/queries-recorded.yaml, and the stored values match the scenario."""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from apps.probes import metrics, services
from apps.probes.emulator import Emulator
from apps.probes.models import PairSample
from apps.probes.queries import load_queries_file
from apps.probes.scenario import load_scenario
from tests.support.pipeline import TINY_SCENARIO, configure_pipeline
from tests.support.prometheus import start_prometheus

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "netaware-rules.yml"
QUERIES = ROOT / "deploy" / "prometheus" / "queries-recorded.yaml"
WIDTH = 5


def test_rules_file_passes_promtool() -> None:
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    result = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 rules found" in result.stdout


@pytest.mark.slow
@pytest.mark.django_db
def test_pull_reads_the_recorded_series(settings, tmp_path) -> None:
    # the same rules over a 10 s window, evaluated every second, so the test needs seconds, not minutes
    text = RULES.read_text().replace("[5m]", "[10s]").replace("interval: 30s", "interval: 1s")
    rules = tmp_path / "rules.yml"
    rules.write_text(text)
    emulator = Emulator(load_scenario(TINY_SCENARIO), seed=2, ping_rate_hz=100.0, bandwidth_interval_s=2.0,
                        export=metrics.EXPORT_HISTOGRAM)
    server = emulator.serve()
    config = emulator.prometheus_config(f"127.0.0.1:{server.port}", scrape_interval="1s")
    config["rule_files"] = [str(rules)]
    prom = start_prometheus(config)
    try:
        prom.wait_for_series("netaware:probe_rtt_seconds:p90_5m", minimum=4, timeout=40)
        time.sleep(11)
        configure_pipeline(settings, prom.url, width=WIDTH)
        queries = load_queries_file(QUERIES, rate="10s")
        assert yaml.safe_load(QUERIES.read_text())["pair_queries"]["rtt_p90"]["query"].count("$shard") == 2
        now = datetime.now(tz=UTC)
        result = services.pull_metrics(now=now, queries=queries)
        assert result.windows >= 1 and result.rows_written > 0
    finally:
        prom.stop()
        server.stop()
    end = result.last_end
    assert end is not None and end > now - timedelta(seconds=3 * WIDTH)
    got = {(s, a, b): v for s, a, b, v in PairSample.objects.filter(ts=end).values_list(
        "series", "source", "target", "value")}
    scenario = emulator.scenario
    for a in scenario.node_names:
        for b in scenario.node_names:
            link = scenario.link(a, b) if a != b else None
            if link is None:
                continue
            assert got[("rtt_p90", a, b)] == pytest.approx(link.latency_ms / 1000, rel=0.15), (a, b)
            assert got[("loss_ratio", a, b)] == pytest.approx(link.loss_pct / 100, abs=0.05), (a, b)
            assert got[("rtt_p50", a, b)] < got[("rtt_p90", a, b)] < got[("rtt_p99", a, b)]
