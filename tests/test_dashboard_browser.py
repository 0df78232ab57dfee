"""The dashboard in a real browser (Debian chromium via Playwright, headless, never a downloaded
browser) against a live server fed with the emulated 19-node testbed through the real pipeline
(emulator -> Prometheus -> pull -> rebuild): every page loads without a console error or a request
to another origin; the heatmap has 19x19 values and follows new data without a reload, keeping the
user's zoom; the zone graph and a link page have data; an editor creates an AppGroup with two
workloads and a dependency through the form alone; a viewer is refused an edit. Screenshots of
every page go to the folder printed at the start."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from tests.support.browser import chromium
from tests.support.dashboard_seed import place, seed_boutique

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("NETAWARE_SHOTS", "/tmp/netaware-shots"))
TESTBED = Path(__file__).resolve().parents[1] / "scenarios" / "paper-testbed.yaml"
WIDTH = 20  # seconds per pull window


@pytest.fixture(scope="module")
def testbed(django_db_setup, django_db_blocker):
    """The paper's testbed emulated and scraped by a real Prometheus for the whole module."""
    from tests.support.pipeline import emulated_cluster

    with emulated_cluster(TESTBED.read_text(), warmup_s=WIDTH + 4) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def browser(django_db_setup, django_db_blocker):
    """One chromium for the module (tests/support/browser.py), screenshots kept in SHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {SHOTS}")
    with chromium() as shared:
        yield shared


def pull(testbed, settings, end):
    """One pipeline window ending at ``end`` pulled from Prometheus, then a topology rebuild."""
    from apps.probes import services as probes
    from apps.topology import services as topology
    from tests.support.pipeline import configure_pipeline

    configure_pipeline(settings, testbed.url, width=WIDTH)
    probes.pull_window(start=end - timedelta(seconds=WIDTH), end=end)
    return topology.rebuild_topology(now=end)


def user(role: str):
    account = get_user_model().objects.create_user(f"{role}-1", password=f"{role}-password")
    account.groups.add(Group.objects.get(name=role))
    return account


def open_page(browser, live_server, role: str):
    user(role)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(20000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "status of 403" not in msg.text else None)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server.url)
               else (problems.append(f"external request: {route.request.url}"), route.abort()))
    page.problems = problems
    page.base = live_server.url
    page.goto(live_server.url + "/")
    assert "/login" in page.url
    page.fill("input[name=username]", f"{role}-1")
    page.fill("input[name=password]", f"{role}-password")
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#current-user")
    assert page.inner_text("#current-user") == f"{role}-1"
    return page


def wait(page, selector: str, name: str) -> None:
    """wait_for_selector that, on a timeout, says what the page showed (and saves a screenshot)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_selector(selector)
    except PlaywrightTimeout:
        shot(page, f"failed-{name}")
        status = page.evaluate("() => [...document.querySelectorAll('#live-status, .errors, h1')].map(e => e.textContent)")
        raise AssertionError(f"{selector} never appeared on {page.url}: {status} {page.problems}") from None


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def heat(page):
    """What the canvas heatmap shows: values in display order, labels, visible range, plot geometry."""
    return page.evaluate("() => { const el = document.getElementById('heatmap');"
                         " return {...el.netawareHeat(), version: el.dataset.version}; }")


def drag_zoom(page, first: int, last: int) -> None:
    """Drag with the mouse from cell (first, first) to cell (last, last) of the heatmap."""
    box = page.locator("#heatmap canvas.heat").bounding_box()
    plot = heat(page)["plot"]
    at = lambda i: (box["x"] + plot["left"] + (i + 0.5) * plot["cw"], box["y"] + plot["top"] + (i + 0.5) * plot["ch"])  # noqa: E731
    page.mouse.move(*at(first))
    page.mouse.down()
    page.mouse.move(*at((first + last) / 2), steps=3)
    page.mouse.move(*at(last), steps=3)
    page.mouse.up()


