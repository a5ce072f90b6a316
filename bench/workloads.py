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


DRA_DRIVER = "gpu.example.com"
DRA_DEVICES_PER_NODE = 8
DRA_MODELS = ("a100", "h100")


def _gpu_class(model: str) -> dict[str, Any]:
    """A DeviceClass with one CEL selector: the driver's devices of one model."""
    expression = f'device.driver == "{DRA_DRIVER}" && device.attributes["{DRA_DRIVER}"].model == "{model}"'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": f"gpu-{model}"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _gpu_slice(node: str) -> dict[str, Any]:
    """The node's ResourceSlice: 8 devices, half of each model, with a memory capacity."""
    devices = [
        {
            "name": f"gpu-{d}",
            "attributes": {"model": {"string": DRA_MODELS[d % 2]}, "index": {"int": d}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for d in range(DRA_DEVICES_PER_NODE)
    ]
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {"driver": DRA_DRIVER, "nodeName": node, "pool": pool, "devices": devices},
    }


def dynamic_resources(n: int, measured: int = 2000, existing: int | None = None) -> list[dict[str, Any]]:
    """Issue #49's benchmark: n nodes with 8 devices each (one ResourceSlice per node), two DeviceClasses
    with a CEL selector each, and a ResourceClaim of its own for every measured pod (one device of one
    class, the classes alternating). ``existing`` pods without claims, as in SchedulingBasic."""
    objs = _nodes(n) + _existing(n, n if existing is None else existing, lambda i: {"app": f"old-{i % 50}"})
    objs += [_gpu_class(model) for model in DRA_MODELS] + [_gpu_slice(f"node-{i:05d}") for i in range(n)]
    for i in range(measured):
        # As the API server defaults them: upstream's side reads the objects undefaulted.
        exactly = {"deviceClassName": f"gpu-{DRA_MODELS[i % 2]}", "allocationMode": "ExactCount", "count": 1}
        request = {"name": "gpu", "exactly": exactly}
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{i:05d}", "namespace": "default", "uid": f"uid-claim-{i:05d}"},
                "spec": {"devices": {"requests": [request]}},
            }
        )
        pod = make_pod(f"pod-{i:05d}").label("app", "new").created(_ts(i))
        objs.append(pod.resource_claim("gpu", claim=f"claim-{i:05d}").dict())
    return objs


WORKLOADS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "SchedulingBasic": basic,
    "TopologySpreading": topology_spreading,
    "PreferredTopologySpreading": preferred_topology_spreading,
    "DefaultSpreading": default_spreading,
    # Their own init/measured counts (AFFINITY_COUNTS): run them without --pods to keep upstream's.
    "SchedulingPodAntiAffinity": pod_anti_affinity,
    "SchedulingPreferredPodAffinity": preferred_pod_affinity,
    "SchedulingPreferredPodAntiAffinity": preferred_pod_anti_affinity,
    "SchedulingDynamicResources": dynamic_resources,
}
