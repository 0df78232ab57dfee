"""What every scoring plugin module provides, and what the pipeline hands it.

Modelled on kubernetes-sigs/scheduler-plugins: each plugin is one module (``plugins/<name>.py``)
with a ``NAME`` constant, typed arguments with defaults (``apis/config/types.go``), validation that
reports field paths (``validation_pluginargs.go``), a factory (``New``) and the extension points it
implements. Here a plugin module exports ``PLUGIN = Plugin(...)``: its arguments are a frozen
dataclass whose fields carry their bounds (``number``, ``flag``, ``choice``), so parsing, defaults,
the list of allowed names and the error paths come from one declaration (``parse_args``).

``Context`` is what one filter or prioritize call hands every plugin: the state, the pod, the
candidates and their topology positions, and ``remember`` for results shared between plugins and
between the filter call and the prioritize call that follows it (the per-state score memo).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from netaware_core.fielderrors import FieldError

from .common import WorkloadRef
from .state import ClusterState, PodInfo


class ProfileError(FieldError):
    """A profile is invalid; ``field_path`` names where (dotted path)."""


# failed (preemption might help), unresolvable (it cannot) — node -> reason
FilterResult = tuple[dict[str, str], dict[str, str]]


def readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def carry_whole(value: Any, keep: np.ndarray) -> Any:
    """Carry rule for a result that does not depend on the candidates (per workload)."""
    return value


def carry_rows(value: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Carry rule for one value per candidate: the survivors' entries."""
    return readonly(value[keep])


@dataclass(eq=False)
class Resolved:
    """What one (pod, candidate tuple) resolves to against one state, shared by filter and
    prioritize through the state's score memo (``state.score_memo``): a pure function of the three,
    so serving it again can never differ from recomputing it. ``results`` holds outcomes and
    intermediate results computed so far; ``carry`` says, per result, how the survivors of a filter
    call inherit it (results without a rule are recomputed)."""

    candidates: tuple[str, ...]
    ref: WorkloadRef | None
    ref_notes: tuple[str, ...]
    positions: np.ndarray  # read-only
    known: np.ndarray  # read-only
    results: dict[Hashable, Any] = field(default_factory=dict)
    carry: dict[Hashable, Callable[[Any, np.ndarray], Any]] = field(default_factory=dict)


@dataclass
class Context:
    """One filter or prioritize call, as every plugin sees it."""

    state: ClusterState
    pod: PodInfo
    candidates: tuple[str, ...]
    ref: WorkloadRef | None
    positions: np.ndarray  # topology position, -1 = not in the topology
    notes: list[str]
    known: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # in topology or state
    resolved: Resolved | None = None  # None: nothing is memoised for this call
    pod_key: tuple[Any, ...] | None = None
    plan_info: dict[str, Any] | None = None  # set by the plan filter, for the decision log

    def remember(self, key: Hashable, compute: Callable[[], Any],
                 carry: Callable[[Any, np.ndarray], Any] | None = None) -> Any:
        """``compute()``, or what it returned before for this state, pod and candidates. ``carry``:
        how the survivors of this filter call inherit the value (``carry_whole``, ``carry_rows``)."""
        if self.resolved is None:
            return compute()
        results = self.resolved.results
        if key in results:
            return results[key]
        value = compute()
        results[key] = value
        if carry is not None:
            self.resolved.carry[key] = carry
        return value

    @property
    def workload(self) -> WorkloadRef:
        """The pod's workload; plugins run only when there is one."""
        assert self.ref is not None
        return self.ref

    @property
    def rows(self) -> np.ndarray:
        """The candidates' rows in the state's usage arrays (read-only)."""
        rows: np.ndarray = self.remember(
            ("rows",), lambda: readonly(self.state.indexes.usage.rows(self.candidates)), carry_rows)
        return rows


@dataclass
class Explanation:
    """What ``engine.explain`` collects for one pod: problems (why scores would be neutral or zero,
    filters unhelpful) and context, each plugin adding its own."""

    problems: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- arguments

