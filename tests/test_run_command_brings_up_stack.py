"""The README's run command brings the whole stack up and the topology fills from measurements.

Runs ``bash scripts/up.sh`` exactly as a user would (on its own ports, database, Redis db and state
directory so it cannot disturb a running instance: tests/support/stack.py), then waits — as the issue's "done when" says, at
most three minutes — until ``GET /api/topology/`` shows every node of ``scenarios/paper-testbed.yaml``
with latency, bandwidth and loss matching the scenario (p90 latency within 15 %). The emulator samples
RTTs around the nominal value, so this proves the whole path: emulated probe metrics → Prometheus →
Celery beat/worker → Postgres → topology snapshot → API.

The suite also passes beside this running stack (the README says so): the last test runs the tests that
go through a real Celery worker in a second pytest session, given exactly the stack's Redis URL.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
import yaml

from apps.probes.scenario import load_scenario
from tests.support.stack import run_up, running_stack

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack():
    with running_stack("e2e") as running:
        yield {"web": running.web, "result": running.result, "state": running.state, "env": running.env}


def admin_session(stack, secret: str | None = None) -> requests.Session | None:
    """A browser-like session logged in as the admin up.sh created (None when the login fails)."""
    password = secret if secret is not None else (stack["state"] / "secrets" / "admin-password").read_text().strip()
    session = requests.Session()
    page = session.get(f"{stack['web']}/admin/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(f"{stack['web']}/admin/login/?next=/admin/", timeout=10,
                          data={"username": "admin", "password": password, "csrfmiddlewaretoken": token,
                                "next": "/admin/"},
                          headers={"Referer": f"{stack['web']}/admin/login/"})
    return session if answer.ok and answer.url.endswith("/admin/") and "logout" in answer.text.lower() else None


def test_up_brings_stack_up_and_topology_matches_scenario(stack):
    result = stack["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{stack['web']}/" in result.stdout  # prints the dashboard URL
    assert "/api/docs/" in result.stdout  # and the API URL

    scenario = load_scenario(ROOT / "scenarios" / "paper-testbed.yaml")
    names = scenario.node_names

    def mismatches(body: dict) -> list[str]:
        """Everything in the served topology that does not match the scenario (empty = all good)."""
        spec = body["spec"]
        problems: list[str] = []
        if body.get("status", {}).get("stale"):
            problems.append(f"snapshot is stale: {body['status'].get('staleReason')}")
        loss_by_zone_pair: dict[tuple[str, str], list[float]] = {}
        for source in names:
            for target in names:
                if source == target:
                    continue
                link = scenario.link(source, target)
                assert link is not None
                try:
                    latency = spec["latency"][source][target]
                    bandwidth = spec["bandwidth"][source][target]
                    loss = spec["lossrate"][source][target]
                except KeyError:
                    problems.append(f"{source}->{target} missing")
                    continue
                # The emulator draws RTTs whose p90 is the scenario value: p90 must sit within 15 %.
                if abs(latency - link.latency_ms) > 0.15 * link.latency_ms:
                    problems.append(f"{source}->{target} latency {latency} vs {link.latency_ms}")
                if abs(bandwidth - link.bandwidth_mbps) > 0.15 * link.bandwidth_mbps:
                    problems.append(f"{source}->{target} bandwidth {bandwidth} vs {link.bandwidth_mbps}")
                # Per pair, loss is a binomial estimate over one rate window (a few hundred probes), so a
                # single pair may stray a few points; the zone-pair mean must be close.
                if abs(loss - link.loss_pct) > 6.0:
                    problems.append(f"{source}->{target} loss {loss} vs {link.loss_pct}")
                zone_pair = (scenario.node(source).zone, scenario.node(target).zone)
                loss_by_zone_pair.setdefault(zone_pair, []).append(loss - link.loss_pct)
        for zone_pair, errors in loss_by_zone_pair.items():
            mean_error = sum(errors) / len(errors)
            if abs(mean_error) > 1.5:
                problems.append(f"zone pair {zone_pair} mean loss error {mean_error:.2f} points")
        return problems

    # The promise: within 3 minutes of start-up the topology shows every node and matches.
    assert requests.get(f"{stack['web']}/api/topology/", timeout=5).status_code in (401, 403)  # anonymous
    session = admin_session(stack)
    assert session is not None
    deadline = time.monotonic() + 180
    problems: list[str] = ["no topology served yet"]
    while time.monotonic() < deadline:
        response = session.get(f"{stack['web']}/api/topology/", timeout=5)
        if response.ok:
            body = response.json()
            assert set(body["spec"]["latency"]) <= set(names)
            problems = mismatches(body)
            if not problems:
                break
        time.sleep(5)
    assert not problems, f"{len(problems)} mismatches after 3 minutes, e.g. {problems[:10]}"
    assert set(body["spec"]["latency"]) == set(names)
    dashboard = session.get(f"{stack['web']}/", timeout=5)
    assert dashboard.ok and b"Network topology" in dashboard.content

    # The main job, visible: the run command's rollout schedules Online Boutique into the demo cluster
    # through the extender; the pods land network-aware and the dashboard shows the placements.
    rollout = run_up(stack["env"], "rollout", "--seed", "2")
    assert rollout.returncode == 0, rollout.stdout + rollout.stderr
    assert "scheduled 11/11 pods of default/online-boutique" in rollout.stdout, rollout.stdout
    ours, theirs = map(float, re.search(r"netaware ([\d.]+) vs kube-scheduler's default profile ([\d.]+)",
                                        rollout.stdout).groups())
    assert ours > theirs + 20, rollout.stdout
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the extender writes placements in batches
        placed = session.get(f"{stack['web']}/api/appgroup-placements/", timeout=5).json()
        if placed.get("count", 0) >= 11:
            break
        time.sleep(1)
    assert placed["count"] >= 11, placed


def test_up_learns_online_boutique_from_its_mesh_traffic_and_rolls_it_out(stack):
    session = admin_session(stack)
    assert session is not None
    # Observed traffic: the mesh emulator's Online Boutique series (Istio, Linkerd, OpenTelemetry formats),
    # scraped by the real Prometheus, are learned into an observed AppGroup with every true edge; then
    # `up.sh rollout --learned` adopts it and schedules with it.
    boutique = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())
    app_of = {w["name"]: w["selector"]["matchLabels"]["app"] for w in boutique["spec"]["workloads"]}
    true_edges = {(app_of[w["name"]], app_of[d["name"]]) for w in boutique["spec"]["workloads"]
                  for d in w.get("dependencies") or ()}
    deadline = time.monotonic() + 240
    learned: set = set()
    while time.monotonic() < deadline:
        observed = session.get(f"{stack['web']}/api/traffic/observed/default/frontend/", timeout=5)
        if observed.ok:
            doc = observed.json()["document"]
            app = {w["name"]: w["selector"]["matchLabels"].get("app") for w in doc["spec"]["workloads"]}
            learned = {(app[w["name"]], app[d["name"]]) for w in doc["spec"]["workloads"]
                       for d in w.get("dependencies") or ()}
            if learned == true_edges:
                break
        time.sleep(5)
    assert learned == true_edges, (learned ^ true_edges, session.get(f"{stack['web']}/api/traffic/sources").text)
    rollout = run_up(stack["env"], "rollout", "--seed", "2", "--learned")
    assert rollout.returncode == 0, rollout.stdout + rollout.stderr
    # The adopted AppGroup is the one the API showed: named after the entry point, as the mesh names it
    # (the demo's ReplicaSets carry their workload's name, like a Deployment's).
    assert "learned AppGroup default/frontend: 11 workloads, 15 edges" in rollout.stdout, rollout.stdout
    assert "scheduled 11/11 pods of default/frontend" in rollout.stdout, rollout.stdout


def test_up_runs_with_auth_on_and_prints_a_working_admin_login(stack):
    result = stack["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    login_line = next(line for line in result.stdout.splitlines() if line.strip().startswith("Log in"))
    assert f"{stack['web']}/admin/login/" in login_line or f"{stack['web']}/login/" in login_line
    password_file = stack["state"] / "secrets" / "admin-password"
    assert str(password_file) in login_line and "as admin" in login_line
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    password = password_file.read_text().strip()
    assert len(password) >= 20 and password not in result.stdout + result.stderr

    # Authentication is on: an anonymous write is refused; no debug pages either.
    assert requests.post(f"{stack['web']}/api/appgroups/", json={}, timeout=10).status_code in (401, 403)
    anonymous = requests.get(f"{stack['web']}/no-such-page/", timeout=10, allow_redirects=False)
    # Pages need a login: the redirect goes to the login page (reversed from its ``^login/?$`` route).
    assert anonymous.status_code == 302
    assert urlsplit(anonymous.headers["Location"]).path.rstrip("/").endswith("/login")
    missing = admin_session(stack).get(f"{stack['web']}/no-such-page/", timeout=10)
    assert missing.status_code == 404 and "URLconf" not in missing.text

    def log_in(secret: str) -> bool:
        return admin_session(stack, secret) is not None

    assert log_in(password)
    assert not log_in(password + "x")

    # Running the command again changes nothing: same password, nothing restarted.
    again = run_up(stack["env"])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already running" in again.stdout
    assert password_file.read_text().strip() == password and log_in(password)


# The tests that go through a real Celery worker (and depend on nothing timing-sensitive beyond it).
CELERY_TESTS = [
    "tests/test_appgroup_sync_edits_reach_the_cluster_promptly.py",
    "tests/test_appgroup_sync_periodic_resync_task.py",
    "tests/test_pipeline_retention_rolls_up.py",
    "tests/test_topology_periodic_rebuild.py",
]


def tasks_done(worker_log: str) -> int:
    return len(re.findall(r"Task \S+\[[0-9a-f-]+\] succeeded", worker_log))


def test_celery_tests_pass_beside_the_stack_while_its_worker_consumes(stack):
    """Before the isolation the suite used Redis db 0 and the default ``celery`` queue like the run
    command, so a running stack's Celery worker consumed the tests' tasks and the Celery tests failed.
    The inner session must pass and its report header show it isolated itself (own redis-server,
    ``test_<name>_<pid>`` database, ``netaware-test-<pid>`` queue) while the stack's worker kept working."""
    assert stack["result"].returncode == 0, stack["result"].stdout + stack["result"].stderr
    assert requests.get(f"{stack['web']}/healthz", timeout=30).ok
    worker_log = stack["state"] / "log" / "worker.log"
    stack_redis = stack["env"]["REDIS_URL"]
    done_before = tasks_done(worker_log.read_text(errors="replace"))

    env = {k: v for k, v in os.environ.items()
           if k not in {"DJANGO_SETTINGS_MODULE", "CELERY_TASK_DEFAULT_QUEUE", "PYTEST_CURRENT_TEST"}}
    env.update(REDIS_URL=stack_redis, NETAWARE_FAIL_ON_SKIP="1")
    inner = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *CELERY_TESTS],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    summary = inner.stdout[-3000:]
    assert inner.returncode == 0, summary + inner.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", summary) and " failed" not in summary, summary

    header = re.search(r"^isolation: redis (\S+), database (\S+), celery queue (\S+)$", inner.stdout, re.M)
    assert header, inner.stdout[:2000]
    inner_redis, inner_db, inner_queue = header.groups()
    assert inner_redis.rsplit("/", 1)[0] != stack_redis.rsplit("/", 1)[0]  # another redis-server
    assert re.fullmatch(r"test_\w+_\d+", inner_db) and inner_queue.startswith("netaware-test-")

    # The stack's worker was consuming throughout: it kept processing its own beat tasks.
    after = worker_log.read_text(errors="replace")
    assert after.count("ready.") >= 1
    assert tasks_done(after) > done_before
