"""Every dashboard page renders against real data, shows errors next to the field, and saves nothing
on bad input (structured form, YAML editor, new-from-YAML, evaluation form); deletes need a POST
with a CSRF token."""

from __future__ import annotations

import re

import pytest
import yaml
from django.test import Client

from apps.appgroups import selectors, services
from apps.appgroups.models import AppGroup, Dependency, Workload
from tests.support.dashboard_seed import boutique_document, place, seed_boutique, seed_topology

pytestmark = pytest.mark.django_db


@pytest.fixture
def boutique():
    seed_topology()
    return seed_boutique()


def form_data(form) -> dict:
    """What a browser would submit for an unchanged form."""
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        data[name] = "" if value is None else value
    return data


def snapshot_of(appgroup: AppGroup) -> tuple:
    deps = tuple(Dependency.objects.filter(appgroup=appgroup).order_by("id").values_list(
        "source__name", "target__name", "latency", "bandwidth", "lossrate", "max_network_cost", "min_bandwidth"))
    workloads = tuple(Workload.objects.filter(appgroup=appgroup).order_by("id").values_list("name", "weight"))
    return workloads, deps, AppGroup.objects.filter(pk=appgroup.pk).values_list("name", "description").first()


# --- assets and topology --------------------------------------------------------------------------


def test_assets_are_served_without_static_server(client):
    for url, kind in (("/static/dashboard/vendor/plotly-cartesian-4.1.1.min.js", "javascript"),
                      ("/static/dashboard/dashboard.css", "css"), ("/static/dashboard/dashboard.js", "javascript"),
                      ("/static/dashboard/topology.js", "javascript")):
        response = client.get(url)
        assert response.status_code == 200 and kind in response["Content-Type"], url
        b"".join(response.streaming_content) if response.streaming else response.content


def test_topology_page_is_a_live_shell_over_its_data(client):
    body = client.get("/").content.decode()
    assert 'id="heatmap"' in body and "plotly-cartesian" in body and "dashboard/topology." in body
    assert client.get("/dashboard/data/heatmap").status_code == 404  # no snapshot yet, said plainly
    seed_topology()
    data = client.get("/dashboard/data/heatmap").json()
    assert data["nodes"] == ["a1", "a2", "b1", "f1"] and len(data["values"]) == 16


def test_topology_api_has_the_fields_the_page_reads(client):
    """The page reads spec maps, zones, costs and status.inferred/stalePairList: keep them in sync."""
    seed_topology()
    doc = client.get("/api/topology/").json()
    for key in ("latency", "bandwidth", "lossrate", "zones", "nodes", "costs", "minLatency", "maxLatency"):
        assert key in doc["spec"], key
    for key in ("stale", "staleReason", "inferred", "stalePairList", "measuredPairs", "inferredPairs", "version"):
        assert key in doc["status"], key
    assert "f1" in doc["status"]["inferred"]["a2"]  # a2 -> f1 was not measured
    nodes = client.get("/api/nodes/").json()
    assert {n["name"] for n in nodes} == {"a1", "a2", "b1", "f1"}
    assert {"zone", "region", "ready", "allocatable_cpu_millicores"} <= set(nodes[0])


# --- AppGroup list and detail ---------------------------------------------------------------------


def test_list_shows_counts_sync_state_and_pods_per_zone(client, boutique):
    AppGroup.objects.filter(pk=boutique.pk).update(sync_error="409 Conflict: resourceVersion mismatch")
    place("frontend", "a1")
    place("cart", "f1")
    for url in ("/appgroups/", "/appgroups"):
        response = client.get(url)
        assert response.status_code == 200, url
    body = response.content.decode()
    assert "online-boutique" in body and "409 Conflict: resourceVersion mismatch" in body
    group = next(g for g in response.context["groups"] if g.pk == boutique.pk)
    assert (group.n_workloads, group.n_placements) == (11, 2)
    assert response.context["zones"] == ["A", "FAR"]
    assert response.context["overview"][0]["counts"] == [1, 1]