def number(default: float, *, low: float | None = None, high: float | None = None, integer: bool = False) -> Any:
    """An argument field: a finite number within [low, high] (``integer``: truncated to int)."""
    return field(default=default, metadata={"kind": "int" if integer else "float", "low": low, "high": high})


def flag(default: bool) -> Any:
    """An argument field: true or false."""
    return field(default=default, metadata={"kind": "bool"})


def choice(default: str, options: tuple[str, ...]) -> Any:
    """An argument field: one of ``options``."""
    return field(default=default, metadata={"kind": "choice", "options": options})


@dataclass(frozen=True)
class NoArgs:
    """Arguments of a plugin that takes none."""


A = TypeVar("A")


def _field_value(f: dataclasses.Field[Any], value: Any, path: str) -> Any:
    """``value`` checked against the field's declaration; the message starts with the field's name
    (the API lists messages under their path, a CLI prints them alone)."""
    meta = f.metadata
    kind = meta.get("kind")
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProfileError(path, f"{f.name}: must be true or false, got {value!r}")
        return value
    if kind == "choice":
        options: tuple[str, ...] = meta["options"]
        if value not in options:
            raise ProfileError(path, f"{f.name}: must be one of {', '.join(options)}, got {str(value)[:40]!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(path, f"{f.name}: must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ProfileError(path, f"{f.name}: must be a finite number, got {value}")
    low, high = meta.get("low"), meta.get("high")
    if low is not None and out < low:
        raise ProfileError(path, f"{f.name}: must be >= {low}, got {out}")
    if high is not None and out > high:
        raise ProfileError(path, f"{f.name}: must be <= {high}, got {out}")
    return int(out) if kind == "int" else out


def parse_args(args_type: type[A], raw: Mapping[str, Any], path: str) -> A:
    """``args_type`` from a profile's argument mapping: defaults for what is missing, every value
    checked against its field's bounds, unknown names rejected; errors name ``path.<field>``.
    Cross-field rules live in the type's ``check(path)`` (raises ProfileError)."""
    if not isinstance(raw, Mapping):
        raise ProfileError(path, "must be a mapping")
    if not raw:  # the common case: every default (valid by construction, cross-field rules included)
        return args_type()
    declared = dataclasses.fields(args_type)  # type: ignore[arg-type]
    values = {f.name: _field_value(f, raw[f.name], f"{path}.{f.name}") for f in declared if f.name in raw}
    unknown = sorted(set(raw) - {f.name for f in declared})
    if unknown:
        allowed = ", ".join(sorted(f.name for f in declared)) or "none"
        raise ProfileError(f"{path}.{unknown[0]}", f"unknown parameter (allowed: {allowed})")
    args = args_type(**values)
    check = getattr(args, "check", None)
    if check is not None:
        check(path)
    return args


# ---------------------------------------------------------------- plugins

@dataclass(frozen=True)
class Plugin(Generic[A]):
    """One scoring plugin: its name, argument type, the extension points it implements (``score``,
    ``filter``: None when it does not) and its own contribution to ``engine.explain``.

    ``unresolvable``: its filter failures cannot be fixed by preempting pods on the node (network
    constraints). ``steering``: its filter narrows candidates but never leaves a pod without a node
    on its own, unless the profile or AppGroup asks for a hard topology mode (``hard_mode``); the first
    map of a steering filter's result holds the rejections that count regardless (``minZones``)."""

    name: str
    args: type[A]
    description: str
    score: Callable[[Context, A], np.ndarray] | None = None
    filter: Callable[[Context, A], FilterResult] | None = None
    explain: Callable[[ClusterState, WorkloadRef, Explanation], None] | None = None
    unresolvable: bool = False
    steering: bool = False
    hard_mode: Callable[[Context, A], bool] | None = None

    @property
    def extension_points(self) -> tuple[str, ...]:
        return tuple(point for point, fn in (("filter", self.filter), ("score", self.score)) if fn is not None)

    def new(self, raw: Mapping[str, Any], path: str) -> A:
        """The factory: this plugin's validated arguments from a profile entry (errors name ``path``)."""
        return parse_args(self.args, raw, path)
