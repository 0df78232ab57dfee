"""NetworkTopology documents (pure: no Django): the ones netaware publishes, built from a topology,
and the ones it imports, read by the CRD's schema plus a semantic step (``read_import``). The apply,
unchanged check and deletes are in ``apps.topology.publish``; storing an import is
``services.import_topology``.

Size strategy (docs/sync.md): etcd refuses objects above 1.5 MiB, and the API server also stores
``managedFields``, which lists every map key written and roughly doubles a map-heavy object. So:

* When the node-level document (the paper's shape: ``latency``/``bandwidth``/``lossrate`` maps
  src -> dst) is at most ``PART_BUDGET_BYTES`` (512 KiB of JSON), it is published as one object
  ``<name>`` with ``granularity: Node``.
* Otherwise ``<name>`` carries the aggregate (``granularity: Zone``: zone-pair medians, every node
  with its zone/region, the node-level extrema and the zone/region costs) and the node-level maps are
  split by source node into parts ``<name>-<k>`` (``spec.part: {index: k, total: K}``,
  ``granularity: Node``), each at most ``PART_BUDGET_BYTES``. Values are rounded (latency to 1 us,
  bandwidth to 0.01 Mbit/s, loss to 0.001 %); unknown pairs are omitted.

Writes are server-side apply (field manager ``netaware``, force). Parts are applied first and the
aggregate last: its ``netaware.io/content-hash`` annotation covers every part, so an unchanged
snapshot costs one GET. Parts beyond the new total are deleted. The scheduler-plugins
(diktyo) NetworkTopology with our measured zone/region costs is published beside it.

``build_documents`` and ``diktyo_networktopology_from_costs`` are pure: tests and benchmarks call them
with synthetic topologies.

An import (``POST /api/topology/import``, ``manage.py import_topology``) is a NetworkTopology
document as the API serves it, as the cluster holds it, or just its ``spec``. Its structure is
judged by the CRD's openAPIV3Schema (k8s/crds/networktopology.yaml) through
``netaware_core.crdschema``, strictly (an undeclared field is an error, not pruned): value types and
bounds (``>= 0``, loss ``<= 100``), name lengths. The semantic step adds what the schema cannot say:
map keys are node names, a zone in one region and a node in one zone, cost overrides name declared
zones and regions, every min extremum at most its max, at least one node. Every problem is reported
at once, by field path (``spec.latency.n1.n2``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson

from netaware_core import crdschema, quantity
from netaware_core.fielderrors import BODY, FieldError

from .topomath import EXTREMA_FIELDS, EXTREMA_KEYS, METRICS, NodeMeta, Topology, short_repr

log = logging.getLogger(__name__)

GROUP = "netaware.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
PLURAL = "networktopologies"
KIND = "NetworkTopology"
DIKTYO_GROUP = "networktopology.diktyo.x-k8s.io"
FIELD_MANAGER = "netaware"
TOPOLOGY_LABEL = "netaware.io/topology"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
HASH_ANNOTATION = "netaware.io/content-hash"
PARTS_ANNOTATION = "netaware.io/parts"
VERSION_ANNOTATION = "netaware.io/topology-version"
PART_BUDGET_BYTES = 512 * 1024
OBJECT_LIMIT_BYTES = 1536 * 1024  # etcd's default request limit (1.5 MiB)
DIKTYO_API_VERSION = f"{DIKTYO_GROUP}/v1alpha1"
REGION_KEY = "topology.kubernetes.io/region"
ZONE_KEY = "topology.kubernetes.io/zone"
DECIMALS = {"latency": 3, "bandwidth": 2, "lossrate": 3}


def document_bytes(doc: Any) -> int:
    """Bytes of ``doc`` as the kubernetes client sends it (json.dumps with ", " and ": ")."""
    return len(json.dumps(doc).encode())


def _row_size(row: dict[str, float] | None) -> int:
    # orjson is compact; json.dumps adds a space after every ":" and ",": 2 bytes per entry.
    return 0 if row is None else len(orjson.dumps(row)) + 2 * len(row)


def content_hash(doc: Any) -> str:
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _clean(value: float, decimals: int = 4) -> float | None:
    return round(float(value), decimals) if math.isfinite(value) else None


def _rows(topology: Topology) -> dict[str, list[dict[str, float] | None]]:
    """Per metric, per source index: {destination: value} (None when the row is empty)."""
    names = np.asarray(topology.nodes, dtype=object)
    n = topology.size
    offdiag = ~np.eye(n, dtype=bool)
    out: dict[str, list[dict[str, float] | None]] = {}
    arrays = {
        "latency": topology.latency_ms,
        "bandwidth": topology.bandwidth_mbps,
        "lossrate": topology.loss_pct,
    }
    for metric, matrix in arrays.items():
        valid = ~np.isnan(matrix) & offdiag & (matrix >= 0)
        if metric == "lossrate":
            valid &= matrix <= 100
        rounded = np.round(matrix, DECIMALS[metric])
        rows: list[dict[str, float] | None] = []
        for i in range(n):
            cols = np.flatnonzero(valid[i])
            rows.append(
                dict(zip(names[cols].tolist(), rounded[i, cols].tolist(), strict=True)) if cols.size else None
            )
        out[metric] = rows
    return out


def _nested_costs(costs: Any) -> dict[str, dict[str, float]]:
    nested: dict[str, dict[str, float]] = {}
    for (origin, destination), value in dict(costs).items():
        cleaned = _clean(float(value))
        if cleaned is not None and cleaned >= 0:
            nested.setdefault(str(origin), {})[str(destination)] = cleaned
    return nested


def _extrema(topology: Topology) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, attr in zip(EXTREMA_KEYS, EXTREMA_FIELDS, strict=True):
        value = _clean(float(getattr(topology, attr)))
        if value is not None and value >= 0:
            out[key] = value
    return out


def _node_entries(topology: Topology, indexes: range | list[int]) -> list[dict[str, str]]:
    entries = []
    for i in indexes:
        entry = {"name": topology.nodes[i]}
        if topology.zones[i]:
            entry["zone"] = topology.zones[i]
        if topology.regions[i]:
            entry["region"] = topology.regions[i]
        entries.append(entry)
    return entries


def _zone_aggregates(topology: Topology) -> dict[str, dict[str, dict[str, float]]]:
    """Median of every metric over the known node pairs of each (zone, zone) pair."""
    zones = np.asarray([z or "" for z in topology.zones], dtype=object)
    names = sorted({z for z in zones.tolist() if z})
    members = {z: np.flatnonzero(zones == z) for z in names}
    offdiag = ~np.eye(topology.size, dtype=bool)
    out: dict[str, dict[str, dict[str, float]]] = {}
    arrays = {
        "latency": topology.latency_ms,
        "bandwidth": topology.bandwidth_mbps,
        "lossrate": topology.loss_pct,
    }
    for metric, matrix in arrays.items():
        per_metric: dict[str, dict[str, float]] = {}
        for a in names:
            for b in names:
                block = matrix[np.ix_(members[a], members[b])]
                mask = offdiag[np.ix_(members[a], members[b])] & ~np.isnan(block) & (block >= 0)
                if mask.any():
                    value = float(np.median(block[mask]))
                    if metric == "lossrate":
                        value = min(value, 100.0)
                    per_metric.setdefault(a, {})[b] = round(value, DECIMALS[metric])
        out[metric] = per_metric
    return out


def _status(topology: Topology, generated_at: str) -> dict[str, Any]:
    known = ~np.isnan(topology.latency_ms) & ~np.eye(topology.size, dtype=bool)
    inferred = topology.inferred & known
    return {
        "nodeCount": topology.size,
        "measuredPairs": int((known & ~inferred).sum()),
        "inferredPairs": int(inferred.sum()),
        "stalePairs": int(topology.stale.sum()),
        "weightCalculationTime": generated_at,
    }


def _metadata(name: str, namespace: str, topology: Topology, *, topology_name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {TOPOLOGY_LABEL: topology_name, MANAGED_BY_LABEL: "netaware"},
        "annotations": {VERSION_ANNOTATION: str(topology.version)},
    }


def _document(
    name: str, namespace: str, topology: Topology, *, topology_name: str, spec: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": _metadata(name, namespace, topology, topology_name=topology_name),
        "spec": spec,
        "status": status,
    }


def build_documents(
    topology: Topology,
    *,
    name: str = "netaware",
    namespace: str = "netaware-system",
    generated_at: str | None = None,
    budget_bytes: int = PART_BUDGET_BYTES,
) -> list[dict[str, Any]]:
    """The NetworkTopology objects for ``topology``: [main] or [parts..., aggregate main] (main last).

    Every object carries ``netaware.io/content-hash``; the main object's hash also covers the parts.
    """
    generated_at = generated_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = _rows(topology)
    extrema = _extrema(topology)
    costs: dict[str, Any] = {}
    zone_costs, region_costs = _nested_costs(topology.zone_costs), _nested_costs(topology.region_costs)
    if zone_costs:
        costs["zoneCosts"] = zone_costs
    if region_costs:
        costs["regionCosts"] = region_costs
    status = _status(topology, generated_at)

    def maps(indexes: range | list[int]) -> dict[str, dict[str, dict[str, float]]]:
        return {
            metric: {topology.nodes[i]: row for i in indexes if (row := rows[metric][i]) is not None}
            for metric in ("latency", "bandwidth", "lossrate")
        }

    row_sizes = [
        sum(_row_size(rows[m][i]) + len(topology.nodes[i]) + 8 for m in rows if rows[m][i] is not None) + 80
        for i in range(topology.size)
    ]
    if sum(row_sizes) <= budget_bytes:
        full_spec: dict[str, Any] = {"granularity": "Node", "nodes": _node_entries(topology, range(topology.size))}
        full_spec.update(maps(range(topology.size)))
        full_spec.update(extrema)
        full_spec.update(costs)
        single = _document(name, namespace, topology, topology_name=name, spec=full_spec, status=status)
        if document_bytes(single) <= budget_bytes:
            _stamp(single, [])
            return [single]

    # Split by source node: greedy packing on the measured size of each source's rows.
    overhead = 2048 + document_bytes(extrema)
    groups: list[list[int]] = [[]]
    used = overhead
    for i, size in enumerate(row_sizes):
        if groups[-1] and used + size > budget_bytes:
            groups.append([])
            used = overhead
        groups[-1].append(i)
        used += size
    total = len(groups)
    parts: list[dict[str, Any]] = []
    for index, members in enumerate(groups):
        spec: dict[str, Any] = {
            "granularity": "Node",
            "part": {"index": index, "total": total},
            "nodes": _node_entries(topology, members),
        }
        spec.update(maps(members))
        spec.update(extrema)
        part_status = dict(status)
        part_status["nodeCount"] = len(members)
        doc = _document(f"{name}-{index}", namespace, topology, topology_name=name, spec=spec, status=part_status)
        _stamp(doc, [])
        parts.append(doc)
    main_spec: dict[str, Any] = {
        "granularity": "Zone",
        "nodes": _node_entries(topology, range(topology.size)),
    }
    main_spec.update(_zone_aggregates(topology))
    main_spec.update(extrema)
    main_spec.update(costs)
    main = _document(name, namespace, topology, topology_name=name, spec=main_spec, status=status)
    _stamp(main, parts)
    return [*parts, main]


def _stamp(doc: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    content = {"spec": doc["spec"], "labels": doc["metadata"]["labels"]}
    part_hashes = [p["metadata"]["annotations"][HASH_ANNOTATION] for p in parts]
    doc["metadata"]["annotations"][HASH_ANNOTATION] = content_hash([content, part_hashes])
    doc["metadata"]["annotations"][PARTS_ANNOTATION] = str(len(parts))


def _cost_int(value: float) -> int | None:
    if not math.isfinite(value):
        return None
    return max(0, math.floor(value + 0.5))


def _origin_list(
    costs: Mapping[tuple[str, str], float], bandwidth_bps: Mapping[tuple[str, str], float] | None
) -> list[dict[str, Any]]:
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for (origin, destination), value in costs.items():
        if origin == destination:
            continue
        cost = _cost_int(float(value))
        if cost is None:
            continue
        entry: dict[str, Any] = {"destination": destination, "networkCost": cost}
        if bandwidth_bps and (origin, destination) in bandwidth_bps:
            capacity = bandwidth_bps[(origin, destination)]
            if math.isfinite(capacity) and capacity >= 0:
                entry["bandwidthCapacity"] = quantity.format_bytes(int(capacity))
        by_origin.setdefault(origin, []).append(entry)
    # NetworkOverhead binary-searches origins and destinations: both lists must be sorted.
    return [
        {"origin": origin, "costList": sorted(entries, key=lambda e: e["destination"])}
        for origin, entries in sorted(by_origin.items())
    ]


def diktyo_networktopology_from_costs(
    *,
    name: str,
    zone_costs: Mapping[tuple[str, str], float],
    region_costs: Mapping[tuple[str, str], float],
    namespace: str = "default",
    weights_name: str = "NetperfCosts",
    configmap_name: str = "netperf-metrics",
    node_count: int | None = None,
    zone_bandwidth_bps: Mapping[tuple[str, str], float] | None = None,
    region_bandwidth_bps: Mapping[tuple[str, str], float] | None = None,
    calculation_time: str | None = None,
) -> dict[str, Any]:
    """Our measured zone/region costs as a scheduler-plugins NetworkTopology document.

    Costs are rounded to the integers NetworkOverhead expects (networkCost is int64 >= 0); pairs
    with the same origin and destination and non-finite costs are left out (the plugin uses its
    own same-zone cost). ``weights_name`` must match the plugin's ``weightsName`` argument; with
    "NetperfCosts" the plugin does not sort the lists itself, so we emit them sorted by
    topologyKey, origin and destination.
    """
    topology_list: list[dict[str, Any]] = []
    region_origins = _origin_list(region_costs, region_bandwidth_bps)
    if region_origins:
        topology_list.append({"topologyKey": REGION_KEY, "originList": region_origins})
    zone_origins = _origin_list(zone_costs, zone_bandwidth_bps)
    if zone_origins:
        topology_list.append({"topologyKey": ZONE_KEY, "originList": zone_origins})
    topology_list.sort(key=lambda item: item["topologyKey"])
    doc: dict[str, Any] = {
        "apiVersion": DIKTYO_API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "configmapName": configmap_name,
            "weights": [{"name": weights_name, "topologyList": topology_list}],
        },
    }
    status: dict[str, Any] = {}
    if node_count is not None:
        status["nodeCount"] = node_count
    if calculation_time:
        status["weightCalculationTime"] = calculation_time
    if status:
        doc["status"] = status
    return doc


# --- reading an import ---------------------------------------------------------------------------


class TopologyDocumentError(FieldError):
    """An imported NetworkTopology document is invalid: ``errors`` maps field paths to messages."""


@dataclass(frozen=True)
class ImportedTopology:
    """A valid imported document: what ``services.import_topology`` needs to store it."""

    spec: Mapping[str, Any]  # the maps and the given extrema (``topomath.topology_from_nested``)
    nodes: tuple[NodeMeta, ...]  # declared by spec.zones / spec.nodes, in order
    named: tuple[str, ...]  # named by the maps but not declared, sorted: their zones come from the node cache
    zone_costs: Mapping[tuple[str, str], float]  # user-defined edge costs
    region_costs: Mapping[tuple[str, str], float]
    path: str  # where the spec is: "spec", or "" for a bare spec


def read_import(document: Any) -> ImportedTopology:
    """A NetworkTopology document (full, as served or published, or a bare spec) as an
    ``ImportedTopology``; ``TopologyDocumentError`` naming every problem by field path otherwise."""
    spec, path = _spec_of(document)
    if isinstance(spec, Mapping) and isinstance(spec.get("nodes"), list):  # the API's document lists names
        spec = {**spec, "nodes": [{"name": n} if isinstance(n, str) else n for n in spec["nodes"]]}
    errors = crdschema.document_errors({"apiVersion": API_VERSION, "kind": KIND, "spec": spec}, unknown_fields=True)
    if errors:
        raise _error(errors, path)
    reading = _Reading(spec)
    if not reading.errors and not reading.nodes and not reading.named:
        reading.add("spec.latency", "the document names no nodes")
    if reading.errors:
        raise _error(reading.errors, path)
    return ImportedTopology(spec=spec, nodes=tuple(reading.nodes.values()), named=tuple(sorted(reading.named)),
                            zone_costs=reading.zone_costs, region_costs=reading.region_costs, path=path)


def _spec_of(document: Any) -> tuple[Any, str]:
    """The spec of a full document (kind and apiVersion ours when given), or a bare spec; and its path."""
    if not isinstance(document, Mapping):
        raise TopologyDocumentError(errors={BODY: ["must be a mapping (a NetworkTopology or its spec)"]})
    if "spec" not in document:
        return document, ""
    errors = {key: [f"must be {expected!r}, got {short_repr(document.get(key))}"]
              for key, expected in (("kind", KIND), ("apiVersion", API_VERSION))
              if document.get(key, expected) != expected}
    if errors:
        raise TopologyDocumentError(errors=errors)
    return document["spec"], "spec"


def _error(errors: Mapping[str, list[str]], path: str) -> TopologyDocumentError:
    """The error with paths into the document as sent (a bare spec's have no ``spec.``)."""
    return TopologyDocumentError(errors={(p if path else p.removeprefix("spec.")): m for p, m in errors.items()})


class _Reading:
    """The semantic step over a spec that passed the schema (types and bounds hold); ``errors`` by path."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.errors: dict[str, list[str]] = {}
        self.region_of: dict[str, str] = {}  # zone -> region
        self.nodes: dict[str, NodeMeta] = {}
        self.named: set[str] = set()
        self._form(spec)
        self._regions(spec.get("regions") or ())
        self._zones(spec.get("zones") or ())
        self._node_list(spec.get("nodes") or ())
        self._maps(spec)
        self._extrema(spec)
        costs = spec.get("costs") or {}
        self.zone_costs = self._costs("spec.costs.zones", costs.get("zones"), set(self.region_of), "zone")
        self.zone_costs.update(self._costs("spec.zoneCosts", spec.get("zoneCosts"), set(self.region_of), "zone"))
        regions = set(self.region_of.values()) - {""}
        self.region_costs = self._costs("spec.costs.regions", costs.get("regions"), regions, "region")
        self.region_costs.update(self._costs("spec.regionCosts", spec.get("regionCosts"), regions, "region"))

    def add(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def _form(self, spec: Mapping[str, Any]) -> None:
        if spec.get("granularity", "Node") != "Node":
            self.add("spec.granularity", "an import reads node-level maps (Node): import the document "
                                         "GET /api/topology/ serves, not the cluster's zone aggregate")
        if "part" in spec:
            self.add("spec.part", "one part of a split topology is not a whole topology: import the whole one")

    def _regions(self, regions: Any) -> None:
        for r, region in enumerate(regions):
            for z, zone in enumerate(region.get("zones") or ()):
                if self.region_of.setdefault(zone, region["name"]) != region["name"]:
                    self.add(f"spec.regions[{r}].zones[{z}]", f"zone {zone!r} is already in region {self.region_of[zone]!r}")

    def _zones(self, zones: Any) -> None:
        for z, entry in enumerate(zones):
            zone, region = entry["name"], entry.get("region") or self.region_of.get(entry["name"], "")
            if self.region_of.get(zone, region) != region:
                self.add(f"spec.zones[{z}].region",
                         f"zone {zone!r} is listed under region {self.region_of[zone]!r} in spec.regions")
            self.region_of[zone] = region
            for i, node in enumerate(entry.get("nodes") or ()):
                if node in self.nodes:
                    self.add(f"spec.zones[{z}].nodes[{i}]", f"node {node!r} is already in zone {self.nodes[node].zone!r}")
                else:
                    self.nodes[node] = NodeMeta(name=node, zone=zone, region=region)

    def _node_list(self, nodes: Any) -> None:
        for i, entry in enumerate(nodes):
            name, zone = entry["name"], entry.get("zone") or ""
            known = self.nodes.get(name)
            if known is None:
                region = entry.get("region") or self.region_of.get(zone, "")
                self.nodes[name] = NodeMeta(name=name, zone=zone, region=region)
                if zone:
                    self.region_of.setdefault(zone, region)
            elif zone and zone != known.zone:
                self.add(f"spec.nodes[{i}].zone", f"node {name!r} is in zone {known.zone!r} in spec.zones")

    def _maps(self, spec: Mapping[str, Any]) -> None:
        """Map keys are node names (YAML would also give numbers or empty keys); set operations, as a
        1,000-node map has a million keys."""
        for metric in METRICS:
            rows = spec.get(metric) or {}
            for src, row in rows.items():
                names = {src, *row}
                bad = {name for name in names if not isinstance(name, str) or not name.strip()}
                for name in bad:
                    where = f"spec.{metric}.{src}" if name == src else f"spec.{metric}.{src}.{name}"
                    self.add(where, f"node names must be non-empty strings, got {short_repr(name)}")
                self.named.update(names - bad - self.nodes.keys())

    def _extrema(self, spec: Mapping[str, Any]) -> None:
        for lo, hi in zip(EXTREMA_KEYS[::2], EXTREMA_KEYS[1::2], strict=True):
            if spec.get(lo) is not None and spec.get(hi) is not None and spec[lo] > spec[hi]:
                self.add(f"spec.{lo}", f"must be <= {hi} ({spec[hi]:g}), got {spec[lo]:g}")

    def _costs(self, path: str, raw: Any, known: set[str], what: str) -> dict[tuple[str, str], float]:
        costs: dict[tuple[str, str], float] = {}
        for a, row in (raw or {}).items():
            for b, cost in row.items():
                unknown = next((name for name in (a, b) if name not in known), None)
                if unknown is not None:
                    self.add(f"{path}.{a}.{b}", f"unknown {what} {unknown!r} (declare it in spec.{what}s)")
                else:
                    costs[(a, b)] = float(cost)
        return costs
