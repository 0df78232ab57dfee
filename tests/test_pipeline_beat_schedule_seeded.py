"""After migrate, django-celery-beat holds the pipeline's periodic tasks; the seed is idempotent and reversible."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as global_apps
from django_celery_beat.models import PeriodicTask

from netaware_site.celery import app

pytestmark = pytest.mark.django_db

seed_migration = importlib.import_module("apps.probes.migrations.0003_seed_pipeline_schedules")
NAMES = ("Pull metrics from Prometheus", "Apply metrics retention")


def _rows() -> dict[str, tuple[str, int, str]]:
    return {
        task.name: (task.task, task.interval.every, task.interval.period)
        for task in PeriodicTask.objects.filter(name__in=NAMES).select_related("interval")
    }


def test_schedules_exist_after_migrate(settings):
    rows = _rows()
    assert rows["Pull metrics from Prometheus"][0] == "apps.probes.tasks.pull_metrics"
    window = settings.NETAWARE["PULL_WINDOW_SECONDS"]
    assert rows["Pull metrics from Prometheus"][1:] == (max(1, window // 2), "seconds")
    assert rows["Apply metrics retention"] == ("apps.probes.tasks.apply_retention", 1, "hours")
    # The names beat will send are tasks the worker knows.
    app.loader.import_default_modules()
    for task_name, _, _ in rows.values():
        assert task_name in app.tasks


def test_seed_is_idempotent_and_reversible():
    before = _rows()
    seed_migration.seed(global_apps, None)
    seed_migration.seed(global_apps, None)
    assert _rows() == before and PeriodicTask.objects.filter(name__in=NAMES).count() == 2
    seed_migration.unseed(global_apps, None)
    assert _rows() == {}
    seed_migration.seed(global_apps, None)
    assert _rows() == before
