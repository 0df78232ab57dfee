"""Every model change has its migration: a deploy runs ``migrate``, never ``makemigrations``."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_makemigrations_finds_nothing_to_write():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"models and migrations disagree (exit {exc.code}):\n{out.getvalue()}")
