"""Scheduling profiles: named sets of weighted score plugins and filter plugins, and their documents.

A profile document carries an ``apiVersion`` (as KubeSchedulerConfiguration does) so its format can
change without breaking what is stored or written by hand:

* ``netaware.io/v1`` (current; ``kind: SchedulingProfile``)::

      {"apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "hybrid",
       "plugins": {"filter": [{"name": "min-bandwidth"}, {"name": "plan", "args": {"mode": "zone"}}],
                   "score": [{"name": "network-score", "weight": 3, "args": {"same_node_score": 0.8}}]}}

* ``netaware.io/v1alpha1`` (the first format; a document without ``apiVersion`` is read as this)::

      {"name": "hybrid", "scorers": [{"name": "network-score", "weight": 3, "params": {...}}],
       "filters": ["min-bandwidth", "plan"], "params": {"plan": {"mode": "zone"}}}

``parse_profile`` reads either and names wrong fields in the document's own terms
(``plugins.score[1].args.same_node_score``, or ``scorers[1].params.same_node_score``);
``convert_profile`` rewrites a document to another version (upgrading stored v1alpha1 rows, or
down to v1alpha1 for the SchedulerProfile model's fields). The in-memory ``Profile`` is the same
for both versions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .plugin import Plugin, ProfileError
from .plugins import REGISTRY
from .state import PodInfo

__all__ = [
    "API_VERSIONS",
    "BUILTIN_PROFILES",
    "DEFAULT_PROFILE",
    "KIND",
    "PROFILE_ANNOTATION",
    "V1",
    "V1ALPHA1",
    "ParsedProfile",
    "Profile",
    "ProfileError",
    "choose_profile",
    "convert_profile",
    "parse_profile",
    "profile_to_dict",
    "select_profile",
    "validate_profile",
]

PROFILE_ANNOTATION = "netaware.io/profile"
V1 = "netaware.io/v1"
V1ALPHA1 = "netaware.io/v1alpha1"
API_VERSIONS = (V1, V1ALPHA1)  # newest first
KIND = "SchedulingProfile"


@dataclass(frozen=True)
class ParsedProfile:
    """A validated profile: each entry's plugin and its typed arguments."""

    scorers: tuple[tuple[Plugin[Any], float, Any], ...]  # (plugin, weight, args)
    filters: tuple[tuple[Plugin[Any], Any], ...]  # (plugin, args)


@dataclass(frozen=True)
class Profile:
    """Named set of weighted score plugins and filter plugins (one in-memory form for every version).

    ``scorers``: (plugin name, weight >= 0, args); ``filters``: plugin names; ``params``: per
    filter name, that filter's arguments.
    """

    name: str
    scorers: tuple[tuple[str, float, Mapping[str, Any]], ...]
    filters: tuple[str, ...] = ()
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @cached_property
    def parsed(self) -> ParsedProfile:
        """``validate_profile(self)``, once per (immutable) profile; an invalid one raises every time."""
        return validate_profile(self)


@dataclass(frozen=True)
class _Paths:
    """Where each part of a profile sits in a document of one version (for error field paths)."""

    version: str
    prefix: str = ""

    def scorers(self) -> str:
        return self.prefix + ("plugins.score" if self.version == V1 else "scorers")

    def scorer(self, i: int) -> str:
        return f"{self.scorers()}[{i}]"

    def scorer_args(self, i: int) -> str:
        return self.scorer(i) + (".args" if self.version == V1 else ".params")

    def filter_name(self, i: int) -> str:
        return self.prefix + (f"plugins.filter[{i}].name" if self.version == V1 else f"filters[{i}]")

    def filter_args(self, i: int, name: str) -> str:
        return self.prefix + (f"plugins.filter[{i}].args" if self.version == V1 else f"params.{name}")

    def top(self, name: str) -> str:
        return self.prefix + name


def _names(point: str) -> str:
    return ", ".join(p.name for p in REGISTRY.values() if point in p.extension_points)


def _plugin(name: Any, point: str, path: str) -> Plugin[Any]:
    plugin = REGISTRY.get(name) if isinstance(name, str) else None
    if plugin is None or (plugin.score if point == "score" else plugin.filter) is None:
        what = "scorer" if point == "score" else "filter"
        raise ProfileError(path, f"unknown {what} {name!r} (known: {_names(point)})")
    return plugin


