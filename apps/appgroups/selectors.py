"""Reads of the appgroups app (HackSoft style: keyword-only, typed, no writes)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from netaware_core import quantity

from . import documents
from .graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from .models import AppGroup, Dependency, Placement, Workload
from .overlap import common_pod


@dataclass(frozen=True)
class WorkloadClaim:
    appgroup: str  # "namespace/name"
    workload: str


def appgroups_with_graph() -> QuerySet[AppGroup]:
    """AppGroups with workloads and dependencies prefetched in declaration order (3 queries)."""
    return AppGroup.objects.prefetch_related(
        Prefetch("workloads", queryset=Workload.objects.order_by("position", "id")),
        Prefetch(
            "dependencies", queryset=Dependency.objects.select_related("target").order_by("position", "id")
        ),
    )


def _spec(
    appgroup: AppGroup, workloads: Iterable[Workload], dependencies: Iterable[Dependency]
) -> AppGroupSpec:
    by_source: dict[int, list[DependencySpec]] = {}
    for dep in dependencies:
        by_source.setdefault(dep.source_id, []).append(
            DependencySpec(
                target=dep.target.name,
                sensitivity=Sensitivity(dep.latency, dep.bandwidth, dep.lossrate),
                max_network_cost=float(dep.max_network_cost) if dep.max_network_cost is not None else None,
                min_bandwidth_bps=dep.min_bandwidth_bps if dep.min_bandwidth else None,
                weight=dep.weight,
            )
        )
    specs = []
    for workload in workloads:
        specs.append(
            WorkloadSpec(
                name=workload.name,
                selector=documents.label_selector_from_mapping(workload.selector or {}),
                weight=workload.weight,
                dependencies=tuple(by_source.get(workload.pk, ())),
                controller_kind=workload.controller_kind,
                controller_name=workload.controller_name,
                replicas=workload.replicas or 1,
                cpu_request_millicores=quantity.cpu_millicores(workload.cpu_request)
                if workload.cpu_request
                else 0,
                memory_request_bytes=quantity.memory_bytes(workload.memory_request)
                if workload.memory_request
                else 0,
                min_zones=workload.min_zones,
            )
        )
    return AppGroupSpec(
        namespace=appgroup.namespace,
        name=appgroup.name,
        workloads=tuple(specs),
        topology_sorting_algorithm=appgroup.topology_sorting_algorithm,
        topology_mode=appgroup.topology_mode,
        min_zones=appgroup.min_zones,
        rebalance_mode=appgroup.rebalance_mode,
    )


def appgroup_spec(*, appgroup: AppGroup) -> AppGroupSpec:
    """The frozen spec of one AppGroup (uses prefetched relations when present)."""
    cache = getattr(appgroup, "_prefetched_objects_cache", {})
    deps = (
        appgroup.dependencies.all()
        if "dependencies" in cache
        else appgroup.dependencies.select_related("target")
    )
    workloads = sorted(appgroup.workloads.all(), key=lambda w: (w.position, w.pk))
    dependencies = sorted(deps, key=lambda d: (d.position, d.pk))
    return _spec(appgroup, workloads, dependencies)


def all_appgroup_specs() -> tuple[AppGroupSpec, ...]:
    """Every AppGroup as a spec, ordered by namespace and name (what ClusterState.appgroups holds)."""
    return tuple(_spec(ag, ag.workloads.all(), ag.dependencies.all()) for ag in appgroups_with_graph())


def placements_by_workload() -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(AppGroup namespace, AppGroup name, workload) -> node of each placed pod (ClusterState.placements)."""
    result: dict[tuple[str, str, str], list[str]] = {}
    rows = Placement.objects.order_by(
        "appgroup__namespace", "appgroup__name", "workload__position", "pod_name"
    ).values_list("appgroup__namespace", "appgroup__name", "workload__name", "node_name")
    for namespace, name, workload, node in rows:
        result.setdefault((namespace, name, workload), []).append(node)
    return {key: tuple(nodes) for key, nodes in result.items()}


