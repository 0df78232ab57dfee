"""The shipped Online Boutique AppGroup selects the pods upstream's kubernetes-manifests create.

UPSTREAM_APP_LABELS is copied from GoogleCloudPlatform/microservices-demo release/kubernetes-manifests.yaml
(each Deployment's ``spec.template.metadata.labels.app``); the workload names stay the paper's Table 4.
"""

from pathlib import Path

import yaml

from apps.appgroups import documents
from tests.support.scoring_fixtures import paper_appgroup

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE = ROOT / "scenarios" / "online-boutique-appgroup.yaml"

UPSTREAM_APP_LABELS = [
    "frontend",
    "recommendationservice",
    "productcatalogservice",
    "checkoutservice",
    "currencyservice",
    "cartservice",
    "shippingservice",
    "adservice",
    "paymentservice",
    "emailservice",
    "redis-cart",
]

PAPER_NAMES = {
    "frontend", "recommendation", "productcatalog", "checkout", "currency", "cart",
    "shipping", "ad", "payment", "email", "redis-cart",
}


def _upstream_pod_labels(app: str) -> dict[str, str]:
    # Upstream pods also carry the pod-template-hash the ReplicaSet adds.
    return {"app": app, "pod-template-hash": "5d8f7c9b8d"}


def _matches(spec, labels):
    return [w.name for w in spec.workloads if w.selector.matches(labels)]


def test_every_upstream_service_matches_exactly_one_shipped_workload():
    spec = documents.spec_from_document(yaml.safe_load(BOUTIQUE.read_text()))
    assert {w.name for w in spec.workloads} == PAPER_NAMES
    matched = {}
    for app in UPSTREAM_APP_LABELS:
        hits = _matches(spec, _upstream_pod_labels(app))
        assert len(hits) == 1, (app, hits)
        matched[app] = hits[0]
    # ... and every workload is matched by some upstream service (a bijection).
    assert set(matched.values()) == PAPER_NAMES
    assert matched["cartservice"] == "cart" and matched["recommendationservice"] == "recommendation"
    # The old paper-style labels (app=cart) match nothing: they are not what the pods carry.
    assert _matches(spec, {"app": "cart"}) == []
    # Controller names are upstream's Deployment names, which equal the app labels.
    assert sorted(w.controller_name for w in spec.workloads) == sorted(UPSTREAM_APP_LABELS)


def test_in_memory_paper_fixture_agrees_with_the_shipped_file():
    shipped = documents.spec_from_document(yaml.safe_load(BOUTIQUE.read_text()))
    fixture = paper_appgroup()
    for app in UPSTREAM_APP_LABELS:
        assert _matches(fixture, _upstream_pod_labels(app)) == _matches(shipped, _upstream_pod_labels(app))
    for workload in fixture.workloads:
        assert workload.selector == shipped.workload(workload.name).selector


def test_diktyo_example_extras_carry_the_upstream_selectors():
    doc = yaml.safe_load((ROOT / "k8s" / "examples" / "appgroup-diktyo.yaml").read_text())
    spec = documents.spec_from_document(doc)
    for app in UPSTREAM_APP_LABELS:
        assert len(_matches(spec, _upstream_pod_labels(app))) == 1, app
