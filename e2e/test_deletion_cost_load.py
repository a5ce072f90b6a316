"""What a pod of another workload costs in deletion-cost patches (issue #48), from the server's record.

Three kwok nodes in three zones, a Deployment of 30 with a hard zone spread, placed by us; once our
costs are in force, a bare pod labelled like it is put on zone a's node (``nodeName`` preset: no
scheduler involved), then deleted. Each used to re-rank zone a's 10 pods (every one of them one rank
up, then down again): 20 patches; the keeper now holds the count of other pods within one and
sends none. The audit log counts the patches our processes attempted, whatever they answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import SchedulerProcess, session_counts
from e2e.kube_helpers import ZONE, create_object, deployment, is_ready, pod_body, wait_for, zone_spread
from e2e.ledger import Ledger
from e2e.test_scale_down_spread import _costs, _live

REPLICAS = 30
# The keeper's debounce (1 s), its settle, and a window's patches at 5/s, with room to spare.
QUIET = 6.0


def test_a_bare_pod_labelled_like_a_workload_costs_no_patch(
    api: client.ApiClient,
    core: client.CoreV1Api,
    control_plane: Cluster,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    if not control_plane.kwok:
        pytest.skip("needs kwok: the pods must run and be Ready")
    zone_node = {z: nodes(f"cost-{z}", labels={ZONE: f"cost-{z}", "cost-set": "1"}, cpu="16") for z in "abc"}
    labels = {"app": "web"}
    spec: dict[str, Any] = pod_body(
        "web", labels, nodeSelector={"cost-set": "1"}, topologySpreadConstraints=[zone_spread(1, labels)]
    )["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
    body = deployment("web", REPLICAS, spec)
    body["metadata"]["namespace"] = namespace
    create_object(api, body)

    def costs_in_force() -> bool:
        live = _live(core, namespace, "web")
        if len(live) != REPLICAS or not all(p.status.phase == "Running" and is_ready(p) for p in live):
            return False
        first = _costs(live)
        if not all(cost is not None and cost == marker for cost, marker in first.values()):
            return False
        time.sleep(1.5)
        return _costs(_live(core, namespace, "web")) == first

    wait_for(costs_in_force, 90, f"{REPLICAS} pods Running and Ready with their costs in force", interval=0.5)

    mark = ledger.mark()
    bare = pod_body("bare", dict(labels), nodeName=zone_node["a"])
    core.create_namespaced_pod(namespace, bare)
    wait_for(lambda: core.read_namespaced_pod("bare", namespace).status.phase == "Running", 30, "the bare pod Running")
    time.sleep(QUIET)
    arrived = session_counts(ledger, mark, namespace, scheduler.users)["cost_patches"]

    mark = ledger.mark()
    core.delete_namespaced_pod("bare", namespace, grace_period_seconds=0)
    names = lambda: {p.metadata.name for p in core.list_namespaced_pod(namespace).items}  # noqa: E731
    wait_for(lambda: "bare" not in names(), 30, "the bare pod gone")
    time.sleep(QUIET)
    left = session_counts(ledger, mark, namespace, scheduler.users)["cost_patches"]

    print(f"\ncost patches for a bare pod beside {REPLICAS}: {arrived} on its arrival, {left} on its deletion")
    assert (arrived, left) == (0, 0)  # was (10, 10): zone a's pods one rank up, then down
