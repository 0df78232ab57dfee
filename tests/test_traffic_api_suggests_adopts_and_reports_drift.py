"""Observed AppGroups through the API: suggest (the default) shows the observed graph beside the declared
AppGroup with a diff and steers nothing; drift (a hot edge the declared AppGroup misses) is on /metrics;
adopting needs the editor role, writes ``origin observed``, is mirrored to the AppGroup CRD by the sync and
never overwrites a hand-written AppGroup; the adopt mode adopts on each pull, off forgets the application."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.appgroups import services as appgroup_services
from apps.appgroups import sync
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup
from apps.traffic import services
from apps.traffic.edges import Edge
from apps.traffic.learning import EdgeState
from apps.traffic.models import ObservedAppGroup
from netaware_site import scrape
from tests.support.dashboard_seed import boutique_document
from tests.test_every_page_and_api_needs_a_user_with_the_right_role import logged_in, user_with

pytestmark = pytest.mark.django_db

NS = "default"
NOW = 1_800_000_000.0


def states(*edges: tuple[str, str, float]) -> dict[Edge, EdgeState]:
    out = {}
    for src, dst, rps in edges:
        edge = Edge(NS, src, NS, dst)
        out[edge] = EdgeState(edge, "istio", rps, 0.0, 400 * rps, 1500 * rps, 0.004, 0.02, NOW - 600, NOW)
    return out


OBSERVED = states(("frontend", "cartservice", 5.0), ("cartservice", "redis-cart", 4.0),
                  ("frontend", "adservice", 2.0), ("frontend", "newservice", 3.0))


def refresh(current=OBSERVED):
    services.save_states(current)
    return services.refresh_observed(states=current, at=timezone.now())


def declared():
    doc = boutique_document()
    doc["metadata"]["name"] = "boutique"  # hand-written, under another name than the observed application
    return appgroup_services.import_document(document=doc)


def test_suggest_shows_the_observed_graph_and_diff_and_steers_nothing():
    declared()
    rows = refresh()
    assert [(r.namespace, r.name) for r in rows] == [(NS, "frontend")]  # named after its entry point
    assert AppGroup.objects.count() == 1  # suggest: nothing written
    viewer = logged_in(user_with("viewer"))
    listed = viewer.get("/api/traffic/observed/").json()["results"]
    assert listed[0]["name"] == "frontend" and listed[0]["mode"] == "suggest" and listed[0]["declared"] == "boutique"
    graph = viewer.get(f"/api/traffic/observed/{NS}/frontend/").json()
    edges = {(e["source"], e["target"]): e for e in graph["edges"]}
    assert edges[("frontend", "cartservice")]["requests"] == 5.0 and edges[("frontend", "cartservice")]["p99"] == 0.02
    assert graph["document"]["kind"] == "AppGroup"
    diff = viewer.get(f"/api/traffic/observed/{NS}/frontend/diff").json()
    # observed workloads mapped onto the declared ones by selector (app=frontend is the workload "frontend", ...)
    assert diff["declared"] == "boutique"
    assert diff["missing"] == [["frontend", "newservice", 3.0]] and diff["unmatched_workloads"] == ["newservice"]
    assert ["frontend", "cart"] in diff["common"] and ["cart", "redis-cart"] in diff["common"]
    assert ["checkout", "payment"] in diff["extra"]
    assert diff["hot_missing"] == 1
    text = scrape.render().decode()
    assert ('netaware_traffic_declared_missing_hot_edges{appgroup="boutique",namespace="default",observed="frontend"} 1.0'
            in text)
    assert "netaware_traffic_learned_edges 4.0" in text
    assert viewer.get(f"/api/traffic/observed/{NS}/nothing/").status_code == 404


def test_adopt_needs_the_editor_role_and_writes_origin_observed_mirrored_to_the_crd(fake_kube, anonymous_client):
    refresh()
    path = f"/api/traffic/observed/{NS}/frontend/adopt"
    assert anonymous_client.post(path).status_code == 401
    refused = logged_in(user_with("viewer")).post(path)
    assert refused.status_code == 403 and "editor role" in refused.json()["detail"]
    adopted = logged_in(user_with("editor")).post(path)
    assert adopted.status_code == 200, adopted.content
    row = AppGroup.objects.get(namespace=NS, name="frontend")
    assert row.origin == Origin.OBSERVED
    assert {w.name for w in row.workloads.all()} == {"frontend", "cartservice", "redis-cart", "adservice", "newservice"}
    report = sync.sync_once()
    assert f"{NS}/frontend" in report.created
    cr = fake_kube.get("netaware.io", "v1alpha1", "appgroups", "frontend", NS)
    assert {w["name"] for w in cr["spec"]["workloads"]} >= {"frontend", "newservice"}
    sync.sync_once()
    assert AppGroup.objects.get(pk=row.pk).origin == Origin.OBSERVED  # the sync keeps who wrote it


def test_a_hand_written_appgroup_is_never_overwritten():
    refresh()
    doc = boutique_document()
    doc["metadata"]["name"] = "frontend"
    hand = appgroup_services.import_document(document=doc)
    before = hand.spec_hash
    refused = logged_in(user_with("editor")).post(f"/api/traffic/observed/{NS}/frontend/adopt/")
    assert refused.status_code == 409 and "never overwrites" in refused.json()["detail"]
    services.set_mode(namespace=NS, mode="adopt")
    refresh()  # adopt mode meets the same refusal, recorded on the observed row
    assert AppGroup.objects.get(pk=hand.pk).spec_hash == before
    assert AppGroup.objects.get(pk=hand.pk).origin == Origin.NETAWARE
    assert "never overwrites" in ObservedAppGroup.objects.get(namespace=NS, name="frontend").adopt_error


def test_adopt_mode_follows_the_traffic_and_off_forgets_the_application():
    editor = logged_in(user_with("editor"))
    bad = editor.post("/api/traffic/modes/", {"namespace": NS, "mode": "always"}, content_type="application/json")
    assert bad.status_code == 400 and "mode" in bad.json()["errors"]
    assert logged_in(user_with("viewer")).post("/api/traffic/modes/", {"namespace": NS, "mode": "adopt"},
                                               content_type="application/json").status_code == 403
    assert editor.post("/api/traffic/modes/", {"namespace": NS, "mode": "adopt"},
                       content_type="application/json").status_code == 200
    refresh()
    first = AppGroup.objects.get(namespace=NS, name="frontend")
    assert first.origin == Origin.OBSERVED and first.dependencies.count() == 4
    grown = {**OBSERVED, **states(("adservice", "productcatalogservice", 1.5))}
    refresh(grown)
    assert AppGroup.objects.get(pk=first.pk).dependencies.count() == 5  # updated in place
    editor.post("/api/traffic/modes/", {"namespace": NS, "application": "frontend", "mode": "off"},
                content_type="application/json")
    refresh(grown)
    assert not ObservedAppGroup.objects.filter(name="frontend").exists()


def test_sources_api_shows_the_configuration(settings):
    settings.NETAWARE = {**settings.NETAWARE, "TRAFFIC_SOURCES": "istio,nope"}
    with pytest.raises(services.ConfigurationError, match="NETAWARE_TRAFFIC_SOURCES: unknown source nope"):
        services.configured_adapters()
    settings.NETAWARE = {**settings.NETAWARE, "TRAFFIC_SOURCES": "otel, istio"}
    assert [a.name for a in services.configured_adapters()] == ["istio", "otel"]
    body = logged_in(user_with("viewer")).get("/api/traffic/sources").json()
    assert body["configured"] == "otel, istio" and body["sources"] == []


def test_the_dashboard_shows_the_observed_graph_and_adopts_for_an_editor():
    declared()
    refresh()
    viewer = logged_in(user_with("viewer"))
    listing = viewer.get("/traffic/").content.decode()
    assert f"{NS}/frontend" in listing and "boutique" in listing
    page = viewer.get(f"/traffic/{NS}/frontend/").content.decode()
    assert "frontend → cartservice" in page and "newservice" in page and 'id="adopt"' not in page
    assert "kind: AppGroup" in page
    refused = viewer.post(f"/traffic/{NS}/frontend/adopt")
    assert refused.status_code == 403 and "editor role" in refused.content.decode()
    assert viewer.get(f"/traffic/{NS}/nothing/").status_code == 404
    editor = logged_in(user_with("editor"))
    assert 'id="adopt"' in editor.get(f"/traffic/{NS}/frontend/").content.decode()
    done = editor.post(f"/traffic/{NS}/frontend/adopt")
    row = AppGroup.objects.get(namespace=NS, name="frontend")
    assert done.status_code == 302 and done["Location"] == f"/appgroups/{row.pk}" and row.origin == Origin.OBSERVED


def test_weights_are_part_of_the_diff_and_of_the_drift():
    doc = boutique_document()
    doc["metadata"]["name"] = "boutique"
    frontend = next(w for w in doc["spec"]["workloads"] if w["name"] == "frontend")
    next(d for d in frontend["dependencies"] if d["name"] == "cart")["weight"] = 10  # learned: about 1.3x the median
    appgroup_services.import_document(document=doc)
    refresh()
    viewer = logged_in(user_with("viewer"))
    diff = viewer.get(f"/api/traffic/observed/{NS}/frontend/diff").json()
    assert [r[:3] for r in diff["reweighted"]] == [["frontend", "cart", 10.0]] and diff["hot_reweighted"] == 1
    text = scrape.render().decode()
    assert ('netaware_traffic_declared_reweighted_hot_edges{appgroup="boutique",namespace="default",observed="frontend"} 1.0'
            in text)
    page = viewer.get(f"/traffic/{NS}/frontend/").content.decode()
    assert 'id="diff-reweighted"' in page and "frontend → cart" in page
    doc["metadata"]["name"] = "frontend-weights"
    del next(d for d in frontend["dependencies"] if d["name"] == "cart")["weight"]  # unweighted: shapes close enough
    AppGroup.objects.filter(name="boutique").delete()
    appgroup_services.import_document(document=doc)
    refresh()
    assert ObservedAppGroup.objects.get(name="frontend").diff["reweighted"] == []
