"""Tests pass while ``scripts/up.sh`` runs: they never share its Redis, Celery queue, database or ports.

Before the isolation the suite used Redis db 0 and the default ``celery`` queue like the run command,
so a running stack's Celery worker consumed the tests' tasks and the Celery tests failed. Here a stack
runs with its worker consuming (it processes its beat tasks throughout), and a second pytest session
is started with exactly the Redis URL the stack uses, as a developer's shell would have it. That
session runs the tests that go through a real Celery worker and must pass; its report header shows
it isolated itself (own redis-server, ``test_<name>_<pid>`` database, ``netaware-test-<pid>`` queue).
Two pytest sessions (this one and the inner one) run at the same time on one machine meanwhile.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.support.stack import running_stack

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# The tests that go through a real Celery worker (and depend on nothing timing-sensitive beyond it).
CELERY_TESTS = [
    "tests/test_appgroup_sync_edits_reach_the_cluster_promptly.py",
    "tests/test_appgroup_sync_periodic_resync_task.py",
    "tests/test_pipeline_retention_rolls_up.py",
    "tests/test_topology_periodic_rebuild.py",
]


def tasks_done(worker_log: str) -> int:
    return len(re.findall(r"Task \S+\[[0-9a-f-]+\] succeeded", worker_log))


def test_celery_tests_pass_with_the_stack_and_its_worker_running():
    with running_stack("beside") as stack:
        assert stack.result.returncode == 0, stack.result.stdout + stack.result.stderr
        assert requests.get(f"{stack.web}/healthz", timeout=30).ok
        stack_redis = stack.env["REDIS_URL"]
        done_before = tasks_done(stack.log("worker"))

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
        assert stack.log("worker").count("ready.") >= 1
        assert tasks_done(stack.log("worker")) > done_before