def test_detail_shows_graph_order_and_placement_scores(client, boutique):
    response = client.get(f"/appgroups/{boutique.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    order = selectors.topology_order(appgroup=boutique)
    assert [row["name"] for row in response.context["workload_rows"]] == order
    assert order[0] == "frontend"
    # The graph is server-drawn SVG (no plotly on this page): a node per workload sized by weight, an
    # edge per dependency linking to its caller's row, named with its sensitivities.
    assert "plotly" not in body
    graph = body[body.index('<svg class="graph"'):body.index("</svg>")]
    radius = dict(re.findall(r'<g class="node" data-name="([^"]+)">.*?<circle [^>]*r="([0-9.]+)"', graph))
    assert sorted(radius) == sorted(w.name for w in boutique.workloads.all())
    assert float(radius["frontend"]) > float(radius["email"])  # weight 1.0 vs a smaller weight
    assert graph.count('<g class="edge') == Dependency.objects.filter(appgroup=boutique).count()
    assert 'href="#workload-frontend" aria-label="frontend → productcatalog: latency 0.7, bandwidth 0.2, loss 0.1' in graph
    assert 'id="workload-frontend"' in body
    assert f"/api/appgroups/{boutique.pk}/export?format=yaml&amp;flavor=diktyo" in body
    assert "No pod of this AppGroup is placed yet" in body


def test_small_graph_labels_edges_with_sensitivities_and_limits():
    from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
    from apps.dashboard.appgroup_figures import graph_figure

    spec = AppGroupSpec("default", "tiny", (
        WorkloadSpec("web", LabelSelector({"app": "web"}), 2.0,
                     (DependencySpec("db", Sensitivity(0.5, 0.25, 0.25), 30.0, 1e8),)),
        WorkloadSpec("db", LabelSelector({"app": "db"}), 0.5),
    ))
    figure = graph_figure(spec, ["web", "db"])
    text, dots, nodes = figure["data"]
    assert text["visible"] is True and text["text"] == ["L0.5 B0.25 X0.25<br>maxCost 30, minBW 100M"]
    assert dots["text"] == ["web → db<br>" + text["text"][0]]
    assert nodes["x"] == [0.0, 1.0]  # the caller left of its dependency
    ann = figure["layout"]["annotations"][0]
    assert (ann["ax"], ann["x"]) == (0.0, 1.0)


def test_placement_scores_follow_the_network(client, boutique):
    place("frontend", "a1")
    place("productcatalog", "a1")
    near = client.get(f"/appgroups/{boutique.pk}").context["scores"]
    by_pod = {p.pod: p for p in near.pods}
    assert by_pod["default/frontend-0"].zone == "A"
    near_score = by_pod["default/productcatalog-0"].score
    assert near_score is not None and 0 <= near_score <= 100
    place("productcatalog", "f1")  # moved far away: its score must drop
    far = {p.pod: p for p in client.get(f"/appgroups/{boutique.pk}").context["scores"].pods}
    assert far["default/productcatalog-0"].zone == "FAR"
    assert far["default/productcatalog-0"].score < near_score
    assert far["default/frontend-0"].score < near_score
    # A pod whose dependencies/dependents are all unplaced cannot be scored, and says why.
    place("email", "b1")
    rows = {p.pod: p for p in client.get(f"/appgroups/{boutique.pk}").context["scores"].pods}
    assert rows["default/email-0"].score is None and "no placed" in rows["default/email-0"].note


def test_detail_without_topology_says_so(client):
    group = seed_boutique()
    place("frontend", "a1")
    response = client.get(f"/appgroups/{group.pk}/")
    assert response.status_code == 200
    assert "No NetworkTopology yet" in response.content.decode()


def test_unknown_appgroup_is_404(client):
    assert client.get("/appgroups/999999/").status_code == 404
    assert client.get("/appgroups/999999/edit").status_code == 404


# --- structured editor (JSON documents, validated by the service as you type) -------------------


def editor_post(client, url, document):
    return client.post(url, data={"document": document}, content_type="application/json")


def test_editor_pages_render_for_new_and_existing(client, boutique):
    response = client.get(f"/appgroups/{boutique.pk}/edit")
    assert response.status_code == 200
    assert response.context["document"]["spec"]["workloads"][0]["name"] == "frontend"
    assert f"pk={boutique.pk}" in response.context["validate_url"]
    assert client.get("/appgroups/new").context["document"]["spec"]["workloads"] == []


@pytest.mark.parametrize(("mutate", "path", "message"), [
    (lambda d: d["spec"]["workloads"][0].update(weight=-1), "spec.workloads[0].weight", "greater than or equal to 0"),
    (lambda d: d["spec"]["workloads"][0]["dependencies"][0].update(maxNetworkCost=10001),
     "spec.workloads[0].dependencies[0].maxNetworkCost", "less than or equal to 10000"),
    (lambda d: d["spec"]["workloads"][0]["dependencies"][0].update(name="nowhere"),
     "spec.workloads[0].dependencies[0].name", "nowhere"),
    (lambda d: d["spec"]["workloads"][1].update(selector={"matchLabels": {"bad key!": "x"}}),
     "spec.workloads[1].selector", ""),
])
def test_editor_validation_names_the_field_and_saves_nothing(client, boutique, mutate, path, message):
    before = snapshot_of(boutique)
    doc = boutique_document()
    mutate(doc)
    answer = editor_post(client, f"/dashboard/data/appgroups/validate?pk={boutique.pk}", doc).json()
    assert answer["valid"] is False
    assert any(p.startswith(path) for p in answer["errors"]), answer["errors"]
    assert message in " ".join(m for p, ms in answer["errors"].items() if p.startswith(path) for m in ms)
    assert snapshot_of(boutique) == before
    response = editor_post(client, f"/dashboard/data/appgroups/save?pk={boutique.pk}", doc)
    assert response.status_code == 400 and snapshot_of(boutique) == before


def test_editor_validation_of_a_valid_document_previews_graph_and_order(client, boutique):
    answer = editor_post(client, f"/dashboard/data/appgroups/validate?pk={boutique.pk}", boutique_document()).json()
    assert answer == {**answer, "valid": True, "errors": {}}
    assert answer["preview"]["order"][0] == "frontend"
    assert sorted(answer["preview"]["figure"]["data"][-1]["text"]) == sorted(
        w.name for w in boutique.workloads.all())
    # The same document as a *new* AppGroup clashes with the stored one: the API's create rule.
    clash = editor_post(client, "/dashboard/data/appgroups/validate", boutique_document()).json()
    assert "already exists" in " ".join(clash["errors"]["metadata.name"])
    assert clash["preview"]["order"][0] == "frontend"  # the graph is still previewed


def test_editor_saves_edits_through_the_service(client, boutique):
    doc = boutique_document()
    doc["spec"]["workloads"][0]["weight"] = 0.35
    dep = doc["spec"]["workloads"][0]["dependencies"][0]
    dep.update(maxNetworkCost=7, minBandwidth="100M")
    dep["metrics"]["latency"] = 0.9
    response = editor_post(client, f"/dashboard/data/appgroups/save?pk={boutique.pk}", doc)
    assert response.status_code == 200, response.content
    assert response.json()["url"] == f"/appgroups/{boutique.pk}"
    frontend = Workload.objects.get(appgroup=boutique, name="frontend")
    assert frontend.weight == 0.35
    saved = Dependency.objects.get(source=frontend, target__name=dep["name"])
    assert (saved.latency, saved.max_network_cost, saved.min_bandwidth_bps) == (0.9, 7, 100e6)
    assert "Saved default/online-boutique" in client.get(response.json()["url"]).content.decode()


def test_editor_creates_a_new_appgroup_without_yaml(client):
    doc = {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup",
           "metadata": {"namespace": "shop", "name": "two-tier", "annotations": {"netaware.io/description": "web and db"}},
           "spec": {"topologySortingAlgorithm": "KahnSort", "workloads": [
               {"name": "web", "selector": {"matchLabels": {"app": "web"}}, "weight": 1,
                "dependencies": [{"name": "db", "metrics": {"latency": 1, "bandwidth": 0.5, "lossrate": 0}}]},
               {"name": "db", "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}}]}}
    response = editor_post(client, "/dashboard/data/appgroups/save", doc)
    assert response.status_code == 201, response.content
    group = AppGroup.objects.get(namespace="shop", name="two-tier")
    assert group.description == "web and db"
    assert list(selectors.topology_order(appgroup=group)) == ["web", "db"]
    assert editor_post(client, "/dashboard/data/appgroups/save", doc).status_code == 400  # no overwrite on create


def test_selector_preview_lists_the_pods_a_selector_matches_now(client):
    from apps.scheduler.models import ObservedPod

    ObservedPod.objects.create(namespace="shop", name="web-1", labels={"app": "web"}, node_name="a1")
    ObservedPod.objects.create(namespace="shop", name="db-1", labels={"app": "db"}, node_name="b1")
    ObservedPod.objects.create(namespace="shop", name="web-old", labels={"app": "web"}, terminal=True)
    answer = client.post("/dashboard/data/selector-preview", {"namespace": "shop", "selector": {"matchLabels": {"app": "web"}}},
                         content_type="application/json").json()
    assert (answer["count"], answer["pods"], answer["known"]) == (1, [{"name": "web-1", "node": "a1"}], 2)
    bad = client.post("/dashboard/data/selector-preview", {"selector": {"matchLabels": {"no spaces": "x"}}},
                      content_type="application/json")
    assert bad.status_code == 400 and "selector" in bad.json()


# --- YAML editor and new-from-YAML ---------------------------------------------------------------


def test_yaml_edit_round_trips_and_saves(client, boutique):
    response = client.get(f"/appgroups/{boutique.pk}/yaml")
    assert response.status_code == 200
    text = response.context["form"].initial["document"]
    doc = yaml.safe_load(text)
    assert doc["kind"] == "AppGroup" and doc["metadata"]["name"] == "online-boutique"
    doc["spec"]["workloads"][1]["weight"] = 0.42
    response = client.post(f"/appgroups/{boutique.pk}/yaml", {"document": yaml.safe_dump(doc, sort_keys=False)})
    assert response.status_code == 302
    assert Workload.objects.get(appgroup=boutique, name=doc["spec"]["workloads"][1]["name"]).weight == 0.42


@pytest.mark.parametrize(("mutate", "path", "message"), [
    (lambda d: d["spec"]["workloads"][1].__setitem__("weight", -2), "spec.workloads[1].weight", "greater than or equal to 0"),
    (lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("name", "nope"),
     "spec.workloads[0].dependencies[0].name", "nope"),
    (lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("maxNetworkCost", 20000),
     "spec.workloads[0].dependencies[0].maxNetworkCost", "10000"),
    (lambda d: d.__setitem__("kind", "Pod"), "kind", "AppGroup"),
])
def test_yaml_edit_errors_name_the_field_path_and_line_and_save_nothing(client, boutique, mutate, path, message):
    before = snapshot_of(boutique)
    doc = yaml.safe_load(client.get(f"/appgroups/{boutique.pk}/yaml").context["form"].initial["document"])
    mutate(doc)
    text = yaml.safe_dump(doc, sort_keys=False)
    response = client.post(f"/appgroups/{boutique.pk}/yaml", {"document": text})
    assert response.status_code == 400
    errors = response.context["form"].path_errors
    assert errors and errors[0]["path"] == path, errors
    assert message in errors[0]["message"]
    line = errors[0]["line"]
    assert line is not None
    key = path.rsplit(".", 1)[-1]
    assert text.splitlines()[line - 1].strip().lstrip("- ").startswith(key), (line, text.splitlines()[line - 1])
    body = response.content.decode()
    assert path in body and "Not saved" in body
    assert snapshot_of(boutique) == before


def test_yaml_syntax_errors_and_non_documents_are_form_errors(client, boutique):
    before = snapshot_of(boutique)
    for text, message in (("spec: [unclosed", "YAML parse error (line"), ("- a\n- b\n", "mapping"),
                          ("a: 1\n---\nb: 2\n", "exactly one YAML document"), ("", "required")):
        response = client.post(f"/appgroups/{boutique.pk}/yaml", {"document": text})
        assert response.status_code == 400, text
        assert message in " ".join(response.context["form"].errors["document"]), text
    assert snapshot_of(boutique) == before


def test_new_from_yaml_prefills_boutique_creates_and_refuses_to_overwrite(client):
    response = client.get("/appgroups/import")
    assert response.status_code == 200
    text = response.context["form"].initial["document"]
    assert "online-boutique" in text and "kind: AppGroup" in text
    response = client.post("/appgroups/import", {"document": text})
    assert response.status_code == 302
    group = AppGroup.objects.get(namespace="default", name="online-boutique")
    assert response["Location"] == f"/appgroups/{group.pk}"
    assert group.workloads.count() == 11
    # Same name again, with a changed weight: refused, and the stored one is untouched.
    before = snapshot_of(group)
    doc = boutique_document()
    doc["spec"]["workloads"][0]["weight"] = 0.01
    response = client.post("/appgroups/import/", {"document": yaml.safe_dump(doc)})
    assert response.status_code == 400
    errors = response.context["form"].path_errors
    assert errors[0]["path"] == "metadata.name" and "already exists" in errors[0]["message"]
    assert snapshot_of(group) == before and AppGroup.objects.count() == 1


def test_new_with_bad_yaml_creates_nothing(client):
    doc = boutique_document()
    doc["metadata"]["name"] = "Not A DNS Name"
    response = client.post("/appgroups/import", {"document": yaml.safe_dump(doc)})
    assert response.status_code == 400
    assert response.context["form"].path_errors[0]["path"] == "metadata.name"
    assert AppGroup.objects.count() == 0 and Workload.objects.count() == 0


def test_new_accepts_a_scheduler_plugins_resource(client):
    from apps.appgroups import documents

    spec = documents.spec_from_document(boutique_document())
    doc = documents.document_from_spec(spec, flavor="diktyo")
    doc["metadata"]["name"] = "boutique-diktyo"
    response = client.post("/appgroups/import", {"document": yaml.safe_dump(doc)})
    assert response.status_code == 302
    assert AppGroup.objects.get(name="boutique-diktyo").workloads.count() == 11


# --- delete and CSRF ------------------------------------------------------------------------------


def test_delete_needs_confirmation_post(client, boutique):
    place("frontend", "a1")
    response = client.get(f"/appgroups/{boutique.pk}/delete")
    assert response.status_code == 200 and "1 recorded placement" in response.content.decode()
    assert AppGroup.objects.filter(pk=boutique.pk).exists()
    response = client.post(f"/appgroups/{boutique.pk}/delete")
    assert response.status_code == 302 and response["Location"] == "/appgroups"
    assert not AppGroup.objects.filter(pk=boutique.pk).exists()


def test_forms_are_csrf_protected(boutique):
    from django.contrib.auth import get_user_model

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.create_superuser("csrf-admin", "c@example.com", "pw"))
    for url, data in ((f"/appgroups/{boutique.pk}/delete", {}), ("/appgroups/import", {"document": "x: 1"}),
                      ("/evaluation/", {"seeds": "2"}), ("/dashboard/data/appgroups/validate", {}),
                      (f"/dashboard/data/appgroups/save?pk={boutique.pk}", {}), ("/account/tokens/", {"name": "x"})):
        assert strict.post(url, data).status_code == 403, url
    assert AppGroup.objects.filter(pk=boutique.pk).exists()
    page = strict.get(f"/appgroups/{boutique.pk}/yaml").content.decode()
    assert re.search(r'name="csrfmiddlewaretoken" value="[^"]+"', page)


# --- scheduler pages ------------------------------------------------------------------------------


def test_decisions_page_and_the_api_fields_it_reads(client):
    from django.utils import timezone

    from apps.scheduler.models import Decision

    assert client.get("/decisions/").status_code == 200
    decision = Decision.objects.create(
        ts=timezone.now(), verb="prioritize", pod_namespace="default", pod_name="frontend-0", profile="network",
        candidates=2, node="a1", result={"best": "a1", "notes": []},
        breakdown={"nodes": ["a1", "b1"], "total": [90.0, 40.0], "extender": [9, 4], "scorers": {"network": [90.0, 40.0]}},
    )
    listing = client.get("/api/scheduler/decisions/").json()
    row = listing["results"][0]
    assert {"id", "ts", "verb", "pod", "workload", "profile", "candidates", "result", "error", "duration_ms"} <= set(row)
    detail = client.get(f"/api/scheduler/decisions/{decision.pk}/").json()
    assert detail["breakdown"]["a1"] == {"network": 90.0, "total": 90.0, "extender": 9}


def evaluation_post(**overrides):
    data = {"scenario": "scenarios/paper-testbed.yaml", "appgroup": "scenarios/online-boutique-appgroup.yaml",
            "seeds": "2", "first_seed": "0", "profiles": ["default", "network"], "with_optimum": "on"}
    data.update(overrides)
    return data


def test_evaluation_form_defaults(client):
    response = client.get("/evaluation/")
    assert response.status_code == 200
    form = response.context["form"]
    assert form["seeds"].value() == 10
    assert form["profiles"].value() == ["default", "network", "hybrid-1", "hybrid-5", "load-aware"]
    assert form["scenario"].value() == "scenarios/paper-testbed.yaml"
    choices = dict(form.fields["appgroup"].choices)
    assert "scenarios/online-boutique-appgroup.yaml" in choices
    assert "scenarios/online-boutique-appgroup.yaml" not in dict(form.fields["scenario"].choices)


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"seeds": "0"}, "seeds", "greater than or equal to 1"),
    ({"seeds": "101"}, "seeds", "less than or equal to 100"),
    ({"profiles": ["default", "warp-drive"]}, "profiles", "not one of the available choices"),
    ({"extra_profiles": "warp-drive"}, "extra_profiles", "unknown profile 'warp-drive'"),
    ({"profiles": []}, "profiles", "at least one profile"),
    ({"scenario": "scenarios/../../etc/passwd"}, "scenario", "not one of the available choices"),
])
def test_evaluation_bad_input_is_a_form_error(client, overrides, field, message):
    response = client.post("/evaluation/", evaluation_post(**overrides))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert "report" not in response.context


