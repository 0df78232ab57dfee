"""A link's history takes presets from 15 minutes to 30 days or a custom from/to range (bad input is a
400 naming the field), and carries the events to annotate: pods bound to either node, stale snapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.dashboard_seed import place, seed_boutique, seed_triage

pytestmark = pytest.mark.django_db


@pytest.fixture
def triage():
    seed_triage()
    seed_boutique()
    place("frontend", "a1")


def test_presets_and_a_custom_range_return_the_stored_samples(client, triage):
    preset = client.get("/dashboard/data/links/a1/f2", {"range": "15m"}).json()
    assert preset["until"] - preset["since"] == 900 and len(preset["series"]["rtt_p90"]["v"]) == 1
    now = datetime.now(UTC)
    start, end = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ"), now.strftime("%Y-%m-%dT%H:%M:%S")
    custom = client.get("/dashboard/data/links/a1/f2", {"from": start, "to": end}).json()
    assert len(custom["series"]["rtt_p90"]["v"]) == 1
    assert abs(custom["since"] - (now - timedelta(minutes=5)).timestamp()) < 2
    earlier = client.get("/dashboard/data/links/a1/f2", {"from": (now - timedelta(hours=3)).isoformat(),
                                                        "to": (now - timedelta(hours=2)).isoformat()}).json()
    assert earlier["points"] == 0


@pytest.mark.parametrize(("query", "field"), [
    ({"from": "yesterday"}, "from"), ({"to": "2026-01-01T00:00:00Z"}, "from"),
    ({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "from"),
    ({"from": "2025-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "from"), ({"range": "2y"}, "range"),
    ({"from": "2026-01-01T00:00:00Z", "to": "soon"}, "to"),
])
def test_a_bad_range_is_a_400_naming_the_field(client, triage, query, field):
    response = client.get("/dashboard/data/links/a1/f2", query)
    assert response.status_code == 400 and field in response.json(), response.json()


def test_binds_on_either_node_are_events_of_the_link(client, triage):
    events = client.get("/dashboard/data/links/f2/a1", {"range": "1h"}).json()["events"]
    assert [e["kind"] for e in events] == ["bind"] and "frontend-0 bound to a1" in events[0]["text"]
    assert client.get("/dashboard/data/links/b1/b2", {"range": "1h"}).json()["events"] == []


def test_the_link_page_keeps_a_custom_range_from_its_address(client, triage):
    body = client.get("/links/a1/f2/", {"from": "2026-11-27T14:00:00Z"}).content.decode()
    assert 'value="2026-11-27T14:00:00"' in body and '<option value="custom" selected>' in body
