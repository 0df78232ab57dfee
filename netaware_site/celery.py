"""Celery application: Redis broker, tasks autodiscovered from the apps."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

app = Celery("netaware")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
