"""With a real Prometheus scraping Istio-, Linkerd-, OpenTelemetry- and Hubble-format series (the demo's mesh
emulator, apps/demo/mesh.py, for Online Boutique), each adapter learns Online Boutique's true call
graph -- every edge found carrying traffic, their total rate of the emulator's order (0.3-1.6x), no phantom edge -- within 3 pull windows (a
60-workload, 150-edge application within 5), with
workloads mapped to the selectors of the cluster's own Deployments (fake Kubernetes API, owner chain
pod -> ReplicaSet -> Deployment); an edge that goes idle stays until the idle time has passed; hostile
series are refused with a reason and never break the pull."""

from __future__ import annotations

import math
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from apps.appgroups import documents
from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.demo.cluster import workload_objects
from apps.demo.mesh import MeshEmulator, calls_of
from apps.traffic import services
from apps.traffic.models import EdgeSample, LearnedEdge, ObservedAppGroup, TrafficSource
from tests.support.prometheus import ScrapeTarget, scrape_config, start_prometheus

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parent.parent
NS = "shop"
WINDOW = 4


def boutique():
    doc = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())
    doc["metadata"]["namespace"] = NS
    return documents.spec_from_document(doc)


SPEC = boutique()
APP_OF = {w.controller_name: w.selector.match_labels["app"] for w in SPEC.workloads}
TRUE_EDGES = {(w.selector.match_labels["app"], SPEC.workload(d.target).selector.match_labels["app"])
              for w in SPEC.workloads for d in w.dependencies}


def large_application(workloads: int = 60, edges: int = 150, seed: int = 3) -> AppGroupSpec:
    """A TrainTicket-sized application: a random call tree from an entry point plus cross calls."""
    rng = random.Random(seed)
    names = ["gateway"] + [f"svc-{i:02d}" for i in range(1, workloads)]
    pairs = {(names[rng.randrange(i)], names[i]) for i in range(1, workloads)}
    while len(pairs) < edges:
        a, b = rng.sample(range(1, workloads), 2)
        pairs.add((names[min(a, b)], names[max(a, b)]))
    deps: dict[str, list[DependencySpec]] = {}
    for a, b in sorted(pairs):
        deps.setdefault(a, []).append(DependencySpec(b, Sensitivity(0.5, 0.4, 0.1)))
    return AppGroupSpec(LARGE_NS, "train", tuple(
        WorkloadSpec(n, LabelSelector({"app": n}), weight=0.5, dependencies=tuple(deps.get(n, ()))) for n in names))


LARGE_NS = "train"
LARGE = large_application()


@pytest.fixture(scope="module")
def mesh_prometheus():
    emulator = MeshEmulator(calls_of(SPEC), namespace=NS, seed=7)
    large = MeshEmulator(calls_of(LARGE, base_rps=2.0), namespace=LARGE_NS, formats=["istio"], seed=8)
    servers = [e.serve()[0] for e in (emulator, large)]
    prom = start_prometheus(scrape_config([ScrapeTarget(f"127.0.0.1:{h.server_address[1]}", {"app_set": str(i)})
                                           for i, h in enumerate(servers)], interval="1s", job="mesh"))
    try:
        prom.wait_for_series("istio_requests_total", minimum=10, timeout=30)
        time.sleep(2 * WINDOW)  # the first pulled window (one window in the past) already holds series
        yield emulator, prom
    finally:
        prom.stop()
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()


@pytest.fixture(scope="module")
def hubble_prometheus():
    """Hubble's flows on a Prometheus of their own: the other tests' Prometheus has no Hubble series."""
    emulator = MeshEmulator(calls_of(SPEC), namespace=NS, formats=["hubble"], seed=9)
    httpd = emulator.serve()[0]
    prom = start_prometheus(scrape_config([ScrapeTarget(f"127.0.0.1:{httpd.server_address[1]}", {})],
                                          interval="1s", job="hubble"))
    try:
        prom.wait_for_series("hubble_flows_processed_total", minimum=10, timeout=30)
        time.sleep(2 * WINDOW)  # the first pulled window (one window in the past) already holds flows
        yield emulator, prom
    finally:
        prom.stop()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def traffic_settings(settings, request, mesh_prometheus):
    source = getattr(request, "param", None) or request.node.callspec.params.get("source") \
        if hasattr(request.node, "callspec") else None
    _, prom = request.getfixturevalue("hubble_prometheus") if source == "hubble" else mesh_prometheus
    settings.PROMETHEUS_URL = prom.url
    settings.NETAWARE = {**settings.NETAWARE, "PULL_WINDOW_SECONDS": WINDOW, "RATE_WINDOW": "8s",
                         "PULL_INITIAL_WINDOWS": 1, "TRAFFIC_DEFAULT_NAMESPACE": NS, "TRAFFIC_IDLE_SECONDS": 60.0}
    return settings


