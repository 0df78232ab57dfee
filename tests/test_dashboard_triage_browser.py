"""An operator's triage in a real browser (Debian chromium via Playwright) over a seeded measured
topology: rank the worst pairs by any metric and open one; colours that do not saturate; the view
kept in the address across a reload; the heatmap driven by the keyboard alone; axe-core finds no
serious or critical violation; at phone width the page does not scroll sideways."""

from __future__ import annotations

import pytest

from tests.support.browser import (
    PHONE,
    axe_serious,
    chromium,
    logged_in_page,
    overflowing,
    shot,
    sideways_scroll,
)
from tests.support.dashboard_seed import seed_observed, seed_triage

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def browser(django_db_setup, django_db_blocker):
    with chromium() as browser:
        yield browser


def heat(page):
    return page.evaluate("() => document.getElementById('heatmap').netawareHeat()")


def worst_column(page, metric: str) -> list[float]:
    return page.evaluate(f"() => [...document.querySelectorAll('#worst-table tbody td[data-metric={metric}]')]"
                         ".map(td => parseFloat(td.textContent))")


def test_worst_pairs_colours_url_state_and_keyboard_on_the_topology_page(browser, live_server):
    seed_triage(bandwidth_pairs=10)
    page = logged_in_page(browser, live_server.url, "viewer")
    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap[data-version] canvas.heat")

    # The colour scale follows the values' rank: the far zone's links spread over the scale instead of
    # all sitting at its dark end, and the bar carries quantile ticks.
    data = heat(page)
    ts = [t for row in data["t"] for t in row if t is not None]
    assert len(ts) == 42
    assert sum(t > 0.9 for t in ts) <= 0.15 * len(ts)
    assert len({round(t, 3) for t in ts}) > 20
    assert [t["name"] for t in data["ticks"]] == ["min", "p25", "p50", "p75", "p90", "p99", "max"]

    # Worst pairs: 20 rows, worst p90 first; a click on another metric's column ranks by it, a second
    # click reverses; bandwidth ranks lowest first.
    page.wait_for_selector("#worst-table tbody tr[data-pair]")
    assert page.locator("#worst-table tbody tr").count() == 20
    p90 = worst_column(page, "latency_p90")
    assert p90 == sorted(p90, reverse=True) and p90[0] == max(v for row in data["z"] for v in row if v is not None)
    page.click("#worst-table button.sort[data-sort=latency_p99]")
    page.wait_for_selector("#worst-table th[data-sort=latency_p99][aria-sort=descending]")
    p99 = worst_column(page, "latency_p99")
    assert p99 == sorted(p99, reverse=True)
    page.click("#worst-table button.sort[data-sort=latency_p99]")
    page.wait_for_selector("#worst-table th[data-sort=latency_p99][aria-sort=ascending]")
    assert worst_column(page, "latency_p99") == sorted(worst_column(page, "latency_p99"))
    page.click("#worst-table button.sort[data-sort=bandwidth]")
    page.wait_for_selector("#worst-table th[data-sort=bandwidth][aria-sort=ascending]")
    bandwidth = worst_column(page, "bandwidth")
    assert bandwidth == sorted(bandwidth)
    assert page.locator("#worst-table tbody td[data-metric=bandwidth][data-kind=inferred]").count() > 0
    page.click("#worst-table button.sort[data-sort=loss]")
    page.wait_for_selector("#worst-table th[data-sort=loss][aria-sort=descending]")
    page.select_option("#worst-limit", "10")
    page.wait_for_function("() => document.querySelectorAll('#worst-table tbody tr').length === 10")
    assert worst_column(page, "loss")[0] == 4.0  # loss in %, the f2 pairs

    # Metric and zoom go into the address; a reload keeps metric, zoom and the table's ranking.
    page.select_option("#metric", "latency_p99")
    page.wait_for_function("() => document.getElementById('heatmap').dataset.metric === 'latency_p99'")
    page.locator("#heatmap canvas.heat").scroll_into_view_if_needed()
    box, plot = page.locator("#heatmap canvas.heat").bounding_box(), heat(page)["plot"]
    at = lambda i: (box["x"] + plot["left"] + (i + 0.5) * plot["cw"], box["y"] + plot["top"] + (i + 0.5) * plot["ch"])  # noqa: E731
    page.mouse.move(*at(1))
    page.mouse.down()
    page.mouse.move(*at(2), steps=3)
    page.mouse.move(*at(4), steps=3)
    page.mouse.up()
    assert heat(page)["range"] == [0.5, 4.5]
    assert "metric=latency_p99" in page.url and "zoom=" in page.url and "sort=loss" in page.url and "top=10" in page.url
    page.reload()
    page.wait_for_selector("#heatmap[data-version] canvas.heat")
    page.wait_for_function("() => document.querySelectorAll('#worst-table tbody tr').length === 10")
    assert page.eval_on_selector("#metric", "el => el.value") == "latency_p99"
    assert heat(page)["metric"] == "latency_p99" and heat(page)["range"] == [0.5, 4.5]
    assert page.locator("#worst-table th[data-sort=loss][aria-sort=descending]").count() == 1

    # The keyboard alone: tab to the map, arrows choose a cell (announced), Enter opens its link.
    labels = heat(page)["x"]
    page.focus("#heatmap canvas.heat")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    cursor = heat(page)["cursor"]
    announced = page.inner_text("#heatmap-live")
    assert f"{labels[cursor['r']]} → {labels[cursor['c']]}" in announced and "latency p99" in announced.lower()
    assert "measured" in announced
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/links/{labels[cursor['r']]}/{labels[cursor['c']]}/")

    # The link page keeps its range in the address too.
    page.select_option("#range", "24h")
    page.wait_for_function("() => location.search.includes('range=24h')")
    page.reload()
    assert page.eval_on_selector("#range", "el => el.value") == "24h"
    page.wait_for_function("() => Number(document.getElementById('link-latency').dataset.points) >= 1")
    assert axe_serious(page) == []

    # A worst-pairs row links to its link page.
    page.goto(page.base + "/?sort=latency_p90")
    page.wait_for_selector("#worst-table tbody tr[data-pair] a")
    first = page.get_attribute("#worst-table tbody tr[data-pair]", "data-pair")
    page.click("#worst-table tbody tr[data-pair] a")
    page.wait_for_url(f"**/links/{first}/")

    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap[data-version] canvas.heat")
    page.wait_for_selector("#worst-table tbody tr[data-pair]")
    assert axe_serious(page) == []
    shot(page, "triage-topology")
    assert page.problems == []


