"""Both kustomize overlays render offline and every rendered object validates against the
Kubernetes 1.31 schemas (strict); the pure-Python build equals `kubectl kustomize` (the dev lock's
kubectl, tests/support/kubectl.py); and the workloads keep the deployment rules of docs/deploy.md:
one ServiceAccount per component, probes, requests and limits, restricted pod security, a single
beat, budgets where there are replicas, tokens only where the API is called, migrations run by a
Job, the probe DaemonSet's hardening."""

from __future__ import annotations

import base64

import kubernetes_validate
import pytest
import yaml

from tests.support import k8s_render, kustomize
from tests.support.kubectl import kubectl

KUBERNETES_VERSION = "1.31"
COMPONENTS = {"web", "extender", "worker", "cluster-worker", "beat", "watcher", "sync", "rebalancer"}
KUBE_API_COMPONENTS = {"web", "extender", "cluster-worker", "watcher", "sync", "rebalancer"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return k8s_render.prepared_tree(tmp_path_factory.mktemp("k8s"))


@pytest.fixture(scope="module")
def rendered(tree):
    return {overlay: k8s_render.render(tree, overlay) for overlay in k8s_render.OVERLAYS}


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def netaware_deployments(docs):
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind(docs, "Deployment")
            if d["metadata"]["labels"].get("app.kubernetes.io/name") == "netaware"}


def pod_spec(doc):
    return doc["spec"]["template"]["spec"]


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_every_rendered_object_validates(rendered, overlay):
    docs = rendered[overlay]
    assert len(docs) > 40
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{overlay}: {k8s_render.key(doc)}: {exc}")


def decoded(doc):
    """Secret data compared decoded: kustomize folds long base64 values over several lines."""
    if doc["kind"] == "Secret":
        doc = {**doc, "data": {k: base64.b64decode(v) for k, v in doc.get("data", {}).items()}}
    return doc


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_pure_python_build_equals_kubectl_kustomize(tree, rendered, overlay):
    result = kubectl("kustomize", str(tree / "overlays" / overlay))
    assert result.returncode == 0, result.stderr
    theirs = {k8s_render.key(d): decoded(d) for d in yaml.safe_load_all(result.stdout) if d}
    ours = {k8s_render.key(d): decoded(d) for d in rendered[overlay]}
    assert set(ours) == set(theirs)
    for k, doc in ours.items():
        assert doc == theirs[k], k


