"""Topological orders of an AppGroup's dependency graph, as the scheduler-plugins AppGroup controller
computes them for the TopologicalSort QueueSort plugin (pkg/networkaware/util in scheduler-plugins).

The controller's algorithms are reproduced step for step:

* KahnSort keeps the zero-in-degree vertices on a *stack* (LIFO), pops one, releases its children
  in their declared order, and appends the popped vertex to the order.
* TarjanSort is the depth-first variant: visit children in declared order, place each finished
  vertex at the end of the still-free part of the output.
* ReverseX is X reversed; AlternateX interleaves X from both ends: [0, n-1, 1, n-2, ...].

Go iterates its maps in random order; we iterate vertices in *declaration order* (workloads as
declared, then any dependency target not itself declared), which makes every result deterministic
and equal to the controller's whenever its result does not depend on map order (e.g. a single root).

Cycles (the controller returns an error and no order) are handled without failing:

* Kahn: the vertices it could order come first; the rest (those on or behind a cycle) follow in
  declaration order.
* Tarjan: an edge back into the vertex path being explored is ignored, so the output is a valid
  order of the graph with those back edges removed.

The result carries ``cyclic=True`` and the vertices involved so callers can report it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

ALGORITHMS: tuple[str, ...] = (
    "KahnSort",
    "TarjanSort",
    "ReverseKahn",
    "ReverseTarjan",
    "AlternateKahn",
    "AlternateTarjan",
)
DEFAULT_ALGORITHM = "KahnSort"


@dataclass(frozen=True)
class TopologicalOrder:
    order: tuple[str, ...]
    algorithm: str
    cyclic: bool = False
    # Vertices that could not be ordered by the strict algorithm (on or behind a cycle), sorted.
    cycle_nodes: tuple[str, ...] = ()

    def index(self) -> dict[str, int]:
        """1-based position of each vertex (the ``index`` of the AppGroup status topologyOrder)."""
        return {name: position + 1 for position, name in enumerate(self.order)}


Graph = Mapping[str, Sequence[str]]


def normalize_tree(tree: Graph) -> dict[str, tuple[str, ...]]:
    """Every vertex as a key (children that are not keys become leaves), in declaration order."""
    normalized: dict[str, tuple[str, ...]] = {}
    for node, children in tree.items():
        normalized[node] = tuple(children)
    for children in tree.values():
        for child in children:
            if child not in normalized:
                normalized[child] = ()
    return normalized


def _kahn(tree: Graph) -> tuple[list[str], tuple[str, ...]]:
    graph = normalize_tree(tree)
    in_degree: dict[str, int] = dict.fromkeys(graph, 0)
    for children in graph.values():
        for child in children:
            in_degree[child] += 1
    stack: list[str] = []
    for node in graph:
        if in_degree[node] == 0:
            stack.append(node)
            in_degree[node] = -1
    ordered: list[str] = []
    while stack:
        node = stack.pop()
        for child in graph[node]:
            in_degree[child] -= 1
            if in_degree[child] == 0:
                stack.append(child)
                in_degree[child] = -1
        ordered.append(node)
    if len(ordered) == len(graph):
        return ordered, ()
    placed = set(ordered)
    remaining = [node for node in graph if node not in placed]
    return ordered + remaining, tuple(sorted(remaining))


def _tarjan(tree: Graph) -> tuple[list[str], tuple[str, ...]]:
    graph = normalize_tree(tree)
    output: list[str] = [""] * len(graph)
    free = len(graph)
    visited: set[str] = set()
    on_path: set[str] = set()
    cycle_nodes: set[str] = set()

    # Iterative DFS (no recursion limit on long chains): frames of (node, next child index).
    for root in graph:
        if root in visited:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        on_path.add(root)
        while stack:
            node, child_index = stack[-1]
            children = graph[node]
            if child_index < len(children):
                stack[-1] = (node, child_index + 1)
                child = children[child_index]
                if child in on_path:
                    # Back edge: the controller fails here ("found cycle at node"); we skip it.
                    cycle_nodes.add(child)
                    cycle_nodes.update(name for name, _ in stack[[n for n, _ in stack].index(child) :])
                    continue
                if child in visited:
                    continue
                on_path.add(child)
                stack.append((child, 0))
                continue
            stack.pop()
            on_path.discard(node)
            visited.add(node)
            free -= 1
            output[free] = node
    return output, tuple(sorted(cycle_nodes))


def _reverse(order: list[str]) -> list[str]:
    return order[::-1]


def _alternate(order: list[str]) -> list[str]:
    result: list[str] = []
    j = 0
    for i in range(len(order)):
        if i % 2 == 0:
            result.append(order[j])
            j += 1
        else:
            result.append(order[len(order) - j])
    return result


_BASE: dict[str, Callable[[Graph], tuple[list[str], tuple[str, ...]]]] = {"Kahn": _kahn, "Tarjan": _tarjan}


def topological_order(tree: Graph, algorithm: str = DEFAULT_ALGORITHM) -> TopologicalOrder:
    """Order the vertices of ``tree`` (vertex -> children in declared order) with ``algorithm``.

    Unknown algorithm names fall back to KahnSort, as the controller's ``default`` branch does.
    """
    name = algorithm if algorithm in ALGORITHMS else DEFAULT_ALGORITHM
    if name in ("KahnSort", "TarjanSort"):
        order, cycle = _BASE[name[: -len("Sort")]](tree)
    else:
        base = "Kahn" if name.endswith("Kahn") else "Tarjan"
        order, cycle = _BASE[base](tree)
        order = _reverse(order) if name.startswith("Reverse") else _alternate(order)
    return TopologicalOrder(order=tuple(order), algorithm=name, cyclic=bool(cycle), cycle_nodes=cycle)


def dependency_tree(workloads: Sequence[tuple[str, Sequence[str]]]) -> dict[str, tuple[str, ...]]:
    """The controller's tree (workload -> its dependencies), keeping workloads without edges.

    The controller only adds workloads that have dependencies (and their targets); isolated
    workloads would get no index there. We keep them, as roots, in declaration order.
    """
    return {name: tuple(targets) for name, targets in workloads}
