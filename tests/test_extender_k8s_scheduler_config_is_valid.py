"""k8s/scheduler/: the second scheduler's manifests validate against Kubernetes 1.31 and its
KubeSchedulerConfiguration points every extender verb at the URLs the extender serves."""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from apps.scheduler.extender_views import EXTENDER_PATHS

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in (ROOT / "k8s" / "scheduler").glob("*.yaml") if p.name != "kustomization.yaml")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_manifests_validate(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, "1.31", strict=True)


def scheduler_config() -> dict:
    configmap = yaml.safe_load((ROOT / "k8s" / "scheduler" / "scheduler-config.yaml").read_text())
    return yaml.safe_load(configmap["data"]["scheduler-config.yaml"])


def test_kube_scheduler_configuration_uses_the_extender():
    config = scheduler_config()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == ["netaware-scheduler"]
    (extender,) = config["extenders"]
    # The extender Service of the run_extender server, over mutual TLS (docs/deploy.md).
    assert extender["urlPrefix"] == "https://netaware-extender.netaware-system.svc:8443/scheduler"
    assert extender["enableHTTPS"] is True
    tls = extender["tlsConfig"]
    assert set(tls) == {"serverName", "certFile", "keyFile", "caFile"}
    assert tls["serverName"] == "netaware-extender.netaware-system.svc"
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is True
    assert isinstance(extender["weight"], int) and extender["weight"] > 0
    assert re.fullmatch(r"\d+(ms|s|m)", extender["httpTimeout"])  # a metav1.Duration string
    allowed = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb", "weight", "enableHTTPS",
               "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"}
    assert set(extender) <= allowed
    # kube-scheduler calls strings.TrimRight(urlPrefix, "/") + "/" + verb: the extender server answers
    # exactly those paths, each with its verb.
    for key in ("filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"):
        url = extender["urlPrefix"].split(":8443", 1)[1] + "/" + extender[key]
        assert EXTENDER_PATHS[url] == extender[key] == key.removesuffix("Verb")


def test_deployment_mounts_the_config_and_runs_as_the_scheduler_account():
    deployment = yaml.safe_load((ROOT / "k8s" / "scheduler" / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "netaware-scheduler"
    (container,) = pod["containers"]
    assert "--config=/etc/kubernetes/netaware/scheduler-config.yaml" in container["command"]
    assert pod["volumes"][0]["configMap"]["name"] == "netaware-scheduler-config"
    # The client certificate the configuration's tlsConfig names is mounted from its Secret.
    tls = scheduler_config()["extenders"][0]["tlsConfig"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    secret_volume = next(v for v in pod["volumes"] if "secret" in v)
    assert secret_volume["secret"]["secretName"] == "netaware-scheduler-tls"
    for key in ("certFile", "keyFile", "caFile"):
        assert tls[key].startswith(mounts[secret_volume["name"]] + "/")
