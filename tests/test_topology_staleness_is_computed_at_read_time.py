"""Staleness is computed when the topology is read, not when it was rebuilt: once the pipeline
stops, the same stored snapshot turns stale in the API (which the dashboard renders), in the
extender's view (``current_topology``) and in /metrics, without any rebuild. Real PostgreSQL."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.topology import freshness, selectors, services
from apps.topology.models import TopologySnapshot
from tests.support.dashboard_seed import TOPOLOGY


def test_assess_rules():
    now = 1_000_000.0
    common = {"now": now, "created_at": now - 5, "stale_after_seconds": 600.0}
    fresh = freshness.assess(data_until=now - 30, source="measured", flagged_reason="", **common)
    assert fresh == freshness.Freshness(False, "", 30.0)
    old = freshness.assess(data_until=now - 601, source="measured", flagged_reason="", **common)
    assert old.stale and "600 s" in old.reason and "stopped" in old.reason and old.age_seconds == 601.0
    flagged = freshness.assess(data_until=now - 1, source="measured", flagged_reason="metrics pull failed", **common)
    assert flagged.stale and flagged.reason == "metrics pull failed"
    # A user-defined topology is not a measurement: it does not age.
    imported = freshness.assess(data_until=now - 86400, source="imported", flagged_reason="", **common)
    assert not imported.stale and imported.age_seconds == 86400.0
    # No sample time: the snapshot's own age counts; clocks slightly ahead never give a negative age.
    assert freshness.assess(data_until=None, source="measured", flagged_reason="", **common).age_seconds == 5.0
    assert freshness.assess(data_until=now + 3, source="measured", flagged_reason="", **common).age_seconds == 0.0


def _measured_snapshot(*, data_until: datetime) -> TopologySnapshot:
    services.import_topology(document=TOPOLOGY)
    topology = selectors.current_topology()
    return services.store_topology(topology=topology, source="measured", data_until=data_until)


def _metrics(client) -> dict[str, float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return {s.name: s.value for f in text_string_to_metric_families(response.content.decode()) for s in f.samples
            if not s.labels or s.name == "netaware_topology_stale"}


@pytest.mark.django_db
def test_a_stopped_pipeline_turns_the_same_snapshot_stale_everywhere(admin_client, settings):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 2}
    settings.METRICS_TOKEN, settings.METRICS_OPEN_WITHOUT_TOKEN = "", True
    snapshot = _measured_snapshot(data_until=datetime.now(UTC))

    status = admin_client.get("/api/topology/").json()["status"]
    assert status["version"] == snapshot.version
    assert status["stale"] is False and status["staleReason"] == "" and status["ageSeconds"] < 2
    assert selectors.current_topology().stale_reason == ""
    assert _metrics(admin_client)["netaware_topology_stale"] == 0.0

    time.sleep(2.5)  # nothing rebuilds: the pipeline "stopped"

    status = admin_client.get("/api/topology/").json()["status"]
    assert status["version"] == snapshot.version  # the very same snapshot...
    assert status["stale"] is True  # ...is now stale
    assert "pipeline" in status["staleReason"] and status["ageSeconds"] >= 2.5
    assert "pipeline" in selectors.current_topology().stale_reason
    metrics = _metrics(admin_client)
    assert metrics["netaware_topology_stale"] == 1.0
    assert metrics["netaware_topology_age_seconds"] >= 2.5
    assert metrics["netaware_topology_version"] == snapshot.version
    # The stored row was not rewritten: staleness is a property of the read.
    snapshot.refresh_from_db()
    assert snapshot.stale is False


@pytest.mark.django_db
def test_fresh_data_clears_read_time_staleness(admin_client, settings):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 600}
    _measured_snapshot(data_until=datetime.now(UTC) - timedelta(hours=2))
    assert admin_client.get("/api/topology/").json()["status"]["stale"] is True
    topology = selectors.current_topology()
    newer = services.store_topology(topology=topology, source="measured", data_until=datetime.now(UTC))
    status = admin_client.get("/api/topology/").json()["status"]
    assert status["version"] == newer.version and status["stale"] is False
    assert selectors.current_topology().stale_reason == ""


@pytest.mark.django_db
def test_flag_set_by_the_pipeline_still_wins(admin_client):
    _measured_snapshot(data_until=datetime.now(UTC))
    services.mark_stale(reason="metrics pull failed: Prometheus unreachable")
    status = admin_client.get("/api/topology/").json()["status"]
    assert status["stale"] is True and status["staleReason"].startswith("metrics pull failed")


@pytest.mark.django_db
def test_an_imported_topology_does_not_age(admin_client, settings):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 1}
    services.import_topology(document=TOPOLOGY)
    time.sleep(1.5)
    status = admin_client.get("/api/topology/").json()["status"]
    assert status["source"] == "imported" and status["stale"] is False and status["ageSeconds"] >= 1.5
