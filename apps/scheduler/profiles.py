"""Bridge between SchedulerProfile rows (admin/API/JSON) and the scoring engine's ``Profile``.

A SchedulerProfile row keeps the fields of a ``netaware.io/v1alpha1`` profile document (``scorers``,
``filters``, ``params``); every way in reads the row, or a document of any version, through the
engine's versioned reader (``engine.parse_profile``) and its conversion path (``engine.convert_profile``),
and answers with the current version's document (``document_of``). This module only adapts: the engine
owns the registry, the arguments and their validation, and its ``ProfileError`` (a field path) becomes
Django/DRF field errors here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .scoring import engine

# The SchedulerProfile fields that hold a profile (a v1alpha1 document's, beside its name).
STORED_FIELDS = ("scorers", "filters", "params")


def _as_document(name: str, scorers: Any, filters: Any, params: Any) -> dict[str, Any]:
    return {"apiVersion": engine.V1ALPHA1, "name": name or "profile", "scorers": scorers, "filters": filters,
            "params": params}


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
    return {top if top in STORED_FIELDS else "non_field_errors": [str(error)]}


def is_document(data: Any) -> bool:
    """Whether API input is a versioned profile document (it names its ``apiVersion``)."""
    return isinstance(data, Mapping) and "apiVersion" in data


def stored_fields(document: Mapping[str, Any]) -> dict[str, Any]:
    """``name``, ``scorers``, ``filters``, ``params`` for a SchedulerProfile from a profile document of any
    version (converted to v1alpha1); raises ``engine.ProfileError`` naming the document's field."""
    fields = engine.convert_profile(document, to=engine.V1ALPHA1)
    return {key: fields[key] for key in ("name", *STORED_FIELDS)}


def compile_profile(row: Any) -> engine.Profile:
    """An engine Profile from a SchedulerProfile (or selectors.ProfileRow); ValueError if invalid."""
    return engine.parse_profile(_as_document(row.name, list(row.scorers), list(row.filters), dict(row.params)))


def document_of(row: Any, *, api_version: str = engine.V1) -> dict[str, Any] | None:
    """The row's profile as a document of ``api_version`` (None when the row is invalid)."""
    try:
        return engine.profile_to_dict(compile_profile(row), api_version=api_version)
    except engine.ProfileError:
        return None


def builtin_profiles() -> dict[str, engine.Profile]:
    return dict(engine.BUILTIN_PROFILES)


def builtin_default_name() -> str:
    return engine.DEFAULT_PROFILE


def builtin_documents() -> list[dict[str, Any]]:
    """The engine's built-in profiles as SchedulerProfile field values (for the data migrations)."""
    return [
        {**engine.profile_to_dict(profile, api_version=engine.V1ALPHA1), "is_default": name == engine.DEFAULT_PROFILE}
        for name, profile in engine.BUILTIN_PROFILES.items()
    ]
