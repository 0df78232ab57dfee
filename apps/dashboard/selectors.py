"""Reads behind the dashboard's live views: heatmap, zone graph, link history, placements map.

Each returns plain data (lists, numbers) the pages draw; the big ones are cached in Redis under a
key made of what they depend on (snapshot row, newest stored sample), so a poll that finds nothing
new costs two indexed queries. Times are sent as epoch seconds and ages computed in the browser, so
a cached answer never goes stale by itself.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from apps.probes.models import PairRollup, PairSample, WindowDigest
from apps.topology.models import Node, TopologySnapshot
from apps.topology.selectors import current_snapshot, topology_for
from apps.topology.selectors import freshness as topology_freshness

# metric key -> (stored series, label, unit, factor from stored unit, snapshot attribute or None)
METRICS: dict[str, tuple[str, str, str, float]] = {
    "latency_p50": ("rtt_p50", "Latency p50", "ms", 1000.0),
    "latency_p90": ("rtt_p90", "Latency p90", "ms", 1000.0),
    "latency_p99": ("rtt_p99", "Latency p99", "ms", 1000.0),
    "bandwidth": ("bandwidth_bps", "Bandwidth", "Mbps", 1e-6),
    "loss": ("loss_ratio", "Loss", "%", 100.0),
}
# Kinds of a heatmap cell (sent as small integers).
NONE, MEASURED, INFERRED, STALE_INFERRED, STALE = 0, 1, 2, 3, 4
KIND_NAMES = {NONE: "unknown", MEASURED: "measured", INFERRED: "inferred",
              STALE_INFERRED: "stale measurement dropped, inferred", STALE: "stale"}
LINK_SERIES = ("rtt_p50", "rtt_p90", "rtt_p99", "loss_ratio", "bandwidth_bps")
LINK_RANGES = {"15m": 900, "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
CACHE_SECONDS = 600


def _stale_after() -> int:
    return int(settings.NETAWARE["STALE_AFTER_SECONDS"])


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def freshness(snapshot: TopologySnapshot, *, now: datetime | None = None) -> dict[str, Any]:
    """Whether the snapshot is stale *now*, by the same rule as the API and /metrics
    (apps/topology/freshness.py): a stopped worker or beat stops rebuilding, so the age grows at read time."""
    fresh = topology_freshness(snapshot=snapshot, now=now.timestamp() if now is not None else None)
    return {"stale": fresh.stale, "staleReason": fresh.reason, "dataUntil": _epoch(snapshot.data_until or
            snapshot.created_at), "ageSeconds": fresh.age_seconds}


def _head() -> tuple[TopologySnapshot | None, int]:
    """Current snapshot (no payload) and the newest sample id: together they key every cache entry."""
    snapshot = current_snapshot()
    newest = PairSample.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return snapshot, newest


def _identity(snapshot: TopologySnapshot) -> tuple[Any, ...]:
    """Row id, version and creation time: ids repeat across databases sharing one Redis (tests,
    a restored database), the microsecond creation time does not."""
    return (snapshot.pk, snapshot.version, snapshot.created_at.timestamp())


def version_key(*parts: Any) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:20]


# --- heatmap -------------------------------------------------------------------------------------

_WINDOW_SQL = (
    f"SELECT array_agg(source), array_agg(target), array_agg(n), array_agg(newest), array_agg(value) FROM ("
    f"SELECT source, target, count(*) AS n, EXTRACT(EPOCH FROM max(ts))::float8 AS newest, "
    f"(array_agg(value ORDER BY ts DESC))[1] AS value FROM {PairSample._meta.db_table} "
    f"WHERE series = %s AND ts > %s GROUP BY source, target) AS x"
)


_DIGESTS_SQL = f"SELECT ts, pair_count, digest FROM {WindowDigest._meta.db_table} WHERE series = %s AND ts > %s ORDER BY ts"
_NEWEST_WINDOW_SQL = (
    f"SELECT array_agg(source), array_agg(target), array_agg(value) FROM {PairSample._meta.db_table} "
    f"WHERE series = %s AND ts = %s"
)


def recent_pair_samples(*, series: str, since: datetime) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Per pair over ``(since, now]``: sample count, newest time (epoch s) and newest value.

    When every stored window in the range holds the same pairs (their WindowDigests agree, the
    pipeline's steady state), the newest window alone answers: each of its pairs has one sample per
    window. Otherwise one GROUP BY over the range does (slower: ~0.4M rows at 200 nodes).
    """
    with connection.cursor() as cursor:
        cursor.execute(_DIGESTS_SQL, [series, since])
        windows = cursor.fetchall()
        if windows and all(d is not None and (n, d) == windows[-1][1:] for _ts, n, d in windows):
            newest_ts = windows[-1][0]
            cursor.execute(_NEWEST_WINDOW_SQL, [series, newest_ts])
            sources, targets, values = cursor.fetchone()
            if sources and len(sources) == windows[-1][1]:
                size = len(sources)
                return (sources, targets, np.full(size, len(windows), dtype=np.int64),
                        np.full(size, newest_ts.timestamp()), np.asarray(values, dtype=np.float64))
        cursor.execute(_WINDOW_SQL, [series, since])
        sources, targets, counts, newest, values = cursor.fetchone()
    if not sources:
        empty = np.empty(0)
        return [], [], empty, empty, empty
    return (sources, targets, np.asarray(counts, dtype=np.int64), np.asarray(newest, dtype=np.float64),
            np.asarray(values, dtype=np.float64))


