"""The read-only sample and watermark API filters by pair, series and time; bad filters get a 400 naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.probes.models import NodeSample, PairSample, PullWatermark

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def samples():
    for minute in range(3):
        for series in ("rtt_p90", "loss_ratio"):
            for a, b in (("n1", "n2"), ("n2", "n1")):
                PairSample.objects.create(ts=T0 + timedelta(minutes=minute), series=series, source=a, target=b,
                                          value=minute / 10)
    NodeSample.objects.create(ts=T0, series="cpu_utilization", node="n1", value=0.4)
    PullWatermark.objects.create(query="pair:rtt_p90", last_end=T0 + timedelta(minutes=2))


def test_samples_filter_by_pair_series_and_since(client, samples):
    response = client.get("/api/probes/samples/", {"source": "n1", "target": "n2", "series": "rtt_p90",
                                                   "since": (T0 + timedelta(minutes=1)).isoformat()})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [(r["ts"][:16], r["value"]) for r in body["results"]] == [("2030-01-01T00:02", 0.2),
                                                                      ("2030-01-01T00:01", 0.1)]
    assert set(body["results"][0]) == {"ts", "series", "source", "target", "value"}


def test_node_samples_and_watermarks(client, samples):
    assert client.get("/api/probes/node-samples/", {"node": "n1"}).json()["results"][0]["value"] == 0.4
    marks = client.get("/api/probes/watermarks/").json()["results"]
    assert [(m["query"], m["last_end"][:16]) for m in marks] == [("pair:rtt_p90", "2030-01-01T00:02")]


def test_bad_filters_are_400_naming_the_field(client, samples):
    response = client.get("/api/probes/samples/", {"since": "yesterday", "series": "rtt_p95"})
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"since", "series"}


def test_samples_are_read_only(client, samples):
    assert client.post("/api/probes/samples/", {"series": "rtt_p90"}).status_code == 405
    assert client.delete("/api/probes/watermarks/").status_code == 405