def test_every_view_live_with_the_emulated_testbed(browser, live_server, testbed, settings):
    now = timezone.now().replace(microsecond=0)
    first = pull(testbed, settings, now)
    assert first is not None and first.node_count == 19
    group = seed_boutique()
    for workload, node in (("frontend", "n1402"), ("cart", "n1407"), ("productcatalog", "n1417")):
        place(workload, node)
    page = open_page(browser, live_server, "editor")

    # Topology: 19x19 heatmap, every metric and quantile, zone graph, live status.
    wait(page, "#heatmap[data-version] canvas.heat", "topology")
    data = heat(page)
    assert len(data["z"]) == 19 and all(len(row) == 19 for row in data["z"])
    assert sum(v is not None for row in data["z"] for v in row) == 19 * 18
    assert page.locator("[data-card='State'] .value").inner_text() == "fresh"
    page.wait_for_function("() => Number(document.getElementById('zone-graph').dataset.edges) > 0")
    zones = page.evaluate("() => [...document.querySelectorAll('#zone-table tbody tr')].map(tr => tr.cells[0].textContent)")
    assert set(zones) == {"A", "B", "C", "FAR"}
    for metric in ("latency_p50", "latency_p99", "loss", "bandwidth", "latency_p90"):
        page.select_option("#metric", metric)
        page.wait_for_function(f"() => (document.getElementById('heatmap-source').textContent || '').length"
                               f" && document.getElementById('heatmap').dataset.metric === '{metric}'")
    assert "Live: refreshes" in page.inner_text("#live-status")
    # Hover says value, kind, sample count and age.
    plot, box = heat(page)["plot"], page.locator("#heatmap canvas.heat").bounding_box()
    page.mouse.move(box["x"] + plot["left"] + 1.5 * plot["cw"], box["y"] + plot["top"] + 0.5 * plot["ch"])
    tip = page.inner_text("#heatmap .heat-tip")
    assert " → " in tip and "sample(s) in the last" in tip and "newest:" in tip and "measured" in tip, tip
    shot(page, "topology")

    # The user zooms; new data arrives; the page redraws by itself and keeps the zoom.
    drag_zoom(page, 3, 8)
    assert heat(page)["range"] == [2.5, 8.5]
    time.sleep(WIDTH)
    second = pull(testbed, settings, now + timedelta(seconds=WIDTH))
    assert second.version > first.version
    page.wait_for_function(f"() => document.getElementById('heatmap').dataset.version === '{second.version}'", timeout=40000)
    after = heat(page)
    assert after["range"] == [2.5, 8.5]
    assert after["z"] != data["z"]  # new measurements, drawn without a reload
    shot(page, "topology-zoomed-after-refresh")
    page.click("#heatmap .heat-reset")
    assert heat(page)["range"] == [-0.5, 18.5]

    # A heatmap click leads to the link page, which has data.
    plot, box = heat(page)["plot"], page.locator("#heatmap canvas.heat").bounding_box()
    page.mouse.click(box["x"] + plot["left"] + 0.5 * plot["cw"], box["y"] + plot["top"] + 1.5 * plot["ch"])
    page.wait_for_url(f"**/links/{after['x'][1]}/{after['x'][0]}/")
    page.wait_for_function("() => Number(document.getElementById('link-latency').dataset.points) >= 6")
    shot(page, "link")

    # Placements map, with a pod's decision panel.
    page.goto(page.base + "/placements/")
    page.wait_for_selector(".chip[data-pod='default/frontend-0']")
    assert page.locator(".chip").count() == 3
    assert page.locator("#map-lines line").count() >= 1
    page.click(".chip[data-pod='default/frontend-0']")
    page.wait_for_selector("#pod-decision")
    shot(page, "placements")

    # Editor: create an AppGroup with two workloads and a dependency through the form alone.
    page.goto(page.base + "/appgroups/new")
    page.fill("input[name=namespace]", "shop")
    page.fill("input[name=name]", "two-tier")
    page.click("#add-workload")
    page.fill("input[name=w0-name]", "web")
    page.fill("input[name=w0-label0-value]", "web")
    page.click("#add-workload")
    page.fill("input[name=w1-name]", "db")
    page.fill("input[name=w1-label0-value]", "db")
    page.fill("input[name=w1-weight]", "-1")
    page.wait_for_selector("[data-path='spec.workloads[1].weight'].invalid")  # checked as you type
    assert "greater than or equal to 0" in page.locator(
        "[data-path='spec.workloads[1].weight'] + .field-error").inner_text()
    page.fill("input[name=w1-weight]", "0.5")
    page.locator(".editor-workload[data-workload='0'] button", has_text="+ dependency").click()
    page.select_option("select[name=w0-dep0-target]", "db")
    page.fill("input[name=w0-dep0-latency]", "0.8")
    page.fill("input[name=w0-dep0-maxcost]", "40")
    page.fill("input[name=w0-dep0-weight]", "0")
    page.wait_for_selector("[data-path='spec.workloads[0].dependencies[0].weight'].invalid")
    assert "greater than 0" in page.locator(
        "[data-path='spec.workloads[0].dependencies[0].weight'] + .field-error").inner_text()
    page.fill("input[name=w0-dep0-weight]", "2.5")
    page.wait_for_function("() => document.getElementById('editor').dataset.valid === 'true'")
    page.wait_for_function("() => document.querySelectorAll('#order-preview li').length === 2")
    assert page.locator("#order-preview li").all_inner_texts() == ["web", "db"]
    shot(page, "appgroup-new")
    page.click("#save")
    page.wait_for_url("**/appgroups/*")
    page.wait_for_selector("#graph svg.graph")
    assert "Created shop/two-tier" in page.inner_text(".messages")
    page.goto(page.base + "/appgroups/")
    assert "two-tier" in page.inner_text("#appgroup-table")
    shot(page, "appgroups")
    api = page.evaluate("async () => (await (await fetch('/api/appgroups/?namespace=shop')).json())")
    created = api["results"][0] if isinstance(api, dict) else api[0]
    assert created["name"] == "two-tier" and [w["name"] for w in created["workloads"]] == ["web", "db"]
    assert created["workloads"][0]["dependencies"][0]["weight"] == 2.5

    # Every other page loads cleanly.
    for path, ready, name in ((f"/appgroups/{group.pk}", "#graph svg.graph", "appgroup-detail"),
                              (f"/appgroups/{group.pk}/edit", "#graph-preview .main-svg", "appgroup-edit"),
                              (f"/appgroups/{group.pk}/yaml", "#id_document", "appgroup-yaml"),
                              ("/decisions/", "#decision-table tbody tr", "decisions"),
                              ("/diagnose/?labels=app%3Dfrontend", "#diagnosis-sentences", "diagnose"),
                              ("/evaluation/", "#run-evaluation", "evaluation"),
                              ("/account/", "#token-table", "account"),
                              ("/api/docs/", ".swagger-ui", "api-docs"),
                              ("/api/redoc/", "h1:has-text('netaware API')", "api-redoc")):
        page.goto(page.base + path)
        page.wait_for_selector(ready)
        shot(page, name)
    assert page.problems == []


def test_viewer_is_refused_an_edit_with_a_clear_page(browser, live_server, testbed, settings):
    pull(testbed, settings, timezone.now().replace(microsecond=0))
    group = seed_boutique()
    page = open_page(browser, live_server, "viewer")
    page.goto(page.base + f"/appgroups/{group.pk}")
    page.wait_for_selector("#graph svg.graph")
    assert page.locator("#edit-appgroup").count() == 0
    response = page.goto(page.base + f"/appgroups/{group.pk}/edit")
    assert response.status == 403
    assert "needs the editor role" in page.inner_text("#refusal-reason")
    shot(page, "viewer-refused")
    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap[data-version] canvas.heat")
    page.wait_for_function("() => Number(document.getElementById('zone-graph').dataset.edges) > 0")  # plotly, loaded later
    page.click("#logout")
    page.wait_for_url("**/login**")
    assert page.problems == []
