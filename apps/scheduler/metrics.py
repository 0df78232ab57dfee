"""The extender's own Prometheus metrics (docs/metrics.md, "netaware's own metrics").

Request latency and outcomes are counted as requests are answered; everything describing state
(cache freshness, leadership, decision log counters) is read from the runtime at scrape time by a
collector, so a scrape never shows a value older than the scrape itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .runtime import current_runtime

REGISTRY = CollectorRegistry(auto_describe=True)

REQUEST_SECONDS = Histogram(
    "netaware_extender_request_duration_seconds",
    "Server-side time to answer one extender call (parse, score, serialize), by verb.",
    ["verb"],
    buckets=(0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
REQUESTS = Counter(
    "netaware_extender_requests",
    "Extender calls answered, by verb and outcome (ok; degraded = answered without the scheduling "
    "cache: every node passes / neutral scores; deadline = nodes not evaluated within the extender's "
    "deadline failed / scored neutral; error = the answer carries an Error).",
    ["verb", "outcome"],
    registry=REGISTRY,
)
BINDS = Counter(
    "netaware_extender_binds",
    "Bind calls by outcome: ok, refused (not ours: scheduler name, UID, bound, unknown or unready node, "
    "a node the pod may not use), failed (the Kubernetes API refused, or could not be reached in time), "
    "unknown (the Binding was sent but not answered within the deadline: the pod watch settles it).",
    ["outcome"],
    registry=REGISTRY,
)

_local = threading.local()


def set_outcome(outcome: str) -> None:
    """Called by a handler whose answer is not plain ok (read back by ``observe_request``)."""
    _local.outcome = outcome


# Labelled children looked up once: ``labels()`` takes a lock and builds a key tuple on every call
# (~10 µs, three times per pod); the children are never removed, so the cached ones stay the live ones.
_SECONDS_BY_VERB: dict[str, Any] = {}
_REQUESTS_BY_LABELS: dict[tuple[str, str], Any] = {}
_BINDS_BY_OUTCOME: dict[str, Any] = {}


def observe_request(verb: str, seconds: float, outcome: str) -> None:
    outcome = getattr(_local, "outcome", None) or outcome
    _local.outcome = None
    histogram = _SECONDS_BY_VERB.get(verb)
    if histogram is None:
        histogram = _SECONDS_BY_VERB[verb] = REQUEST_SECONDS.labels(verb)
    histogram.observe(seconds)
    counter = _REQUESTS_BY_LABELS.get((verb, outcome))
    if counter is None:
        counter = _REQUESTS_BY_LABELS[(verb, outcome)] = REQUESTS.labels(verb, outcome)
    counter.inc()


def count_bind(outcome: str) -> None:
    """One bind answered with ``outcome`` (ok, refused, failed, unknown)."""
    counter = _BINDS_BY_OUTCOME.get(outcome)
    if counter is None:
        counter = _BINDS_BY_OUTCOME[outcome] = BINDS.labels(outcome)
    counter.inc()


class _RuntimeCollector(Collector):
    def collect(self) -> Iterator[Any]:
        rt = current_runtime()
        if rt is None:
            return
        now = time.monotonic()
        view = rt.cache.view()
        up = GaugeMetricFamily("netaware_extender_source_up",
                               "1 when the source feeding the scheduling cache is loaded and healthy.", labels=["source"])
        age = GaugeMetricFamily(
            "netaware_extender_cache_age_seconds",
            "Seconds since the source last delivered good data to the scheduling cache (a list, an event, a "
            "load or a check that found nothing changed).", labels=["source"])
        for name, health in view.sources.items():
            up.add_metric([name], 1.0 if health.synced and health.ok else 0.0)
            good_at = rt.cache.good_at(name)
            age.add_metric([name], max(0.0, now - (good_at if good_at is not None else rt.started_at)))
        yield up
        yield age
        leader = 1.0 if rt.elector is None or rt.elector.leading else 0.0
        yield GaugeMetricFamily("netaware_extender_leader",
                                "1 when this extender process answers (the Lease holder, or no election).",
                                value=leader)
        yield GaugeMetricFamily("netaware_extender_assumed_pods",
                                "Binds answered but not yet confirmed by the pod watch.",
                                value=float(rt.cache.assumed_count()))
        settled = CounterMetricFamily(
            "netaware_extender_binds_settled",
            "Binds answered unknown that the pod watch settled: bound (to the node asked for) or failed "
            "(elsewhere, deleted, or no binding seen within 30 s).", labels=["outcome"])
        for outcome in ("bound", "failed"):
            settled.add_metric([outcome], float(rt.binds_settled[outcome]))
        yield settled
        yield CounterMetricFamily("netaware_decisions_recorded",
                                  "Decisions recorded by requests (recorded - logged - dropped wait in the process).",
                                  value=float(rt.decisions.recorded))
        yield CounterMetricFamily("netaware_decisions_logged", "Decisions shipped to Redis or Postgres.",
                                  value=float(rt.decisions.logged))
        yield CounterMetricFamily("netaware_decisions_dropped",
                                  "Decisions dropped because Redis and Postgres were both away for too long.",
                                  value=float(rt.decisions.dropped))


REGISTRY.register(_RuntimeCollector())