def appgroup_placements(*, appgroup: AppGroup) -> dict[str, list[dict[str, str]]]:
    """workload name -> [{"pod", "node"}] for one AppGroup (the shape of our CR's status.placements)."""
    result: dict[str, list[dict[str, str]]] = {}
    rows = (
        Placement.objects.filter(appgroup=appgroup)
        .order_by("workload__position", "pod_name")
        .values_list("workload__name", "pod_name", "node_name")
    )
    for workload, pod, node in rows:
        result.setdefault(workload, []).append({"pod": pod, "node": node})
    return result


def topology_order(*, appgroup: AppGroup, algorithm: str | None = None) -> list[str]:
    """Workload names in the AppGroup's (or the given) topological order; cycles use the fallback."""
    return list(documents.topology_order(appgroup_spec(appgroup=appgroup), algorithm).order)


def get_appgroup(*, namespace: str, name: str) -> AppGroup | None:
    return AppGroup.objects.filter(namespace=namespace, name=name).first()


def workload_ids() -> dict[tuple[str, str, str], tuple[int, int]]:
    """(AppGroup namespace, AppGroup name, workload) -> (AppGroup id, Workload id)."""
    rows = Workload.objects.values_list("appgroup__namespace", "appgroup__name", "name", "appgroup_id", "id")
    return {(ns, ag, wl): (ag_id, wl_id) for ns, ag, wl, ag_id, wl_id in rows}


def namespace_label_selectors(*, namespace: str, exclude_pk: int | None = None) -> list[tuple[str, str, LabelSelector]]:
    """(AppGroup "namespace/name", workload, selector) of every workload of the namespace's AppGroups."""
    rows = (Workload.objects.filter(appgroup__namespace=namespace).exclude(appgroup_id=exclude_pk)  # type: ignore[misc]  # None excludes nothing
            .order_by("appgroup__name", "position").values_list("appgroup__namespace", "appgroup__name", "name", "selector"))
    return [(f"{ns}/{group}", name, documents.label_selector_from_mapping(selector or {})) for ns, group, name, selector in rows]


def overlapping_appgroups() -> dict[str, list[str]]:
    """AppGroup "namespace/name" -> sentences naming each overlap with another AppGroup (for flags;
    writes from the dashboard and API are refused, but the cluster may hold such AppGroups)."""

    by_namespace: dict[str, list[tuple[str, str, LabelSelector]]] = {}
    rows = Workload.objects.order_by("appgroup__namespace", "appgroup__name", "position").values_list(
        "appgroup__namespace", "appgroup__name", "name", "selector")
    for ns, group, name, selector in rows:
        by_namespace.setdefault(ns, []).append((f"{ns}/{group}", name, documents.label_selector_from_mapping(selector or {})))
    flags: dict[str, list[str]] = {}
    for entries in by_namespace.values():
        for i, (group_a, name_a, sel_a) in enumerate(entries):
            for group_b, name_b, sel_b in entries[i + 1:]:
                if group_a == group_b:
                    continue
                example = common_pod(sel_a, sel_b)
                if example is None:
                    continue
                labels = ", ".join(f"{k}={v}" for k, v in sorted(example.items()))
                flags.setdefault(group_a, []).append(f"workload {name_a} overlaps {group_b} workload {name_b} ({labels})")
                flags.setdefault(group_b, []).append(f"workload {name_b} overlaps {group_a} workload {name_a} ({labels})")
    return flags


def claims_for_labels(*, namespace: str, labels: dict[str, str]) -> list[WorkloadClaim]:
    """Every AppGroup workload (first matching per AppGroup, AppGroups by name) that claims a pod
    with these labels; a pin label restricts the answer to the AppGroup it names."""
    pin = labels.get(documents.APPGROUP_LABEL) or labels.get(documents.DIKTYO_APPGROUP_LABEL)
    claims: list[WorkloadClaim] = []
    seen: set[str] = set()
    for group, name, selector in namespace_label_selectors(namespace=namespace):
        if group in seen or (pin and group != (pin if "/" in pin else f"{namespace}/{pin}")):
            continue
        if selector.matches(labels):
            seen.add(group)
            claims.append(WorkloadClaim(appgroup=group, workload=name))
    return claims
