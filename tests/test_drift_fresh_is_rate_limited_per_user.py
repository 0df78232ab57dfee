"""``GET /api/appgroups/<id>/drift?fresh=true`` plans the AppGroup in the request (about a second of CPU), so
one user may ask it only NETAWARE_DRIFT_FRESH_PER_MINUTE times a minute: then 429 with Retry-After. The
stored report (no ``fresh``) is a row read and never limited, and another user keeps their own allowance."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.support.browser import make_user


def _limit() -> int:
    return int(django_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["drift-fresh"].split("/")[0])


@pytest.mark.django_db
def test_fresh_drift_is_refused_with_429_past_the_per_user_rate_and_stored_reads_are_not():
    first, second = Client(), Client()
    first.force_login(make_user("viewer", "drift-viewer-1"))
    second.force_login(make_user("viewer", "drift-viewer-2"))
    url = "/api/appgroups/987654/drift"  # no such AppGroup: each allowed request is a cheap 404
    answers = [first.get(url, {"fresh": "true"}).status_code for _ in range(_limit())]
    assert answers == [404] * _limit()
    refused = first.get(url, {"fresh": "true"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0 and "throttled" in refused.json()["detail"].lower()
    assert first.get(url).status_code == 404  # the stored report stays readable
    assert second.get(url, {"fresh": "true"}).status_code == 404  # one user's use is not another's