def test_topology_page_at_phone_width_scrolls_only_inside_its_containers(browser, live_server):
    seed_triage()
    page = logged_in_page(browser, live_server.url, "viewer", viewport=PHONE)
    page.goto(page.base + "/")
    page.wait_for_selector("#heatmap[data-version] canvas.heat")
    page.wait_for_selector("#worst-table tbody tr[data-pair]")
    assert sideways_scroll(page) <= 0, overflowing(page)
    shot(page, "triage-topology-phone")
    assert page.locator("header.topbar").bounding_box()["height"] <= 110
    assert page.problems == []


def extender_calls(start_extender, pod_name: str, labels: dict[str, str], nodes: list[str]) -> None:
    """A filter and a prioritize call for one pod through the real extender, its decisions stored."""
    from tests.support.extender_wire import extender_args, k8s_pod

    ext = start_extender()
    ext.settle()
    pod = k8s_pod(pod_name, labels=labels)
    for verb in ("filter", "prioritize"):
        assert ext.post(f"/scheduler/{verb}", extender_args(pod, node_names=nodes)).status_code == 200
    ext.drain_decisions()


def test_why_a_pod_is_here_in_one_click_and_decisions_keep_their_state(browser, live_server, start_extender):
    from tests.support.dashboard_seed import TRIAGE_ZONES, place, seed_boutique

    seed_triage()
    group = seed_boutique()
    place("frontend", "a1")
    extender_calls(start_extender, "frontend-0", {"app": "frontend"}, list(TRIAGE_ZONES))
    page = logged_in_page(browser, live_server.url, "viewer")

    # The AppGroup page links to its decisions, and each placed pod to why it is where it is.
    page.goto(page.base + f"/appgroups/{group.pk}")
    page.click("#appgroup-decisions")
    page.wait_for_selector("#decision-table tbody tr[data-id]")
    assert "appgroup=" in page.url
    page.goto(page.base + f"/appgroups/{group.pk}")
    page.click("#placement-table a.why-here")
    page.wait_for_selector("#breakdown-why h3")
    assert "prioritize" in page.inner_text("#breakdown-title")
    # The heading comes first; the filter call's reasons follow from a second request.
    page.wait_for_function("document.querySelector('#breakdown-why').innerText.includes('Filter call:')",
                           timeout=15000)
    why = page.inner_text("#breakdown-why")
    assert "Filter call:" in why and "passed" in why, why
    assert "open=" in page.url and "open=newest" not in page.url  # the opened decision is in the address

    # A reload (or the shared address) opens the same decision; the page size is kept too.
    opened = page.get_attribute("#decision-table tr.selected", "data-id")
    page.select_option("#page-size", "25")
    page.wait_for_function("() => location.search.includes('limit=25')")
    page.goto(page.url)
    page.wait_for_selector("#breakdown-why h3")
    assert page.get_attribute("#decision-table tr.selected", "data-id") == opened
    assert page.eval_on_selector("#page-size", "el => el.value") == "25"

    # The filter call opens from the explanation; rows are reachable by keyboard (their time is a link).
    page.click("#why-filter-link")
    page.wait_for_function("() => document.getElementById('breakdown-title').textContent.startsWith('filter')")
    page.focus("#decision-table a.open-decision")
    page.keyboard.press("Enter")
    page.wait_for_selector("#decision-table tr.selected")
    assert axe_serious(page) == []

    # The placements map's pod panel has the same one-click link.
    page.goto(page.base + "/placements/")
    page.click(".chip[data-pod='default/frontend-0']")
    page.click("#pod-why")
    page.wait_for_selector("#breakdown-why h3")
    assert page.problems == []


