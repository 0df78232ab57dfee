"""Raw samples live in hourly partitions: retention rolls a whole old partition up and drops it in one
transaction (every sample counted once, even when a drop fails part-way), and rows written before their
hour had a partition are moved into it when it is made."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from django.db import connection

from apps.probes import services
from apps.probes.models import NodeRollup, NodeSample, PairRollup, PairSample
from tests.support.isolation import database_url

NOW = datetime(2030, 6, 1, 12, 30, tzinfo=UTC)
PAIR, NODE = services.PAIR_TABLE, services.NODE_TABLE


@pytest.fixture
def retention(settings):
    settings.NETAWARE = {**settings.NETAWARE, "RAW_RETENTION_HOURS": 2, "ROLLUP_RETENTION_DAYS": 3,
                         "RETENTION_LOCK_TIMEOUT_SECONDS": 0.5}
    return settings


def _store(hour: int, minute: int, value: float) -> None:
    ts = datetime(2030, 6, 1, hour, minute, tzinfo=UTC)
    services.store_window(ts=ts, pairs={"rtt_p90": (["a", "b"], ["b", "a"], np.array([value, 2 * value]))},
                          nodes={"cpu_utilization": (["a"], np.array([value]))})


def _partitions(table: str) -> list[str]:
    """This test's partitions (those of 2030; other tests' partitions of today may exist: DDL outlives a
    transactional test's table flush)."""
    return [name for name, hour in services.hourly_partitions(table) if hour.year == 2030]


@pytest.mark.django_db(transaction=True)
def test_old_partitions_are_rolled_up_and_dropped_exactly_once(retention) -> None:
    # partitions other transactional tests made (DDL outlives their table flush; they are empty) would
    # be old at this test's NOW: drop them so the counts below are this test's own
    with connection.cursor() as cursor:
        for table in (PAIR, NODE):
            for name, _hour in services.hourly_partitions(table):
                cursor.execute(f'DROP TABLE "{name}"')
    for hour in (9, 10, 11):
        for minute, value in ((0, 0.001), (30, 0.003)):
            _store(hour, minute, value)
    # a row written around the pipeline, for an hour without a partition, lands in the default one ...
    PairSample.objects.create(ts=datetime(2030, 6, 1, 8, 15, tzinfo=UTC), series="rtt_p90", source="a",
                              target="b", value=0.005)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {PAIR}_default")
        assert cursor.fetchone()[0] == 1
    # ... and moves into its partition when that is made
    assert services.ensure_partitions(start=datetime(2030, 6, 1, 8, 15, tzinfo=UTC)) == 2
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {PAIR}_default")
        assert cursor.fetchone()[0] == 0
        cursor.execute(f'SELECT count(*) FROM "{PAIR}_p2030060108"')
        assert cursor.fetchone()[0] == 1
    assert _partitions(PAIR) == [f"{PAIR}_p20300601{h:02d}" for h in (8, 9, 10, 11)]

    # A reader holding the 09:00 partition makes its drop time out: that partition's roll-up is rolled
    # back with it, the 08:00 one goes through.
    holder = psycopg.connect(database_url(connection.settings_dict))
    holder.execute(f'LOCK TABLE "{PAIR}_p2030060109" IN ACCESS SHARE MODE')
    try:
        first = services.apply_retention(now=NOW)
    finally:
        holder.rollback()
        holder.close()
    assert first.partitions_busy == 1
    assert f"{PAIR}_p2030060109" in _partitions(PAIR) and f"{PAIR}_p2030060108" not in _partitions(PAIR)
    assert list(PairRollup.objects.values_list("bucket", flat=True).distinct()) == [
        datetime(2030, 6, 1, 8, tzinfo=UTC)]

    second = services.apply_retention(now=NOW)
    assert second.partitions_busy == 0
    # cutoff = floor_hour(12:30 - 2 h) = 10:00: 08:00 and 09:00 are gone from both tables
    assert _partitions(PAIR)[:2] == [f"{PAIR}_p2030060110", f"{PAIR}_p2030060111"]
    assert _partitions(NODE)[:2] == [f"{NODE}_p2030060110", f"{NODE}_p2030060111"]
    # ahead: partitions up to two hours after now exist
    assert f"{PAIR}_p2030060114" in _partitions(PAIR)
    # pair and node partitions of 08:00 and 09:00; the busy pair partition of 09:00 went second
    assert (first.partitions_dropped, second.partitions_dropped) == (3, 1)
    rollups = {(b.hour, s, t): (c, lo, hi, m) for b, s, t, c, lo, hi, m in PairRollup.objects.values_list(
        "bucket", "source", "target", "count", "minimum", "maximum", "mean")}
    assert rollups[(8, "a", "b")] == (1, 0.005, 0.005, 0.005)
    assert rollups[(9, "a", "b")] == (2, 0.001, 0.003, pytest.approx(0.002))
    assert rollups[(9, "b", "a")] == (2, 0.002, 0.006, pytest.approx(0.004))
    node = NodeRollup.objects.get()
    assert (node.bucket.hour, node.count, node.minimum, node.maximum) == (9, 2, 0.001, 0.003)
    assert set(PairSample.objects.values_list("ts__hour", flat=True)) == {10, 11}
    assert set(NodeSample.objects.values_list("ts__hour", flat=True)) == {10, 11}

    again = services.apply_retention(now=NOW)
    assert (again.partitions_dropped, again.pair_rollups, again.raw_deleted) == (0, 0, 0)