def test_the_builder_refuses_what_it_does_not_implement(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(kustomize.UnsupportedFeature):
        kustomize.build(tmp_path)
    (tmp_path / "kustomization.yaml").write_text("secretGenerator: [{name: s, literals: [a=b]}]\n")
    with pytest.raises(kustomize.UnsupportedFeature):  # a hash suffix would need reference rewriting
        kustomize.build(tmp_path)


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_one_deployment_and_service_account_per_component(rendered, overlay):
    deployments = netaware_deployments(rendered[overlay])
    assert set(deployments) == COMPONENTS
    accounts = [pod_spec(d)["serviceAccountName"] for d in deployments.values()]
    assert len(set(accounts)) == len(accounts) == len(COMPONENTS)
    for component, doc in deployments.items():
        assert pod_spec(doc)["serviceAccountName"] == f"netaware-{component}"


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_pods_are_restricted_probed_and_bounded(rendered, overlay):
    workloads = [d for d in rendered[overlay] if d["kind"] in ("Deployment", "Job", "DaemonSet")]
    for doc in workloads:
        name = k8s_render.key(doc)
        pod = pod_spec(doc)
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in [*(pod.get("initContainers") or []), *pod["containers"]]:
            sc = container["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["capabilities"] == {"drop": ["ALL"]}, name
            assert "add" not in sc["capabilities"] and not sc.get("privileged"), name
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), name
            assert "memory" in resources["limits"], name
        if doc["kind"] != "Job":
            for container in pod["containers"]:
                assert "livenessProbe" in container and "readinessProbe" in container, name
        if doc["metadata"]["namespace"] == "netaware-system":
            assert not pod.get("hostNetwork") and not pod.get("hostPID"), name


def test_namespaces_enforce_pod_security(rendered):
    namespaces = {d["metadata"]["name"]: d["metadata"]["labels"] for d in by_kind(rendered["production"], "Namespace")}
    assert namespaces["netaware-system"]["pod-security.kubernetes.io/enforce"] == "restricted"
    # Only the probe's namespace admits hostNetwork, and it holds nothing but the DaemonSet.
    assert namespaces["netaware-probe"]["pod-security.kubernetes.io/enforce"] == "privileged"
    in_probe_ns = {d["kind"] for d in rendered["production"] if d["metadata"].get("namespace") == "netaware-probe"}
    assert in_probe_ns == {"DaemonSet", "ServiceAccount"}


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_tokens_only_where_the_api_is_called(rendered, overlay):
    docs = rendered[overlay]
    for account in by_kind(docs, "ServiceAccount"):
        assert account.get("automountServiceAccountToken") is False, account["metadata"]
    for component, doc in netaware_deployments(docs).items():
        assert pod_spec(doc)["automountServiceAccountToken"] is (component in KUBE_API_COMPONENTS), component
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert (labels.get("netaware.io/kube-api") == "true") is (component in KUBE_API_COMPONENTS), component
    (job,) = by_kind(docs, "Job")
    (daemonset,) = by_kind(docs, "DaemonSet")
    assert pod_spec(job)["automountServiceAccountToken"] is False
    assert pod_spec(daemonset)["automountServiceAccountToken"] is False


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_replicas_budgets_and_the_single_beat(rendered, overlay):
    docs = rendered[overlay]
    deployments = netaware_deployments(docs)
    beat = deployments["beat"]
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"] == {"type": "Recreate"}
    assert deployments["extender"]["spec"]["replicas"] == 2
    budgets = {d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]: d
               for d in by_kind(docs, "PodDisruptionBudget")}
    for component, doc in deployments.items():
        if doc["spec"]["replicas"] > 1 and component != "extender":  # extender: see docs/deploy.md
            assert component in budgets, f"{component} has replicas but no PodDisruptionBudget"
            assert budgets[component]["spec"]["selector"]["matchLabels"] == doc["spec"]["selector"]["matchLabels"]
    assert set(budgets) <= {c for c, d in deployments.items() if d["spec"]["replicas"] > 1}


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_migrations_run_once_and_everyone_else_waits(rendered, overlay):
    docs = rendered[overlay]
    (job,) = by_kind(docs, "Job")
    (container,) = pod_spec(job)["containers"]
    assert container["args"] == ["python", "-m", "netaware_site.migrate_locked"]
    assert pod_spec(job)["restartPolicy"] == "Never"
    for component, doc in netaware_deployments(docs).items():
        inits = pod_spec(doc)["initContainers"]
        assert [c["args"] for c in inits] == [["python", "-m", "netaware_site.migrate_locked", "--wait"]], component
        for c in [*inits, *pod_spec(doc)["containers"]]:
            assert "migrate" not in c["args"][2:3], component  # nobody but the Job applies migrations


def test_kube_tasks_go_to_the_cluster_worker_only(rendered):
    docs = rendered["production"]
    (config,) = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] == "netaware"]
    queue = config["data"]["NETAWARE_KUBE_TASK_QUEUE"]
    deployments = netaware_deployments(docs)
    worker_args = pod_spec(deployments["worker"])["containers"][0]["args"]
    cluster_args = pod_spec(deployments["cluster-worker"])["containers"][0]["args"]
    assert worker_args[worker_args.index("-Q") + 1] == "celery"
    assert cluster_args[cluster_args.index("-Q") + 1] == queue


