"""Bridge between SchedulerProfile rows (admin/API/JSON) and the scoring engine's ``Profile``.

The engine owns the registry of scorers and filters and their parameter parsing; this module only
turns its ``ProfileError`` (a dotted field path) into Django/DRF field errors.
"""

from __future__ import annotations

from typing import Any

from .scoring import engine


def _as_document(name: str, scorers: Any, filters: Any, params: Any) -> dict[str, Any]:
    return {"name": name or "profile", "scorers": scorers, "filters": filters, "params": params}


def profile_error(*, scorers: Any, filters: Any, params: Any) -> engine.ProfileError | None:
    """The engine's verdict on these fields: None when valid, else the error naming its path."""
    document = _as_document("profile", scorers, [] if filters is None else filters, {} if params is None else params)
    try:
        engine.parse_profile(document)
    except engine.ProfileError as exc:
        return exc
    return None


def validate_profile_fields(*, scorers: Any, filters: Any, params: Any) -> dict[str, list[str]]:
    """Model field errors ({"scorers": ["scorers[0].name: unknown scorer ..."]}), empty when valid."""
    error = profile_error(scorers=scorers, filters=filters, params=params)
    if error is None:
        return {}
    top = error.field_path.split(".")[0].split("[")[0]
    return {top if top in ("scorers", "filters", "params") else "non_field_errors": [str(error)]}


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
        {**engine.profile_to_dict(profile, api_version=engine.V1ALPHA1), "is_default": name == engine.DEFAULT_PROFILE}
        for name, profile in engine.BUILTIN_PROFILES.items()
    ]
