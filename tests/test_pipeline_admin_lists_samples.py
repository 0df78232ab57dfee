"""Every probes model has a working admin changelist (with filters and search); samples are read-only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib import admin

from apps.probes.models import NodeRollup, NodeSample, PairRollup, PairSample, PullWatermark, WindowDigest

pytestmark = pytest.mark.django_db

MODELS = (PairSample, NodeSample, PairRollup, NodeRollup, PullWatermark, WindowDigest)


def test_changelists_render_with_search_and_filters(admin_client):
    ts = datetime(2030, 1, 1, tzinfo=UTC)
    PairSample.objects.create(ts=ts, series="rtt_p90", source="n1", target="n2", value=0.001)
    NodeSample.objects.create(ts=ts, series="cpu_utilization", node="n1", value=0.3)
    PairRollup.objects.create(bucket=ts, series="rtt_p90", source="n1", target="n2", count=1, minimum=1,
                              maximum=1, mean=1)
    NodeRollup.objects.create(bucket=ts, series="cpu_utilization", node="n1", count=1, minimum=1, maximum=1, mean=1)
    PullWatermark.objects.create(query="pair:rtt_p90", last_end=ts)
    WindowDigest.objects.create(series="rtt_p90", ts=ts, pair_count=1, digest=42)
    for model in MODELS:
        assert model in admin.site._registry
        url = f"/admin/probes/{model._meta.model_name}/"
        response = admin_client.get(url, {"q": "rtt" if model in (PullWatermark, WindowDigest) else "n1"})
        assert response.status_code == 200, url
        assert response.context["cl"].result_count == 1, url  # the search matched the one row
    assert admin_client.get("/admin/probes/pairsample/", {"series__exact": "rtt_p90"}).status_code == 200


def test_samples_cannot_be_added_or_changed(admin_client):
    assert admin_client.get("/admin/probes/pairsample/add/").status_code == 403
    sample = PairSample.objects.create(ts=datetime(2030, 1, 1, tzinfo=UTC), series="loss_ratio", source="a",
                                       target="b", value=0.1)
    response = admin_client.post(f"/admin/probes/pairsample/{sample.pk}/change/", {"value": "0.9"})
    assert response.status_code == 403
    sample.refresh_from_db()
    assert sample.value == 0.1
