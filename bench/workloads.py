"""Benchmark workloads modelled on upstream's scheduler_perf, as lists of API objects (dicts).

The same objects feed our framework in-process and the Go oracle, so both schedule the same cluster.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("moon-1", "moon-2", "moon-3")


def _nodes(n: int, taint_fraction: float = 0.0) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        b = make_node(f"node-{i:05d}").zone(ZONES[i % len(ZONES)]).label("pool", "general")
        if taint_fraction and i % int(1 / taint_fraction) == 0:
            b.taint("dedicated", "infra", "NoSchedule")
        out.append(b.dict())
    return out


def _existing(n_nodes: int, count: int, labels: Callable[[int], dict[str, str]]) -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [
        make_pod(f"existing-{i:06d}")
        .labels(labels(i))
        .node(f"node-{rng.randrange(n_nodes):05d}")
        .scheduler("default-scheduler")
        .dict()
        for i in range(count)
    ]


def basic(n: int, measured: int = 2000, existing: int | None = None) -> list[dict[str, Any]]:
    """SchedulingBasic: no constraints at all."""
    objs = _nodes(n) + _existing(n, 2 * n if existing is None else existing, lambda i: {"app": f"old-{i % 50}"})
    objs += [make_pod(f"pod-{i:05d}").label("app", "new").created(_ts(i)).dict() for i in range(measured)]
    return objs


def _spread_pod(i: int, when: str) -> dict[str, Any]:
    labels = {"color": "blue"}
    return (
        make_pod(f"pod-{i:05d}")
        .labels(labels)
        .created(_ts(i))
        .spread(ZONE, 5, when, match=labels)
        .spread(HOSTNAME, 1, when, match=labels)
        .required_terms({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["general"]}]})
        .toleration("dedicated", "Equal", "infra", "NoSchedule")
        .dict()
    )


def topology_spreading(n: int, measured: int = 2000, existing: int | None = None) -> list[dict[str, Any]]:
    """TopologySpreading: hard zone (maxSkew 5) + hard hostname (maxSkew 1), affinity, tolerations.

    As in scheduler_perf, the existing pods do not match the measured pods' selector."""
    count = 2 * n if existing is None else existing
    objs = _nodes(n, taint_fraction=0.2) + _existing(n, count, lambda i: {"color": "red" if i % 2 else "green"})
    return objs + [_spread_pod(i, "DoNotSchedule") for i in range(measured)]


def preferred_topology_spreading(n: int, measured: int = 2000, existing: int | None = None) -> list[dict[str, Any]]:
    """PreferredTopologySpreading: the same constraints as ScheduleAnyway."""
    count = 2 * n if existing is None else existing
    objs = _nodes(n, taint_fraction=0.2) + _existing(n, count, lambda i: {"color": "red" if i % 2 else "green"})
    return objs + [_spread_pod(i, "ScheduleAnyway") for i in range(measured)]


def default_spreading(n: int, measured: int = 2000, existing: int | None = None) -> list[dict[str, Any]]:
    """System default spreading through a Service selector (no explicit constraints)."""
    count = 2 * n if existing is None else existing
    objs = _nodes(n) + _existing(n, count, lambda i: {"app": "web" if i % 3 == 0 else "other"})
    objs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}},
        }
    )
    return objs + [make_pod(f"pod-{i:05d}").label("app", "web").created(_ts(i)).dict() for i in range(measured)]


def _ts(i: int) -> str:
    return f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"


# -- scheduler_perf's affinity/performance-config.yaml --------------------------------------------------
# Nodes from templates/node-default.yaml (4 CPU, 32Gi, 110 pods; only the hostname label). Init pods go
# to namespace sched-0 and are scheduled, unmeasured, before the measured pods in sched-1, by the
# scheduler under test (as scheduler_perf's createPods without collectMetrics); both use one template.
UNMEASURED = "bench.spread-scheduler.io/unmeasured"
# (init pods, measured pods) per node count, from each test's 500Nodes and 5000Nodes workloads.
AFFINITY_COUNTS = {
    "SchedulingPodAntiAffinity": {500: (100, 400), 5000: (1000, 1000)},
    "SchedulingPreferredPodAffinity": {500: (500, 1000), 5000: (5000, 1000)},
    "SchedulingPreferredPodAntiAffinity": {500: (500, 1000), 5000: (5000, 1000)},
}


def _default_nodes(n: int) -> list[dict[str, Any]]:
    return [make_node(f"node-{i:05d}").capacity(cpu="4", memory="32Gi", pods="110").dict() for i in range(n)]


def _namespaces() -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"sched-{i}"}} for i in range(2)]


def _affinity_pod(i: int, namespace: str, color: str, affinity: dict[str, Any], unmeasured: bool) -> dict[str, Any]:
    """templates/pod-with-*pod-*affinity.yaml: one pause container with a port, 100m/500Mi requested."""
    pod = (
        make_pod(f"{namespace}-{i:05d}", namespace)
        .label("color", color)
        .created(_ts(i if unmeasured else 20_000 + i))  # every init pod is queued before every measured one
        .set("spec.affinity", affinity)
        .set(
            "spec.containers",
            [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "ports": [{"containerPort": 80}],
                    "resources": {
                        "limits": {"cpu": "100m", "memory": "500Mi"},
                        "requests": {"cpu": "100m", "memory": "500Mi"},
                    },
                }
            ],
        )
    )
    if unmeasured:
        pod.set("metadata.annotations", {UNMEASURED: "true"})
    return pod.dict()


def _affinity_workload(name: str, color: str, affinity: dict[str, Any]) -> Callable[..., list[dict[str, Any]]]:
    def build(n: int, measured: int | None = None, existing: int | None = None) -> list[dict[str, Any]]:
        """``measured``/``existing`` override the test's counts (init pods are the "existing" ones here)."""
        init, measure = AFFINITY_COUNTS[name].get(n, (n, 2 * n))
        init = init if existing is None else existing
        measure = measure if measured is None else measured
        pods = [_affinity_pod(i, "sched-0", color, affinity, True) for i in range(init)]
        pods += [_affinity_pod(i, "sched-1", color, affinity, False) for i in range(measure)]
        return _default_nodes(n) + _namespaces() + pods

    build.__doc__ = f"{name} (scheduler_perf affinity/performance-config.yaml)."
    return build


def _affinity_term(color: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": HOSTNAME,
        "namespaces": ["sched-1", "sched-0"],
    }


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
pod_anti_affinity = _affinity_workload(
    "SchedulingPodAntiAffinity", "green", {"podAntiAffinity": {REQUIRED: [_affinity_term("green")]}}
)
preferred_pod_affinity = _affinity_workload(
    "SchedulingPreferredPodAffinity",
    "red",
    {"podAffinity": {PREFERRED: [{"podAffinityTerm": _affinity_term("red"), "weight": 1}]}},
)
preferred_pod_anti_affinity = _affinity_workload(
    "SchedulingPreferredPodAntiAffinity",
    "yellow",
    {"podAntiAffinity": {PREFERRED: [{"podAffinityTerm": _affinity_term("yellow"), "weight": 1}]}},
)


WORKLOADS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "SchedulingBasic": basic,
    "TopologySpreading": topology_spreading,
    "PreferredTopologySpreading": preferred_topology_spreading,
    "DefaultSpreading": default_spreading,
    # Their own init/measured counts (AFFINITY_COUNTS): run them without --pods to keep upstream's.
    "SchedulingPodAntiAffinity": pod_anti_affinity,
    "SchedulingPreferredPodAffinity": preferred_pod_affinity,
    "SchedulingPreferredPodAntiAffinity": preferred_pod_anti_affinity,
}
