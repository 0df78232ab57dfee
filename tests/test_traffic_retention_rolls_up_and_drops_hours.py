"""Observed-traffic retention: raw edge samples older than NETAWARE_RAW_RETENTION_HOURS are rolled into
hourly EdgeRollup rows (means, busiest rate, worst p99) and their hourly partition is dropped; a late sample
for an hour already rolled up is merged (counted once); a second run finds nothing to do."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from apps.probes import services as probe_services
from apps.traffic import services
from apps.traffic.edges import Edge, Rates
from apps.traffic.models import EdgeRollup, EdgeSample

pytestmark = pytest.mark.django_db

NOW = datetime(2031, 5, 6, 12, 30, tzinfo=UTC)
OLD_HOUR = datetime(2031, 5, 5, 8, 0, tzinfo=UTC)  # 28 h before NOW: past the 24 h default
E = Edge("shop", "frontend", "shop", "cart")


def store(ts: datetime, rps: float, p99: float = math.nan) -> None:
    probe_services.ensure_partitions(start=ts, tables=(services.EDGE_TABLE,))
    services.store_edges(ts=ts, source="istio", edges={E: Rates(requests=rps, request_bytes=10 * rps,
                                                                 response_bytes=20 * rps, p99=p99)})


def test_old_hours_are_rolled_up_and_their_partitions_dropped():
    store(OLD_HOUR + timedelta(minutes=10), 2.0, 0.05)
    store(OLD_HOUR + timedelta(minutes=20), 4.0, 0.20)
    store(NOW - timedelta(minutes=5), 9.0)  # recent: stays raw
    partition = probe_services.partition_name(services.EDGE_TABLE, OLD_HOUR)
    assert partition in [name for name, _ in probe_services.hourly_partitions(services.EDGE_TABLE)]
    result = services.apply_retention(now=NOW)
    assert result.raw_deleted == 2 and result.partitions_dropped >= 1
    rollup = EdgeRollup.objects.get(bucket=OLD_HOUR)
    assert (rollup.count, rollup.requests_mean, rollup.requests_max) == (2, 3.0, 4.0)
    assert rollup.request_bytes_mean == 30.0 and rollup.p99_max == 0.20
    assert partition not in [name for name, _ in probe_services.hourly_partitions(services.EDGE_TABLE)]
    assert list(EdgeSample.objects.values_list("requests", flat=True)) == [9.0]
    # A late sample for the rolled-up hour lands in the DEFAULT partition and is merged, counted once.
    services.store_edges(ts=OLD_HOUR + timedelta(minutes=50), source="istio", edges={E: Rates(requests=6.0)})
    again = services.apply_retention(now=NOW)
    assert again.raw_deleted == 1
    rollup.refresh_from_db()
    assert (rollup.count, rollup.requests_mean, rollup.requests_max) == (3, 4.0, 6.0)
    assert services.apply_retention(now=NOW).raw_deleted == 0
