"""JSON numbers out of float range (1e999) parse to inf: a profile weight or parameter like that is a
400 naming the exact field (scorers[i].weight, scorers[i].params.x, params.<filter>.x), not a generic
"Value must be valid JSON"; and nothing is stored."""

from __future__ import annotations

import pytest

from apps.scheduler.models import SchedulerProfile
from apps.scheduler.scoring import engine


def _post(client, raw: str):
    return client.post("/api/scheduler/profiles/", data=raw, content_type="application/json")


@pytest.mark.parametrize(
    ("scorers", "extra", "field"),
    [
        ('[{"name": "water-level", "weight": 1e999}]', "", "scorers[0].weight"),
        ('[{"name": "network-score", "weight": 1}, {"name": "water-level", "weight": -1e999}]', "",
         "scorers[1].weight"),
        ('[{"name": "network-score", "weight": 1, "params": {"same_node_score": 1e999}}]', "",
         "scorers[0].params.same_node_score"),
        ('[{"name": "water-level", "weight": 1}]', ', "filters": ["overload"], "params": {"overload": '
         '{"cpu_threshold": 1e999}}', "params.overload.cpu_threshold"),
    ],
)
def test_non_finite_numbers_are_400_naming_the_field(client, scorers, extra, field):
    before = SchedulerProfile.objects.count()
    response = _post(client, f'{{"name": "huge", "scorers": {scorers}{extra}}}')
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert list(errors) == [field], errors
    assert "finite" in errors[field][0], errors
    assert SchedulerProfile.objects.count() == before


def test_patch_with_infinite_weight_names_the_weight(client):
    created = _post(client, '{"name": "mine", "scorers": [{"name": "water-level", "weight": 2}]}')
    assert created.status_code == 201, created.content
    response = client.patch("/api/scheduler/profiles/mine/", data='{"scorers": [{"name": "water-level", '
                            '"weight": 1e999}]}', content_type="application/json")
    assert response.status_code == 400
    assert "finite" in response.json()["errors"]["scorers[0].weight"][0]
    assert SchedulerProfile.objects.get(name="mine").scorers == [{"name": "water-level", "weight": 2}]


def test_engine_rejects_nan_and_inf_weights():
    for weight in (float("inf"), float("nan")):
        with pytest.raises(engine.ProfileError) as err:
            engine.parse_profile({"name": "x", "scorers": [{"name": "water-level", "weight": weight}]})
        assert err.value.field_path == "scorers[0].weight"
