"""The six AppGroup orderings match scheduler-plugins' controller, are valid orders, and survive cycles."""

import itertools
import random

import pytest

from apps.appgroups import toposort

# Online Boutique graph of the scheduler-plugins controller tests, children in this list order.
BOUTIQUE = {
    "P1": ["P2", "P3", "P4", "P6", "P8", "P9", "P10"],
    "P2": ["P11"],
    "P8": ["P2", "P3", "P4", "P5", "P6", "P7"],
    "P9": ["P3"],
}
EDGES = [(src, dst) for src, children in BOUTIQUE.items() for dst in children]
NODES = {f"P{i}" for i in range(1, 12)}


def is_topological(order, edges):
    position = {name: i for i, name in enumerate(order)}
    return all(position[src] < position[dst] for src, dst in edges)


def test_kahn_sort_vector():
    result = toposort.topological_order(BOUTIQUE, "KahnSort")
    assert list(result.order) == ["P1", "P10", "P9", "P8", "P7", "P6", "P5", "P4", "P3", "P2", "P11"]
    assert not result.cyclic


def test_alternate_kahn_vector():
    result = toposort.topological_order(BOUTIQUE, "AlternateKahn")
    assert list(result.order) == ["P1", "P11", "P10", "P2", "P9", "P3", "P8", "P4", "P7", "P5", "P6"]


def test_tarjan_is_depth_first_topological_order():
    result = toposort.topological_order(BOUTIQUE, "TarjanSort")
    assert set(result.order) == NODES and len(result.order) == 11
    assert is_topological(result.order, EDGES)
    # Depth-first from P1 visiting children in declared order: the last finished child comes first.
    assert list(result.order) == ["P1", "P10", "P9", "P8", "P7", "P5", "P6", "P4", "P3", "P2", "P11"]


@pytest.mark.parametrize("base,derived", [("KahnSort", "ReverseKahn"), ("TarjanSort", "ReverseTarjan")])
def test_reverse_is_base_reversed(base, derived):
    assert (
        toposort.topological_order(BOUTIQUE, derived).order
        == toposort.topological_order(BOUTIQUE, base).order[::-1]
    )
    assert is_topological(toposort.topological_order(BOUTIQUE, derived).order[::-1], EDGES)


@pytest.mark.parametrize("base,derived", [("KahnSort", "AlternateKahn"), ("TarjanSort", "AlternateTarjan")])
def test_alternate_interleaves_both_ends(base, derived):
    sorted_ = toposort.topological_order(BOUTIQUE, base).order
    alternate = toposort.topological_order(BOUTIQUE, derived).order
    n = len(sorted_)
    expected = [sorted_[i // 2] if i % 2 == 0 else sorted_[n - (i + 1) // 2] for i in range(n)]
    assert list(alternate) == expected
    assert sorted(alternate) == sorted(sorted_)


def test_every_algorithm_is_deterministic_and_total_on_random_dags():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(1, 30)
        names = [f"w{i}" for i in range(n)]
        tree = {
            name: [names[j] for j in range(i + 1, n) if rng.random() < 0.2] for i, name in enumerate(names)
        }
        rng.shuffle(names)  # declaration order differs from the topological one
        tree = {name: tree[name] for name in names}
        edges = [(s, d) for s, children in tree.items() for d in children]
        for algorithm in ("KahnSort", "TarjanSort"):
            first = toposort.topological_order(tree, algorithm)
            assert first == toposort.topological_order(tree, algorithm)
            assert sorted(first.order) == sorted(names)
            assert is_topological(first.order, edges)
            assert not first.cyclic


def test_unknown_algorithm_falls_back_to_kahn():
    assert toposort.topological_order(BOUTIQUE, "Nope").order == toposort.topological_order(BOUTIQUE, "KahnSort").order


@pytest.mark.parametrize("algorithm", toposort.ALGORITHMS)
def test_cycle_does_not_crash_and_is_flagged(algorithm):
    tree = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    result = toposort.topological_order(tree, algorithm)
    assert sorted(result.order) == ["a", "b", "c", "d", "e"]
    assert result.cyclic
    assert set(result.cycle_nodes) == {"a", "b", "c"}


def test_kahn_cycle_fallback_appends_remaining_in_declaration_order():
    tree = {"x": ["c"], "c": ["b"], "b": ["c"], "y": []}
    result = toposort.topological_order(tree, "KahnSort")
    # x and y are ordered (stack: y popped first), then the cyclic rest as declared: c, b.
    assert list(result.order) == ["y", "x", "c", "b"]
    assert result.cycle_nodes == ("b", "c")


def test_tarjan_cycle_fallback_drops_back_edges_only():
    tree = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": []}
    result = toposort.topological_order(tree, "TarjanSort")
    # Without the back edge c->a the graph is a chain a->b->c->d.
    assert list(result.order) == ["a", "b", "c", "d"]
    assert result.cyclic


def test_index_is_one_based_position():
    result = toposort.topological_order(BOUTIQUE, "KahnSort")
    index = result.index()
    assert index["P1"] == 1 and index["P11"] == 11
    assert sorted(index.values()) == list(range(1, 12))


def test_isolated_workloads_are_kept():
    tree = toposort.dependency_tree([("a", ["b"]), ("b", []), ("lonely", [])])
    for algorithm in toposort.ALGORITHMS:
        assert "lonely" in toposort.topological_order(tree, algorithm).order


def test_all_permutations_of_small_graph_are_valid():
    for perm in itertools.permutations(["a", "b", "c", "d"]):
        base = {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}
        tree = {name: base[name] for name in perm}
        for algorithm in ("KahnSort", "TarjanSort"):
            assert is_topological(
                toposort.topological_order(tree, algorithm).order,
                [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
            )
