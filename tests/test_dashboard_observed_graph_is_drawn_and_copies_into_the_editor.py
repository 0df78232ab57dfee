"""The observed application's page in a real browser (Debian chromium via Playwright): the call graph is
drawn (server-side SVG, no chart library), each edge as wide as its share of the busiest edge's requests and
coloured by its p99; hovering or tabbing to an edge shows its rates; the edge table stays as the accessible
alternative and the graph's links lead to its rows; axe-core finds no serious or critical violation; weights
the declared AppGroup gets wrong are in the diff; "Copy into the editor" opens the editor filled with the
observed AppGroup in one click and Create saves it, learned weights included; the AppGroup page then draws
its graph without plotly."""

from __future__ import annotations

import pytest

from apps.appgroups import services as appgroup_services
from apps.appgroups.models import AppGroup
from tests.support.browser import axe_serious, chromium, logged_in_page
from tests.support.dashboard_seed import OBSERVED_EDGES as EDGES
from tests.support.dashboard_seed import boutique_document, seed_observed, seed_triage

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NS = "default"


@pytest.fixture(scope="module")
def browser(django_db_setup, django_db_blocker):
    with chromium() as shared:
        yield shared


def test_the_observed_graph_is_drawn_hovered_by_keyboard_and_copied_into_the_editor(browser, live_server):
    seed_triage()  # the login lands on the topology page
    doc = boutique_document()
    doc["metadata"]["name"] = "boutique"
    frontend = next(w for w in doc["spec"]["workloads"] if w["name"] == "frontend")
    next(d for d in frontend["dependencies"] if d["name"] == "ad")["weight"] = 20  # the traffic says: light
    appgroup_services.import_document(document=doc)
    seed_observed(NS)
    page = logged_in_page(browser, live_server.url, "editor")
    page.goto(f"{page.base}/traffic/{NS}/frontend/")
    edges = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#traffic-graph svg.graph .edge')]
        .map(g => [g.dataset.source + '>' + g.dataset.target, [parseFloat(g.dataset.width), g.getAttribute('class')]]))""")
    assert set(edges) == {f"{s}>{t}" for s, t, *_ in EDGES}
    widths = [edges[f"{s}>{t}"][0] for s, t, *_ in EDGES]
    assert widths == sorted(widths, reverse=True) and widths[0] > 2 * widths[-1]  # sized by requests/s (square root: 8x the calls, 2.2x the width)
    assert [edges[f"{s}>{t}"][1].split()[-1] for s, t, *_ in EDGES] == ["tone-fast", "tone-medium", "tone-slow",
                                                                        "tone-unknown"]
    assert not page.evaluate("() => 'Plotly' in window")
    # Hover: the edge's rates in the caption (and its native tooltip).
    middle = page.evaluate("""() => { const path = document.querySelector('#traffic-graph .edge[data-target=cartservice] path');
        const p = path.getPointAtLength(path.getTotalLength() / 2).matrixTransform(path.getScreenCTM());
        return [p.x, p.y]; }""")  # a straight edge has no height: Playwright's hover would call it invisible
    page.mouse.move(*middle)
    info = page.inner_text("#graph-info")
    assert info.startswith("frontend → cartservice: 8.00 req/s, 3,200 B/s out, 12,000 B/s back, p50 4 ms, p99 20 ms")
    assert "errors 1.0 %" in info
    # Keyboard: Tab reaches the edges; Enter on one leads to its row of the table.
    page.mouse.move(0, 0)
    page.focus("#copy-to-editor")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement.closest('svg.graph a')"):
            break
    focused = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    assert focused and "req/s" in focused and page.inner_text("#graph-info") == focused
    page.keyboard.press("Enter")
    row = page.evaluate("() => location.hash")
    assert row.startswith("#edge-") and page.inner_text(f"tr{row} td") in focused
    assert page.locator("#edge-table tbody tr").count() == len(EDGES)
    assert "frontend → ad (20 → " in page.inner_text("#diff-reweighted")
    assert axe_serious(page) == []
    # One click into the editor, filled with the observed AppGroup; Create saves it as it stands.
    page.click("#copy-to-editor")
    page.wait_for_url("**/appgroups/new?from=observed*")
    errors = "() => [...document.querySelectorAll('.field-error, #editor-errors')].map(e => e.textContent).join(' ')"
    page.wait_for_function("() => !!document.getElementById('editor').dataset.valid")
    # While the hand-written AppGroup claims the same pods the editor says so; without it, the copy is valid.
    assert page.get_attribute("#editor", "data-valid") == "false" and "AppGroup default/boutique" in page.evaluate(errors)
    AppGroup.objects.filter(name="boutique").delete()
    page.reload()
    page.wait_for_function("() => !!document.getElementById('editor').dataset.valid")
    assert page.get_attribute("#editor", "data-valid") == "true", page.evaluate(errors)
    assert page.input_value("input[name=name]") == "frontend"
    page.click("#save")
    page.wait_for_url("**/appgroups/*")
    page.wait_for_selector("#graph svg.graph")
    saved = AppGroup.objects.get(namespace=NS, name="frontend")
    weights = {(d.source.name, d.target.name): d.weight for d in saved.dependencies.select_related("source", "target")}
    assert weights[("frontend", "cartservice")] > weights[("cartservice", "redis-cart")] > weights[("frontend", "newservice")]
    assert page.locator("#graph svg.graph .edge").count() == len(EDGES)
    assert not page.evaluate("() => 'Plotly' in window")
    assert axe_serious(page) == []
    assert page.problems == []
