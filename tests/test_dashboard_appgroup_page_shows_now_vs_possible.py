"""The AppGroup page's "now vs possible" panel (the stored drift): before the first assessment it says so;
after one it shows drift, score, latency and cost now vs possible and the moves in order; in a real browser
(Debian chromium) axe-core finds no serious or critical violation and it does not scroll sideways at phone
width."""

from __future__ import annotations

import pytest

from apps.scheduler import services
from apps.scheduler.models import DriftAssessment
from tests.support.browser import PHONE, axe_serious, chromium, logged_in_page, overflowing, sideways_scroll
from tests.test_drift_is_stored_by_a_worker_and_served_on_metrics_and_the_api import _seed


@pytest.mark.django_db
def test_the_page_shows_the_stored_drift_and_its_moves(client):
    group = _seed("f1")
    page = client.get(f"/appgroups/{group.pk}").content.decode()
    assert 'id="appgroup-drift"' in page and 'id="drift-not-assessed"' in page
    assert services.assess_all_drift() == 1
    row = DriftAssessment.objects.get(appgroup=group)
    assert services.assess_all_drift() == 0  # nothing changed: the stored assessment stands
    assert DriftAssessment.objects.get(appgroup=group).computed_at == row.computed_at
    page = client.get(f"/appgroups/{group.pk}").content.decode()
    assert 'id="drift-not-assessed"' not in page
    assert f"{round(100 * row.drift, 1)} %" in page
    assert page.index('data-pod="default/frontend-0"') < page.index(f'data-pod="{row.moves[-1]["pod"]}"') or len(row.moves) == 1
    for move in row.moves:
        assert f'data-pod="{move["pod"]}"' in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_panel_is_accessible_and_fits_a_phone(live_server):
    group = _seed("f1")
    services.assess_all_drift()
    with chromium() as browser:
        page = logged_in_page(browser, live_server.url, "viewer")
        page.goto(page.base + f"/appgroups/{group.pk}")
        page.wait_for_selector("#drift-moves tbody tr")
        assert page.locator("#drift-moves tbody tr").count() == len(DriftAssessment.objects.get(appgroup=group).moves)
        assert axe_serious(page) == []
        phone = logged_in_page(browser, live_server.url, "editor", viewport=PHONE)
        phone.goto(phone.base + f"/appgroups/{group.pk}")
        phone.wait_for_selector("#appgroup-drift")
        assert sideways_scroll(phone) <= 0, overflowing(phone)
        assert page.problems == [] and phone.problems == []
