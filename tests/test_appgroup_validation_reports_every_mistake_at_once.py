"""A document with mistakes of both kinds (schema: a negative weight; rules the schema cannot state:
a duplicate workload name, a dependency on an unknown workload) gets every one of them, by field
path, in one answer: the editor's validation and the API alike. The editor shows them all."""

from __future__ import annotations

import orjson
import pytest

pytestmark = pytest.mark.django_db

EXPECTED = {"spec.workloads[0].weight", "spec.workloads[2].name", "spec.workloads[0].dependencies[0].name"}


def three_mistakes() -> dict:
    return {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup", "metadata": {"namespace": "default", "name": "shop"},
            "spec": {"topologySortingAlgorithm": "KahnSort", "workloads": [
                {"name": "web", "selector": {"matchLabels": {"app": "web"}}, "weight": -1,
                 "dependencies": [{"name": "nope", "metrics": {"latency": 1}}]},
                {"name": "db", "selector": {"matchLabels": {"app": "db"}}},
                {"name": "web", "selector": {"matchLabels": {"app": "web2"}}}]}}


def test_editor_validation_names_schema_and_semantic_mistakes_together(client):
    response = client.post("/dashboard/data/appgroups/validate", orjson.dumps({"document": three_mistakes()}),
                           content_type="application/json")
    body = response.json()
    assert body["valid"] is False
    assert set(body["errors"]) == EXPECTED, body["errors"]
    assert "duplicate workload name" in body["errors"]["spec.workloads[2].name"][0]
    assert "unknown dependency target" in body["errors"]["spec.workloads[0].dependencies[0].name"][0]


def test_api_import_names_every_mistake_and_saves_nothing(client):
    from apps.appgroups.models import AppGroup

    response = client.post("/api/appgroups/import", orjson.dumps(three_mistakes()), content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == EXPECTED, response.json()
    assert not AppGroup.objects.filter(name="shop").exists()


def test_a_mistake_the_semantic_rules_cannot_judge_still_reports_the_schema_errors(client):
    document = three_mistakes()
    document["spec"]["workloads"][0]["dependencies"][0]["metrics"]["latency"] = "high"  # not a number
    body = client.post("/dashboard/data/appgroups/validate", orjson.dumps({"document": document}),
                       content_type="application/json").json()
    assert "spec.workloads[0].dependencies[0].metrics.latency" in body["errors"]
    assert "spec.workloads[0].weight" in body["errors"]