@pytest.fixture
def cluster(fake_kube):
    fake_kube.register("apps", "v1", "deployments", "Deployment")
    fake_kube.register("apps", "v1", "replicasets", "ReplicaSet")
    fake_kube.seed(workload_objects(SPEC, part_of="online-boutique"))
    return fake_kube


def wait_for_next_window() -> None:
    """Sleep until one more aligned window is due (its end one window in the past, plus scrape lag)."""
    now = time.time()
    due = (math.floor((now - WINDOW) / WINDOW) + 1) * WINDOW + WINDOW + 1.5
    time.sleep(max(0.0, due - now))


def learned_edges() -> set[tuple[str, str]]:
    row = ObservedAppGroup.objects.get(namespace=NS, name="online-boutique")
    spec = documents.spec_from_document(row.document)
    return {(w.selector.match_labels["app"], spec.workload(d.target).selector.match_labels["app"])
            for w in spec.workloads for d in w.dependencies}


@pytest.mark.parametrize("source", ["istio", "linkerd", "otel", "hubble"])
def test_each_adapter_learns_online_boutique_within_three_windows(source, traffic_settings, cluster):
    traffic_settings.NETAWARE = {**traffic_settings.NETAWARE, "TRAFFIC_SOURCES": source}
    matched_at = None
    for pull in range(1, 4):
        wait_for_next_window()
        result = services.pull_traffic(now=timezone.now())
        assert result.sources == [source] and result.windows >= 1, result
        assert not result.rejected, result.rejected
        if ObservedAppGroup.objects.filter(namespace=NS, name="online-boutique").exists() \
                and learned_edges() == TRUE_EDGES:
            matched_at = pull
            break
    assert matched_at is not None, (learned_edges() ^ TRUE_EDGES)
    row = ObservedAppGroup.objects.get(namespace=NS, name="online-boutique")
    spec = documents.spec_from_document(row.document)  # a valid AppGroup document
    assert {w.controller_name for w in spec.workloads} == set(APP_OF)  # the Deployments, found by owner chain
    assert {w.controller_kind for w in spec.workloads} == {"Deployment"}
    # Poisson arrivals over an 8 s rate window: one quiet edge may dip below its mean, so each edge must carry
    # traffic and the total must match what the emulator sends (a unit error or double counting would not).
    rates = {(e["source"], e["target"]): e["requests"] for e in row.edges
             if e["target"] != "redis-cart" or source == "otel"}
    assert rates and all(r > 0 for r in rates.values()), rates
    sent = {(APP_OF[c.source], APP_OF[c.target]): c.rps for c in calls_of(SPEC)}
    # a unit error (x60, /60) or Istio's two reporters counted twice would fall outside; a first window
    # holding only part of the flows (Hubble's own Prometheus starts later) reads as low as 0.59
    assert 0.3 < sum(rates.values()) / sum(sent[pair] for pair in rates) < 1.6, (rates, sent)
    assert EdgeSample.objects.filter(source=source).exists()
    assert TrafficSource.objects.get(name=source).present
    if source not in ("otel", "hubble"):  # the service graph and Hubble's flows have no byte counts
        redis = next(e for e in row.edges if e["target"] == "redis-cart")
        assert redis["request_bytes"] > 0 and redis["response_bytes"] > 0
    if source == "istio":  # both reporters' series exist; only the source's are counted, not doubled
        front = next(e for e in row.edges if (e["source"], e["target"]) == ("frontend", "adservice"))
        assert 2.0 < front["requests"] < 6.5, front
        assert 0 < front["p50"] < front["p99"] < 1.0


