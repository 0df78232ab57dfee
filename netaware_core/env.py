"""Settings from environment variables only (Healthchecks style).

Every value may also come from ``NAME_FILE`` (Docker/Kubernetes secrets). In production
(``NETAWARE_ENV=production``) a missing required setting stops start-up at once instead of
falling back to a development default.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

PRODUCTION = os.environ.get("NETAWARE_ENV", "development").strip().lower() == "production"

_UNSET = object()
_N = TypeVar("_N", int, float)


def env(name: str, default: object = _UNSET, *, required_in_production: bool = False) -> str:
    """Read ``name`` or the file named by ``name_FILE``; fail fast when required."""
    file_path = os.environ.get(f"{name}_FILE")
    value: str | None = None
    if file_path:
        try:
            value = Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
        if value:
            return value
        # An empty secret file is as good as a missing one: fall through to the fail-fast rules.
        if PRODUCTION and required_in_production:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} is empty")
    value = os.environ.get(name)
    if value is not None and value != "":
        return value
    if PRODUCTION and required_in_production:
        raise ImproperlyConfigured(f"{name} (or {name}_FILE) must be set when NETAWARE_ENV=production")
    if default is _UNSET:
        raise ImproperlyConfigured(f"{name} (or {name}_FILE) must be set")
    return str(default)


def env_bool(name: str, default: bool) -> bool:
    raw = env(name, "1" if default else "0").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def _env_number(name: str, default: _N, parse: Callable[[str], _N], what: str) -> _N:
    raw = env(name, str(default))
    try:
        return parse(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}") from exc


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


# --- production safety checks ------------------------------------------------------------------
# Values that ship in examples, tutorials and our own development defaults: a production process
# that starts with one of them is running with a secret everybody knows.
PLACEHOLDER_MARKERS = ("change-me", "changeme", "insecure", "dev")
PLACEHOLDER_PASSWORDS = frozenset(
    {"netaware", "postgres", "password", "passw0rd", "secret", "example", "admin", "root", "test", "changeme",
     "change-me", "123456", "redis"}
)
MIN_SECRET_KEY_LENGTH = 50
MIN_TOKEN_LENGTH = 32


def check_secret(name: str, value: str, *, min_length: int) -> None:
    """Refuse a short or placeholder secret, naming the setting (never echoing the value)."""
    lowered = value.lower()
    marker = next((m for m in PLACEHOLDER_MARKERS if m in lowered), None)
    if marker is not None:
        raise ImproperlyConfigured(
            f"{name} looks like a placeholder (it contains {marker!r}); generate a random one, e.g. "
            f"python -c 'import secrets; print(secrets.token_urlsafe(64))'"
        )
    if len(value) < min_length:
        raise ImproperlyConfigured(
            f"{name} is {len(value)} characters long; production needs at least {min_length} random characters"
        )


def check_database_url(name: str, url: str) -> None:
    """Refuse a database URL whose password is a well-known placeholder (or equals the user name).

    A URL without a password (peer/trust/certificate authentication) is accepted.
    """
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not a valid URL: {exc}") from exc
    if not password:
        return
    lowered = password.lower()
    if lowered in PLACEHOLDER_PASSWORDS or lowered == user.lower() or any(
        m in lowered for m in ("change-me", "changeme", "placeholder")
    ):
        raise ImproperlyConfigured(
            f"{name} carries a placeholder database password; set a generated one (see docs/deploy.md)"
        )


def check_allowed_hosts(name: str, hosts: list[str]) -> None:
    if not hosts:
        raise ImproperlyConfigured(f"{name} must be set when NETAWARE_ENV=production")
    if "*" in hosts:
        raise ImproperlyConfigured(
            f"{name} contains '*': list the host names the site is served under (comma-separated)"
        )
