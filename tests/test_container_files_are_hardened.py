"""Dockerfile, .dockerignore and docker-compose.yml keep the hardening docs/deploy.md promises.
There is no Docker engine here, so they are checked as files: a multi-stage build on a
digest-pinned base that installs the pinned requirements and runs as a non-root user; a build
context without secrets or virtualenvs; a Compose stack with the same component split as k8s/base,
internal services on loopback only, Prometheus without its lifecycle API, secrets as files that
``deploy/generate-secrets.sh`` creates and production start-up accepts."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from netaware_core import env

ROOT = Path(__file__).resolve().parent.parent
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def dockerfile_stages() -> list[tuple[str, list[str]]]:
    """[(FROM argument, instructions of that stage)], continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    args = {m.group(1): m.group(2) for ln in lines if (m := re.match(r"ARG (\w+)=(\S+)", ln))}
    stages: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("FROM "):
            image = line.split()[1]
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
            stages.append((image, []))
        elif stages:
            stages[-1][1].append(line)
    return stages


def test_dockerfile_is_multi_stage_pinned_and_non_root():
    stages = dockerfile_stages()
    assert len(stages) >= 2
    for image, _ in stages:
        assert DIGEST.search(image), f"base image {image} is not pinned by digest"
    build, runtime = stages[0][1], stages[-1][1]
    assert any(re.search(r"pip install --require-hashes .*-r requirements\.txt", ln) for ln in build)
    assert "--hash=sha256:" in (ROOT / "requirements.txt").read_text()  # the lock it installs
    assert not any("pip install" in ln for ln in runtime), "the runtime stage installs Python packages"
    assert any(ln.startswith("COPY --from=build /opt/venv") for ln in runtime)
    users = [ln.split()[1] for ln in runtime if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert not any(re.search(r"\b(curl|wget|build-essential|gcc)\b", ln) for ln in runtime)
    assert not any(ln.startswith("ADD ") for _, stage in stages for ln in stage)


def ignored(patterns: list[str], path: str) -> bool:
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        candidates = [path] + [str(Path(*Path(path).parts[:i])) for i in range(1, len(Path(path).parts))]
        if any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pattern.removeprefix("**/"))
               or fnmatch.fnmatch(Path(c).name, pattern.removeprefix("**/")) for c in candidates):
            result = not negate
    return result


def test_dockerignore_keeps_secrets_and_local_state_out():
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    for path in (".git/config", ".venv/bin/python", "apps/__pycache__/x.pyc", "var/log/web.log",
                 "deploy/secrets/secret_key", "deploy/kubeconfig", "k8s/overlays/demo/secrets/netaware.env",
                 "k8s/overlays/demo/secrets/certs/ca.key", "some/dir/server.key", ".env", "tests/test_x.py"):
        assert ignored(patterns, path), f"{path} would be sent to the build"
    for path in ("manage.py", "requirements.txt", "netaware_site/settings.py", "apps/probes/agent.py",
                 "scenarios/paper-testbed.yaml"):
        assert not ignored(patterns, path), f"{path} is needed in the image"


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def netaware_services(compose) -> dict:
    return {name: svc for name, svc in compose["services"].items() if svc.get("build") == "."}


def test_compose_has_the_same_component_split(compose):
    services = compose["services"]
    assert {"web", "worker", "beat", "migrate", "postgres", "redis", "prometheus"} <= set(services)
    cluster = {name for name, svc in services.items() if "cluster" in (svc.get("profiles") or [])}
    assert cluster == {"extender", "cluster-worker", "watcher", "sync"}
    worker, kube = services["worker"]["command"], services["cluster-worker"]["command"]
    assert worker[worker.index("-Q") + 1] == "celery" and kube[kube.index("-Q") + 1] == "kube"
    assert "netaware_site.beat:HeartbeatScheduler" in services["beat"]["command"]
    assert "netaware_site.migrate_locked" in " ".join(services["migrate"]["command"])
    for name, svc in services.items():
        for dependency in svc.get("depends_on") or {}:
            assert dependency in services, f"{name} depends on unknown {dependency}"


def test_compose_publishes_only_on_loopback_and_prometheus_has_no_lifecycle_api(compose):
    for name, svc in compose["services"].items():
        for port in svc.get("ports") or []:
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"
    assert not compose["services"]["postgres"].get("ports") and not compose["services"]["redis"].get("ports")
    command = " ".join(compose["services"]["prometheus"]["command"])
    assert "--web.enable-lifecycle" not in command and "--web.enable-admin-api" not in command


def test_compose_containers_are_hardened(compose):
    for name, svc in netaware_services(compose).items():
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in svc["security_opt"], name
        if name != "prometheus-config":  # the one documented exception: writes a fresh root-owned volume
            assert svc["user"].split(":")[0] not in ("0", "root"), name


def test_compose_environment_carries_no_secret_values(compose):
    for name, svc in compose["services"].items():
        for key, value in (svc.get("environment") or {}).items():
            value = str(value)
            assert "@" not in value or key.endswith("_FILE"), f"{name}: {key} carries credentials"
            if re.search(r"PASSWORD|SECRET|TOKEN", key) and not key.endswith("_FILE"):
                pytest.fail(f"{name}: {key} is given as a value, not as a file")


def test_generated_secrets_exist_and_pass_production_checks(compose, tmp_path):
    (tmp_path / "deploy").mkdir()
    shutil.copy(ROOT / "deploy" / "generate-secrets.sh", tmp_path / "deploy")
    (tmp_path / "k8s" / "scheduler").mkdir(parents=True)
    shutil.copy(ROOT / "k8s" / "scheduler" / "make-certs.sh", tmp_path / "k8s" / "scheduler")
    subprocess.run(["bash", str(tmp_path / "deploy" / "generate-secrets.sh")], check=True, capture_output=True,
                   timeout=120)
    for name, spec in compose["secrets"].items():
        if name == "kubeconfig":  # the user's own, only for --profile cluster
            continue
        assert (tmp_path / spec["file"]).is_file(), f"secret {name} is not generated"
    secrets = tmp_path / "deploy" / "secrets"
    env.check_secret("SECRET_KEY", (secrets / "secret_key").read_text(), min_length=env.MIN_SECRET_KEY_LENGTH)
    env.check_secret("NETAWARE_METRICS_TOKEN", (secrets / "metrics_token").read_text(), min_length=env.MIN_TOKEN_LENGTH)
    url = (secrets / "database_url").read_text()
    env.check_database_url("DATABASE_URL", url)
    assert f":{(secrets / 'postgres_password').read_text()}@postgres:" in url
    assert (secrets.stat().st_mode & 0o077) == 0, "the secrets directory is open to other users"
    assert not (ROOT / "deploy" / "secret_key.example").exists(), "a placeholder secret ships again"
