"""A scenario's ``unmeasured`` and ``stale`` pairs (issue 20 item 6): parsed with errors naming the field; the
emulator never probes an unmeasured pair and stops probing a stale one after its ``after_s``, so a real
Prometheus and the pipeline leave the first inferred from its zone and flag the second stale; the evaluation
schedules on that measured view and scores on the nominal links (a degraded link nobody measures costs what it
costs)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import yaml

from apps.probes import metrics, services
from apps.probes.emulator import Emulator
from apps.probes.models import PairSample
from apps.probes.scenario import ScenarioError, load_scenario
from apps.scheduler.evaluation.report import evaluate
from apps.topology.scenario_topology import measured_topology_from_scenario, topology_from_scenario
from tests.support.pipeline import at, configure_pipeline
from tests.support.prometheus import start_prometheus

BASE = {
    "name": "hidden-pairs",
    "defaults": {"jitter": 0.1, "node": {"cpu": "4", "memory": "8Gi"}},
    "regions": [{"name": "r1", "zones": [
        {"name": "a", "nodes": [{"name": "n1"}, {"name": "n2"}, {"name": "n3"}]},
        {"name": "b", "nodes": [{"name": "n4"}]},
    ]}],
    "links": [
        {"between": ["a", "a"], "latency_ms": 1.0, "loss_pct": 0.0, "bandwidth_mbps": 1000},
        {"between": ["a", "b"], "latency_ms": 10.0, "loss_pct": 0.0, "bandwidth_mbps": 100},
        {"between": ["b", "b"], "latency_ms": 1.0, "loss_pct": 0.0, "bandwidth_mbps": 1000},
    ],
}


def scenario(**extra):
    return load_scenario({**yaml.safe_load(yaml.safe_dump(BASE)), **extra})


def test_unmeasured_and_stale_entries_expand_to_directed_pairs() -> None:
    sc = scenario(unmeasured=[["n1", "n2"], {"between": ["n3", "n4"], "directed": True}],
                  stale=[{"node": "n4", "after_s": 30}, ["n1", "n2"]])
    assert sc.unmeasured == {("n1", "n2"), ("n2", "n1"), ("n3", "n4")}
    # a pair nobody measures cannot go stale: n1 <-> n2 and n3 -> n4 stay unmeasured
    assert sc.stale == {("n4", "n1"): 30.0, ("n4", "n2"): 30.0, ("n4", "n3"): 30.0, ("n1", "n4"): 30.0,
                        ("n2", "n4"): 30.0}
    assert sc.unobserved(29.9) == sc.unmeasured
    assert sc.unobserved(30.0) == sc.unmeasured | set(sc.stale)
    assert scenario(stale=[["n1", "n2"]]).stale == {("n1", "n2"): 60.0, ("n2", "n1"): 60.0}  # the default after_s


@pytest.mark.parametrize(("extra", "path", "words"), [
    ({"unmeasured": [{"node": "n9"}]}, "unmeasured[0].node", "unknown node 'n9'"),
    ({"unmeasured": [["n1", "n1"]]}, "unmeasured[0]", "two different nodes"),
    ({"unmeasured": [{"node": "n1", "between": ["n1", "n2"]}]}, "unmeasured[0]", "exactly one of"),
    ({"unmeasured": [{"between": ["n1", "n2"], "after_s": 5}]}, "unmeasured[0].after_s", "unknown field"),
    ({"stale": [{"between": ["n1", "n2"], "after_s": 0}]}, "stale[0].after_s", "must be > 0.0"),
    ({"stale": [{"between": ["n1", "n2"], "after_s": "soon"}]}, "stale[0].after_s", "not a number"),
    ({"stale": "n1"}, "stale", "must be a list"),
    ({"unmeasured": [{"node": "n1", "directed": True}]}, "unmeasured[0].directed", "only with between"),
    ({"stale": [{"between": ["n1", "n2"], "after_s": 5}, {"node": "n1", "after_s": 9}]}, "stale[1].after_s",
     "stale[0] gives 5"),
])
def test_bad_entries_are_refused_naming_the_field(extra, path, words) -> None:
    with pytest.raises(ScenarioError) as caught:
        scenario(**extra)
    assert caught.value.field_path == path and words in str(caught.value), str(caught.value)


def test_the_emulator_never_probes_unmeasured_pairs_and_stops_stale_ones_after_their_time() -> None:
    now = [1_000.0]
    emulator = Emulator(scenario(unmeasured=[["n1", "n2"]], stale=[{"between": ["n3", "n4"], "after_s": 20}]),
                        seed=1, clock=lambda: now[0])

    def pairs() -> set[tuple[str, str]]:
        text = "".join(emulator.render(n).decode() for n in emulator.node_names)
        out = set()
        for line in text.splitlines():
            if line.startswith(metrics.LOSS_RATIO + "{"):
                labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.index("}")].split(","))
                out.add((labels["source"].strip('"'), labels["target"].strip('"')))
        return out

    everything = {(a, b) for a in emulator.node_names for b in emulator.node_names if a != b}
    now[0] += 10.0
    assert pairs() == everything - {("n1", "n2"), ("n2", "n1")}
    now[0] += 15.0  # 25 s after the start: n3 <-> n4 is no longer probed
    assert pairs() == everything - {("n1", "n2"), ("n2", "n1"), ("n3", "n4"), ("n4", "n3")}


@pytest.mark.slow
@pytest.mark.django_db
def test_through_prometheus_and_the_pipeline_unmeasured_is_inferred_and_stale_is_flagged(settings) -> None:
    sc = scenario(unmeasured=[["n1", "n2"]], stale=[{"between": ["n3", "n4"], "after_s": 12}])
    emulator = Emulator(sc, seed=0, ping_rate_hz=100.0, bandwidth_interval_s=2.0)
    start = int(time.time())
    server = emulator.serve()
    prometheus = None
    try:
        prometheus = start_prometheus(emulator.prometheus_config(f"127.0.0.1:{server.port}", scrape_interval="1s"))
        prometheus.wait_for_series(metrics.LOSS_RATIO, minimum=12 - 2)
        time.sleep(max(0.0, start + 32 - time.time()))
        configure_pipeline(settings, prometheus.url, width=5)
        settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 8}
        end = int(time.time()) - 2
        for window_end in range(end - 20, end + 1, 5):  # from ~10 s after the start
            services.pull_window(start=at(window_end - 5), end=at(window_end))
    finally:
        if prometheus is not None:
            prometheus.stop()
        server.stop()

    def samples(a: str, b: str) -> list:
        return list(PairSample.objects.filter(series="rtt_p90", source=a, target=b).values_list("ts", flat=True))

    assert samples("n1", "n2") == [] and samples("n2", "n1") == []  # never probed: no series at all
    stale_ts = samples("n3", "n4")
    assert stale_ts and max(stale_ts) < at(end - 5), stale_ts  # measured early, then nothing
    assert max(samples("n1", "n3")) == at(end)  # everything else measured to the last window

    from apps.topology.services import rebuild_topology

    snapshot = rebuild_topology(now=at(end + 1))
    topology = snapshot.to_topology()
    i = {name: k for k, name in enumerate(topology.nodes)}
    assert topology.inferred[i["n1"], i["n2"]] and not topology.stale[i["n1"], i["n2"]]
    assert topology.latency_ms[i["n1"], i["n2"]] == pytest.approx(1.0, rel=0.15)  # zone a's median
    assert topology.stale[i["n3"], i["n4"]] and topology.stale[i["n4"], i["n3"]]
    assert topology.latency_ms[i["n3"], i["n4"]] == pytest.approx(10.0, rel=0.15)  # filled from a -> b
    assert not topology.stale[i["n1"], i["n4"]] and not topology.inferred[i["n1"], i["n4"]]


def test_the_measured_view_fills_only_the_hidden_pairs_and_keeps_the_rest_nominal() -> None:
    sc = scenario(unmeasured=[["n1", "n2"]], stale=[["n3", "n4"]], unreachable=[["n2", "n4"]])
    view = measured_topology_from_scenario(sc)
    i = {name: k for k, name in enumerate(view.nodes)}
    assert view.inferred[i["n1"], i["n2"]] and view.stale[i["n3"], i["n4"]]
    assert int(view.inferred.sum()) == 4 and int(view.stale.sum()) == 2  # the two hidden pairs, both ways
    assert view.latency_ms[i["n1"], i["n2"]] == pytest.approx(1.0)  # zone a's median
    nominal = topology_from_scenario(sc)
    shown = ~view.inferred
    for name in ("latency_ms", "bandwidth_mbps", "loss_pct"):  # unreachable n2 <-> n4 stays NaN, as nominal
        assert np.array_equal(getattr(view, name)[shown], getattr(nominal, name)[shown], equal_nan=True), name
    assert (view.zone_costs, view.region_costs) == (nominal.zone_costs, nominal.region_costs)


def _hidden_degradation(hidden: bool):
    """Zone a's pair n1 <-> n2 is bad (node link 40 ms, 5 % loss), measured or not; n3 is too small for the
    pods, so zone a's other pairs (1 ms) are what an unmeasured n1 <-> n2 is inferred from."""
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    doc["regions"][0]["zones"][0]["nodes"] = [{"name": "n1", "cpu": "2"}, {"name": "n2", "cpu": "2"},
                                              {"name": "n3", "cpu": "1"}]
    doc["regions"][0]["zones"][1]["nodes"] = [{"name": "n4", "cpu": "2"}]
    doc["node_links"] = [{"between": ["n1", "n2"], "latency_ms": 40.0, "loss_pct": 5.0, "bandwidth_mbps": 50}]
    if hidden:
        doc["unmeasured"] = [["n1", "n2"]]
    return load_scenario(doc)