def test_a_sixty_workload_application_is_learned_within_five_windows(traffic_settings):
    traffic_settings.NETAWARE = {**traffic_settings.NETAWARE, "TRAFFIC_SOURCES": "istio"}
    true_edges = {(w.name, d.target) for w in LARGE.workloads for d in w.dependencies}
    assert len(LARGE.workloads) == 60 and len(true_edges) == 150
    learned: set = set()
    for _pull in range(5):
        wait_for_next_window()
        services.pull_traffic(now=timezone.now())
        row = ObservedAppGroup.objects.filter(namespace=LARGE_NS, name="gateway").first()
        if row is not None:
            learned = {(e["source"], e["target"]) for e in row.edges}
            if learned == true_edges:
                break
    assert learned == true_edges, (len(learned), learned ^ true_edges)
    assert len(documents.spec_from_document(row.document).workloads) == 60


def test_discovery_finds_every_emitted_source_and_not_hubble(traffic_settings):
    traffic_settings.NETAWARE = {**traffic_settings.NETAWARE, "TRAFFIC_SOURCES": "auto"}
    with services._client(None, None) as client:
        found = services.discover_sources(client=client, at=int(time.time()))
    assert found["istio"] > 0 and found["linkerd"] > 0 and found["otel"] > 0 and found["hubble"] == 0
    assert set(TrafficSource.objects.filter(present=True).values_list("name", flat=True)) == {"istio", "linkerd", "otel"}


class _Hostile(BaseHTTPRequestHandler):
    started = time.time()

    def do_GET(self) -> None:
        t = time.time() - self.started
        lines = ["# TYPE istio_requests_total counter"]
        def series(src, dst, value):
            lines.append(f'istio_requests_total{{reporter="source",source_workload="{src}",source_workload_namespace="{NS}",'
                         f'destination_workload="{dst}",destination_workload_namespace="{NS}"}} {value}')
        series("good-a", "good-b", f"{10 * t:.1f}")
        series("Not_A_Name", "good-b", f"{10 * t:.1f}")
        series("good-a", "x" * 80, f"{10 * t:.1f}")
        series("unknown", "good-b", f"{10 * t:.1f}")
        series("nan-a", "good-b", "NaN")
        for i in range(300):  # an explosion of edges, far above the cap
            series(f"spray-{i}", "good-b", f"{(i % 7 + 1) * t:.1f}")
        body = ("\n".join(lines) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_hostile_series_are_refused_with_reasons_and_the_pull_carries_on(settings, caplog):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    prom = start_prometheus(scrape_config([ScrapeTarget(f"127.0.0.1:{httpd.server_address[1]}", {})],
                                          interval="1s", job="hostile"))
    try:
        prom.wait_for_series("istio_requests_total", minimum=300, timeout=30)
        settings.PROMETHEUS_URL = prom.url
        settings.NETAWARE = {**settings.NETAWARE, "PULL_WINDOW_SECONDS": WINDOW, "RATE_WINDOW": "8s",
                             "PULL_INITIAL_WINDOWS": 1, "TRAFFIC_SOURCES": "istio", "TRAFFIC_MAX_EDGES": 50}
        time.sleep(9)
        wait_for_next_window()
        result = services.pull_traffic(now=timezone.now())
        capped_reasons = TrafficSource.objects.get(name="istio").rejection_reasons
        edges = set(LearnedEdge.objects.values_list("source_workload", "target_workload"))
        # Under the cap a NaN series is simply not among the busiest; without it, it is refused as such.
        settings.NETAWARE = {**settings.NETAWARE, "TRAFFIC_MAX_EDGES": 1000}
        wait_for_next_window()
        uncapped = services.pull_traffic(now=timezone.now())
    finally:
        prom.stop()
        httpd.shutdown()
        httpd.server_close()
    assert result.windows == 1 and result.capped == ["istio"]
    assert len(edges) <= 50 and ("good-a", "good-b") in edges
    assert not any(src in ("Not_A_Name", "unknown", "nan-a") or len(dst) > 63 for src, dst in edges)
    assert "edge cap" in capped_reasons and "invalid name" in capped_reasons, capped_reasons
    assert uncapped.windows == 1 and not uncapped.capped
    reasons = TrafficSource.objects.get(name="istio").rejection_reasons
    for reason in ("invalid name", "unknown workload", "not finite"):
        assert reason in reasons, reasons
    assert "edge cap" not in reasons
    assert LearnedEdge.objects.count() == 301  # good-a -> good-b and the 300 spray edges, all kept
    assert "refused" in caplog.text