def _round(values: np.ndarray, digits: int) -> list[float | None]:
    out = np.round(values, digits).astype(object)
    out[np.isnan(values)] = None
    return out.tolist()


def heatmap(*, metric: str) -> tuple[str, dict[str, Any] | None]:
    """(ETag, data) for one metric of the current snapshot; data None before the first snapshot.

    The snapshot's own latency quantile, bandwidth and loss show the snapshot's values (what the
    scheduler scores with, inferred pairs included); the other quantiles show the newest stored
    samples. Every cell carries its kind, the number of samples stored for it within the staleness
    limit and the time of the newest one.
    """
    if metric not in METRICS:
        raise ValueError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    snapshot, newest_sample = _head()
    if snapshot is None:
        return "none", None
    key = version_key("heatmap", metric, _identity(snapshot), snapshot.stale, snapshot.stale_reason,
                      newest_sample, _stale_after())
    data = cache.get("dashboard:" + key)
    if data is None:
        data = _heatmap(snapshot, metric)
        cache.set("dashboard:" + key, data, CACHE_SECONDS)
    return key, data


def _heatmap(snapshot: TopologySnapshot, metric: str) -> dict[str, Any]:
    series, label, unit, factor = METRICS[metric]
    topology = topology_for(snapshot=snapshot)
    n = topology.size
    quantile_series = {0.5: "rtt_p50", 0.9: "rtt_p90", 0.99: "rtt_p99"}.get(round(snapshot.latency_quantile, 2))
    from_snapshot = {"bandwidth": topology.bandwidth_mbps, "loss": topology.loss_pct}.get(metric)
    if metric.startswith("latency") and series == quantile_series:
        from_snapshot = topology.latency_ms
    index = topology.index
    counts = np.zeros((n, n), dtype=np.int64)
    newest = np.full((n, n), np.nan)
    sampled = np.full((n, n), np.nan)
    since = timezone.now() - timedelta(seconds=_stale_after())
    sources, targets, c, t, v = recent_pair_samples(series=series, since=since)
    if sources:
        si = np.fromiter((index.get(s, -1) for s in sources), dtype=np.int64, count=len(sources))
        ti = np.fromiter((index.get(d, -1) for d in targets), dtype=np.int64, count=len(targets))
        ok = (si >= 0) & (ti >= 0)
        counts[si[ok], ti[ok]] = c[ok]
        newest[si[ok], ti[ok]] = t[ok]
        sampled[si[ok], ti[ok]] = v[ok] * factor
    if from_snapshot is not None:
        values = np.array(from_snapshot, dtype=np.float64)
        # The snapshot's inferred/stale flags are per pair, set when *any* metric was filled or
        # dropped (bandwidth is tested on fewer pairs than RTT): a pair with recent samples of this
        # metric's own series is measured for this metric, whatever the other metrics say.
        unsampled = counts == 0
        kind = np.where(np.isnan(values), NONE, MEASURED)
        kind = np.where(topology.inferred & unsampled & ~np.isnan(values), INFERRED, kind)
        kind = np.where(topology.stale & unsampled & ~np.isnan(values), STALE_INFERRED, kind)
        kind = np.where(topology.stale & unsampled & np.isnan(values), STALE, kind)
        source = f"snapshot v{snapshot.version}: what the scheduler scores with"
    else:
        values = sampled
        kind = np.where(np.isnan(values), NONE, MEASURED)
        kind = np.where(topology.stale & (counts == 0) & np.isnan(values), STALE, kind)
        q = round(snapshot.latency_quantile * 100)
        source = f"newest stored {series} samples (the scheduler uses p{q})"
    np.fill_diagonal(values, np.nan)
    np.fill_diagonal(kind, NONE)
    base = float(np.nanmin(newest)) if not np.all(np.isnan(newest)) else None
    offsets = np.where(np.isnan(newest), -1, np.round(newest - (base or 0.0))).astype(np.int64)
    finite = values[~np.isnan(values)]
    return {
        "metric": metric, "label": label, "unit": unit, "source": source,
        "version": snapshot.version, "snapshotSource": snapshot.source,
        "createdAt": _epoch(snapshot.created_at), "latencyQuantile": snapshot.latency_quantile,
        "nodes": list(topology.nodes), "zones": list(topology.zones), "regions": list(topology.regions),
        "values": _round(values.ravel(), 3),
        "kind": kind.ravel().astype(np.int8).tolist(),
        "samples": counts.ravel().tolist(),
        "sampleBase": base, "sampleOffset": offsets.ravel().tolist(),
        "sampleWindowSeconds": _stale_after(),
        "min": float(finite.min()) if finite.size else None, "max": float(finite.max()) if finite.size else None,
        "kinds": {str(k): v for k, v in KIND_NAMES.items()},
    }


