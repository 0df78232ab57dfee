"""``manage.py evaluate``: bad input is a CommandError naming what is wrong; good input gives JSON."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "scenarios" / "paper-testbed.yaml")
APPGROUP = str(ROOT / "scenarios" / "online-boutique-appgroup.yaml")


def _run(**options):
    out = StringIO()
    call_command("evaluate", stdout=out, **{"scenario": SCENARIO, "appgroup": APPGROUP, "seeds": 2, **options})
    return out.getvalue()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scenario": "/nonexistent/scenario.yaml"}, "scenario file '/nonexistent/scenario.yaml' does not exist"),
        ({"appgroup": "/nonexistent/ag.yaml"}, "appgroup file '/nonexistent/ag.yaml' does not exist"),
        ({"profiles": "default,warp-drive"}, "unknown profile 'warp-drive'"),
        ({"profiles": "default,default"}, "names a profile twice"),
        ({"profiles": "hybrid-0"}, "profile 'hybrid-0'"),
        ({"seeds": 0}, "--seeds must be >= 1"),
        ({"appgroup": SCENARIO}, "holds no AppGroup document"),
        ({"output": "/nonexistent/dir/report.json"}, "--output"),
        ({"time_limit": 0}, "--time-limit must be > 0"),
        ({"memory_limit": "lots"}, "--memory-limit"),
        ({"memory_limit": "1Mi"}, "--memory-limit must be at least 64Mi"),
        ({"min_zones": 65}, "--min-zones must be between 0 and 64"),
        ({"min_replicas": -1}, "--min-replicas must be between 0 and 64"),
    ],
)
def test_bad_input_is_a_command_error_naming_it(options, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _run(**options)


def test_invalid_scenario_names_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: broken\nregions:\n  - name: r\n    zones:\n      - name: A\n        nodes: [{name: a1, cpu: lots}]\n")
    with pytest.raises(CommandError, match=r"regions\[0\]\.zones\[0\]\.nodes\[0\]\.cpu"):
        _run(scenario=str(bad))


def test_invalid_appgroup_names_the_document_and_field(tmp_path):
    bad = tmp_path / "ag.yaml"
    bad.write_text("apiVersion: netaware.io/v1alpha1\nkind: AppGroup\nmetadata: {name: x}\nspec:\n  workloads: 7\n")
    with pytest.raises(CommandError, match=r"document 0: .*workloads"):
        _run(appgroup=str(bad))


def test_json_output_file_and_figure(tmp_path):
    report_file = tmp_path / "report.json"
    figure_file = tmp_path / "fig.html"
    stdout = _run(profiles="default,hybrid-5", format="json", output=str(report_file), figure=str(figure_file))
    printed = orjson.loads(stdout)
    written = orjson.loads(report_file.read_bytes())
    assert printed == written
    assert [p["profile"] for p in written["profiles"]] == ["default", "hybrid-5"]
    assert written["seeds"] == 2 and written["optimum"]["exact"] is True
    assert "plotly" in figure_file.read_text().lower()


def test_table_output_lists_every_profile():
    table = _run(profiles="default,network", no_optimum=True)
    assert "| default" in table and "| network" in table and "avg score" in table


def test_an_optimum_over_its_memory_limit_is_one_line_not_a_traceback(monkeypatch):
    from apps.scheduler.evaluation import certified

    def hungry(*_args, **_kwargs):  # the solver's stages, wanting far more than the 64Mi limit allows
        return bytearray(1024 * 2**20)

    monkeypatch.setattr(certified, "search", hungry)
    out = _run(profiles="default", seeds=1, memory_limit="64Mi")
    line = next(x for x in out.splitlines() if x.startswith("optimum"))
    assert "optimum: n/a" in line and "64 MiB" in line and "raise --memory-limit" in line
    assert "Traceback" not in out


PROFILE_FILE = """\
profiles:
  - apiVersion: netaware.io/v1
    kind: SchedulingProfile
    name: zone-tight
    plugins:
      filter: [{name: min-bandwidth}, {name: plan, args: {mode: zone}}]
      score: [{name: network-score, weight: 2}, {name: plan, weight: 1}]
  - name: old-style
    scorers: [{name: network-score, weight: 1, params: {same_node_score: 0.9}}]
"""


def test_a_profile_file_of_versioned_documents_adds_extender_profiles(tmp_path):
    file = tmp_path / "profiles.yaml"
    file.write_text(PROFILE_FILE)
    report = orjson.loads(_run(profile_file=str(file), profiles="zone-tight,old-style+default-5,network",
                               format="json", no_optimum=True))
    assert [p["profile"] for p in report["profiles"]] == ["zone-tight", "old-style+default-5", "network"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PROFILE_FILE.replace("weight: 2", "weight: -2"), r"profiles\[0\]\.plugins\.score\[0\]\.weight"),
        (PROFILE_FILE.replace("mode: zone", "mode: sea"), r"profiles\[0\]\.plugins\.filter\[1\]\.args\.mode"),
        (PROFILE_FILE.replace("same_node_score: 0.9", "same_node_score: 9"),
         r"profiles\[1\]\.scorers\[0\]\.params\.same_node_score"),
        (PROFILE_FILE.replace("netaware.io/v1", "netaware.io/v7"), r"profiles\[0\]\.apiVersion"),
        ("profiles: 3\n", "must be a non-empty list"),
    ],
)
def test_a_bad_profile_file_names_the_document_field(tmp_path, text, message):
    file = tmp_path / "profiles.yaml"
    file.write_text(text)
    with pytest.raises(CommandError, match=message):
        _run(profile_file=str(file), profiles="network", no_optimum=True)