def test_an_unmeasured_degraded_link_costs_what_it_costs_in_the_evaluation() -> None:
    from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec

    group = AppGroupSpec("shop", "pair", (
        WorkloadSpec("front", LabelSelector({"app": "front"}), cpu_request_millicores=1500,
                     dependencies=(DependencySpec("back", Sensitivity(0.6, 0.3, 0.1)),)),
        WorkloadSpec("back", LabelSelector({"app": "back"}), cpu_request_millicores=1500),
    ))
    # pod by pod (network-noplan): the scorer's view of the n1 <-> n2 pair decides where the second pod goes
    seen = evaluate(_hidden_degradation(False), [group], profiles=["network-noplan"], seeds=4, with_optimum=False)
    blind = evaluate(_hidden_degradation(True), [group], profiles=["network-noplan"], seeds=4, with_optimum=False)
    assert (seen.unmeasured_pairs, blind.unmeasured_pairs) == (0, 2)
    # One 1.5-CPU pod per node on n1, n2 or n4: the pair must be n1 <-> n2 (bad) or cross to zone b (10 ms).
    # Measured, the scheduler sees 40 ms / 5 % and crosses; unmeasured, the pair looks like zone a's 1 ms
    # and the nominal score of that choice is what the evaluation reports: lower.
    assert blind.profile("network-noplan").average_score.mean < seen.profile("network-noplan").average_score.mean - 5