# --- worst pairs ---------------------------------------------------------------------------------

# Metrics where a higher value is worse (latency, loss); for bandwidth a lower value is.
HIGHER_IS_WORSE = {key: key != "bandwidth" for key in METRICS}
MAX_WORST_PAIRS = 500


def worst_pairs(*, sort: str, limit: int, worst_first: bool = True) -> tuple[str, dict[str, Any] | None]:
    """(ETag, data): the ``limit`` node pairs ranked by ``sort`` (worst first, or best first), each
    with every metric's value and how it is known, so one table can be re-sorted by any metric.

    Built from the per-metric heatmaps (cached), so it agrees cell for cell with what the map shows.
    """
    if sort not in METRICS:
        raise ValueError(f"sort: {sort!r} is not one of {', '.join(METRICS)}")
    if not 1 <= limit <= MAX_WORST_PAIRS:
        raise ValueError(f"limit: {limit} is not between 1 and {MAX_WORST_PAIRS}")
    maps: dict[str, dict[str, Any]] = {}
    keys = []
    for metric in METRICS:
        key, data = heatmap(metric=metric)
        if data is None:
            return "none", None
        maps[metric] = data
        keys.append(key)
    nodes, zones = maps[sort]["nodes"], maps[sort]["zones"]
    n = len(nodes)
    values = np.array([np.nan if v is None else v for v in maps[sort]["values"]], dtype=np.float64)
    ranked = np.flatnonzero(~np.isnan(values))
    high_first = HIGHER_IS_WORSE[sort] == worst_first
    by = -values[ranked] if high_first else values[ranked]
    picked = ranked[np.argsort(by, kind="stable")[:limit]]
    rows = [{
        "source": nodes[k // n], "target": nodes[k % n],
        "sourceZone": zones[k // n], "targetZone": zones[k % n],
        "values": {m: maps[m]["values"][k] for m in METRICS},
        "kinds": {m: KIND_NAMES[maps[m]["kind"][k]] for m in METRICS},
    } for k in picked.tolist()]
    return version_key("worst", keys, sort, limit, worst_first), {
        "sort": sort, "limit": limit, "worstFirst": worst_first, "ranked": int(ranked.size),
        "version": maps[sort]["version"],
        "metrics": [{"key": m, "label": METRICS[m][1], "unit": METRICS[m][2],
                     "higherIsWorse": HIGHER_IS_WORSE[m]} for m in METRICS],
        "rows": rows,
    }


# --- zones ---------------------------------------------------------------------------------------


def _median(block: np.ndarray) -> float | None:
    values = block[~np.isnan(block)]
    return None if values.size == 0 else round(float(np.median(values)), 3)


def zone_summary() -> tuple[str, dict[str, Any] | None]:
    """Zones (with region and node count) and every directed zone pair: medians over its node pairs,
    counts of inferred and stale pairs, and the NetworkMinCost path cost."""
    snapshot, _newest = _head()
    if snapshot is None:
        return "none", None
    key = version_key("zones", _identity(snapshot), snapshot.stale, snapshot.stale_reason)
    data = cache.get("dashboard:" + key)
    if data is None:
        data = _zone_summary(snapshot)
        cache.set("dashboard:" + key, data, CACHE_SECONDS)
    return key, data


def _zone_summary(snapshot: TopologySnapshot) -> dict[str, Any]:
    topology = topology_for(snapshot=snapshot)
    zones_of = np.asarray([z or f"({name})" for name, z in zip(topology.nodes, topology.zones, strict=True)],
                          dtype=object)
    names = sorted(set(zones_of.tolist()), key=lambda z: (topology.regions[list(zones_of).index(z)], z))
    members = {z: np.flatnonzero(zones_of == z) for z in names}
    region_of = {z: topology.regions[int(members[z][0])] for z in names}
    offdiag = ~np.eye(topology.size, dtype=bool)
    costs = snapshot.zone_costs or {}
    pairs = []
    for za in names:
        for zb in names:
            rows, cols = members[za], members[zb]
            mask = offdiag[np.ix_(rows, cols)]
            count = int(mask.sum())
            if not count:
                continue

            def med(matrix: np.ndarray, rows: np.ndarray = rows, cols: np.ndarray = cols,
                    mask: np.ndarray = mask) -> float | None:
                return _median(np.where(mask, matrix[np.ix_(rows, cols)], np.nan))

            cost = costs.get(za, {}).get(zb)
            if cost is None and za == zb:
                cost = 1.0
            pairs.append({
                "from": za, "to": zb, "pairs": count,
                "latency": med(topology.latency_ms), "bandwidth": med(topology.bandwidth_mbps),
                "loss": med(topology.loss_pct),
                "inferred": int((topology.inferred[np.ix_(rows, cols)] & mask).sum()),
                "stale": int((topology.stale[np.ix_(rows, cols)] & mask).sum()),
                "cost": cost,
            })
    return {
        "version": snapshot.version,
        "zones": [{"name": z, "region": region_of[z], "nodes": [topology.nodes[i] for i in members[z]]} for z in names],
        "pairs": pairs,
    }


# --- one link ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkRange:
    since: datetime
    until: datetime


MAX_CUSTOM_RANGE = timedelta(days=90)


def _instant(name: str, value: str) -> datetime:
    """An ISO 8601 time (a naive one is UTC) or epoch seconds."""
    try:
        if value.replace(".", "", 1).isdigit():
            return datetime.fromtimestamp(float(value), tz=UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"{name}: {value!r} is not a time (ISO 8601, e.g. 2026-11-27T14:00:00Z, or epoch seconds)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_range(*, value: str | None, since: str | None = None, until: str | None = None,
                now: datetime | None = None) -> LinkRange:
    """A preset (``range``: 15m … 30d, ending now) or a custom range (``from``/``to``; ``to``
    defaults to now), at most MAX_CUSTOM_RANGE long."""
    now = now or timezone.now()
    if since or until:
        start = _instant("from", since) if since else None
        end = _instant("to", until) if until else now
        if start is None:
            raise ValueError("from: required with to")
        if start >= end:
            raise ValueError("from: must be before to")
        if end - start > MAX_CUSTOM_RANGE:
            raise ValueError(f"from: the range may span at most {MAX_CUSTOM_RANGE.days} days")
        return LinkRange(since=start, until=end)
    value = value or "6h"
    if value not in LINK_RANGES:
        raise ValueError(f"range: {value!r} is not one of {', '.join(LINK_RANGES)}")
    return LinkRange(since=now - timedelta(seconds=LINK_RANGES[value]), until=now)


MAX_EVENTS = 200


def link_events(*, source: str, target: str, span: LinkRange) -> list[dict[str, Any]]:
    """What happened around the link in the range, for the charts' annotations: pods bound to either
    node, and topology snapshots that were stale (with their reason); newest MAX_EVENTS of each."""
    from apps.appgroups.models import Placement

    events: list[dict[str, Any]] = []
    binds = (Placement.objects.filter(node_name__in=[source, target], bound_at__gt=span.since, bound_at__lte=span.until)
             .order_by("-bound_at").values_list("bound_at", "pod_namespace", "pod_name", "node_name")[:MAX_EVENTS])
    for at, namespace, pod, node in binds:
        events.append({"t": at.timestamp(), "kind": "bind", "text": f"{namespace}/{pod} bound to {node}"})
    stale = (TopologySnapshot.objects.filter(created_at__gt=span.since, created_at__lte=span.until, stale=True)
             .order_by("-created_at").values_list("created_at", "version", "stale_reason")[:MAX_EVENTS])
    for at, version, reason in stale:
        events.append({"t": at.timestamp(), "kind": "stale", "text": f"snapshot v{version} stale: {reason}"})
    return sorted(events, key=lambda e: e["t"])


def link_history(*, source: str, target: str, span: LinkRange) -> dict[str, Any]:
    """Every stored point of the pair's series over the range (raw windows), and hourly roll-up
    means where raw samples were already dropped by retention."""
    rows = (PairSample.objects.filter(source=source, target=target, series__in=LINK_SERIES,
                                      ts__gt=span.since, ts__lte=span.until)
            .order_by("ts").values_list("series", "ts", "value"))
    series: dict[str, dict[str, list[Any]]] = {s: {"t": [], "v": []} for s in LINK_SERIES}
    first_raw: dict[str, float] = {}
    for name, ts, value in rows:
        factor = METRICS[next(k for k, m in METRICS.items() if m[0] == name)][3]
        epoch = ts.timestamp()
        series[name]["t"].append(epoch)
        series[name]["v"].append(round(value * factor, 4))
        first_raw.setdefault(name, epoch)
    rollups = (PairRollup.objects.filter(source=source, target=target, series__in=LINK_SERIES,
                                         bucket__gte=span.since - timedelta(hours=1), bucket__lte=span.until)
               .order_by("bucket").values_list("series", "bucket", "mean", "count"))
    hourly: dict[str, dict[str, list[Any]]] = {s: {"t": [], "v": [], "n": []} for s in LINK_SERIES}
    for name, bucket, mean, count in rollups:
        epoch = bucket.timestamp() + 1800
        if name in first_raw and epoch >= first_raw[name]:
            continue
        factor = METRICS[next(k for k, m in METRICS.items() if m[0] == name)][3]
        hourly[name]["t"].append(epoch)
        hourly[name]["v"].append(round(mean * factor, 4))
        hourly[name]["n"].append(count)
    nodes = dict(Node.objects.filter(name__in=[source, target]).values_list("name", "zone"))
    return {
        "source": source, "target": target, "sourceZone": nodes.get(source, ""), "targetZone": nodes.get(target, ""),
        "since": _epoch(span.since), "until": _epoch(span.until),
        "series": series, "hourly": hourly,
        "points": sum(len(s["t"]) for s in series.values()) + sum(len(s["t"]) for s in hourly.values()),
    }


def link_now(*, source: str, target: str) -> dict[str, Any] | None:
    """The pair in the current snapshot (values, inferred/stale) for the link page's header."""
    snapshot = current_snapshot()
    if snapshot is None:
        return None
    topology = topology_for(snapshot=snapshot)
    i, j = topology.index.get(source), topology.index.get(target)
    if i is None or j is None:
        return {"version": snapshot.version, "known": False}

    def value(matrix: np.ndarray) -> float | None:
        number = float(matrix[i, j])
        return None if math.isnan(number) else round(number, 3)

    return {
        "version": snapshot.version, "known": True, "latency": value(topology.latency_ms),
        "bandwidth": value(topology.bandwidth_mbps), "loss": value(topology.loss_pct),
        "inferred": bool(topology.inferred[i, j]), "stale": bool(topology.stale[i, j]),
        "quantile": snapshot.latency_quantile,
    }


# --- one node, one zone, search ------------------------------------------------------------------


def _pair(topology: Any, i: int, j: int) -> dict[str, Any]:
    def value(matrix: np.ndarray) -> float | None:
        number = float(matrix[i, j])
        return None if math.isnan(number) else round(number, 3)

    return {"latency": value(topology.latency_ms), "bandwidth": value(topology.bandwidth_mbps),
            "loss": value(topology.loss_pct), "inferred": bool(topology.inferred[i, j]),
            "stale": bool(topology.stale[i, j])}


def node_links(*, name: str) -> dict[str, Any] | None:
    """The node's links to every peer in the current snapshot, both directions, slowest first;
    None before the first snapshot, ``known`` False when the snapshot does not hold the node."""
    snapshot = current_snapshot()
    if snapshot is None:
        return None
    topology = topology_for(snapshot=snapshot)
    i = topology.index.get(name)
    if i is None:
        return {"version": snapshot.version, "known": False, "peers": []}
    peers: list[dict[str, Any]] = [{"peer": peer, "zone": topology.zones[j], "region": topology.regions[j],
                                    "out": _pair(topology, i, j), "back": _pair(topology, j, i)}
                                   for j, peer in enumerate(topology.nodes) if j != i]
    peers.sort(key=lambda p: (p["out"]["latency"] is None, -(p["out"]["latency"] or 0.0), p["peer"]))
    return {"version": snapshot.version, "known": True, "peers": peers, "quantile": snapshot.latency_quantile}


def zone_pairs(*, name: str) -> dict[str, Any] | None:
    """The zone's row of the zone summary: its nodes and its medians to and from every zone."""
    _key, data = zone_summary()
    if data is None:
        return None
    zone = next((z for z in data["zones"] if z["name"] == name), None)
    return {"version": data["version"], "zone": zone,
            "out": [p for p in data["pairs"] if p["from"] == name],
            "back": {p["from"]: p for p in data["pairs"] if p["to"] == name}}


MAX_SEARCH_RESULTS = 20


def search(*, query: str) -> dict[str, list[dict[str, Any]]]:
    """Nodes, zones, AppGroups and pods whose name contains ``query`` (case-insensitive), each list
    capped; pods come from placements and the cluster watcher's cache."""
    from apps.appgroups.models import AppGroup, Placement
    from apps.scheduler.models import ObservedPod

    q = query.strip()
    if not q:
        return {"nodes": [], "zones": [], "appgroups": [], "pods": []}
    cap = MAX_SEARCH_RESULTS
    nodes: list[dict[str, Any]] = [dict(row) for row in Node.objects.filter(name__icontains=q).order_by("name")
                                   .values("name", "zone", "region")[:cap]]
    zones = sorted({z for z in Node.objects.filter(zone__icontains=q).values_list("zone", flat=True) if z})[:cap]
    if "/" in q:
        namespace, _, name = q.rpartition("/")
        groups_qs = AppGroup.objects.filter(namespace__icontains=namespace, name__icontains=name)
    else:
        groups_qs = AppGroup.objects.filter(name__icontains=q) | AppGroup.objects.filter(namespace__icontains=q)
    groups: list[dict[str, Any]] = [dict(row) for row in groups_qs.order_by("namespace", "name")
                                    .values("pk", "namespace", "name")[:cap]]
    pod_name = q.rpartition("/")[2]
    pods: dict[str, dict[str, Any]] = {}
    for ns, name, node in (Placement.objects.filter(pod_name__icontains=pod_name)
                           .order_by("pod_namespace", "pod_name").values_list("pod_namespace", "pod_name", "node_name")[:cap]):
        pods[f"{ns}/{name}"] = {"pod": f"{ns}/{name}", "node": node}
    for ns, name, node in (ObservedPod.objects.filter(name__icontains=pod_name, terminal=False)
                           .order_by("namespace", "name").values_list("namespace", "name", "node_name")[:cap]):
        pods.setdefault(f"{ns}/{name}", {"pod": f"{ns}/{name}", "node": node})
    return {"nodes": nodes, "zones": [{"name": z} for z in zones], "appgroups": groups,
            "pods": sorted(pods.values(), key=lambda p: p["pod"])[:cap]}
