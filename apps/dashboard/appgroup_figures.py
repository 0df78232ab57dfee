"""Reads for the AppGroup dashboard pages: the communication-graph figure and placement scores.

Scores come from the scheduler's own code (the evaluation harness's ``network_scores_at``, i.e.
the extender's vectorized Algorithm 2) on the ClusterState the extender builds from the database
(``apps.scheduler.selectors.build_cluster_state``), so the page shows what the scheduler sees.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apps.appgroups.graph import AppGroupSpec
from apps.appgroups.models import AppGroup, Placement
from apps.scheduler.evaluation.adapter import network_scores_at
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.selectors import build_cluster_state
from apps.topology.models import Node
from apps.topology.selectors import current_snapshot
from netaware_core import quantity

from . import graph_svg

MAX_EDGE_TEXT = 12


def _layers(spec: AppGroupSpec, order: Sequence[str]) -> dict[str, int]:
    """Depth of each workload along its dependencies (callers left, callees right); edges that go
    against ``order`` (cycles) do not push depth, so the layout always terminates."""
    index = {name: i for i, name in enumerate(order)}
    depth = {w.name: 0 for w in spec.workloads}
    for name in order:
        workload = spec.workload(name)
        for dep in workload.dependencies:
            if dep.target in depth and index.get(dep.target, -1) > index[name]:
                depth[dep.target] = max(depth[dep.target], depth[name] + 1)
    return depth


def graph_figure(spec: AppGroupSpec, order: Sequence[str]) -> dict[str, Any]:
    """Plotly figure dict: workloads as nodes sized by weight, dependencies as arrows labelled with
    their latency/bandwidth/loss sensitivities (and maxNetworkCost / minBandwidth when set)."""

    depth = _layers(spec, order)
    columns: dict[int, list[str]] = {}
    for name in order:
        columns.setdefault(depth[name], []).append(name)
    pos: dict[str, tuple[float, float]] = {}
    for col, names in columns.items():
        for row, name in enumerate(names):
            pos[name] = (float(col), (len(names) - 1) / 2.0 - row)
    max_weight = max((w.weight for w in spec.workloads), default=1.0) or 1.0
    annotations: list[dict[str, Any]] = []
    label_x: list[float] = []
    label_y: list[float] = []
    label_text: list[str] = []
    for workload in spec.workloads:
        for dep in workload.dependencies:
            if dep.target not in pos:
                continue
            (x0, y0), (x1, y1) = pos[workload.name], pos[dep.target]
            annotations.append({
                "x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                "showarrow": True, "arrowhead": 3, "arrowsize": 1.2, "arrowwidth": 1.2, "arrowcolor": "#94a3b8",
                "standoff": 14, "startstandoff": 14, "text": "",
            })
            s = dep.sensitivity
            text = f"L{s.latency:g} B{s.bandwidth:g} X{s.lossrate:g}"
            extras = []
            if dep.max_network_cost is not None:
                extras.append(f"maxCost {dep.max_network_cost:g}")
            if dep.min_bandwidth_bps is not None:
                extras.append(f"minBW {quantity.format_bytes(dep.min_bandwidth_bps)}")
            if dep.weight != 1.0:
                extras.append(f"edge weight {dep.weight:g}")
            label_x.append(x0 + (x1 - x0) * 0.55)
            label_y.append(y0 + (y1 - y0) * 0.55)
            label_text.append(f"{workload.name} → {dep.target}<br>{text}" + (f"<br>{', '.join(extras)}" if extras else ""))
    names = [w.name for w in spec.workloads]
    nodes = {
        "type": "scatter", "mode": "markers+text", "name": "workloads",
        "x": [pos[n][0] for n in names], "y": [pos[n][1] for n in names],
        "text": names, "textposition": "top center",
        "customdata": [[w.weight, len(w.dependencies), order.index(w.name) + 1 if w.name in order else 0]
                       for w in spec.workloads],
        "hovertemplate": "<b>%{text}</b><br>weight %{customdata[0]}<br>%{customdata[1]} dependencies"
                         "<br>order #%{customdata[2]}<extra></extra>",
        "marker": {"size": [14 + 30 * math.sqrt(max(w.weight, 0.0) / max_weight) for w in spec.workloads],
                   "color": [w.weight for w in spec.workloads], "colorscale": [[0, "#dbeafe"], [1, "#1e40af"]], "cmin": 0,
                   "line": {"color": "#1e3a8a", "width": 1}, "showscale": True,
                   "colorbar": {"title": {"text": "weight"}, "thickness": 12}},
    }
    edge_labels = {
        "type": "scatter", "mode": "markers", "name": "dependencies", "x": label_x, "y": label_y,
        "text": label_text, "hovertemplate": "%{text}<extra></extra>",
        "marker": {"size": 9, "color": "#64748b", "symbol": "circle"},
    }
    # Text on every edge is unreadable on dense graphs: there the dots carry the labels on hover
    # (and the order table beside the graph lists every sensitivity).
    edge_text = {
        "type": "scatter", "mode": "text", "visible": len(label_text) <= MAX_EDGE_TEXT, "name": "sensitivities", "x": label_x, "y": label_y,
        "text": [t.split("<br>", 1)[1] for t in label_text], "textposition": "bottom center",
        "textfont": {"size": 9, "color": "#475569"}, "hoverinfo": "skip",
    }
    height = max(360, 80 * max((len(v) for v in columns.values()), default=1))
    return {
        "data": [edge_text, edge_labels, nodes],
        "layout": {
            "annotations": annotations, "showlegend": False, "height": height,
            "margin": {"l": 20, "r": 20, "t": 20, "b": 20},
            "xaxis": {"visible": False, "range": [-0.5, max(columns, default=0) + 0.5]},
            "yaxis": {"visible": False},
            "hovermode": "closest", "plot_bgcolor": "#ffffff",
        },
    }


def dependency_text(source: str, dep: Any) -> str:
    """One dependency in words: the graph's hover text and its edge's accessible name."""
    s = dep.sensitivity
    parts = [f"latency {s.latency:g}", f"bandwidth {s.bandwidth:g}", f"loss {s.lossrate:g}"]
    if dep.max_network_cost is not None:
        parts.append(f"maxCost {dep.max_network_cost:g}")
    if dep.min_bandwidth_bps is not None:
        parts.append(f"minBW {quantity.format_bytes(dep.min_bandwidth_bps)}")
    parts.append(f"edge weight {dep.weight:g}")
    return f"{source} → {dep.target}: " + ", ".join(parts)


def graph_svg_markup(spec: AppGroupSpec, order: Sequence[str]) -> str:
    """The communication graph as server-drawn SVG (no chart library on the page): nodes sized by
    workload weight, edges as wide as their weight against the heaviest, each linking to its caller's
    row of the order table."""
    max_weight = max((w.weight for w in spec.workloads), default=1.0) or 1.0
    max_edge = max((d.weight for w in spec.workloads for d in w.dependencies), default=1.0) or 1.0
    names = list(order) + [w.name for w in spec.workloads if w.name not in order]
    return graph_svg.draw(
        [graph_svg.GraphNode(n, spec.workload(n).weight / max_weight,
                             f"{n}: weight {spec.workload(n).weight:g}, {len(spec.workload(n).dependencies)} dependencies")
         for n in names],
        [graph_svg.GraphEdge(w.name, d.target, d.weight / max_edge, "plain", dependency_text(w.name, d),
                             f"#workload-{w.name}") for w in spec.workloads for d in w.dependencies],
        label=f"Communication graph of {spec.namespace}/{spec.name}; the order table below lists the same dependencies")


@dataclass(frozen=True)
class PodScore:
    pod: str
    workload: str
    node: str
    zone: str
    score: float | None  # 0..100, None = cannot be scored (see note)
    note: str = ""
    bound_at: Any = None
    source: str = ""


@dataclass(frozen=True)
class PlacementScores:
    pods: tuple[PodScore, ...]
    workload_scores: dict[str, float] = field(default_factory=dict)  # mean over the workload's pods
    average: float | None = None  # weight-averaged over scored workloads (the evaluation's metric)
    pods_per_zone: dict[str, int] = field(default_factory=dict)
    problem: str = ""  # why nothing could be scored (no topology, state unavailable)
    topology_version: int | None = None


def placement_scores(*, appgroup: AppGroup, spec: AppGroupSpec) -> PlacementScores:
    """Each placed pod's network score (0..100) at its node given every other placement."""
    rows = list(
        Placement.objects.filter(appgroup=appgroup)
        .select_related("workload")
        .order_by("workload__position", "pod_namespace", "pod_name")
    )
    zones = dict(Node.objects.filter(name__in={p.node_name for p in rows}).values_list("name", "zone"))
    per_zone: dict[str, int] = {}
    for p in rows:
        zone = zones.get(p.node_name, "") or "(unknown)"
        per_zone[zone] = per_zone.get(zone, 0) + 1
    snapshot = current_snapshot()
    if not rows:
        return PlacementScores(pods=(), pods_per_zone=per_zone,
                               topology_version=snapshot.version if snapshot else None)
    problem = ""
    if snapshot is None:
        problem = "No NetworkTopology yet: placements cannot be scored."
    state = None
    if not problem:
        try:
            state = build_cluster_state()
        except Exception as exc:  # the page must still render the placements
            problem = f"Could not build the scheduler's ClusterState: {type(exc).__name__}: {exc}"
    pods: list[PodScore] = []
    for p in rows:
        score: float | None = None
        note = problem
        if state is not None:
            if p.node_name not in state.topology.index:
                note = "node not in the topology"
            else:
                try:
                    values = network_scores_at(state, spec, p.workload.name, [p.node_name])
                except KeyError:
                    values, note = None, "workload not in the scheduler's view yet"
                if values is None:
                    note = note or "no placed dependency or dependent to score against"
                else:
                    score = float(np.asarray(values)[0])
        pods.append(PodScore(pod=f"{p.pod_namespace}/{p.pod_name}", workload=p.workload.name, node=p.node_name,
                             zone=zones.get(p.node_name, ""), score=score, note=note, bound_at=p.bound_at,
                             source=p.source))
    workload_scores: dict[str, float] = {}
    average: float | None = None
    if state is not None:
        metrics = network_metrics(state, [spec])
        workload_scores = {k: float(v) for k, v in metrics.per_workload.items()}
        average = None if metrics.average != metrics.average else float(metrics.average)
    return PlacementScores(pods=tuple(pods), workload_scores=workload_scores, average=average,
                           pods_per_zone=per_zone, problem=problem,
                           topology_version=snapshot.version if snapshot else None)
