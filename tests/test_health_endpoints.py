"""/healthz answers while the process lives; /readyz names every dependency it checked."""

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_is_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_unreachable_prometheus(client, settings):
    settings.PROMETHEUS_URL = "http://127.0.0.1:1"  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["redis"] == "ok"
    assert body["checks"]["prometheus"].startswith("prometheus:")


def test_readyz_ok_with_real_prometheus(client, settings, prometheus_factory):
    running = prometheus_factory({"global": {"scrape_interval": "15s"}, "scrape_configs": []})
    settings.PROMETHEUS_URL = running.url
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "ok"


def test_schema_is_served(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi" in response.content
