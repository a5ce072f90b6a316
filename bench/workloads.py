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


def basic(n: int, measured: int, existing: int | None = None) -> list[dict[str, Any]]:
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


def topology_spreading(n: int, measured: int, existing: int | None = None) -> list[dict[str, Any]]:
    """TopologySpreading: hard zone (maxSkew 5) + hard hostname (maxSkew 1), affinity, tolerations.

    As in scheduler_perf, the existing pods do not match the measured pods' selector."""
    count = 2 * n if existing is None else existing
    objs = _nodes(n, taint_fraction=0.2) + _existing(n, count, lambda i: {"color": "red" if i % 2 else "green"})
    return objs + [_spread_pod(i, "DoNotSchedule") for i in range(measured)]


def preferred_topology_spreading(n: int, measured: int, existing: int | None = None) -> list[dict[str, Any]]:
    """PreferredTopologySpreading: the same constraints as ScheduleAnyway."""
    count = 2 * n if existing is None else existing
    objs = _nodes(n, taint_fraction=0.2) + _existing(n, count, lambda i: {"color": "red" if i % 2 else "green"})
    return objs + [_spread_pod(i, "ScheduleAnyway") for i in range(measured)]


def default_spreading(n: int, measured: int, existing: int | None = None) -> list[dict[str, Any]]:
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


WORKLOADS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "SchedulingBasic": basic,
    "TopologySpreading": topology_spreading,
    "PreferredTopologySpreading": preferred_topology_spreading,
    "DefaultSpreading": default_spreading,
}
