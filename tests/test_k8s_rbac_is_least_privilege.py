"""RBAC is exactly what docs/deploy.md documents: the effective permissions of every
ServiceAccount in the rendered overlays equal the rows of the RBAC table (nothing more, nothing
missing), no rule uses a wildcard, and only the extender can bind pods."""

from __future__ import annotations

import pathlib
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


CODE_DIRS = ("apps", "netaware_core", "netaware_site")


def _sources() -> dict[pathlib.Path, str]:
    root = k8s_render.ROOT
    return {path.relative_to(root): path.read_text() for d in CODE_DIRS for path in (root / d).rglob("*.py")
            if "migrations" not in path.parts}


def _defines(source: str, name: str) -> bool:
    return re.search(rf"^\s*(def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]", source, re.M) is not None


def code_reference_problem(ref: str, sources: dict[pathlib.Path, str]) -> str:
    """Why ``ref`` (a backticked cell text) does not name code that exists ("" when it does): a file
    (``apps/x/y.py``, with ``: name`` a definition in it), ``module.name`` (a definition in a module of
    that name), a management command, a URL the project resolves, or a literal the code uses."""
    from django.urls import Resolver404, resolve

    ref = ref.strip()
    path, _, symbol = ref.partition(": ")
    if path.endswith(".py"):
        source = sources.get(pathlib.Path(path))
        if source is None:
            return f"{path} does not exist"
        return "" if not symbol or _defines(source, symbol.strip()) else f"{path} defines no {symbol}"
    if ref.startswith("/"):
        try:
            resolve(ref)
        except Resolver404:
            return f"no URL {ref}"
        return ""
    if re.fullmatch(r"[A-Za-z_]\w*\.[A-Za-z_]\w*", ref):
        module, name = ref.split(".")
        if any(p.stem == module and _defines(src, name) for p, src in sources.items()):
            return ""
        return f"no module {module}.py defines {name}"
    if any(p.parts[-3:-1] == ("management", "commands") and p.stem == ref for p in sources):
        return ""
    if re.fullmatch(r"[A-Za-z_]\w*", ref) and any(_defines(src, ref) or f'"{ref}"' in src for src in sources.values()):
        return ""
    return f"{ref!r} names no code"


def test_the_table_names_code_for_every_netaware_rule():
    table = DOC.read_text().split("<!-- rbac-table:start -->", 1)[1].split("<!-- rbac-table:end -->", 1)[0]
    sources = _sources()
    previous_named = False
    checked = 0
    for row in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if not (cells[0].startswith("netaware-system/netaware-") and "scheduler" not in cells[0]):
            continue
        refs = re.findall(r"`([^`]+)`", cells[-1])
        if not refs:
            assert cells[-1] == "as above" and previous_named, f"no code reference in: {row}"
            continue
        for ref in refs:
            problem = code_reference_problem(ref, sources)
            assert not problem, f"{problem} (in: {row})"
            checked += 1
        previous_named = True
    assert checked >= 15


@pytest.mark.parametrize("ref", ["apps/scheduler/nothing.py", "apps/scheduler/runtime.py: no_such_function",
                                 "sync.no_such_function", "no_such_command", "/no/such/url"])
def test_a_reference_to_code_that_does_not_exist_is_refused(ref):
    assert code_reference_problem(ref, _sources())
