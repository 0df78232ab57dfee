"""After collectstatic, pages reference content-hashed assets that WhiteNoise serves gzip-compressed
and cacheable for a year; plotly (the cartesian partial bundle, not the 4.8 MB full one) is loaded
only by pages that draw charts."""

from __future__ import annotations

import gzip
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

CHART_PAGES = ("/", "/decisions/", "/evaluation/", "/links/a1/b1/", "/appgroups/new")
PLAIN_PAGES = ("/placements/", "/appgroups/", "/diagnose/", "/account/")


def test_plotly_only_on_pages_with_charts(client):
    for path in CHART_PAGES:
        assert re.search(r"plotly-cartesian-4\.1\.1\.min(\.[0-9a-f]{12})?\.js", client.get(path).content.decode()), path
    for path in PLAIN_PAGES:
        body = client.get(path).content.decode()
        assert "plotly" not in body.lower(), path


def test_collected_assets_are_hashed_gzipped_and_immutable(tmp_path, client):
    with override_settings(STATIC_ROOT=tmp_path, WHITENOISE_USE_FINDERS=False):
        # override_settings resets the static storage (django.test.signals).
        call_command("collectstatic", interactive=False, verbosity=0)
        page = Client()  # a new client: a new handler, so WhiteNoise reads the collected files
        page.force_login(get_user_model().objects.get(username="test-admin"))
        html = page.get("/").content.decode()
        # (the topology page loads plotly lazily, for its zone graph, from the URL in data-plotly)
        urls = re.findall(r'(?:src|href|data-plotly)="(/static/[^"]+)"', html)
        plotly = next(u for u in urls if "plotly-cartesian" in u)
        assert re.search(r"plotly-cartesian-4\.1\.1\.min\.[0-9a-f]{12}\.js$", plotly), plotly
        for url in urls:
            response = page.get(url, HTTP_ACCEPT_ENCODING="gzip")
            assert response.status_code == 200, url
            assert response["Content-Encoding"] == "gzip", url
            assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"], url
        body = b"".join(page.get(plotly, HTTP_ACCEPT_ENCODING="gzip").streaming_content)
        assert len(body) < 600_000 < len(gzip.decompress(body)) < 1_600_000  # partial bundle, compressed
