"""Profiles are versioned documents (netaware.io/v1; the first format is v1alpha1, also when no apiVersion is
given): both read to the same Profile, convert into each other without loss, and name wrong fields as the
document spells them. Each plugin is one registry entry declaring the extension points it implements."""

from __future__ import annotations

import pytest

from apps.scheduler.scoring import engine
from apps.scheduler.scoring.plugins import PLUGINS, REGISTRY

V1ALPHA1_HYBRID = {
    "name": "hybrid-zone",
    "scorers": [{"name": "network-score", "weight": 3, "params": {"same_node_score": 0.7}},
                {"name": "water-level", "weight": 1, "params": {}}],
    "filters": ["min-bandwidth", "plan"],
    "params": {"plan": {"mode": "zone"}},
}


def test_both_versions_read_to_the_same_profile_and_convert_without_loss():
    old = engine.parse_profile(V1ALPHA1_HYBRID)
    assert engine.parse_profile({"apiVersion": "netaware.io/v1alpha1", **V1ALPHA1_HYBRID}) == old
    v1 = engine.convert_profile(V1ALPHA1_HYBRID)
    assert v1 == {
        "apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "hybrid-zone",
        "plugins": {"filter": [{"name": "min-bandwidth"}, {"name": "plan", "args": {"mode": "zone"}}],
                    "score": [{"name": "network-score", "weight": 3, "args": {"same_node_score": 0.7}},
                              {"name": "water-level", "weight": 1}]},
    }
    assert engine.parse_profile(v1) == old
    assert engine.convert_profile(v1, to=engine.V1ALPHA1) == {"apiVersion": "netaware.io/v1alpha1", **V1ALPHA1_HYBRID}
    for profile in engine.BUILTIN_PROFILES.values():
        for version in engine.API_VERSIONS:
            assert engine.parse_profile(engine.profile_to_dict(profile, api_version=version)) == profile


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"plugins": {"score": [{"name": "network-score"}, {"name": "water-level", "args": {"cpu_weight": -1}}]}},
         "profiles[0].plugins.score[1].args.cpu_weight"),
        ({"plugins": {"score": [{"name": "water-level", "weight": -2}]}}, "profiles[0].plugins.score[0].weight"),
        ({"plugins": {"score": [{"name": "min-bandwidth"}]}}, "profiles[0].plugins.score[0].name"),
        ({"plugins": {"score": [{"name": "water-level"}], "filter": [{"name": "water-level"}]}},
         "profiles[0].plugins.filter[0].name"),
        ({"plugins": {"score": [{"name": "water-level"}],
                      "filter": [{"name": "overload"}, {"name": "overload"}]}}, "profiles[0].plugins.filter[1].name"),
        ({"plugins": {"score": [{"name": "water-level"}],
                      "filter": [{"name": "bandwidth-risk", "args": {"threshold": 2}}]}},
         "profiles[0].plugins.filter[0].args.threshold"),
        ({"plugins": {"score": [{"name": "cold-start", "args": {"cold_start_knee": 0.2, "cold_start_spread": 0.1}}]}},
         "profiles[0].plugins.score[0].args.cold_start_spread"),
        ({"plugins": {"score": [{"name": "water-level", "colour": 1}]}}, "profiles[0].plugins.score[0].colour"),
        ({"plugins": {"score": [{"name": "water-level"}], "permit": []}}, "profiles[0].plugins.permit"),
        ({"plugins": {"score": []}}, "profiles[0].plugins.score"),
        ({"kind": "Pod", "plugins": {}}, "profiles[0].kind"),
        ({"apiVersion": "netaware.io/v2", "plugins": {}}, "profiles[0].apiVersion"),
        ({"scorers": [], "plugins": {}}, "profiles[0].scorers"),
    ],
)
def test_a_wrong_v1_document_is_refused_naming_its_own_field(document, path):
    with pytest.raises(engine.ProfileError) as err:
        engine.parse_profile({"apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "p", **document},
                             prefix="profiles[0].")
    assert err.value.field_path == path, err.value
    assert str(err.value).startswith(path + ": ")


def test_a_wrong_v1alpha1_document_is_refused_in_its_own_terms():
    with pytest.raises(engine.ProfileError) as err:
        engine.parse_profile({**V1ALPHA1_HYBRID, "params": {"plan": {"mode": "sea"}}})
    assert err.value.field_path == "params.plan.mode"
    with pytest.raises(engine.ProfileError) as err:
        engine.parse_profile({**V1ALPHA1_HYBRID, "scorers": [{"name": "water-level", "params": {"cpu_weight": -1}}]})
    assert err.value.field_path == "scorers[0].params.cpu_weight"


def test_each_plugin_is_one_entry_declaring_its_extension_points():
    assert len(REGISTRY) == len(PLUGINS)
    points = {name: plugin.extension_points for name, plugin in REGISTRY.items()}
    assert points["plan"] == points["network-overhead"] == points["bandwidth-risk"] == ("filter", "score")
    assert points["min-bandwidth"] == points["overload"] == ("filter",)
    assert points["network-score"] == points["water-level"] == ("score",)
    for plugin in PLUGINS:
        assert plugin.new({}, "args") == plugin.args()  # every argument has a default