def test_editor_shows_every_problem_follows_renames_and_keeps_the_keyboard(browser, live_server):
    seed_triage()
    page = logged_in_page(browser, live_server.url, "editor")
    page.goto(page.base + "/appgroups/new")
    # Plotly is not fetched before a chart is drawn.
    assert not page.evaluate("() => 'Plotly' in window")
    page.fill("input[name=name]", "shop")
    # Keyboard only: Enter on "+ Add workload" focuses the new name field; typing there goes on.
    page.focus("#add-workload")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.name") == "w0-name"
    page.keyboard.type("web")
    page.fill("input[name=w0-label0-value]", "web")
    page.click("#add-workload")
    page.fill("input[name=w1-name]", "db")
    page.fill("input[name=w1-label0-value]", "db")
    # "+ dependency" by keyboard focuses the new drop-down, "+ label" the new key field, "×" returns to "+ label".
    page.focus(".editor-workload[data-workload='0'] [data-focus=w0-add-dep]")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.name") == "w0-dep0-target"
    page.focus("[data-focus=w1-add-label]")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.name") == "w1-label1-key"
    remove = page.get_by_role("button", name="Remove label 2 of workload db")  # the new, still empty, second label
    remove.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.dataset.focus") == "w1-add-label"
    # Renaming a workload renames it in the drop-downs that point at it.
    assert page.eval_on_selector("select[name=w0-dep0-target]", "el => el.value") == "db"
    page.fill("input[name=w1-name]", "database")
    assert page.eval_on_selector("select[name=w0-dep0-target]", "el => el.value") == "database"
    assert page.evaluate("() => document.activeElement.name") == "w1-name"
    page.wait_for_function("() => document.getElementById('editor').dataset.valid === 'true'")

    # Three mistakes at once: each next to its field and all listed beside Save.
    page.fill("input[name=w0-weight]", "-1")
    page.fill("input[name=w1-name]", "web")  # duplicate name
    page.fill("input[name=w0-dep0-latency]", "0")
    page.fill("input[name=w0-dep0-bandwidth]", "0")
    page.fill("input[name=w0-dep0-lossrate]", "0")  # sensitivities sum to 0
    page.wait_for_function("() => document.querySelectorAll('#error-summary li').length >= 3")
    paths = page.evaluate("() => [...document.querySelectorAll('#error-summary [data-error-path]')].map(b => b.dataset.errorPath)")
    assert {"spec.workloads[0].weight", "spec.workloads[1].name"} <= set(paths), paths
    assert any(p.startswith("spec.workloads[0].dependencies[0]") for p in paths), paths
    assert page.locator("input.invalid").count() >= 2
    # Save stays in view while the form scrolls.
    page.mouse.wheel(0, 3000)
    assert page.locator("#save").is_visible()
    box = page.locator("#save").bounding_box()
    assert 0 <= box["y"] <= page.viewport_size["height"] - box["height"]
    assert axe_serious(page) == []

    # Leaving with unsaved edits asks first.
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.type), d.dismiss()))
    page.click("a.button.secondary:has-text('Cancel')")
    assert dialogs == ["beforeunload"]
    assert page.problems == []


