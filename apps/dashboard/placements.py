"""The placements map: regions > zones > nodes > pods, network scores per pod, workload and
AppGroup, and the node-to-node links that dependent pods use, coloured by the link's quality.

Scores come from the scheduler's own code (the evaluation harness's ``network_scores_at`` on the
ClusterState the extender builds), so the map shows what the scheduler sees.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max

from apps.appgroups.models import AppGroup, Placement
from apps.appgroups.selectors import appgroup_spec, appgroups_with_graph
from apps.scheduler.evaluation.adapter import network_scores_at
from apps.scheduler.selectors import build_cluster_state
from apps.topology.models import Node

from .selectors import CACHE_SECONDS, _head, _identity, freshness, version_key

MAX_LINKS = 1500  # lines drawn at once; the busiest are kept, the rest are counted


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 3)


def placements_map() -> tuple[str, dict[str, Any]]:
    snapshot, _newest = _head()
    placed = Placement.objects.aggregate(n=Count("id"), changed=Max("updated_at"))
    groups = AppGroup.objects.aggregate(n=Count("id"), changed=Max("updated_at"))
    nodes = Node.objects.aggregate(n=Count("id"), changed=Max("updated_at"))
    key = version_key("placements", _identity(snapshot) if snapshot else None,
                      placed["n"], placed["changed"], groups["n"], groups["changed"], nodes["n"], nodes["changed"])
    data = cache.get("dashboard:" + key)
    if data is None:
        data = _placements_map()
        cache.set("dashboard:" + key, data, CACHE_SECONDS)
    fresh = freshness(snapshot) if snapshot is not None else {"stale": False, "staleReason": "", "dataUntil": None}
    return key + ("s" if fresh["stale"] else ""), {**data, **fresh}


def _placements_map() -> dict[str, Any]:
    problem = ""
    try:
        state = build_cluster_state()
    except Exception as exc:  # the map still shows where pods are
        state, problem = None, f"scores unavailable: {type(exc).__name__}: {exc}"
    topology = state.topology if state is not None else None
    node_rows = list(Node.objects.order_by("region", "zone", "name").values_list("name", "zone", "region", "ready"))
    known = {name for name, *_ in node_rows}
    rows = list(Placement.objects.select_related("appgroup", "workload")
                .order_by("appgroup__namespace", "appgroup__name", "workload__position", "pod_namespace", "pod_name")
                .values_list("pod_namespace", "pod_name", "node_name", "appgroup_id", "workload__name", "bound_at"))
    for _ns, _name, node, *_rest in rows:
        if node not in known:
            node_rows.append((node, "", "", True))
            known.add(node)
    group_objs = {g.pk: g for g in appgroups_with_graph()}
    specs = {pk: appgroup_spec(appgroup=g) for pk, g in group_objs.items()}

    node_index = {name: i for i, (name, *_rest) in enumerate(node_rows)}
    pods: list[dict[str, Any]] = []
    by_workload: dict[tuple[int, str], list[int]] = {}
    i: int | None  # a pod's row below; a topology index (or unknown) at the links
    j: int | None
    for ns, name, node, group_id, workload, bound_at in rows:
        by_workload.setdefault((group_id, workload), []).append(len(pods))
        pods.append({"pod": f"{ns}/{name}", "node": node_index[node], "group": group_id, "workload": workload,
                     "boundAt": bound_at.timestamp() if bound_at else None, "score": None})

    groups_out = []
    for pk, spec in specs.items():
        workloads_out: list[dict[str, Any]] = []
        weighted, weights = 0.0, 0.0
        for w in spec.workloads:
            members = by_workload.get((pk, w.name), [])
            score = None
            if members and state is not None:
                nodes = [node_rows[pods[i]["node"]][0] for i in members]
                try:
                    values = network_scores_at(state, spec, w.name, nodes)
                except KeyError:
                    values = None
                if values is not None:
                    values = np.asarray(values, dtype=float)
                    for i, v in zip(members, values.tolist(), strict=True):
                        pods[i]["score"] = _clean(v)
                    score = _clean(float(np.mean(values)))
                    if score is not None:
                        weighted += w.weight * score
                        weights += w.weight
            workloads_out.append({"name": w.name, "weight": w.weight, "pods": len(members), "score": score,
                                  "dependsOn": [d.target for d in w.dependencies]})
        groups_out.append({"id": pk, "name": f"{spec.namespace}/{spec.name}", "workloads": workloads_out,
                           "pods": sum(wl["pods"] for wl in workloads_out),
                           "score": round(weighted / weights, 3) if weights > 0 else None})

    # Node-to-node links used by dependent pods (one line per node pair, whatever the dependency).
    links: dict[tuple[int, int], dict[str, Any]] = {}
    for pk, spec in specs.items():
        for w in spec.workloads:
            sources = {pods[i]["node"] for i in by_workload.get((pk, w.name), [])}
            for dep in w.dependencies:
                targets = {pods[i]["node"] for i in by_workload.get((pk, dep.target), [])}
                for a in sources:
                    for b in targets:
                        if a == b:
                            continue
                        link = links.setdefault((a, b), {"from": a, "to": b, "uses": 0, "deps": set()})
                        link["uses"] += 1
                        link["deps"].add(f"{spec.name}: {w.name}→{dep.target}")
    index = topology.index if topology is not None else {}
    link_list = []
    for (a, b), link in links.items():
        i, j = index.get(node_rows[a][0]), index.get(node_rows[b][0])
        lat = bw = loss = None
        inferred = False
        if topology is not None and i is not None and j is not None:
            lat, bw, loss = (_clean(topology.latency_ms[i, j]), _clean(topology.bandwidth_mbps[i, j]),
                             _clean(topology.loss_pct[i, j]))
            inferred = bool(topology.inferred[i, j])
        link_list.append({"from": a, "to": b, "uses": link["uses"], "deps": sorted(link["deps"])[:5],
                          "latency": lat, "bandwidth": bw, "loss": loss, "inferred": inferred})
    link_list.sort(key=lambda x: -x["uses"])
    hidden = max(0, len(link_list) - MAX_LINKS)
    return {
        "nodes": [{"name": n, "zone": z, "region": r, "ready": ready} for n, z, r, ready in node_rows],
        "groups": groups_out, "pods": pods, "links": link_list[:MAX_LINKS], "hiddenLinks": hidden,
        "latencyRange": [_clean(topology.min_latency), _clean(topology.max_latency)] if topology is not None
        and topology.size else [None, None],
        "version": topology.version if topology is not None else None,
        "problem": problem,
    }