def finished_run(client, data) -> tuple[str, object]:
    """POST the form: a redirect to the run's page; the real worker carries the run out; its page."""
    import time

    from apps.dashboard.models import EvaluationRun

    response = client.post("/evaluation/", data)
    assert response.status_code == 302, response.context and response.context["form"].errors
    url = response["Location"]
    run = EvaluationRun.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    deadline = time.monotonic() + 120
    while run.status in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.status == "done", (run.status, run.error)
    return url, client.get(url)


@pytest.mark.django_db(transaction=True)
def test_evaluation_runs_in_the_background_and_shows_table_and_figure(client, celery_worker_thread):
    url, response = finished_run(client, evaluation_post(extra_profiles="hybrid-3"))
    assert response.status_code == 200
    result = response.context["result"]
    rows = result["rows"]
    assert [r["profile"] for r in rows] == ["default", "network", "hybrid-3"]
    assert result["seeds"] == 2 and result["optimum"] is not None
    assert "±" in rows[1]["average"] and len(rows[0]["zones"]) == len(result["zones"]) == 4
    mean = {r["profile"]: float(r["average"].split(" ")[0]) for r in rows}
    assert mean["network"] > mean["default"]  # the network profile must beat kube-scheduler's default on this testbed
    figure = result["figure"]
    assert figure["data"][0]["type"] == "bar" and figure["data"][0]["x"] == ["default", "network", "hybrid-3"]
    body = response.content.decode()
    assert 'id="results-table"' in body and 'id="evaluation-figure"' in body and "% of optimum" in body
    # The run's address is a shareable page: the form shows its input, the list links to it.
    assert response.context["form"]["extra_profiles"].value() == "hybrid-3"
    assert url in client.get("/evaluation/").content.decode()
    state = client.get(url.replace("/evaluation/runs/", "/dashboard/data/evaluation/runs/").rstrip("/")).json()
    assert state["status"] == "done" and state["done"] == state["total"] == 3 * 2  # profiles x orders


