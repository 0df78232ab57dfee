"""The OpenAPI schema validates without warnings, and the browsable docs and admin load their assets
from this server (no CDN: clusters are often air-gapped)."""

import re

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert "openapi:" in out.read_text()


def test_swagger_ui_uses_local_assets(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert assets, html[:500]
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200, asset


def test_admin_static_assets_are_served(client):
    response = client.get("/static/admin/css/base.css")
    assert response.status_code == 200
