"""The dashboard works in a real browser (Debian chromium via Playwright) against a live server:
plotly draws the topology heatmap from a seeded snapshot (inferred pairs marked, stale shown
prominently), the AppGroup edit flow saves a weight and shows a bad YAML's field error, the
decisions page draws a per-node breakdown and the evaluation page runs and draws its figure.
Screenshots of every page go to /tmp/netaware-shots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.support.dashboard_seed import (
    place,
    seed_boutique,
    seed_measured_topology_with_stale_pair,
    seed_topology,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/netaware-shots")
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="module")
def browser(django_db_setup, django_db_blocker):
    """One chromium for the module. Playwright's sync API runs an event loop in this thread, which
    makes Django refuse ORM calls (test bodies, the per-test flush) as "async"; they are plain
    synchronous calls here, so allow them while the browser lives."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (never download a browser)")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(20000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    # Form pages answer bad input with 400 on purpose; chromium logs that as a console error.
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "status of 400" not in msg.text else None)
    # No external network: any request off the live server is a bug (e.g. a CDN).
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server.url)
               else (problems.append(f"external request: {route.request.url}"), route.abort()))
    page.problems = problems
    page.base = live_server.url
    yield page
    context.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def plot_data(page, element_id: str):
    return page.evaluate(f"() => (document.getElementById({element_id!r}).data || []).map(t => "
                         "({type: t.type, name: t.name, x: t.x, y: t.y, z: t.z, text: t.text}))")


def test_topology_page_draws_heatmap_and_shows_stale(page):
    seed_topology()
    seed_boutique()
    place("frontend", "a1")
    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap .main-svg")
    page.wait_for_selector("#zone-table tbody tr")
    traces = plot_data(page, "heatmap")
    assert traces[0]["type"] == "heatmap"
    assert len(traces[0]["z"]) == 4 and len(traces[0]["z"][0]) == 4
    labels = traces[0]["x"]
    assert labels == ["a1 (A)", "a2 (A)", "b1 (B)", "f1 (FAR)"]
    assert traces[0]["z"][0][1] == 0.5 and traces[0]["z"][0][3] == 20.0
    inferred = next(t for t in traces if t["name"] == "inferred")
    assert list(zip(inferred["y"], inferred["x"], strict=True)) == [("a2 (A)", "f1 (FAR)")]
    assert page.locator("[data-card='State'] .value").inner_text() == "fresh"
    assert page.locator("#topology-banner .banner").count() == 0
    zone_rows = page.locator("#zone-table tbody tr")
    assert zone_rows.count() == 7  # 3 zones; B->B and FAR->FAR have no node pair
    cells = page.evaluate("() => [...document.querySelectorAll('#zone-table tbody tr')]"
                          ".map(tr => [...tr.cells].map(td => td.textContent))")
    a_far = next(r for r in cells if r[:2] == ["A", "FAR"])
    assert a_far[2] == "2" and a_far[6] == "1"  # a2 -> f1 inferred
    placed = page.locator("#node-table tbody tr", has_text="a1").inner_text()
    assert placed.rstrip().endswith("1")
    page.click("#metric-tabs button[data-metric=bandwidth]")
    page.wait_for_function("() => document.getElementById('heatmap').data[0].z[0][1] === 1000")
    page.click("#metric-tabs button[data-metric=latency]")
    page.wait_for_function("() => document.getElementById('heatmap').data[0].z[0][1] === 0.5")
    shot(page, "topology")

    from apps.topology import services

    services.mark_stale(reason="Prometheus unreachable: connection refused")
    page.reload()
    page.wait_for_selector("#heatmap .main-svg")
    banner = page.locator("#topology-banner .banner.bad")
    assert banner.is_visible()
    assert "STALE TOPOLOGY" in banner.inner_text() and "Prometheus unreachable" in banner.inner_text()
    assert page.locator("[data-card='State'] .value").inner_text() == "STALE"
    shot(page, "topology-stale")
    assert page.problems == []


def test_topology_page_marks_stale_pairs(page):
    seed_measured_topology_with_stale_pair()
    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap .main-svg")
    traces = {t["name"]: t for t in plot_data(page, "heatmap")[1:]}
    assert list(zip(traces["stale"]["y"], traces["stale"]["x"], strict=True)) == [("a1 (A)", "b1 (B)")]
    assert ("a1 (A)", "b1 (B)") in set(zip(traces["inferred"]["y"], traces["inferred"]["x"], strict=True))
    warn = page.locator("#topology-banner .banner.warn")
    assert "1 node pair(s) have stale measurements" in warn.inner_text()
    rows = page.evaluate("() => [...document.querySelectorAll('#zone-table tbody tr')]"
                         ".map(tr => [...tr.cells].map(td => td.textContent))")
    row = next(r for r in rows if r[:2] == ["A", "B"])
    assert row[2] == "2" and row[7] == "1"  # one of the two A->B pairs is stale
    shot(page, "topology-stale-pair")
    assert page.problems == []


def test_topology_page_without_snapshot_says_so(page):
    page.goto(page.base + "/")
    error = page.wait_for_selector("#topology-error .errors")
    assert "No NetworkTopology yet" in error.inner_text()
    shot(page, "topology-empty")