def every_page(group_pk: int) -> list[tuple[str, str]]:
    """(path, selector of its main content once drawn) for every page of ours."""
    return [("/", "#worst-table tbody tr[data-pair]"), ("/links/a1/f2/", "#link-latency[data-points]"),
            ("/placements/", ".chip"), ("/appgroups/", "#appgroup-table"), (f"/appgroups/{group_pk}", "#graph svg.graph"),
            (f"/appgroups/{group_pk}/edit", "#graph-preview .main-svg"), (f"/appgroups/{group_pk}/yaml", "#id_document"),
            ("/appgroups/new", "#add-workload"), ("/appgroups/import", "#id_document"),
            (f"/appgroups/{group_pk}/delete", "form"), ("/decisions/", "#decision-table tbody tr"),
            ("/diagnose/?labels=app%3Dfrontend", "#diagnosis-sentences"), ("/evaluation/", "#run-evaluation"),
            ("/account/", "#token-table"), ("/nodes/a1/", "#node-links"), ("/zones/FAR/", "#zone-pairs"),
            ("/search/?q=f", "#search-results"), (f"/appgroups/{group_pk}/history", "#history"),
            ("/traffic/", "#observed-table"), ("/traffic/default/frontend/", "#traffic-graph svg.graph")]


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_every_page_passes_axe_and_fits_a_phone(browser, live_server, viewport):
    from tests.support.browser import DESKTOP
    from tests.support.dashboard_seed import place, seed_boutique

    seed_triage()
    group = seed_boutique()
    place("frontend", "a1")
    seed_observed()
    page = logged_in_page(browser, live_server.url, "editor", viewport=PHONE if viewport == "phone" else DESKTOP)
    found: dict[str, list[str]] = {}
    # The header's search box finds a node; its page leads on to a link's history.
    page.fill("#search-q", "f2")
    page.keyboard.press("Enter")
    page.click("#search-nodes a:has-text('f2')")
    page.click("#node-links tr[data-peer=a1] a:has-text('out')")
    page.wait_for_url("**/links/f2/a1")
    for path, ready in every_page(group.pk):
        page.goto(page.base + path)
        page.wait_for_selector(ready, state="attached")
        problems = axe_serious(page) if viewport == "desktop" else (
            [f"scrolls sideways by {sideways_scroll(page)} px: {overflowing(page)}"] if sideways_scroll(page) > 0 else [])
        if viewport == "phone":
            height = page.locator("header.topbar").bounding_box()["height"]
            if height > 110:
                problems.append(f"header {height} px high")
        if problems:
            found[path] = problems
        shot(page, f"page-{viewport}-{path.strip('/').replace('/', '-').replace('?', '-') or 'topology'}")
    page.context.clear_cookies()
    page.goto(page.base + "/login/")
    found.update({"/login/": axe_serious(page)} if viewport == "desktop" and axe_serious(page) else {})
    assert found == {}
    assert page.problems == []