def _reject_non_finite(value: Any, path: str) -> None:
    """JSON like 1e999 parses to inf: name the parameter instead of failing later in arithmetic."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ProfileError(path, f"must be a finite number, got {value}")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _reject_non_finite(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _reject_non_finite(item, f"{path}[{index}]")


def _args(plugin: Plugin[Any], raw: Any, path: str) -> Any:
    if not isinstance(raw, Mapping):
        raise ProfileError(path, "must be a mapping")
    _reject_non_finite(raw, path)
    return plugin.new(raw, path)


def validate_profile(profile: Profile, *, paths: _Paths | None = None) -> ParsedProfile:
    """Check names, weights and arguments (errors name the field in ``paths``' version, v1alpha1
    by default); returns each entry's plugin and typed arguments."""
    at = paths or _Paths(V1ALPHA1)
    if not profile.name:
        raise ProfileError(at.top("name"), "is required")
    if not profile.scorers:
        raise ProfileError(at.scorers(), "a profile needs at least one scorer")
    scorers: list[tuple[Plugin[Any], float, Any]] = []
    total = 0.0
    for i, entry in enumerate(profile.scorers):
        if len(entry) != 3:
            raise ProfileError(at.scorer(i), "must be (name, weight, params)")
        name, weight, raw = entry
        plugin = _plugin(name, "score", f"{at.scorer(i)}.name")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight < math.inf:
            raise ProfileError(f"{at.scorer(i)}.weight", f"must be a finite number >= 0, got {str(weight)[:40]}")
        total += float(weight)
        scorers.append((plugin, float(weight), _args(plugin, raw, at.scorer_args(i))))
    if total <= 0:
        raise ProfileError(at.scorers(), "at least one scorer needs a weight > 0")
    plugins = [_plugin(name, "filter", at.filter_name(i)) for i, name in enumerate(profile.filters)]
    for name, raw in profile.params.items():
        if name not in profile.filters:
            raise ProfileError(at.top(f"params.{name}"), "parameters for a filter the profile does not use")
        if not isinstance(raw, Mapping):
            raise ProfileError(at.top(f"params.{name}"), "must be a mapping")
    filters = tuple((plugin, _args(plugin, profile.params.get(plugin.name, {}), at.filter_args(i, plugin.name)))
                    for i, plugin in enumerate(plugins))
    return ParsedProfile(tuple(scorers), filters)


# ---------------------------------------------------------------- documents

def _version_of(data: Mapping[str, Any], prefix: str) -> str:
    version = data.get("apiVersion", V1ALPHA1)
    if version not in API_VERSIONS:
        raise ProfileError(f"{prefix}apiVersion", f"unknown version {str(version)[:60]!r} "
                                                  f"(known: {', '.join(API_VERSIONS)})")
    if version == V1 and data.get("kind", KIND) != KIND:
        raise ProfileError(f"{prefix}kind", f"must be {KIND}, got {str(data.get('kind'))[:40]!r}")
    return str(version)


def _from_v1alpha1(data: Mapping[str, Any], at: _Paths) -> Profile:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(at.top("name"), "is required")
    raw_scorers = data.get("scorers")
    if not isinstance(raw_scorers, list):
        raise ProfileError(at.top("scorers"), "must be a list")
    scorers = []
    for i, raw in enumerate(raw_scorers):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise ProfileError(f"{at.scorer(i)}.name", "is required")
        scorers.append((raw["name"], raw.get("weight", 1.0), raw.get("params") or {}))
    filters = data.get("filters") or []
    if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
        raise ProfileError(at.top("filters"), "must be a list of filter names")
    params = data.get("params") or {}
    if not isinstance(params, Mapping):
        raise ProfileError(at.top("params"), "must be a mapping")
    return Profile(name, tuple(scorers), tuple(filters), dict(params))


def _entries(plugins: Mapping[str, Any], point: str, at: _Paths) -> list[Mapping[str, Any]]:
    raw = plugins.get(point, [])
    path = at.top(f"plugins.{point}")
    if not isinstance(raw, list):
        raise ProfileError(path, "must be a list")
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ProfileError(f"{path}[{i}].name", "is required")
        unknown = sorted(set(entry) - ({"name", "weight", "args"} if point == "score" else {"name", "args"}))
        if unknown:
            raise ProfileError(f"{path}[{i}].{unknown[0]}", "unknown field")
    return raw


def _from_v1(data: Mapping[str, Any], at: _Paths) -> Profile:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(at.top("name"), "is required")
    unknown = sorted(set(data) - {"apiVersion", "kind", "name", "plugins"})
    if unknown:
        raise ProfileError(at.top(unknown[0]), "unknown field (v1 has apiVersion, kind, name, plugins)")
    plugins = data.get("plugins")
    if not isinstance(plugins, Mapping):
        raise ProfileError(at.top("plugins"), "must be a mapping with score (and filter) lists")
    extra = sorted(set(plugins) - {"score", "filter"})
    if extra:
        raise ProfileError(at.top(f"plugins.{extra[0]}"), "unknown extension point (known: filter, score)")
    score = _entries(plugins, "score", at)
    filters = _entries(plugins, "filter", at)
    seen: dict[str, int] = {}
    params: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(filters):
        if entry["name"] in seen:
            raise ProfileError(at.filter_name(i), f"listed twice (also plugins.filter[{seen[entry['name']]}])")
        seen[entry["name"]] = i
        if "args" in entry:
            params[entry["name"]] = entry["args"]
    return Profile(name, tuple((e["name"], e.get("weight", 1.0), e.get("args") or {}) for e in score),
                   tuple(e["name"] for e in filters), params)


