"""Issue #8: spread-scheduler and the upstream kube-scheduler share nodes without overcommitting them.

Both schedulers place pods with requests onto the same three nodes at the same time. Each one counts
the other's pods from the moment it sees their binding; a pod one scheduler binds while the other is
deciding is the race upstream documents between two schedulers (the kubelet would refuse the later
pod with OutOfcpu). We count such races instead of hoping for zero, and require none among our own
pods: our cache assumes a pod the moment it decides.
"""

from __future__ import annotations

import collections
import json
import subprocess
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import LOGS, session_counts
from e2e.kube_helpers import pod_body, pods_in, scheduled_condition, wait_for
from e2e.ledger import binding_attempts

NODE_CPU_MILLI, NODE_MEMORY_MI = 2000, 4096
POD_CPU_MILLI, POD_MEMORY_MI = 250, 256
PODS_PER_SCHEDULER = 20
OURS, THEIRS = "spread-scheduler", "default-scheduler"


@pytest.fixture
def upstream_scheduler(kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """kube-scheduler v1.35.4 with its own default profile, as ``default-scheduler``."""
    return kube_scheduler({"schedulerName": THEIRS})


def _cpu_milli(text: str) -> int:
    return int(Fraction(text[:-1]) if text.endswith("m") else Fraction(text) * 1000)


def _requests(pods: list[Any]) -> dict[str, int]:
    """node -> summed CPU requests (milli) of the pods bound there."""
    used: dict[str, int] = collections.Counter()
    for pod in pods:
        if pod.spec.node_name:
            used[pod.spec.node_name] += sum(_cpu_milli(c.resources.requests["cpu"]) for c in pod.spec.containers)
    return used


def _create(core: client.CoreV1Api, namespace: str, who: str, index: int) -> None:
    body = pod_body(f"{who[:6]}-{index}", {"app": "shared", "by": who[:6]}, scheduler=who)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": f"{POD_CPU_MILLI}m", "memory": f"{POD_MEMORY_MI}Mi"}
    }
    core.create_namespaced_pod(namespace, body)


def _settle(core: client.CoreV1Api, namespace: str, names: list[str], expected: int) -> list[Any]:
    """Wait until all ``expected`` pods are bound or refused, and no refused pod would fit anywhere."""

    def settled() -> list[Any] | None:
        pods = pods_in(core, namespace)
        pending = [p for p in pods if not p.spec.node_name]
        if len(pods) < expected or any(
            (cond := scheduled_condition(p)) is None or cond.status != "False" or cond.reason != "Unschedulable"
            for p in pending
        ):
            return None
        used = _requests(pods)
        if pending and any(NODE_CPU_MILLI - used[n] >= POD_CPU_MILLI for n in names):
            return None
        return pods

    return wait_for(settled, 90, "the nodes to fill and the rest to be refused")


def _assert_refused_for_cpu(pods: list[Any]) -> None:
    for pod in pods:
        if not pod.spec.node_name and pod.spec.scheduler_name == OURS:
            message = scheduled_condition(pod).message
            assert message.startswith("0/3 nodes are available: 3 Insufficient cpu."), message


SLOTS = 3 * NODE_CPU_MILLI // POD_CPU_MILLI  # 24 pods of 250m fit three 2-CPU nodes


def test_pods_bound_by_the_other_scheduler_count(
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    scheduler: Any,
    upstream_scheduler: subprocess.Popen[bytes],
) -> None:
    """Upstream binds 20 pods first; then ours may add exactly the 4 that still fit, refusing 16."""
    names = [nodes(f"seq-{i}", cpu="2", memory=f"{NODE_MEMORY_MI}Mi") for i in range(3)]
    for i in range(PODS_PER_SCHEDULER):
        _create(core, namespace, THEIRS, i)
    first = _settle(core, namespace, names, PODS_PER_SCHEDULER)
    assert all(p.spec.node_name for p in first), "20 pods fit 24 slots: upstream binds them all"
    for i in range(PODS_PER_SCHEDULER):
        _create(core, namespace, OURS, i)
    pods = _settle(core, namespace, names, 2 * PODS_PER_SCHEDULER)
    used = _requests(pods)
    assert all(used[n] <= NODE_CPU_MILLI for n in names), used
    assert sum(bool(p.spec.node_name) for p in pods if p.spec.scheduler_name == OURS) == SLOTS - PODS_PER_SCHEDULER
    _assert_refused_for_cpu(pods)


def test_two_schedulers_at_once_race_only_with_each_other(
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    scheduler: Any,
    upstream_scheduler: subprocess.Popen[bytes],
    local_cluster: Cluster | None,
) -> None:
    """40 pods of 250m/256Mi, half per scheduler, created interleaved onto 3 nodes of 2 CPU (24 slots).

    A race is one pod beyond a node's allocatable: both schedulers picked the last room on a node
    before either saw the other's binding. Each scheduler alone never overcommits.
    """
    names = [nodes(f"shared-{i}", cpu="2", memory=f"{NODE_MEMORY_MI}Mi") for i in range(3)]
    mark = local_cluster.ledger.mark() if local_cluster is not None else 0
    for i in range(PODS_PER_SCHEDULER):
        for who in (OURS, THEIRS):
            _create(core, namespace, who, i)
    pods = _settle(core, namespace, names, 2 * PODS_PER_SCHEDULER)
    used = _requests(pods)
    per_scheduler = {who: _requests([p for p in pods if p.spec.scheduler_name == who]) for who in (OURS, THEIRS)}
    bound = [p for p in pods if p.spec.node_name]
    races = sum(max(0, used[n] - NODE_CPU_MILLI) // POD_CPU_MILLI for n in names)
    report = {
        "pods": len(pods),
        "bound": len(bound),
        "bound_by_us": sum(p.spec.scheduler_name == OURS for p in bound),
        "bound_by_upstream": sum(p.spec.scheduler_name == THEIRS for p in bound),
        "cpu_milli_per_node": {n: used[n] for n in names},
        "races": races,
    }
    if local_cluster is not None:
        # From the server's record: one Binding per pod of ours, none for upstream's pods, no 409
        # (only we bind our pods), nothing written without the Lease.
        writes = local_cluster.ledger.writes(mark)
        ours = {p.metadata.name for p in pods if p.spec.scheduler_name == OURS}
        attempts = binding_attempts((w for w in writes if w.user in scheduler.users), namespace)
        counts = session_counts(local_cluster.ledger, mark, namespace, scheduler.users)
        report |= counts
        assert set(attempts) <= ours, f"Bindings we sent for pods that are not ours: {set(attempts) - ours}"
        assert counts["binding_requests"] == counts["pods_bound"] == report["bound_by_us"], counts
        assert counts["binding_conflicts_409"] == counts["writes_without_lease"] == 0, counts
    (LOGS / "coexistence.json").write_text(json.dumps(report, indent=1))
    print(f"coexistence: {report}")

    for who, own in per_scheduler.items():
        assert all(own[n] <= NODE_CPU_MILLI for n in names), (who, own)
    # Every slot is used: 24 pods fit, plus one per race.
    assert len(bound) == SLOTS + races
    assert report["bound_by_us"] > 0 and report["bound_by_upstream"] > 0
    _assert_refused_for_cpu(pods)
