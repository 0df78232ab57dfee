"""RBAC is exactly what docs/deploy.md documents: the effective permissions of every
ServiceAccount in the rendered overlays equal the rows of the RBAC table (nothing more, nothing
missing), no rule uses a wildcard, and only the extender can bind pods."""

from __future__ import annotations

import re
from itertools import product

import pytest

from tests.support import k8s_render

DOC = k8s_render.ROOT / "docs" / "deploy.md"
# Roles Kubernetes itself ships that our bindings reference (bootstrap policy of 1.31).
BUILTIN_ROLES = {
    ("kube-system", "Role", "extension-apiserver-authentication-reader"): [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
         "resourceNames": ["extension-apiserver-authentication"]},
    ],
}
Permission = tuple[str, str, str, str, str, str]  # (account, scope, group, resource, verb, name)


def documented(overlay: str) -> set[Permission]:
    text = DOC.read_text()
    table = text.split("<!-- rbac-table:start -->", 1)[1].split("<!-- rbac-table:end -->", 1)[0]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    assert rows, "the RBAC table in docs/deploy.md is empty"
    out: set[Permission] = set()
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        account, overlays, scope, groups, resources, verbs, names, why = cells
        assert why, f"RBAC row without a reason: {row}"
        if overlays not in ("all", overlay):
            continue
        split = lambda cell: [v.strip() for v in cell.split(",") if v.strip()]  # noqa: E731
        groups_ = ["" if g == "core" else g for g in split(groups)]
        for group, resource, verb, name in product(groups_, split(resources), split(verbs), split(names) or [""]):
            out.add((account, scope, group, resource, verb, name))
    return out


def effective(docs: list[dict]) -> set[Permission]:
    roles = {}
    for doc in docs:
        if doc["kind"] in ("Role", "ClusterRole"):
            roles[(doc["metadata"].get("namespace", ""), doc["kind"], doc["metadata"]["name"])] = doc.get("rules") or []
    roles.update(BUILTIN_ROLES)
    out: set[Permission] = set()
    for doc in docs:
        if doc["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = doc["roleRef"]
        namespace = doc["metadata"].get("namespace", "")
        role_key = (namespace if ref["kind"] == "Role" else "", ref["kind"], ref["name"])
        assert role_key in roles, f"{doc['metadata']['name']} references a role nobody defines: {role_key}"
        scope = "cluster" if doc["kind"] == "ClusterRoleBinding" else namespace
        for subject in doc.get("subjects") or []:
            assert subject["kind"] == "ServiceAccount", f"binding to a {subject['kind']}: {doc['metadata']['name']}"
            account = f"{subject['namespace']}/{subject['name']}"
            for rule in roles[role_key]:
                assert "nonResourceURLs" not in rule
                for group, resource, verb, name in product(
                    rule["apiGroups"], rule["resources"], rule["verbs"], rule.get("resourceNames") or [""]
                ):
                    out.add((account, scope, group, resource, verb, name))
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tree = k8s_render.prepared_tree(tmp_path_factory.mktemp("k8s"))
    return {overlay: k8s_render.render(tree, overlay) for overlay in k8s_render.OVERLAYS}


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_effective_permissions_are_exactly_the_documented_ones(rendered, overlay):
    granted = effective(rendered[overlay])
    documented_ = documented(overlay)
    assert not granted - documented_, f"granted but not documented: {sorted(granted - documented_)}"
    assert not documented_ - granted, f"documented but not granted: {sorted(documented_ - granted)}"


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_no_wildcards_and_no_escalation_verbs(rendered, overlay):
    for doc in rendered[overlay]:
        for rule in doc.get("rules") or [] if doc["kind"] in ("Role", "ClusterRole") else []:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in v for v in rule.get(field) or []), (doc["metadata"]["name"], rule)
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), (doc["metadata"]["name"], rule)
            assert not {"secrets", "roles", "clusterroles", "rolebindings", "clusterrolebindings"} & set(
                rule["resources"]), (doc["metadata"]["name"], rule)


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_only_the_extender_binds_pods(rendered, overlay):
    binders = {p[0] for p in effective(rendered[overlay]) if p[3] in ("pods/binding", "bindings")}
    assert binders == {"netaware-system/netaware-extender"}


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_namespaced_rights_stay_in_netaware_namespaces(rendered, overlay):
    for account, scope, group, resource, _verb, _name in effective(rendered[overlay]):
        if group in ("coordination.k8s.io",) or resource.startswith("networktopologies"):
            assert scope == "netaware-system", (account, group, resource)


def test_accounts_without_bindings_are_the_tokenless_ones(rendered):
    docs = rendered["production"]
    bound = {p[0] for p in effective(docs)}
    accounts = {f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in docs if d["kind"] == "ServiceAccount"}
    assert accounts - bound == {
        "netaware-system/netaware-worker", "netaware-system/netaware-beat", "netaware-system/netaware-migrate",
        "netaware-probe/netaware-probe",
    }


def test_the_table_names_code_for_every_netaware_rule():
    table = DOC.read_text().split("<!-- rbac-table:start -->", 1)[1].split("<!-- rbac-table:end -->", 1)[0]
    for row in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if cells[0].startswith("netaware-system/netaware-") and "scheduler" not in cells[0]:
            assert re.search(r"`[^`]+`|as above", cells[-1]), f"no code reference in: {row}"
