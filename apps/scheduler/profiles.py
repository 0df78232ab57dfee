"""Bridge between SchedulerProfile rows (admin/API/JSON) and the scoring engine's ``Profile``.

The engine owns the registry of scorers and filters and their parameter parsing; this module only
turns its ``ProfileError`` (a dotted field path) into Django/DRF field errors.
"""

from __future__ import annotations

from typing import Any

from .scoring import engine


def _as_document(name: str, scorers: Any, filters: Any, params: Any) -> dict[str, Any]:
    return {"name": name or "profile", "scorers": scorers, "filters": filters, "params": params}


def validate_profile_fields(*, scorers: Any, filters: Any, params: Any) -> dict[str, list[str]]:
    """Field errors ({"scorers": ["scorers[0].name: unknown scorer ..."]}), empty when valid."""
    if filters is None:
        filters = []
    if params is None:
        params = {}
    try:
        engine.parse_profile(_as_document("profile", scorers, filters, params))
    except engine.ProfileError as exc:
        top = exc.field.split(".")[0].split("[")[0]
        if top not in ("scorers", "filters", "params"):
            top = "non_field_errors"
        return {top: [str(exc)]}
    return {}


def compile_profile(row: Any) -> engine.Profile:
    """An engine Profile from a SchedulerProfile (or selectors.ProfileRow); ValueError if invalid."""
    return engine.parse_profile(_as_document(row.name, list(row.scorers), list(row.filters), dict(row.params)))


def builtin_profiles() -> dict[str, engine.Profile]:
    return dict(engine.BUILTIN_PROFILES)


def builtin_default_name() -> str:
    return engine.DEFAULT_PROFILE


def builtin_documents() -> list[dict[str, Any]]:
    """The engine's built-in profiles as SchedulerProfile field values (for the data migration)."""
    return [
        {**engine.profile_to_dict(profile), "is_default": name == engine.DEFAULT_PROFILE}
        for name, profile in engine.BUILTIN_PROFILES.items()
    ]