def test_probe_daemonset_is_hardened(rendered):
    (ds,) = by_kind(rendered["production"], "DaemonSet")
    pod = pod_spec(ds)
    assert pod["hostNetwork"] is True and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert env["PROBE_BIND"]["value"] == "$(NODE_IP)"  # listens on the node's IP, not 0.0.0.0
    assert env["NETAWARE_PROBE_SECRET"]["valueFrom"]["secretKeyRef"] == {"name": "netaware-probe", "key": "secret"}
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_base_ships_no_secret_and_demo_generates_usable_ones(rendered):
    assert not by_kind(kustomize.build(k8s_render.ROOT / "k8s" / "base"), "Secret")
    assert not by_kind(rendered["production"], "Secret")
    secrets = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in by_kind(rendered["demo"], "Secret")}
    main = {k: base64.b64decode(v).decode() for k, v in secrets[("netaware-system", "netaware")]["data"].items()}
    assert set(main) == {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}
    from netaware_core import env

    env.check_secret("SECRET_KEY", main["SECRET_KEY"], min_length=env.MIN_SECRET_KEY_LENGTH)
    env.check_database_url("DATABASE_URL", main["DATABASE_URL"])
    password = base64.b64decode(secrets[("netaware-system", "netaware-postgres")]["data"]["POSTGRES_PASSWORD"]).decode()
    assert f":{password}@" in main["DATABASE_URL"] and "\n" not in password
    token = secrets[("netaware-system", "netaware-metrics")]["data"]["token"]
    assert token == secrets[("monitoring", "netaware-metrics")]["data"]["token"]  # Prometheus has the same one
    for name in ("netaware-extender-tls", "netaware-scheduler-tls"):
        assert set(secrets[("netaware-system", name)]["data"]) == {"tls.crt", "tls.key", "ca.crt"}


def test_every_referenced_secret_and_config_exists_in_the_demo(rendered):
    docs = rendered["demo"]
    present = {(d["metadata"].get("namespace"), d["kind"], d["metadata"]["name"]) for d in docs}
    for doc in docs:
        if doc["kind"] not in ("Deployment", "Job", "DaemonSet"):
            continue
        ns, pod = doc["metadata"]["namespace"], pod_spec(doc)
        refs = set()
        for v in pod.get("volumes") or []:
            if "secret" in v:
                refs.add(("Secret", v["secret"]["secretName"]))
            if "configMap" in v:
                refs.add(("ConfigMap", v["configMap"]["name"]))
        for c in [*(pod.get("initContainers") or []), *pod["containers"]]:
            for source in c.get("envFrom") or []:
                if "secretRef" in source:
                    refs.add(("Secret", source["secretRef"]["name"]))
                if "configMapRef" in source:
                    refs.add(("ConfigMap", source["configMapRef"]["name"]))
            for e in c.get("env") or []:
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    refs.add(("Secret", ref["name"]))
        for kind, name in refs:
            assert (ns, kind, name) in present, f"{k8s_render.key(doc)} needs {kind} {ns}/{name}"


def _policy_allows_ingress(policies, pod_labels, port):
    """Sources allowed to reach ``port`` on pods with ``pod_labels`` (None = any source)."""
    sources = []
    for policy in policies:
        selector = policy["spec"]["podSelector"].get("matchLabels") or {}
        if not all(pod_labels.get(k) == v for k, v in selector.items()):
            continue
        for rule in policy["spec"].get("ingress") or []:
            ports = [p["port"] for p in rule.get("ports") or []]
            if ports and port not in ports:
                continue
            sources.append(rule.get("from"))
    return sources


@pytest.mark.parametrize("overlay", k8s_render.OVERLAYS)
def test_network_policies_default_deny_and_open_only_the_documented_flows(rendered, overlay):
    docs = rendered[overlay]
    policies = [d for d in by_kind(docs, "NetworkPolicy") if d["metadata"]["namespace"] == "netaware-system"]
    deny = [p for p in policies if p["spec"]["podSelector"] == {} and not p["spec"].get("ingress")
            and not p["spec"].get("egress")]
    assert deny and set(deny[0]["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    deployments = netaware_deployments(docs)
    labels = {c: d["spec"]["template"]["metadata"]["labels"] for c, d in deployments.items()}
    # Only the scheduler reaches the extender's mTLS port...
    (sources,) = _policy_allows_ingress(policies, labels["extender"], 8443)
    assert sources == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "netaware-scheduler"}}}]
    # ...only Prometheus its metrics port...
    (sources,) = _policy_allows_ingress(policies, labels["extender"], 8081)
    assert sources == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]
    # ...and nothing else accepts connections except the web port.
    for component in COMPONENTS - {"web", "extender"}:
        for port in (8000, 8081, 8443, 9105):
            assert not _policy_allows_ingress(policies, labels[component], port), (component, port)
    assert _policy_allows_ingress(policies, labels["web"], 8000)
