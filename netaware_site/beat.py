"""Celery beat scheduler with a liveness heartbeat (``--scheduler netaware_site.beat:HeartbeatScheduler``).

django-celery-beat's DatabaseScheduler, plus a heartbeat file touched at the start of every tick:
a beat whose loop hangs (e.g. on a database that stopped answering) stops beating and the kubelet
restarts it (netaware_core/heartbeat.py).
"""

from __future__ import annotations

from typing import Any

from django_celery_beat.schedulers import DatabaseScheduler

from netaware_core import heartbeat


class HeartbeatScheduler(DatabaseScheduler):
    def tick(self, *args: Any, **kwargs: Any) -> float:
        heartbeat.touch("beat")
        return super().tick(*args, **kwargs)
