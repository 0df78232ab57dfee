"""The topology page's data ranks node pairs by any metric (worst or best first, top N) and says
per metric whether a pair was measured or inferred: a pair whose RTT was sampled is "measured" in
every RTT view even when the snapshot inferred its bandwidth."""

from __future__ import annotations

import pytest

from apps.dashboard import selectors
from apps.topology.models import TopologySnapshot
from apps.topology.selectors import topology_for
from tests.support.dashboard_seed import seed_triage

pytestmark = pytest.mark.django_db

HIGHER_IS_WORSE = {"latency_p50": True, "latency_p90": True, "latency_p99": True, "loss": True, "bandwidth": False}


@pytest.fixture
def triage():
    return seed_triage(bandwidth_pairs=10)


@pytest.mark.parametrize("metric", list(HIGHER_IS_WORSE))
def test_worst_pairs_are_ranked_by_the_chosen_metric_with_every_metric_shown(client, triage, metric):
    body = client.get(f"/dashboard/data/pairs?sort={metric}&limit=5").json()
    values = [row["values"][metric] for row in body["rows"]]
    assert len(values) == 5 and None not in values
    assert values == sorted(values, reverse=HIGHER_IS_WORSE[metric])
    heat = client.get(f"/dashboard/data/heatmap?metric={metric}").json()
    known = [v for v in heat["values"] if v is not None]
    assert values[0] == (max(known) if HIGHER_IS_WORSE[metric] else min(known))
    assert body["ranked"] == len(known)
    assert set(body["rows"][0]["values"]) == set(HIGHER_IS_WORSE)
    best = client.get(f"/dashboard/data/pairs?sort={metric}&limit=5&order=best").json()
    assert best["rows"][0]["values"][metric] == (min(known) if HIGHER_IS_WORSE[metric] else max(known))


def test_worst_pairs_refuse_bad_parameters_naming_the_field(client, triage):
    for query, field in (("sort=nope", "sort"), ("limit=0", "limit"), ("limit=ten", "limit"),
                         ("limit=100000", "limit"), ("order=sideways", "order")):
        response = client.get(f"/dashboard/data/pairs?{query}")
        assert response.status_code == 400 and field in response.json(), query


def test_worst_pairs_say_plainly_when_there_is_no_topology(client):
    response = client.get("/dashboard/data/pairs")
    assert response.status_code == 404 and "No NetworkTopology" in response.json()["detail"]


def counts(client, metric: str) -> dict[str, int]:
    heat = client.get(f"/dashboard/data/heatmap?metric={metric}").json()
    out: dict[str, int] = {}
    for kind, value in zip(heat["kind"], heat["values"], strict=True):
        if value is not None:
            name = heat["kinds"][str(kind)]
            out[name] = out.get(name, 0) + 1
    return out


def test_measured_and_inferred_are_told_per_metric(client, triage):
    snapshot, pairs = triage
    topology = topology_for(snapshot=TopologySnapshot.objects.get(pk=snapshot.pk))
    assert int(topology.inferred.sum()) == len(pairs) - 10  # the snapshot flags the pairs without bandwidth
    every_pair = {"measured": len(pairs)}
    assert counts(client, "latency_p90") == every_pair  # the snapshot's quantile: RTT sampled on every pair
    assert counts(client, "latency_p50") == every_pair
    assert counts(client, "latency_p99") == every_pair
    assert counts(client, "loss") == every_pair
    assert counts(client, "bandwidth") == {"measured": 10, "inferred": len(pairs) - 10}


def test_an_imported_topology_keeps_its_own_inferred_flags(client):
    from tests.support.dashboard_seed import seed_topology

    seed_topology()  # a2 -> f1 is not in the document: inferred, and no sample says otherwise
    heat = client.get("/dashboard/data/heatmap?metric=latency_p90").json()
    k = heat["nodes"].index("a2") * len(heat["nodes"]) + heat["nodes"].index("f1")
    assert heat["kinds"][str(heat["kind"][k])] == "inferred"
    assert selectors.KIND_NAMES[heat["kind"][k]] == "inferred"