def test_appgroup_edit_flow(page):
    from apps.appgroups.models import AppGroup, Workload

    seed_topology()
    group = seed_boutique()
    AppGroup.objects.filter(pk=group.pk).update(sync_error="403 Forbidden: appgroups.netaware.io is forbidden")
    for workload, node in (("frontend", "a1"), ("productcatalog", "a2"), ("cart", "b1"), ("redis-cart", "f1")):
        place(workload, node)

    page.goto(page.base + "/appgroups/")
    assert "403 Forbidden" in page.locator("#appgroup-table").inner_text()
    assert page.locator("#placement-overview").is_visible()
    shot(page, "appgroups-list")

    page.click("text=online-boutique")
    page.wait_for_selector("#graph .main-svg")
    graph = plot_data(page, "graph")
    assert sorted(graph[-1]["text"]) == sorted(Workload.objects.filter(appgroup=group).values_list("name", flat=True))
    assert page.locator("#sync-error").is_visible()
    rows = page.locator("#placement-table tbody tr")
    assert rows.count() == 4
    assert "n/a" not in rows.filter(has_text="frontend-0").inner_text()
    shot(page, "appgroup-detail")

    page.click("a.button:has-text('Edit')")
    page.wait_for_selector("form.structured")
    page.fill("input[name=w0_weight]", "-3")
    page.click("button[type=submit]")
    page.wait_for_selector("#form-errors")
    assert "greater than or equal to 0" in page.locator(".has-error .field-error").first.inner_text()
    assert Workload.objects.get(appgroup=group, name="frontend").weight == 1.0
    shot(page, "appgroup-edit-error")
    page.fill("input[name=w0_weight]", "0.25")
    page.click("button[type=submit]")
    page.wait_for_url(f"{page.base}/appgroups/{group.pk}")
    page.wait_for_selector("#graph .main-svg")
    assert page.locator("#workload-table tr[data-workload=frontend] td.weight").inner_text() == "0.25"
    assert "Saved default/online-boutique" in page.locator(".messages").inner_text()
    assert Workload.objects.get(appgroup=group, name="frontend").weight == 0.25

    page.click("a.button:has-text('Edit YAML')")
    text = page.input_value("#id_document")
    doc = yaml.safe_load(text)
    assert doc["spec"]["workloads"][0]["weight"] == 0.25
    doc["spec"]["workloads"][2]["weight"] = -1
    page.fill("#id_document", yaml.safe_dump(doc, sort_keys=False))
    page.click("button[type=submit]")
    errors = page.wait_for_selector("#yaml-errors")
    assert "spec.workloads[2].weight" in errors.inner_text() and "(line" in errors.inner_text()
    assert Workload.objects.get(appgroup=group, name=doc["spec"]["workloads"][2]["name"]).weight != -1
    shot(page, "appgroup-yaml-error")

    page.goto(page.base + "/appgroups/new")
    assert "online-boutique" in page.input_value("#id_document")
    shot(page, "appgroup-new")
    page.goto(page.base + f"/appgroups/{group.pk}/delete")
    shot(page, "appgroup-delete")
    page.click("button.danger")
    page.wait_for_url(page.base + "/appgroups")
    assert not AppGroup.objects.filter(pk=group.pk).exists()
    assert page.problems == []


def test_decisions_page_draws_breakdown(page):
    from django.utils import timezone

    from apps.scheduler.models import Decision

    Decision.objects.create(
        ts=timezone.now(), verb="filter", pod_namespace="default", pod_name="frontend-0", candidates=3,
        result={"passed": 2, "failed": {"f1": "maxNetworkCost exceeded"}, "unresolvable": {}},
        breakdown={"reasons": {"f1": "maxNetworkCost exceeded"}},
    )
    Decision.objects.create(
        ts=timezone.now(), verb="prioritize", pod_namespace="default", pod_name="frontend-0", profile="hybrid",
        workload="default/online-boutique/frontend", candidates=3, node="a1", result={"best": "a1", "notes": []},
        breakdown={"nodes": ["a1", "b1", "f1"], "total": [92.0, 61.0, 12.0], "extender": [9, 6, 1],
                   "scorers": {"network": [95.0, 60.0, 5.0], "load": [80.0, 65.0, 40.0]}},
    )
    page.goto(page.base + "/decisions/")
    page.wait_for_selector("#decision-table tbody tr[data-id]")
    table = page.locator("#decision-table").inner_text()
    assert "best a1" in table and "2 passed, 1 rejected" in table
    page.locator("#decision-table tbody tr", has_text="prioritize").click()
    page.wait_for_selector("#breakdown-chart .main-svg")
    traces = plot_data(page, "breakdown-chart")
    by_name = {t["name"]: t for t in traces}
    assert set(by_name) == {"network", "load", "total (0–100)", "extender answer (0–10)"}
    assert by_name["network"]["type"] == "bar" and by_name["network"]["y"] == [95.0, 60.0, 5.0]
    assert by_name["total (0–100)"]["x"] == ["a1", "b1", "f1"]
    shot(page, "decisions")
    assert page.problems == []


def test_evaluation_page_runs_and_draws_figure(page):
    page.goto(page.base + "/evaluation/")
    page.fill("input[name=seeds]", "0")
    page.click("#run-evaluation")
    page.wait_for_selector("#form-errors")
    assert "greater than or equal to 1" in page.locator("#form-errors").inner_text()
    page.fill("input[name=seeds]", "2")
    page.fill("input[name=extra_profiles]", "")
    page.click("#run-evaluation", timeout=60000)
    page.wait_for_selector("#evaluation-figure .main-svg", timeout=60000)
    rows = page.locator("#results-table tbody tr")
    assert rows.count() == 5
    assert rows.nth(1).locator("td").first.inner_text() == "network"
    traces = plot_data(page, "evaluation-figure")
    assert traces[0]["type"] == "bar" and traces[0]["x"] == ["default", "network", "hybrid-1", "hybrid-5", "load-aware"]
    assert "2 arrival orders" in page.locator("#report-summary").inner_text()
    shot(page, "evaluation")
    assert page.problems == []