def test_evaluation_runs_in_the_background_with_progress_and_a_result_address(browser, live_server, celery_worker_thread):
    seed_triage()  # the login lands on the topology page
    page = logged_in_page(browser, live_server.url, "editor")
    page.goto(page.base + "/evaluation/")
    assert not page.evaluate("() => 'Plotly' in window")  # no chart yet, no plotly
    page.fill("#id_seeds", "3")
    page.click("#run-evaluation")
    page.wait_for_url("**/evaluation/runs/*")
    page.wait_for_selector("#results-table tbody tr", timeout=120000)
    address = page.url
    assert page.locator("#results-table tbody tr").count() == 5
    page.wait_for_selector("#evaluation-figure .main-svg")
    # The address shows the same result to someone else (here: a viewer, who gets no Run button).
    viewer = logged_in_page(browser, live_server.url, "viewer")
    viewer.goto(address)
    assert viewer.locator("#results-table tbody tr").count() == 5
    assert viewer.locator("#run-evaluation").count() == 0 and "editor role" in viewer.inner_text("#run-refused")
    assert axe_serious(viewer) == []
    assert page.problems == [] and viewer.problems == []


def test_a_running_evaluation_shows_which_order_of_which_profile_it_is_at(browser, live_server):
    from apps.dashboard import services
    from apps.dashboard.models import EvaluationRun

    seed_triage()
    # A run as the worker holds it (taken: running), its progress written by the worker's own writer.
    run = EvaluationRun.objects.create(status=EvaluationRun.Status.RUNNING, stage="simulating the profiles", params={
        "scenario": "scenarios/paper-testbed.yaml", "appgroup": "scenarios/online-boutique-appgroup.yaml",
        "seeds": 50, "first_seed": 0, "profiles": ["default", "network"], "with_optimum": False})
    write = services.progress_writer(run.pk)
    write("profile default (1 of 2): order 17 of 50", 17, 100)
    page = logged_in_page(browser, live_server.url, "viewer")
    page.goto(f"{page.base}/evaluation/runs/{run.pk}")
    page.wait_for_function("() => document.getElementById('run-stage').textContent.includes('order 17 of 50')")
    bar = page.locator("#run-progress")
    assert (bar.get_attribute("value"), bar.get_attribute("max")) == ("17", "100")
    write("profile network (2 of 2): order 3 of 50", 53, 100)  # the page follows without a reload
    page.wait_for_function("() => document.getElementById('run-stage').textContent.includes('(2 of 2): order 3 of 50')")
    assert page.evaluate("() => [document.getElementById('run-progress').value, document.getElementById('run-progress').max]") == [53, 100]
    assert axe_serious(page) == []
    assert page.problems == []


def test_link_charts_have_titles_custom_ranges_no_data_notes_and_bind_marks(browser, live_server):
    from datetime import UTC, datetime, timedelta

    from tests.support.dashboard_seed import place, seed_boutique

    seed_triage(bandwidth_pairs=10)  # f2 -> a1 has no bandwidth sample
    seed_boutique()
    place("frontend", "a1")
    page = logged_in_page(browser, live_server.url, "viewer")
    page.goto(page.base + "/links/f2/a1/?range=15m")
    page.wait_for_selector("#link-latency .main-svg")
    page.wait_for_selector("#link-bandwidth .main-svg")
    assert page.get_attribute("#link-latency", "data-points") == "3" and page.get_attribute("#link-latency", "data-events") == "1"
    assert page.get_attribute("#link-bandwidth", "data-empty") == "true"
    assert "No stored bandwidth sample in this range" in page.inner_text("#link-bandwidth")
    assert "Round-trip time (ms)" in page.inner_text("#link-latency")
    # A custom range: an hour that ended two hours ago has nothing; it stays in the address.
    start = (datetime.now(UTC) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S")
    end = (datetime.now(UTC) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S")
    page.select_option("#range", "custom")
    page.fill("#range-from", start)
    page.fill("#range-to", end)
    page.click("#range-apply")
    page.wait_for_function("() => document.getElementById('link-latency').dataset.empty === 'true'")
    assert "from=" in page.url and "to=" in page.url
    page.reload()
    page.wait_for_function("() => document.getElementById('link-latency').dataset.empty === 'true'")
    assert page.eval_on_selector("#range", "el => el.value") == "custom"
    assert page.eval_on_selector("#range-from", "el => el.value").startswith(start[:16])
    assert axe_serious(page) == []
    assert page.problems == []
