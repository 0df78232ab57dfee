"""Retention rolls old raw samples into exact hourly roll-ups, deletes them, and is idempotent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.probes.models import NodeRollup, NodeSample, PairRollup, PairSample, WindowDigest
from apps.probes.services import apply_retention

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 6, 1, 12, 30, tzinfo=UTC)


@pytest.fixture
def retention(settings):
    settings.NETAWARE = {**settings.NETAWARE, "RAW_RETENTION_HOURS": 2, "ROLLUP_RETENTION_DAYS": 3}
    return settings


def _rollups() -> list[tuple]:
    return sorted(PairRollup.objects.values_list("bucket", "series", "source", "target", "count", "minimum",
                                                 "maximum", "mean"))


def test_old_raw_rows_become_hourly_rollups(retention):
    # cutoff = floor_hour(12:30 - 2 h) = 10:00: hour 09:00 is rolled, 10:xx and later stay raw
    old_hour = datetime(2030, 6, 1, 9, 0, tzinfo=UTC)
    values = [0.001, 0.004, 0.002, 0.005]
    for i, value in enumerate(values):
        PairSample.objects.create(ts=old_hour + timedelta(minutes=15 * i), series="rtt_p90", source="a",
                                  target="b", value=value)
        NodeSample.objects.create(ts=old_hour + timedelta(minutes=15 * i), series="cpu_utilization", node="a",
                                  value=value * 100)
    recent = PairSample.objects.create(ts=datetime(2030, 6, 1, 10, 0, tzinfo=UTC), series="rtt_p90",
                                       source="a", target="b", value=0.009)
    for ts in (old_hour, recent.ts):
        WindowDigest.objects.create(series="rtt_p90", ts=ts, pair_count=1, digest=1)

    result = apply_retention(now=NOW)
    assert result.raw_deleted == 8 and result.pair_rollups == 1 and result.node_rollups == 1
    assert _rollups() == [(old_hour, "rtt_p90", "a", "b", 4, 0.001, 0.005, pytest.approx(0.003))]
    node = NodeRollup.objects.get()
    assert (node.count, node.minimum, node.maximum, node.mean) == (4, 0.1, 0.5, pytest.approx(0.3))
    assert list(PairSample.objects.values_list("id", flat=True)) == [recent.id]
    assert not NodeSample.objects.exists()
    assert list(WindowDigest.objects.values_list("ts", flat=True)) == [recent.ts]

    # Idempotent: a second run changes nothing.
    before = _rollups()
    again = apply_retention(now=NOW)
    assert (again.raw_deleted, again.pair_rollups) == (0, 0)
    assert _rollups() == before

    # A late sample for an hour already rolled up merges exactly (count-weighted), then goes too.
    PairSample.objects.create(ts=old_hour + timedelta(minutes=50), series="rtt_p90", source="a", target="b",
                              value=0.008)
    apply_retention(now=NOW)
    assert _rollups() == [(old_hour, "rtt_p90", "a", "b", 5, 0.001, 0.008, pytest.approx(0.004))]


def test_expired_rollups_are_dropped(retention):
    PairRollup.objects.create(bucket=NOW - timedelta(days=4), series="loss_ratio", source="a", target="b",
                              count=1, minimum=0, maximum=0, mean=0)
    kept = PairRollup.objects.create(bucket=NOW - timedelta(days=2), series="loss_ratio", source="a", target="b",
                                     count=1, minimum=0, maximum=0, mean=0)
    NodeRollup.objects.create(bucket=NOW - timedelta(days=5), series="cpu_utilization", node="a", count=1,
                              minimum=0, maximum=0, mean=0)
    result = apply_retention(now=NOW)
    assert result.rollups_deleted == 2
    assert list(PairRollup.objects.values_list("id", flat=True)) == [kept.id]
    assert not NodeRollup.objects.exists()


def test_retention_task_runs_on_celery(retention, celery_worker_thread):
    from apps.probes.tasks import apply_retention as task

    PairSample.objects.create(ts=datetime.now(tz=UTC) - timedelta(hours=5), series="loss_ratio", source="a",
                              target="b", value=0.25)
    summary = task.delay().get(timeout=30)
    assert summary["raw_deleted"] == 1 and summary["pair_rollups"] == 1
    assert PairRollup.objects.get().mean == 0.25
