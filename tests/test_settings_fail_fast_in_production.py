"""Settings come only from the environment; production refuses to start without what it needs.

Each case runs ``manage.py check`` in a fresh process, as a deployment would start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "NETAWARE_ENV": "production",
    "SECRET_KEY": "t9Xq2LrV8mZpK4wN7bYc1HsJ5fGd3QaE6uRo0TkW8yPi2MnB4vCx",  # 52 random-looking chars
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/netaware_lead_check",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "PROMETHEUS_URL": "http://127.0.0.1:9090",
    "ALLOWED_HOSTS": "netaware.example",
}


def check(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NETAWARE_", "SECRET_KEY", "DATABASE_URL",
                                                                      "REDIS_URL", "PROMETHEUS_URL", "ALLOWED_HOSTS"))}
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=60)


def test_complete_production_settings_start():
    result = check(PRODUCTION)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "PROMETHEUS_URL", "ALLOWED_HOSTS"])
def test_missing_production_setting_is_named(missing):
    env = {k: v for k, v in PRODUCTION.items() if k != missing}
    result = check(env)
    assert result.returncode != 0
    assert missing in result.stderr


def test_secret_from_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-" + "k3Yq9ZrW" * 6 + "\n")
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"} | {"SECRET_KEY_FILE": str(secret)}
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    result = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from-a-file-" + "k3Yq9ZrW" * 6


def test_empty_secret_file_counts_as_missing(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("\n")
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"} | {"SECRET_KEY_FILE": str(secret)}
    result = check(env)
    assert result.returncode != 0
    assert "SECRET_KEY_FILE" in result.stderr and "empty" in result.stderr


def test_unreadable_secret_file_is_named(tmp_path):
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"} | {"SECRET_KEY_FILE": str(tmp_path / "nope")}
    result = check(env)
    assert result.returncode != 0
    assert "SECRET_KEY_FILE" in result.stderr


def test_production_requires_authentication_for_api_writes():
    code = ("from django.conf import settings; "
            "print(settings.REQUIRE_AUTH)")
    result = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env={**os.environ, **PRODUCTION})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
