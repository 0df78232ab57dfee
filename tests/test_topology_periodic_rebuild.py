"""The migration seeds a 60 s beat schedule for the rebuild task, and a real worker runs it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.probes.models import PairSample
from apps.topology import services, tasks
from apps.topology.models import TopologySnapshot


@pytest.mark.django_db
def test_migration_seeds_the_rebuild_schedule():
    task = PeriodicTask.objects.get(task="apps.topology.tasks.rebuild_topology")
    assert task.enabled and task.interval.every == 60 and task.interval.period == "seconds"


def test_worker_runs_the_rebuild_task(celery_worker_thread):
    services.upsert_node(name="w1", zone="A", region="r", source="cluster")
    services.upsert_node(name="w2", zone="B", region="r", source="cluster")
    PairSample.objects.create(ts=timezone.now() - timedelta(seconds=5), series="rtt_p90", source="w1",
                              target="w2", value=0.003)
    result = tasks.rebuild_topology.apply_async()
    assert result.get(timeout=30) == 1  # the version it made current
    snapshot = TopologySnapshot.objects.get()
    assert snapshot.node_count == 2 and snapshot.max_latency == 3.0
