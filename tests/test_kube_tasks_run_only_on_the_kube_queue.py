"""With NETAWARE_KUBE_TASK_QUEUE set (Kubernetes: `kube`), every Celery task that calls the
Kubernetes API is sent to that queue, which only netaware-cluster-worker consumes, so the pipeline
worker runs without a service-account token. Checked on the real Redis broker, and against the
source of every registered task (a new task that touches the cluster must be routed too)."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
# services.refresh_observed lists the pods and controllers of the namespaces with traffic (apps/traffic).
TOUCHES_CLUSTER = re.compile(r"\b(sync\.|publish\.|kube\.|netaware_core\.kube|apps\.topology\.publish|services\.refresh_observed)")


def test_every_task_that_touches_the_cluster_is_routed():
    from netaware_site.celery import app

    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if name.startswith(("apps.", "scheduler.", "probes."))}
    assert ours, "no netaware task registered"
    touching = {name for name, task in ours.items() if TOUCHES_CLUSTER.search(inspect.getsource(task.run))}
    assert touching == set(settings.KUBE_TASKS)


def test_kube_tasks_land_on_the_kube_queue_of_the_broker():
    queue = f"kube-test-{uuid.uuid4().hex[:8]}"
    code = (
        "import django; django.setup();"
        "from apps.appgroups import tasks;"
        "tasks.resync_cluster.delay(); tasks.sync_appgroup.delay('default', 'x');"
        "from apps.topology.tasks import publish_network_topology, rebuild_topology;"
        "publish_network_topology.delay();"
        "from apps.traffic.tasks import refresh_observed; refresh_observed.delay();"
        "r = rebuild_topology.delay(); print(r.id)"
    )
    env = {**os.environ, "NETAWARE_KUBE_TASK_QUEUE": queue, "DJANGO_SETTINGS_MODULE": "netaware_site.settings"}
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    # "celery" in deployments; test sessions use a queue of their own (tests/support/isolation.py).
    default_queue = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")
    try:
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
        rebuild_id = result.stdout.strip().splitlines()[-1]
        names = sorted(json.loads(m)["headers"]["task"] for m in client.lrange(queue, 0, -1))
        assert names == sorted(settings.KUBE_TASKS)
        # The pipeline task went to the default queue, not to the kube one.
        default = [json.loads(m)["headers"]["id"] for m in client.lrange(default_queue, 0, -1)]
        assert rebuild_id in default
    finally:
        client.delete(queue)
        for message in client.lrange(default_queue, 0, -1):
            if json.loads(message)["headers"]["id"] == locals().get("rebuild_id"):
                client.lrem(default_queue, 0, message)
