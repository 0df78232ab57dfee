"""A directed graph drawn as SVG on the server (framework-free): callers left, callees right, one column
per depth. The AppGroup page and the observed-traffic page use it instead of a plotly figure, so they
need no chart library (≈ 0.5 MB less to load and parse, the graph is in the first paint) and every edge
is a link a keyboard reaches, named with its figures, to its row in the page's table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

COLUMN = 190  # px between columns
ROW = 64  # px between rows of a column
MARGIN_X = 80
MARGIN_Y = 36
MIN_WIDTH = 1.5  # stroke of the lightest edge, px
MAX_WIDTH = 10.0  # stroke of the heaviest edge
TONES = {"fast": "#15803d", "medium": "#c2410c", "slow": "#b91c1c", "unknown": "#64748b", "plain": "#64748b"}


@dataclass(frozen=True)
class GraphNode:
    name: str
    size: float = 0.5  # 0..1: the radius grows with its square root
    title: str = ""  # hover text (the name when empty)


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    width: float  # 0..1 of the heaviest edge: the stroke grows with its square root
    tone: str  # a key of TONES: the colour (latency class, or plain)
    title: str  # hover text and accessible name: the edge's figures
    href: str = ""  # where the edge links (its table row)


def columns(names: Sequence[str], edges: Sequence[GraphEdge]) -> dict[str, int]:
    """Each node's depth: the longest path of calls reaching it. Nodes are taken in a topological
    order (Kahn; on a cycle the remaining node with fewest unplaced callers next), and an edge against
    that order does not push depth, so the layout terminates on any graph."""
    known = set(names)
    callers: dict[str, set[str]] = {n: set() for n in names}
    callees: dict[str, list[str]] = {n: [] for n in names}
    for e in edges:
        if e.source in known and e.target in known and e.source != e.target:
            callers[e.target].add(e.source)
            callees[e.source].append(e.target)
    rank = {n: i for i, n in enumerate(names)}
    waiting = {n: len(c) for n, c in callers.items()}
    placed: list[str] = []
    left = set(names)
    while left:
        ready = [n for n in left if waiting[n] == 0]
        node = min(ready, key=rank.__getitem__) if ready else min(left, key=lambda n: (waiting[n], rank[n]))
        left.discard(node)
        placed.append(node)
        for target in callees[node]:
            waiting[target] -= 1
    index = {n: i for i, n in enumerate(placed)}
    depth = dict.fromkeys(names, 0)
    for node in placed:
        for target in callees[node]:
            if index[target] > index[node]:
                depth[target] = max(depth[target], depth[node] + 1)
    return depth


def draw(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], *, label: str) -> str:
    """The SVG markup (every text escaped). ``label`` names the figure for assistive technology."""
    names = [n.name for n in nodes]
    depth = columns(names, edges)
    by_column: dict[int, list[str]] = {}
    for name in names:
        by_column.setdefault(depth[name], []).append(name)
    tallest = max((len(v) for v in by_column.values()), default=1)
    width = 2 * MARGIN_X + COLUMN * max(by_column, default=0)
    height = 2 * MARGIN_Y + ROW * (tallest - 1)
    pos: dict[str, tuple[float, float]] = {}
    for col, members in by_column.items():
        top = MARGIN_Y + ROW * (tallest - len(members)) / 2
        for row, name in enumerate(members):
            pos[name] = (MARGIN_X + COLUMN * col, top + ROW * row)
    radius = {n.name: 6 + 10 * math.sqrt(min(max(n.size, 0.0), 1.0)) for n in nodes}
    out = [f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="group" aria-label="{escape(label)}">',
           "<defs>" + "".join(
               f'<marker id="arrow-{tone}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" markerHeight="5" '
               f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
               for tone, colour in TONES.items()) + "</defs>"]
    for e in sorted(edges, key=lambda e: -e.width):  # heavy edges below, thin ones stay visible on top
        if e.source not in pos or e.target not in pos or e.source == e.target:
            continue
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        r0, r1 = radius[e.source], radius[e.target]
        stroke = MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * math.sqrt(min(max(e.width, 0.0), 1.0))
        tone = e.tone if e.tone in TONES else "unknown"
        if x1 > x0:  # forward: a smooth S from the caller's right to the callee's left
            sx, ex = x0 + r0, x1 - r1 - 3
            bend = (ex - sx) / 2
            path = f"M{sx:.1f},{y0:.1f} C{sx + bend:.1f},{y0:.1f} {ex - bend:.1f},{y1:.1f} {ex:.1f},{y1:.1f}"
        else:  # same column or backwards (a cycle): an arc bulging to the right
            sx, ex = x0 + r0, x1 + r1 + 3
            reach = 40 + abs(y1 - y0) / 3
            path = (f"M{sx:.1f},{y0:.1f} C{max(sx, ex) + reach:.1f},{y0:.1f} "
                    f"{max(sx, ex) + reach:.1f},{y1:.1f} {ex:.1f},{y1:.1f}")
        title = escape(e.title)
        opener = f'<a href="{escape(e.href)}" aria-label="{title}">' if e.href else f'<g aria-label="{title}">'
        out.append(f'{opener}<g class="edge tone-{tone}" data-source="{escape(e.source)}" '
                   f'data-target="{escape(e.target)}" data-width="{stroke:.1f}"><title>{title}</title>'
                   f'<path d="{path}" fill="none" stroke="{TONES[tone]}" stroke-width="{stroke:.1f}" '
                   f'stroke-opacity="0.8" marker-end="url(#arrow-{tone})"/></g>{"</a>" if e.href else "</g>"}')
    for n in nodes:
        x, y = pos[n.name]
        title = escape(n.title or n.name)
        out.append(f'<g class="node" data-name="{escape(n.name)}"><title>{title}</title>'
                   f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius[n.name]:.1f}" fill="#dbeafe" stroke="#1e3a8a"/>'
                   f'<text x="{x:.1f}" y="{y - radius[n.name] - 4:.1f}" text-anchor="middle" font-size="12" '
                   f'fill="#1d2430">{escape(n.name)}</text></g>')
    out.append("</svg>")
    return "".join(out)
