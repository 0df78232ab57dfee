"""k8s/monitoring: the PrometheusRule's rules pass ``promtool check rules`` (Debian's prometheus
package) and fire in ``promtool test rules`` scenarios (pipeline stopped, stale topology, no
extender leader, extender errors, probe coverage lost); the Grafana dashboard is valid JSON whose
every expression parses in PromQL (via promtool) and names only metrics documented in docs/metrics.md."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MONITORING = ROOT / "k8s" / "monitoring"
METRIC = re.compile(r"\b(netaware_[a-z0-9_]+|up)\b")
SUFFIXES = ("_bucket", "_sum", "_count")
REQUIRED_ALERTS = {  # the list: extender errors, stale topology, pipeline stopped, probe coverage
    "NetawareExtenderErrors", "NetawareTopologyStale", "NetawarePipelineStopped", "NetawareProbeCoverageLost",
    "NetawareExtenderNoLeader",
}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    return path


def rule_groups() -> dict:
    doc = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    assert doc["kind"] == "PrometheusRule"
    return doc["spec"]


def documented_metrics() -> set[str]:
    return set(re.findall(r"`(netaware_[a-z0-9_]+)`", (ROOT / "docs" / "metrics.md").read_text()))


def metric_names(expr: str) -> set[str]:
    names = set()
    for name in METRIC.findall(expr):
        for suffix in SUFFIXES:
            if name.endswith(suffix) and name.removesuffix(suffix) in documented_metrics():
                name = name.removesuffix(suffix)
        names.add(name)
    return names


def test_rules_pass_promtool_check(tmp_path):
    rules = tmp_path / "netaware.rules.yaml"
    rules.write_text(yaml.safe_dump(rule_groups()))
    result = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
    alerts = {r["alert"] for g in rule_groups()["groups"] for r in g["rules"]}
    assert alerts >= REQUIRED_ALERTS


def test_promtool_rejects_a_broken_rule(tmp_path):
    # The check above can fail: promtool refuses a rule with a bad expression.
    spec = rule_groups()
    spec["groups"][0]["rules"][0]["expr"] = "sum(rate(netaware_extender_requests_total[5m]) >"
    rules = tmp_path / "broken.rules.yaml"
    rules.write_text(yaml.safe_dump(spec))
    result = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


def test_alerts_fire_in_promtool_scenarios(tmp_path):
    rules = tmp_path / "netaware.rules.yaml"
    rules.write_text(yaml.safe_dump(rule_groups()))
    scenarios = yaml.safe_load((ROOT / "tests" / "data" / "alerts_unit_test.yaml").read_text())
    scenarios["rule_files"] = [str(rules)]
    test_file = tmp_path / "alerts_test.yaml"
    test_file.write_text(yaml.safe_dump(scenarios, sort_keys=False))
    result = subprocess.run([promtool(), "test", "rules", str(test_file)], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_documented_and_uses_documented_metrics():
    known = documented_metrics() | {"up"}
    for group in rule_groups()["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
            unknown = metric_names(rule["expr"]) - known
            assert not unknown, f"{rule['alert']} uses undocumented metrics {unknown}"


def dashboard() -> dict:
    return json.loads((MONITORING / "grafana-dashboard.json").read_text())


def expressions() -> list[tuple[str, str]]:
    out = []
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            out.append((panel["title"], target["expr"]))
    return out


def test_dashboard_is_valid_and_covers_every_area():
    dash = dashboard()
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert {v["name"] for v in dash["templating"]["list"]} == {"datasource"}
    for panel in dash["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
    used = set().union(*(metric_names(e) for _, e in expressions()))
    for family in ("netaware_extender_", "netaware_topology_", "netaware_pipeline_", "netaware_celery_",
                   "netaware_probe_"):
        assert any(name.startswith(family) for name in used), family


def test_dashboard_expressions_use_documented_metrics_and_parse(tmp_path):
    known = documented_metrics() | {"up"}
    for title, expr in expressions():
        unknown = metric_names(expr) - known
        assert not unknown, f"panel {title!r} uses undocumented metrics {unknown}"
    # promtool parses every expression (as recording rules): a typo in PromQL fails here.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"netaware:dashboard_expr_{i}", "expr": expr} for i, (_title, expr) in enumerate(expressions())
    ]}]}
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