def parse_profile(data: Mapping[str, Any], *, prefix: str = "") -> Profile:
    """A Profile from a document of any known version (no ``apiVersion``: v1alpha1); raises
    ProfileError naming the field as that document spells it (``prefix`` in front, e.g.
    ``profiles[0].`` for one document of a list)."""
    if not isinstance(data, Mapping):
        raise ProfileError(prefix.rstrip(".") or "(profile)", "must be a mapping")
    version = _version_of(data, prefix)
    at = _Paths(version, prefix)
    profile = _from_v1(data, at) if version == V1 else _from_v1alpha1(data, at)
    validate_profile(profile, paths=at)
    return profile


def profile_to_dict(profile: Profile, *, api_version: str = V1) -> dict[str, Any]:
    """The profile's document in ``api_version`` (v1 by default)."""
    if api_version == V1ALPHA1:
        return {
            "apiVersion": V1ALPHA1,
            "name": profile.name,
            "scorers": [{"name": n, "weight": w, "params": dict(p)} for n, w, p in profile.scorers],
            "filters": list(profile.filters),
            "params": {k: dict(v) for k, v in profile.params.items()},
        }
    if api_version != V1:
        raise ProfileError("apiVersion", f"unknown version {api_version!r} (known: {', '.join(API_VERSIONS)})")
    return {
        "apiVersion": V1,
        "kind": KIND,
        "name": profile.name,
        "plugins": {
            "filter": [{"name": n, **({"args": dict(profile.params[n])} if n in profile.params else {})}
                       for n in profile.filters],
            "score": [{"name": n, "weight": w, **({"args": dict(p)} if p else {})} for n, w, p in profile.scorers],
        },
    }


def convert_profile(data: Mapping[str, Any], *, to: str = V1) -> dict[str, Any]:
    """A profile document rewritten in version ``to`` (validated on the way; errors name the field
    of the document given)."""
    return profile_to_dict(parse_profile(data), api_version=to)


# ---------------------------------------------------------------- built-in profiles and choice

BUILTIN_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("network", (("network-score", 1.0, {}),), ("min-bandwidth", "plan")),
        Profile("network-noplan", (("network-score", 1.0, {}),), ("min-bandwidth",)),
        Profile("network-overhead", (("network-overhead", 1.0, {}),), ("network-overhead",)),
        Profile("load-aware", (("water-level", 1.0, {}), ("load-variation-risk", 1.0, {})), ("overload",)),
        Profile("hybrid", (("network-score", 3.0, {}), ("water-level", 1.0, {})),
                ("min-bandwidth", "overload", "plan")),
        Profile("hybrid-noplan", (("network-score", 3.0, {}), ("water-level", 1.0, {})),
                ("min-bandwidth", "overload")),
        Profile(
            "balanced",
            (("network-score", 2.0, {}), ("network-overhead", 1.0, {}), ("water-level", 1.0, {}),
             ("load-variation-risk", 1.0, {}), ("bandwidth-risk", 1.0, {})),
            ("network-overhead", "min-bandwidth", "bandwidth-risk", "overload"),
        ),
    )
}
DEFAULT_PROFILE = "network"


def choose_profile(pod: PodInfo, profiles: Mapping[str, Profile] | None = None,
                   default: str = DEFAULT_PROFILE) -> tuple[str, Profile, str]:
    """(name, profile, note): the profile the pod's ``netaware.io/profile`` annotation names, else
    the default (the built-in default when that is missing too); the note says why a named one
    was not used. The extender, its decision log and diagnose all choose here."""
    available = profiles or BUILTIN_PROFILES
    wanted = pod.annotations.get(PROFILE_ANNOTATION, "")
    if wanted and wanted in available:
        return wanted, available[wanted], ""
    name = default if default in available else DEFAULT_PROFILE
    note = f"annotation {PROFILE_ANNOTATION}={wanted!r} names no profile; the default {name!r} is used" if wanted else ""
    return name, available.get(name) or BUILTIN_PROFILES[DEFAULT_PROFILE], note


def select_profile(pod: PodInfo, profiles: Mapping[str, Profile] | None = None,
                   default: str = DEFAULT_PROFILE) -> Profile:
    """The profile the pod's ``netaware.io/profile`` annotation names, else the default."""
    return choose_profile(pod, profiles, default)[1]
