"""``python manage.py rollout``: schedule an AppGroup into the demo cluster through the extender.

The AppGroup is imported (or updated) in netaware, its pods — the workloads' replicas, labelled for
their selectors, ``schedulerName: netaware-scheduler`` — are (re)created in the demo cluster, and the
rollout driver (``apps.demo.rollout``, kube-scheduler's cycle) schedules them through the extender
server's filter, prioritize and bind. Prints where every pod landed and the placement's average
network score beside what kube-scheduler's default profile gives for the same arrival order.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.appgroups import documents
from apps.appgroups.services import import_document
from apps.demo.cluster import DEMO_LABEL, pod_objects, replica_set_objects
from apps.demo.rollout import Endpoint, ExtenderConfig, KubeScheduler, percentile
from apps.probes.scenario import ScenarioError, load_scenario
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.report import initial_state
from apps.scheduler.evaluation.simulate import appgroup_pods, arrival_order, parse_profile, simulate
from apps.traffic import selectors as traffic_selectors
from apps.traffic import services as traffic_services


class Command(BaseCommand):
    help = "Schedule an AppGroup's pods into the demo cluster through the extender, as kube-scheduler would."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--appgroup", default=str(Path(settings.BASE_DIR) / "scenarios" / "online-boutique-appgroup.yaml"))
        parser.add_argument("--scenario", default=settings.NETAWARE["SCENARIO"],
                            help="the cluster's scenario (nodes, nominal topology) for the comparison")
        parser.add_argument("--profile", default="", help="netaware.io/profile annotation of the pods")
        parser.add_argument("--replicas", type=int, default=0, help="pods per workload (0: the AppGroup's hints)")
        parser.add_argument("--seed", type=int, default=1, help="arrival order")
        parser.add_argument("--api", default=settings.NETAWARE.get("KUBE_API_URL") or "",
                            help="the demo cluster's API (KUBE_API_URL)")
        parser.add_argument("--extender", default=os.environ.get("NETAWARE_EXTENDER_URL",
                                                                  "http://127.0.0.1:8001/scheduler"))
        parser.add_argument("--extender-health", default=os.environ.get("NETAWARE_EXTENDER_HEALTH_URL",
                                                                         "http://127.0.0.1:8002"))
        parser.add_argument("--learned", action="store_true",
                            help="schedule with the AppGroup learned from observed traffic instead (the observed "
                                 "application of --appgroup's namespace that selects most of its workloads), "
                                 "adopted first (origin observed; docs/traffic.md)")
        parser.add_argument("--wait-for-learned", type=float, default=0.0, metavar="SECONDS",
                            help="with --learned: wait up to SECONDS for the observed application to cover every "
                                 "workload of --appgroup")
        parser.add_argument("--wait-for-fresh-topology", type=float, default=0.0, metavar="SECONDS",
                            help="first wait up to SECONDS until the extender's topology is fresh and has every "
                                 "node measured (scripts/up.sh's first demo, while the first probe windows arrive)")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["api"]:
            raise CommandError("no Kubernetes API: pass --api or set KUBE_API_URL (the demo cluster's URL)")
        try:
            document = yaml.safe_load(Path(options["appgroup"]).read_text())
            group = documents.spec_from_document(document)
            scenario = load_scenario(options["scenario"])
        except (OSError, yaml.YAMLError, ScenarioError, documents.DocumentError) as exc:
            raise CommandError(str(exc)) from exc
        if options["replicas"] < 0:
            raise CommandError("--replicas must be >= 0")
        if options["wait_for_fresh_topology"] < 0:
            raise CommandError("--wait-for-fresh-topology must be >= 0 seconds")
        if options["replicas"]:
            group = replace(group, workloads=tuple(replace(w, replicas=options["replicas"]) for w in group.workloads))
        if options["learned"]:
            declared, group = group, self._learned(group, options["wait_for_learned"])
            self.stdout.write(f"learned AppGroup {group.namespace}/{group.name}: {len(group.workloads)} workloads, "
                              f"{sum(len(w.dependencies) for w in group.workloads)} edges "
                              f"(declared {declared.name}: {sum(len(w.dependencies) for w in declared.workloads)})")
        else:
            try:
                import_document(document=document)
            except documents.DocumentError as exc:
                raise CommandError(f"AppGroup {options['appgroup']}: {exc}") from exc
        api = Endpoint(options["api"], timeout=10.0)
        if options["wait_for_fresh_topology"]:
            self._wait_for_fresh_topology(options["extender_health"], options["wait_for_fresh_topology"])
        self._recreate_pods(api, group, options)
        self._wait_for_extender(options["extender_health"], f"{group.namespace}/{group.name}")
        scheduler = KubeScheduler(api_url=options["api"], extender=ExtenderConfig(url=options["extender"]),
                                  seed=options["seed"])
        pending = [p for p in scheduler.load() if (p["metadata"].get("labels") or {}).get(DEMO_LABEL) == group.name]
        sims = appgroup_pods((group,))
        by_name = {p["metadata"]["name"]: p for p in pending}
        order = [by_name[sims[int(i)].pod.name] for i in arrival_order(len(sims), options["seed"])
                 if sims[int(i)].pod.name in by_name] if len(sims) == len(pending) else pending
        result = scheduler.run(order)
        self._report(group, scenario, result, options)
        if result.unschedulable:
            raise CommandError(f"{len(result.unschedulable)} pod(s) not scheduled: "
                               + "; ".join(f"{k}: {v}" for k, v in list(result.unschedulable.items())[:5]))

    def _recreate_pods(self, api: Endpoint, group: Any, options: dict[str, Any]) -> None:
        """Delete this AppGroup's demo ReplicaSets and pods, and any other rollout's of the same names (the
        declared and the learned Online Boutique share workload names), then create them anew."""
        sets_path = f"/apis/apps/v1/namespaces/{group.namespace}/replicasets"
        pods_path = f"/api/v1/namespaces/{group.namespace}/pods"
        ours = replica_set_objects(group)
        rs_names = {rs["metadata"]["name"] for rs in ours}
        pod_names = {pod["metadata"]["name"] for pod in pod_objects(group)}
        # The ReplicaSets go first: pods deleted while theirs exists would be replaced by the demo cluster.
        for path, names, kind in ((sets_path, rs_names, "ReplicaSets"), (pods_path, pod_names, "pods")):
            status, listed, _ = api.request("GET", f"{path}?labelSelector={DEMO_LABEL}")
            if status != 200:
                raise CommandError(f"the API at {options['api']} answered {status} listing {kind}: {listed}")
            for item in listed.get("items") or []:
                meta = item["metadata"]
                if (meta.get("labels") or {}).get(DEMO_LABEL) == group.name or meta["name"] in names:
                    api.request("DELETE", f"{path}/{meta['name']}")
        owners: dict[str, dict[str, Any]] = {}
        for rs, workload in zip(ours, group.workloads, strict=True):
            status, created, _ = api.request("POST", sets_path, rs)
            if status in (200, 201):
                owners[workload.name] = created
        pods = pod_objects(group, profile=options["profile"], owners=owners)
        for pod in pods:
            if options["learned"]:  # the learned AppGroup claims them, whatever else selects the same labels
                pod["metadata"]["labels"][documents.APPGROUP_LABEL] = group.name
            status, answer, _ = api.request("POST", pods_path, pod)
            if status not in (200, 201):
                raise CommandError(f"creating pod {pod['metadata']['name']}: HTTP {status}: {answer}")

    def _learned(self, declared: Any, wait: float) -> Any:
        """The observed AppGroup covering ``declared``'s workloads, adopted (origin observed)."""
        deadline = time.monotonic() + wait
        while True:
            observed, covered = traffic_selectors.observed_covering(spec=declared)
            if observed is not None and (covered == len(declared.workloads) or time.monotonic() >= deadline):
                break
            if time.monotonic() >= deadline:
                raise CommandError(f"no AppGroup learned from observed traffic in namespace {declared.namespace} yet "
                                   "(the mesh traffic is learned within a few pull windows of start-up; see "
                                   "GET /api/traffic/observed/ and GET /api/traffic/sources)")
            time.sleep(2.0)
        try:
            traffic_services.adopt(observed=observed)
        except traffic_services.AdoptRefused as exc:
            raise CommandError(str(exc)) from exc
        return documents.spec_from_document(observed.document)

    def _wait_for_extender(self, health: str, appgroup: str, timeout: float = 30.0) -> None:
        """Until the extender is ready and its cache holds the AppGroup (a change notification away)."""
        endpoint = Endpoint(health, timeout=5.0)
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                status, last, _ = endpoint.request("GET", "/readyz")
            except OSError as exc:
                last = str(exc)
                status = 0
            if status == 200 and appgroup in (last or {}).get("appgroups", []):
                return
            time.sleep(0.2)
        raise CommandError(f"the extender at {health} is not ready with AppGroup {appgroup} after {timeout:.0f}s: {last}")

    def _wait_for_fresh_topology(self, health: str, timeout: float) -> None:
        """Until the topology the extender scores with is not stale and measures every node it knows.

        Its readiness alone does not say so: a snapshot of the known nodes with no measurement yet
        (what a rebuild stores before the first probe window) makes it ready, and scores made with it
        fall back to load alone."""
        endpoint = Endpoint(health, timeout=5.0)
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                status, last, _ = endpoint.request("GET", "/readyz")
            except OSError as exc:
                status, last = 0, str(exc)
            body = last if isinstance(last, dict) else {}
            if (status == 200 and body.get("nodes", 0) > 0 and not body.get("topology_stale")
                    and body.get("measured_nodes", 0) >= body["nodes"]):
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        if body and status != 200:
            why = f"not ready: {body.get('reason', status)}"
        elif body:
            why = (f"topology stale: {body['topology_stale']}" if body.get("topology_stale") else
                   f"{body.get('measured_nodes', 0)} of {body.get('nodes', 0)} nodes measured")
        else:
            why = f"no answer ({last})"
        raise CommandError(f"the extender at {health} has no fresh topology of every node after {timeout:.0f}s "
                           f"({why}): the probe metrics -> Prometheus -> pipeline path has not delivered; "
                           "see the worker, beat and prometheus logs")

    def _report(self, group: Any, scenario: Any, result: Any, options: dict[str, Any]) -> None:
        out = self.stdout.write
        out(f"scheduled {len(result.scheduled)}/{result.pods} pods of {group.namespace}/{group.name} in "
            f"{result.seconds:.2f}s ({result.pods_per_s:.0f} pods/s); extender filter p50 "
            f"{percentile(result.filter.server_ms, 50):.2f} ms, prioritize p50 "
            f"{percentile(result.prioritize.server_ms, 50):.2f} ms (server-side)")
        zone_of = {n.name: n.zone for n in scenario.nodes}
        width = max((len(k) for k in result.scheduled), default=10)
        for pod, node in sorted(result.scheduled.items()):
            out(f"  {pod:<{width}}  {node:<10} zone {zone_of.get(node, '?')}")
        initial = initial_state(scenario, (group,))
        placements: dict[tuple[str, str, str], list[str]] = {}
        for sim in appgroup_pods((group,)):
            node = result.scheduled.get(f"{group.namespace}/{sim.pod.name}")
            if node:
                placements.setdefault(sim.key, []).append(node)
        ours = network_metrics(replace(initial, placements={k: tuple(v) for k, v in placements.items()}), (group,))
        default = simulate(initial, appgroup_pods((group,)), parse_profile("default"), options["seed"])
        theirs = network_metrics(default.final_state, (group,))
        out(f"average network score (0-100, the paper's metric on the scenario's nominal topology): "
            f"netaware {ours.average:.1f} vs kube-scheduler's default profile {theirs.average:.1f} "
            f"(same pods, same arrival order)")
