"""Profiles: weighted combination of scorers, the 0..100 -> 0..10 extender mapping, validation with
field names, selection by annotation, neutral handling of pods in no AppGroup, and diagnosis."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from apps.probes.scenario import load_scenario
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import NEUTRAL_SCORE
from apps.scheduler.scoring.state import ClusterState, NodeUsage, PodInfo
from apps.topology.scenario_topology import topology_from_scenario
from tests.support.scoring_fixtures import paper_appgroup, pod_labels

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"


@pytest.fixture(scope="module")
def state():
    topology = topology_from_scenario(load_scenario(SCENARIO))
    group = paper_appgroup()
    usage = {n: NodeUsage(cpu_15m=0.1 * (i % 9), cpu_1h=0.1 * (i % 9), cpu_1d=0.3) for i, n in enumerate(topology.nodes)}
    return ClusterState(topology=topology, appgroups=(group,), usage=usage,
                        placements={("default", group.name, "frontend"): ("n1407",),
                                    ("default", group.name, "redis-cart"): ("n1402",)})


CART = PodInfo("default", "cart-0", labels=pod_labels("cart"))


def test_total_is_weighted_mean_of_breakdown(state):
    profile = engine.Profile("mix", (("network-score", 3.0, {}), ("water-level", 1.0, {}),
                                     ("network-overhead", 0.0, {})))
    out = engine.run_scorers(state, CART, list(state.topology.nodes), profile)
    expected = (3 * out.breakdown["network-score"] + out.breakdown["water-level"]) / 4
    np.testing.assert_allclose(out.total, expected)
    np.testing.assert_array_equal(out.extender, np.floor(expected / 10 + 0.5).astype(int))
    assert out.extender.dtype == np.int64 and set(out.breakdown) == {"network-score", "water-level",
                                                                     "network-overhead"}


def test_extender_mapping_rounds_half_up():
    got = engine.to_extender_scores(np.array([0.0, 4.9, 5.0, 84.9, 85.0, 99.9, 100.0, 120.0, -3.0]))
    assert got.tolist() == [0, 0, 1, 8, 9, 10, 10, 10, 0]


def test_pod_in_no_appgroup_is_neutral_and_passes_everything(state):
    stranger = PodInfo("default", "web", labels={"app": "web"})
    for profile in engine.BUILTIN_PROFILES.values():
        out = engine.run_scorers(state, stranger, ["n1402", "n1417"], profile)
        assert out.total.tolist() == [NEUTRAL_SCORE] * 2 and out.workload is None
        assert out.extender.tolist() == [5, 5]
        assert engine.run_filters(state, stranger, ["n1402", "n1417"], profile).passed == ("n1402", "n1417")


@pytest.mark.parametrize(("profile", "field"), [
    (engine.Profile("x", (("nope", 1.0, {}),)), "scorers[0].name"),
    (engine.Profile("x", (("water-level", -1.0, {}),)), "scorers[0].weight"),
    (engine.Profile("x", (("water-level", 0.0, {}),)), "scorers"),
    (engine.Profile("x", (("network-score", 1.0, {"same_node_score": "high"}),)), "scorers[0].params.same_node_score"),
    (engine.Profile("x", (("network-score", 1.0, {"same_node_score": 2}),)), "scorers[0].params.same_node_score"),
    (engine.Profile("x", (("water-level", 1.0, {"colour": 1}),)), "scorers[0].params.colour"),
    (engine.Profile("x", (("water-level", 1.0, {}),), ("sieve",)), "filters[0]"),
    (engine.Profile("x", (("water-level", 1.0, {}),), ("overload",), {"overload": {"cpu_threshold": 3}}),
     "params.overload.cpu_threshold"),
    (engine.Profile("x", (("water-level", 1.0, {}),), (), {"overload": {}}), "params.overload"),
])
def test_invalid_profiles_name_the_field(profile, field):
    with pytest.raises(engine.ProfileError) as err:
        engine.validate_profile(profile)
    assert err.value.field_path == field


def test_builtin_profiles_round_trip_and_selection():
    for name, profile in engine.BUILTIN_PROFILES.items():
        engine.validate_profile(profile)
        assert engine.parse_profile(engine.profile_to_dict(profile)) == profile
        pod = PodInfo("default", "p", annotations={engine.PROFILE_ANNOTATION: name})
        assert engine.select_profile(pod) is profile
    assert engine.select_profile(PodInfo("default", "p")).name == engine.DEFAULT_PROFILE
    assert engine.select_profile(PodInfo("default", "p", annotations={engine.PROFILE_ANNOTATION: "zzz"})).name \
        == engine.DEFAULT_PROFILE
    with pytest.raises(engine.ProfileError) as err:
        engine.parse_profile({"name": "x", "scorers": [{"weight": 1}]})
    assert err.value.field_path == "scorers[0].name"


def test_pin_label_selects_the_appgroup(state):
    pinned = PodInfo("default", "cart-0", labels={**pod_labels("cart"), "netaware.io/appgroup": "online-boutique"})
    out = engine.run_scorers(state, pinned, ["n1402"], engine.BUILTIN_PROFILES["network"])
    assert out.workload == ("default/online-boutique", "cart")
    wrong = PodInfo("default", "cart-0", labels={**pod_labels("cart"), "appgroup.diktyo.x-k8s.io": "other"})
    assert engine.run_scorers(state, wrong, ["n1402"], engine.BUILTIN_PROFILES["network"]).workload is None
    diagnosis = engine.explain(state, wrong)
    assert not diagnosis.ok and "default/other" in diagnosis.problems[0]


def test_explain_says_why_scores_are_neutral(state):
    nobody = engine.explain(state, PodInfo("default", "web", labels={"app": "web"}))
    assert nobody.workload is None and "match no workload selector" in nobody.problems[0]
    assert "cart: app=cartservice" in nobody.problems[0]
    elsewhere = engine.explain(state, PodInfo("shop", "web", labels=pod_labels("cart")))
    assert elsewhere.problems == ("no AppGroup exists in namespace shop",)
    ad = engine.explain(state, PodInfo("default", "ad-0", labels=pod_labels("ad")))
    assert ad.workload == "ad" and any("dependent frontend" in i for i in ad.info)
    email = engine.explain(state, PodInfo("default", "email-0", labels=pod_labels("email")))
    assert any("cold start" in i for i in email.info)
    cart = engine.explain(state, CART)
    # The paper testbed defines no zone/region costs: NetworkOverhead would see cost 100 everywhere.
    assert any("no network cost" in p for p in cart.problems)