def test_the_harness_reports_each_order_of_each_profile_as_progress():
    from pathlib import Path

    from apps.scheduler.evaluation.report import run_evaluation

    root = Path(__file__).resolve().parents[1] / "scenarios"
    calls: list[tuple[str, int, int]] = []
    run_evaluation(root / "paper-testbed.yaml", root / "online-boutique-appgroup.yaml", profiles=["default", "network"],
                   seeds=3, first_seed=5, with_optimum=False, progress=lambda *a: calls.append(a))
    assert [(done, total) for _s, done, total in calls] == [(n, 6) for n in range(1, 7)]
    assert calls[0][0] == "profile default (1 of 2): order 1 of 3"
    assert calls[4][0] == "profile network (2 of 2): order 2 of 3"


@pytest.mark.django_db(transaction=True)
def test_evaluation_of_a_stored_appgroup(client, celery_worker_thread):
    group = seed_boutique()
    services.save_appgroup(spec=selectors.appgroup_spec(appgroup=group), appgroup=group)
    _url, response = finished_run(client, evaluation_post(appgroup=f"db:{group.pk}", profiles=["network"],
                                                          with_optimum=""))
    result = response.context["result"]
    assert result["appgroups"] == ["default/online-boutique"] and result["optimum"] is None


def test_a_run_of_a_deleted_appgroup_fails_with_a_reason(client):
    from apps.dashboard import services as dashboard
    from apps.dashboard.models import EvaluationRun

    run = EvaluationRun.objects.create(params={"scenario": "scenarios/paper-testbed.yaml", "appgroup": "db:999999",
                                               "seeds": 1, "first_seed": 0, "profiles": ["network"], "with_optimum": False})
    dashboard.execute_evaluation(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and "does not exist" in run.error
    page = client.get(f"/evaluation/runs/{run.pk}").content.decode()
    assert 'id="run-error"' in page
    dashboard.execute_evaluation(run_id=run.pk)  # a finished run is left alone
    run.refresh_from_db()
    assert run.status == "failed"
