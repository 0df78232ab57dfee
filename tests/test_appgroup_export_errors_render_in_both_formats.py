"""Errors of GET /api/appgroups/<id>/export render as data in YAML and in JSON: a missing AppGroup is
a 404 (not a 500 from the YAML renderer choking on DRF's ErrorDetail), a bad flavor or format a 400."""

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.django_db

BOUTIQUE_YAML = (Path(__file__).resolve().parent.parent / "scenarios" / "online-boutique-appgroup.yaml").read_text()


@pytest.fixture
def boutique_id(client):
    response = client.post("/api/appgroups/import", data=BOUTIQUE_YAML, content_type="application/yaml")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _body(response):
    if response["Content-Type"].startswith("application/json"):
        return response.json()
    assert response["Content-Type"].startswith("application/yaml")
    return yaml.safe_load(response.content)


@pytest.mark.parametrize("query", ["", "?format=yaml", "?format=json", "?flavor=diktyo", "?format=json&flavor=diktyo"])
def test_missing_appgroup_is_404_in_every_format(client, boutique_id, query):
    response = client.get(f"/api/appgroups/{boutique_id + 1000}/export{query}")
    assert response.status_code == 404, response.content
    assert _body(response) == {"detail": "No AppGroup matches the given query."}


@pytest.mark.parametrize(
    ("query", "field", "fragment"),
    [
        ("?flavor=kubeflow", "flavor", "'kubeflow' is not one of netaware, diktyo"),
        ("?format=json&flavor=kubeflow", "flavor", "'kubeflow' is not one of netaware, diktyo"),
        ("?format=xml", "format", "'xml' is not one of yaml, json"),
        ("?format=xml&flavor=diktyo", "format", "'xml' is not one of yaml, json"),
    ],
)
def test_bad_flavor_or_format_is_400_naming_the_parameter(client, boutique_id, query, field, fragment):
    response = client.get(f"/api/appgroups/{boutique_id}/export{query}")
    assert response.status_code == 400, response.content
    body = _body(response)
    assert list(body["errors"]) == [field] and fragment in body["errors"][field][0]
    assert body["detail"] == f"{field}: {body['errors'][field][0]}"


def test_existing_appgroup_still_exports_in_both_formats(client, boutique_id):
    as_yaml = client.get(f"/api/appgroups/{boutique_id}/export")
    as_json = client.get(f"/api/appgroups/{boutique_id}/export?format=json")
    assert as_yaml.status_code == as_json.status_code == 200
    assert yaml.safe_load(as_yaml.content) == as_json.json()
    assert as_json.json()["metadata"]["name"] == "online-boutique"
