"""Spread-aware scale-down on the real kube-controller-manager (issue #40, part 1), beside kube-scheduler.

Two sets of six kwok nodes, three zones of two each (16 CPUs: every node scores the same for a 10m
pod, the lumps of issue #40's measurement), one Deployment of 12 per set with a hard zone spread
(maxSkew 1): one placed by spread-scheduler, which keeps the pods' pod-deletion-cost, one by
kube-scheduler v1.35.4 (the same profile). Both are scaled down to the same seeded random sizes,
back to 12 between; the ReplicaSet controller chooses the victims. After every scale-down the zone
skew of ours must be within maxSkew; kube-scheduler's is recorded for the table, never asserted.
Before a scale-down our pods' costs have settled (every pod carries our marker): a scale-down
that follows a scale-up by less than the keeper's debounce finds the new pods without a cost.
"""

from __future__ import annotations

import collections
import random
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import SchedulerProcess, session_counts
from e2e.kube_helpers import create_object, deployment, is_ready, pod_body, side_by_side, wait_for, zone_spread
from e2e.ledger import Ledger
from scheduler.spread.deletion_cost import COST_ANNOTATION, MARKER_ANNOTATION

pytestmark = pytest.mark.slow

UPSTREAM = "scaledown-upstream"
FULL = 12
SEED = 40
ROUNDS = 10


def _workload(name: str, scheduler: str, node_set: str) -> dict[str, Any]:
    labels = {"app": name}
    spec = pod_body(
        name,
        labels,
        scheduler=scheduler,
        nodeSelector={"scaledown-set": node_set},
        topologySpreadConstraints=[zone_spread(1, labels)],
    )["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
    return deployment(name, FULL, spec)


def _live(core: client.CoreV1Api, namespace: str, app: str) -> list[Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _zones(pods: list[Any], zone_of: dict[str, str]) -> dict[str, int]:
    counts = collections.Counter(zone_of[p.spec.node_name][-1] for p in pods if p.spec.node_name)
    return {z: counts.get(z, 0) for z in "abc"}


def _costs(pods: list[Any]) -> dict[str, tuple[str | None, str | None]]:
    """Pod name -> (its deletion cost, our marker)."""
    out = {}
    for p in pods:
        annotations = p.metadata.annotations or {}
        out[p.metadata.name] = (annotations.get(COST_ANNOTATION), annotations.get(MARKER_ANNOTATION))
    return out


def test_scale_downs_keep_the_zone_spread_under_ours(
    api: client.ApiClient,
    core: client.CoreV1Api,
    control_plane: Cluster,
    scheduler: SchedulerProcess,
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    if not control_plane.kwok:
        pytest.skip("needs kwok: the Deployment's pods must run and be Ready")
    sets, zone_of = side_by_side(kube_scheduler, nodes, UPSTREAM, "scaledown-set", cpu="16")
    for node_set, scheduler_name in sets.items():
        body = _workload(node_set, scheduler_name, node_set)
        body["metadata"]["namespace"] = namespace
        create_object(api, body)
    apps = client.AppsV1Api(api)

    def scale(replicas: int) -> None:
        for app in sets:
            apps.patch_namespaced_deployment_scale(app, namespace, {"spec": {"replicas": replicas}})

    def settled(replicas: int) -> bool:
        for app in sets:
            live = _live(core, namespace, app)
            everything = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
            if len(everything) != replicas or len(live) != replicas:
                return False
            if not all(p.status.phase == "Running" and is_ready(p) for p in live):
                return False
        return True

    def costs_in_force() -> dict[str, Any] | None:
        """Every pod of ours carries our cost, unchanged over two looks a debounce apart."""
        first = _costs(_live(core, namespace, "ours"))
        if not all(cost is not None and cost == marker for cost, marker in first.values()):
            return None
        time.sleep(1.5)
        return first if _costs(_live(core, namespace, "ours")) == first else None

    mark = ledger.mark()
    rng = random.Random(SEED)
    sizes = [rng.randint(1, FULL - 1) for _ in range(ROUNDS)]
    rows: list[tuple[int, dict[str, int], dict[str, int]]] = []
    started = time.monotonic()
    for size in sizes:
        wait_for(lambda: settled(FULL), 90, f"{FULL} pods Running and Ready in both sets", interval=0.5)
        wait_for(costs_in_force, 60, "our pods' deletion costs in force", interval=0.5)
        scale(size)
        wait_for(lambda size=size: settled(size), 90, f"both sets scaled down to {size}", interval=0.5)
        ours = _zones(_live(core, namespace, "ours"), zone_of)
        theirs = _zones(_live(core, namespace, "upstream"), zone_of)
        rows.append((size, ours, theirs))
        scale(FULL)
    took = time.monotonic() - started

    def skew(zones: dict[str, int]) -> int:
        return max(zones.values()) - min(zones.values())

    table = "\n".join(
        f"{size:>4}  ours {ours['a']}/{ours['b']}/{ours['c']} (skew {skew(ours)})"
        f"  kube-scheduler {theirs['a']}/{theirs['b']}/{theirs['c']} (skew {skew(theirs)})"
        for size, ours, theirs in rows
    )
    # The server's record: every cost patch was sent while holding the Lease; how many a round took.
    counts = session_counts(ledger, mark, namespace, scheduler.users)
    broken_ours = sum(1 for _, ours, _ in rows if skew(ours) > 1)
    broken_theirs = sum(1 for _, _, theirs in rows if skew(theirs) > 1)
    print(
        f"\nscale-downs from {FULL} (seed {SEED}, {took:.0f} s): above maxSkew 1: "
        f"spread-scheduler {broken_ours} of {len(rows)}, kube-scheduler {broken_theirs} of {len(rows)}; "
        f"cost patches {counts['cost_patches']} ({counts['writes_without_lease']} writes without the Lease)\n{table}"
    )
    assert broken_ours == 0, table
    assert counts["cost_patches"] > 0 and counts["writes_without_lease"] == 0, counts
    # kube-scheduler's pods carry no cost of ours: the keeper touches only pods we placed.
    assert all(cost is None for cost, _ in _costs(_live(core, namespace, "upstream")).values())
