"""Can one pod match two label selectors? (pure; no Django)

Two AppGroups of a namespace whose workload selectors can match the same pod make the pod's
workload ambiguous: the scheduler takes the first AppGroup by name and the other one silently
loses the pod. Selector pairs are checked by satisfiability, key by key (matchLabels,
In/NotIn/Exists/DoesNotExist), for pods that carry no AppGroup pin label (a pin label names the
AppGroup explicitly, so pinned pods are never ambiguous). A witness label set is returned to show
the user which pod would be claimed twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .graph import LabelSelector

PIN_LABELS = ("netaware.io/appgroup", "appgroup.diktyo.x-k8s.io")


@dataclass
class _Key:
    present: bool | None = None  # True: must exist, False: must not, None: either
    allowed: set[str] | None = None  # None: any value
    excluded: set[str] = field(default_factory=set)
    conflict: bool = False

    def require(self, present: bool) -> None:
        if self.present is not None and self.present != present:
            self.conflict = True
        self.present = present

    def allow(self, values: Iterable[str]) -> None:
        values = set(values)
        self.allowed = values if self.allowed is None else self.allowed & values
        self.require(True)

    def witness(self) -> str | None:
        """A value satisfying every constraint, None for "absent"; raises ValueError if none."""
        if self.conflict:
            raise ValueError
        if self.present is False:
            if self.allowed is not None:
                raise ValueError
            return None
        if self.allowed is not None:
            left = sorted(self.allowed - self.excluded)
            if not left:
                raise ValueError
            return left[0]
        if self.present:
            n = 0
            while f"x{n}" in self.excluded:
                n += 1
            return f"x{n}"
        return None


def _constrain(keys: dict[str, _Key], selector: LabelSelector) -> None:
    for key, value in selector.match_labels.items():
        keys.setdefault(key, _Key()).allow([value])
    for key, operator, values in selector.match_expressions:
        entry = keys.setdefault(key, _Key())
        if operator == "In":
            entry.allow(values)
        elif operator == "NotIn":
            entry.excluded |= set(values)
        elif operator == "Exists":
            entry.require(True)
        elif operator == "DoesNotExist":
            entry.require(False)


def common_pod(a: LabelSelector, b: LabelSelector, *, pinned_labels: Iterable[str] = PIN_LABELS) -> dict[str, str] | None:
    """Labels of an unpinned pod both selectors match, or None when no such pod can exist."""
    if not (a.match_labels or a.match_expressions) or not (b.match_labels or b.match_expressions):
        return None  # an empty selector matches nothing (LabelSelector.matches)
    keys: dict[str, _Key] = {}
    _constrain(keys, a)
    _constrain(keys, b)
    for label in pinned_labels:
        keys.setdefault(label, _Key()).require(False)
    labels: dict[str, str] = {}
    try:
        for key, entry in keys.items():
            value = entry.witness()
            if value is not None:
                labels[key] = value
    except ValueError:
        return None
    return labels if a.matches(labels) and b.matches(labels) else None


@dataclass(frozen=True)
class Overlap:
    workload: str  # of the AppGroup being checked
    other_appgroup: str  # "namespace/name"
    other_workload: str
    example: Mapping[str, str]


def overlaps(workloads: Iterable[tuple[str, LabelSelector]],
             others: Iterable[tuple[str, str, LabelSelector]]) -> list[Overlap]:
    """Every (workload, other AppGroup's workload) pair that can claim the same unpinned pod."""
    others = list(others)
    found = []
    for name, selector in workloads:
        for group, other_name, other_selector in others:
            example = common_pod(selector, other_selector)
            if example is not None:
                found.append(Overlap(name, group, other_name, example))
    return found
