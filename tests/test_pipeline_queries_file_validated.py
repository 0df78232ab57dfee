"""A queries file overrides the default PromQL; a malformed one fails with an error naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apps.probes.queries import QueriesFileError, build_pull_queries, configured_queries, load_queries_file

DOCS = Path(__file__).resolve().parent.parent / "docs" / "pipeline.md"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "queries.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("pair_queries:\n  rtt_p95: {query: x, source_label: a, target_label: b}\n", "pair_queries.rtt_p95"),
        ("pair_queries:\n  rtt_p90: {query: x, source_label: node}\n", "pair_queries.rtt_p90.target_label"),
        ("pair_queries:\n  rtt_p90: {source_label: a, target_label: b}\n", "pair_queries.rtt_p90.query"),
        ("pair_queries:\n  rtt_p90: {query: x, source_label: a, target_label: b, step: 5}\n",
         "pair_queries.rtt_p90.step"),
        ("pair_queries:\n  loss_ratio: {query: x, source_label: 'not-a-label', target_label: b}\n",
         "pair_queries.loss_ratio.source_label"),
        ("node_queries:\n  cpu_utilization: {query: x, node_lable: node}\n", "node_queries.cpu_utilization.node_lable"),
        ("node_queries:\n  cpu_utilization: {query: x}\n", "node_queries.cpu_utilization.node_label"),
        ("node_info: {query: x, node_label: n, zone_label: z}\n", "node_info.region_label"),
        ("rate: five minutes\n", "rate"),
        ("pair_queries: [rtt_p90]\n", "pair_queries"),
        ("querys: {}\n", "querys"),
    ],
)
def test_malformed_file_names_the_key(tmp_path, text, key):
    with pytest.raises(QueriesFileError) as info:
        load_queries_file(_write(tmp_path, text), rate="5m")
    assert info.value.field_path == key
    assert str(info.value).startswith(f"{key}: ")


def test_unreadable_and_invalid_yaml_files(tmp_path):
    with pytest.raises(QueriesFileError, match="NETAWARE_QUERIES_FILE: cannot read"):
        load_queries_file(tmp_path / "missing.yaml", rate="5m")
    with pytest.raises(QueriesFileError, match="invalid YAML"):
        load_queries_file(_write(tmp_path, "pair_queries: {rtt_p90: [\n"), rate="5m")


def test_file_named_by_settings_overrides_and_disables(tmp_path, settings):
    path = _write(tmp_path, (
        "rate: 30s\n"
        "pair_queries:\n"
        "  rtt_p90: {query: 'histogram_quantile(0.9, rate(x_bucket[$rate]))', source_label: src, target_label: dst}\n"
        "  bandwidth_bps: null\n"
    ))
    settings.NETAWARE = {**settings.NETAWARE, "QUERIES_FILE": str(path)}
    queries = configured_queries()
    by_series = {q.series: q for q in queries.pairs}
    assert set(by_series) == {"rtt_p50", "rtt_p90", "rtt_p99", "loss_ratio"}
    assert by_series["rtt_p90"].query == "histogram_quantile(0.9, rate(x_bucket[30s]))"
    assert (by_series["rtt_p90"].source_label, by_series["rtt_p90"].target_label) == ("src", "dst")
    assert "[30s]" in by_series["rtt_p50"].query  # defaults use the file's rate too
    assert {q.series for q in queries.nodes} == {"cpu_utilization", "memory_utilization", "net_used_bps"}


def test_malformed_file_stops_the_pull_with_the_key(tmp_path, settings, db):
    from apps.probes.services import pull_metrics

    settings.NETAWARE = {**settings.NETAWARE,
                         "QUERIES_FILE": str(_write(tmp_path, "node_queries:\n  cpu: {query: x, node_label: n}\n"))}
    with pytest.raises(QueriesFileError, match=r"^node_queries\.cpu: unknown key"):
        pull_metrics(prometheus_url="http://127.0.0.1:9")


def test_documented_smokeping_profile_loads():
    text = DOCS.read_text()
    section = text.split("### smokeping_prober profile", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    import yaml

    queries = build_pull_queries(yaml.safe_load(block.group(1)), rate="5m")
    by_series = {q.series: q for q in queries.pairs}
    assert set(by_series) == {"rtt_p50", "rtt_p90", "rtt_p99", "loss_ratio"}
    for q in by_series.values():
        assert (q.source_label, q.target_label) == ("node", "host")
        assert "smokeping_" in q.query and "$rate" not in q.query