def _one_zone_of_four(stale: list | None):
    doc = {"name": "four-alike", "regions": [{"name": "r", "zones": [
        {"name": "A", "nodes": [{"name": f"a{i}", "cpu": "4"} for i in range(1, 5)]},
        {"name": "B", "nodes": [{"name": "b1", "cpu": "4"}]}]}],
        "links": [{"between": ["A", "A"], "latency_ms": 0.2, "loss_pct": 0, "bandwidth_mbps": 10000},
                  {"between": ["A", "B"], "latency_ms": 20, "loss_pct": 0.1, "bandwidth_mbps": 1000},
                  {"between": ["B", "B"], "latency_ms": 0.2, "loss_pct": 0, "bandwidth_mbps": 10000}]}
    if stale:
        doc["stale"] = stale
    return load_scenario(doc)


def test_a_plan_leaves_out_a_node_whose_agent_went_silent_while_its_zone_has_room() -> None:
    from dataclasses import replace

    from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
    from apps.scheduler.evaluation.report import initial_state
    from apps.scheduler.scoring.plans import compute_plan

    sens = Sensitivity(0.6, 0.3, 0.1)
    group = AppGroupSpec("shop", "trio", (  # three 3-CPU pods: one per 4-CPU node, all in zone A
        WorkloadSpec("front", LabelSelector({"app": "front"}), cpu_request_millicores=3000,
                     dependencies=(DependencySpec("back", sens), DependencySpec("db", sens))),
        WorkloadSpec("back", LabelSelector({"app": "back"}), cpu_request_millicores=3000),
        WorkloadSpec("db", LabelSelector({"app": "db"}), cpu_request_millicores=3000),
    ))
    used = {}
    cases = {"healthy": None,
             "one stale pair": [["a1", "a2"]],  # an old bandwidth reading, say: a1's agent still reports the rest
             "silent agent": [{"node": "a1"}]}  # every pair from and to a1 stale: its agent stopped
    for case, stale in cases.items():
        scenario = _one_zone_of_four(stale)
        state = replace(initial_state(scenario, [group]), topology=measured_topology_from_scenario(scenario))
        plan = compute_plan(state=state, group=group)
        assert {w: dict(z) for w, z in plan.zones.items()} == {"front": {"A": 1}, "back": {"A": 1}, "db": {"A": 1}}
        used[case] = {node for nodes in plan.nodes.values() for node in nodes}
    assert "a1" in used["healthy"]  # four identical nodes: the first one is as good as any
    assert "a1" in used["one stale pair"]  # one stale pair is not a silent agent
    assert used["silent agent"] == {"a2", "a3", "a4"}  # left out while the zone has room
