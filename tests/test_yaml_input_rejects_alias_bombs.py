"""User-supplied YAML goes through one loader that rejects aliases/anchors before constructing anything,
so a "billion laughs" document is a short 400 / form error / CLI error everywhere YAML is read; and
values echoed in validation messages are truncated, so an error stays small whatever the input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.appgroups.models import AppGroup
from apps.probes.scenario import ScenarioError, load_scenario
from apps.scheduler.evaluation import EvaluationInputError
from apps.scheduler.evaluation.adapter import load_appgroups
from apps.topology.models import TopologySnapshot
from netaware_core.yamlsafe import UnsafeYAMLError, load_yaml
from tests.support.dashboard_seed import seed_boutique

ROOT = Path(__file__).resolve().parent.parent


def alias_bomb(levels: int = 9) -> str:
    """The classic nested-alias document: ~500 bytes that expand to 9**levels strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in itertools.pairwise("abcdefghijklmnop"[:levels]):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "apiVersion: netaware.io/v1alpha1\nkind: AppGroup\nmetadata: {name: bomb}\nspec:\n" + "\n".join(
        "  " + line for line in lines
    ) + "\n"


BOMB = alias_bomb()


def test_loader_rejects_aliases_anchors_depth_and_size():
    assert len(BOMB) < 700
    with pytest.raises(UnsafeYAMLError, match=r"YAML aliases are not accepted \(anchor &a, line 5\)"):
        load_yaml(BOMB)
    with pytest.raises(UnsafeYAMLError, match=r"aliases are not accepted \(alias \*x, line 1\)"):
        load_yaml("a: *x\n")  # an alias is refused even before its (missing) anchor is looked up
    with pytest.raises(UnsafeYAMLError, match="nested deeper than 100"):
        load_yaml("[" * 5000)
    with pytest.raises(UnsafeYAMLError, match="more than the 10 accepted"):
        load_yaml("a: 12345678901", max_bytes=10)
    with pytest.raises(UnsafeYAMLError, match="more than 3 nodes"):
        load_yaml("[1, 2, 3, 4]", max_nodes=3)
    with pytest.raises(UnsafeYAMLError, match="not UTF-8"):
        load_yaml(b"a: \xff\xfe")
    # Ordinary documents load as yaml.safe_load would; a syntax error stays a yaml.YAMLError.
    boutique = (ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text()
    assert load_yaml(boutique) == yaml.safe_load(boutique)
    assert load_yaml(b"a: 1\n---\nb: [x]\n", multi=True) == [{"a": 1}, {"b": ["x"]}]
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: [unclosed")


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/yaml", "application/x-yaml", "text/yaml"])
def test_appgroup_import_answers_a_short_400(client, content_type):
    response = client.post("/api/appgroups/import", data=BOMB, content_type=content_type)
    assert response.status_code == 400
    assert len(response.content) < 300
    assert "YAML aliases are not accepted (anchor &a, line 5)" in response.json()["detail"]
    assert AppGroup.objects.count() == 0


@pytest.mark.django_db
def test_topology_import_answers_a_short_400(client):
    doc = "apiVersion: netaware.io/v1alpha1\nkind: NetworkTopology\nspec:\n  costs: &c [1, 2]\n  more: *c\n"
    response = client.post("/api/topology/import", data=doc, content_type="application/yaml")
    assert response.status_code == 400
    assert "YAML aliases are not accepted" in response.json()["detail"] and len(response.content) < 300
    assert TopologySnapshot.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("edit_existing", [True, False])
def test_dashboard_yaml_editor_shows_a_form_error(client, edit_existing):
    url = f"/appgroups/{seed_boutique().pk}/yaml" if edit_existing else "/appgroups/import"
    before = AppGroup.objects.count()
    response = client.post(url, {"document": BOMB})
    assert response.status_code == 400
    errors = response.context["form"].errors["document"]
    assert errors == ["YAML aliases are not accepted (anchor &a, line 5)"]
    assert AppGroup.objects.count() == before


def test_scenario_and_evaluation_files_reject_aliases(tmp_path):
    scenario = (ROOT / "scenarios" / "paper-testbed.yaml").read_text()
    with pytest.raises(ScenarioError, match="YAML aliases are not accepted"):
        load_scenario("defaults: &d {jitter: 0}\nother: *d\n" + scenario)
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(EvaluationInputError, match="YAML aliases are not accepted"):
        load_appgroups(path)
    with pytest.raises(ScenarioError, match="YAML aliases are not accepted"):
        load_scenario(path)


@pytest.mark.django_db
def test_import_topology_command_rejects_aliases(tmp_path):
    path = tmp_path / "topology.yaml"
    path.write_text("kind: NetworkTopology\nspec: &s {}\nstatus: *s\n")
    with pytest.raises(CommandError, match="YAML aliases are not accepted"):
        call_command("import_topology", str(path))
    assert TopologySnapshot.objects.count() == 0


def _all_messages(errors: dict) -> list[str]:
    return [message for messages in errors.values() for message in messages]


@pytest.mark.django_db
def test_huge_values_give_short_messages(client):
    huge = "x" * 1_000_000
    document = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())
    cases = []
    for mutate in (
        lambda d: d["spec"]["workloads"][0].update(name=huge),
        lambda d: d["spec"]["workloads"][0]["selector"]["matchLabels"].update(app=huge),
        lambda d: d["spec"]["workloads"][0]["dependencies"][0].update(name=huge),
        lambda d: d["spec"]["workloads"][0]["resources"].update(cpu=huge),
        lambda d: d["spec"]["workloads"][0].update(weight=huge),
        lambda d: d["spec"].update(topologySortingAlgorithm=huge),
        lambda d: d.update(kind=huge),
        lambda d: d["metadata"].update(name=huge),
    ):
        doc = json.loads(json.dumps(document))
        mutate(doc)
        cases.append(doc)
    for doc in cases:
        response = client.post("/api/appgroups/import", data=doc, content_type="application/json")
        assert response.status_code == 400, response.content[:300]
        messages = _all_messages(response.json())
        assert messages and all(len(m) <= 200 for m in messages), [m[:300] for m in messages]
    topology = {"kind": huge, "spec": {}}
    response = client.post("/api/topology/import", data=topology, content_type="application/json")
    assert response.status_code == 400 and len(response.content) < 1000, response.content[:300]
