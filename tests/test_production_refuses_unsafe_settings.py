"""Production start-up refuses placeholder or short secrets, placeholder database passwords and a
wildcard ALLOWED_HOSTS, naming the setting; ``manage.py check --deploy`` is clean with production
settings. Each case starts ``manage.py`` in a fresh process, as a deployment would."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from netaware_core.env import PLACEHOLDER_MARKERS

ROOT = Path(__file__).resolve().parent.parent
def _strong_key() -> str:
    """A random key without a placeholder marker in any case ("dEv" too: the check lowercases)."""
    while True:
        key = secrets.token_urlsafe(64)
        if not any(marker in key.lower() for marker in PLACEHOLDER_MARKERS):
            return key


STRONG_KEY = _strong_key()
PRODUCTION = {
    "NETAWARE_ENV": "production",
    "SECRET_KEY": STRONG_KEY,
    "DATABASE_URL": "postgres://netaware:" + secrets.token_urlsafe(24) + "@db.internal:5432/netaware",
    "REDIS_URL": "redis://127.0.0.1:6379/3",
    "PROMETHEUS_URL": "http://127.0.0.1:9090",
    "ALLOWED_HOSTS": "netaware.example.com",
}
SETTING_PREFIXES = ("NETAWARE_", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "PROMETHEUS_URL", "ALLOWED_HOSTS",
                    "DEBUG")


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(SETTING_PREFIXES)}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def refused(env: dict[str, str]) -> str:
    """``manage.py check`` under ``env`` fails at start-up; its stderr (which must say why)."""
    result = manage("check", env=env)
    assert result.returncode != 0
    return result.stderr


def test_strong_production_settings_start():
    result = manage("check", env=PRODUCTION)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "key",
    [
        "change-me",
        "change-me-to-a-long-random-string-for-production-use-only",  # long, but the shipped example
        "dev-insecure-netaware-secret-key-change-me",  # our development default
        "django-insecure-" + "x" * 50,
        "short-but-random-9f2Kq",
        "Q7mZ" * 10,  # 40 characters
    ],
)
def test_placeholder_or_short_secret_key_is_refused(key):
    stderr = refused(PRODUCTION | {"SECRET_KEY": key})
    assert "SECRET_KEY" in stderr
    if len(key) > len("change-me"):  # the message names the setting (and the marker), never the secret
        assert key not in stderr


def test_placeholder_secret_key_from_a_file_is_refused(tmp_path):
    secret = tmp_path / "secret_key"
    secret.write_text("change-me-to-a-long-random-string-for-production-use-only\n")  # the old shipped example
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"} | {"SECRET_KEY_FILE": str(secret)}
    stderr = refused(env)
    assert "SECRET_KEY" in stderr and "placeholder" in stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgres://netaware:netaware@postgres:5432/netaware",  # the old shipped Secret
        "postgres://app:password@db:5432/netaware",
        "postgres://app:change-me-please@db:5432/netaware",
        "postgres://postgres:postgres@db:5432/netaware",
    ],
)
def test_placeholder_database_password_is_refused(url):
    stderr = refused(PRODUCTION | {"DATABASE_URL": url})
    assert "DATABASE_URL" in stderr and "placeholder" in stderr


def test_database_url_without_password_is_accepted():
    # Peer, trust or client-certificate authentication carry no password at all.
    result = manage("check", env=PRODUCTION | {"DATABASE_URL": "postgres://netaware@db.internal:5432/netaware"})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("hosts", ["*", "netaware.example.com,*", " * "])
def test_wildcard_allowed_hosts_is_refused(hosts):
    stderr = refused(PRODUCTION | {"ALLOWED_HOSTS": hosts})
    assert "ALLOWED_HOSTS" in stderr and "'*'" in stderr


def test_short_metrics_token_is_refused():
    stderr = refused(PRODUCTION | {"NETAWARE_METRICS_TOKEN": "metrics"})
    assert "NETAWARE_METRICS_TOKEN" in stderr


def test_development_keeps_its_defaults():
    result = manage("check", env={"SECRET_KEY": "change-me", "ALLOWED_HOSTS": "*"})
    assert result.returncode == 0, result.stderr


def test_check_deploy_is_clean_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr


def test_check_deploy_flags_a_disabled_redirect():
    # Proves the previous test can fail: turning the redirect off is reported, not hidden.
    result = manage("check", "--deploy", "--fail-level", "WARNING",
                    env=PRODUCTION | {"NETAWARE_SECURE_SSL_REDIRECT": "false"})
    assert result.returncode != 0
    assert "security.W008" in result.stdout + result.stderr
