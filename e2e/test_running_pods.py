"""Pods we bind run: kwok plays the kubelet of the test's nodes (e2e/cluster/), so what users rely
on around a scheduler happens here as on a real cluster: a Deployment's rollout completes, a
StatefulSet with the default OrderedReady policy grows one Ready pod at a time, a PodDisruptionBudget
counts Ready pods, a pod deleted with its grace period is Terminating and then gone, and a deleted
node's pods are collected. Every pod here is bound by spread-scheduler."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    ZONE,
    create_object,
    deployment,
    disruption_budget,
    is_ready,
    pod_body,
    wait_for,
    zone_spread,
    zoned_nodes,
)

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _needs_kwok(local_cluster: Cluster | None) -> None:
    if local_cluster is not None and not local_cluster.kwok:
        pytest.skip("needs kwok: without it bound pods stay Pending")


def _ready_since(pod: Any) -> datetime:
    (cond,) = (c for c in pod.status.conditions if c.type == "Ready")
    return cond.last_transition_time  # type: ignore[no-any-return]


def _deployment(namespace: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    spec = pod_body(name, labels, topologySpreadConstraints=[zone_spread(1, labels)])["spec"]
    return deployment(name, replicas, spec, namespace)


def test_a_deployment_rollout_completes_on_pods_we_bind(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zone_of = zoned_nodes(nodes, {"a": 1, "b": 1, "c": 1})
    create_object(api, _deployment(namespace, "web", 3))
    apps = client.AppsV1Api(api)

    def rolled_out(generation: int) -> bool:
        d = apps.read_namespaced_deployment("web", namespace)
        s = d.status
        return (s.observed_generation or 0) >= generation and (
            s.updated_replicas == s.replicas == s.available_replicas == s.ready_replicas == 3
        )

    wait_for(lambda: rolled_out(1), 60, "web available")
    first = {p.metadata.name for p in core.list_namespaced_pod(namespace).items}
    # A new template: a new ReplicaSet, whose pods must become available before the old ones go
    # (with their default 30 s grace period; kwok's kubelet ends them in about a second).
    patch = {"spec": {"template": {"metadata": {"annotations": {"rollout": "2"}}}}}
    generation = apps.patch_namespaced_deployment("web", namespace, patch).metadata.generation
    wait_for(lambda: rolled_out(generation), 90, "the rollout complete")
    wait_for(lambda: len(core.list_namespaced_pod(namespace).items) == 3, 30, "the old pods gone")
    pods = core.list_namespaced_pod(namespace).items
    assert not {p.metadata.name for p in pods} & first
    assert all(p.status.phase == "Running" and is_ready(p) and p.status.pod_ip for p in pods)
    assert sorted(zone_of[p.spec.node_name] for p in pods) == ["a", "b", "c"]


def test_a_statefulset_with_ordered_ready_grows_one_ready_pod_at_a_time(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zone_of = zoned_nodes(nodes, {"a": 1, "b": 1, "c": 1})
    labels = {"app": "db"}
    spec = pod_body("db", labels, topologySpreadConstraints=[zone_spread(1, labels)])["spec"]
    create_object(
        api,
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": namespace},
            "spec": {  # podManagementPolicy: OrderedReady, the default
                "replicas": 3,
                "serviceName": "db",
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": spec},
            },
        },
    )

    def all_ready() -> list[Any]:
        pods = core.list_namespaced_pod(namespace).items
        return pods if len(pods) == 3 and all(is_ready(p) for p in pods) else []

    pods = {p.metadata.name: p for p in wait_for(all_ready, 90, "db-0..2 Ready")}
    # OrderedReady: db-N is created only once db-(N-1) is Running and Ready.
    for n in (1, 2):
        assert pods[f"db-{n}"].metadata.creation_timestamp >= _ready_since(pods[f"db-{n - 1}"]), pods
    assert sorted(zone_of[p.spec.node_name] for p in pods.values()) == ["a", "b", "c"]


def test_a_pdb_counts_the_ready_pods_we_bound(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zoned_nodes(nodes, {"a": 1, "b": 1, "c": 1})
    create_object(api, _deployment(namespace, "web", 3))
    create_object(api, disruption_budget("web", namespace, "web", minAvailable=2))
    policy = client.PolicyV1Api(api)

    def status() -> tuple[int, int, int] | None:
        s = policy.read_namespaced_pod_disruption_budget("web", namespace).status
        got = (s.current_healthy, s.desired_healthy, s.disruptions_allowed)
        return got if got == (3, 2, 1) else None

    wait_for(status, 60, "currentHealthy 3, desiredHealthy 2, disruptionsAllowed 1", interval=0.5)


def test_a_pod_deleted_with_its_grace_period_terminates_then_goes(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    nodes("n", labels={ZONE: "a"})
    body = pod_body("slow-stop")  # terminationGracePeriodSeconds: the default 30
    # kwok's kubelet takes 4 s to stop its container (a process that finishes its work on SIGTERM).
    body["metadata"]["annotations"] = {"pod-delete.stage.kwok.x-k8s.io/delay": "4s"}
    core.create_namespaced_pod(namespace, body)
    wait_for(lambda: core.read_namespaced_pod("slow-stop", namespace).status.phase == "Running", 30, "Running")
    core.delete_namespaced_pod("slow-stop", namespace)
    started = time.monotonic()
    pod = core.read_namespaced_pod("slow-stop", namespace)
    assert pod.metadata.deletion_timestamp is not None and pod.metadata.deletion_grace_period_seconds == 30

    def gone() -> bool:
        try:
            core.read_namespaced_pod("slow-stop", namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, 30, "the pod gone")
    took = time.monotonic() - started
    assert 3.0 < took < 30, f"Terminating for {took:.1f} s: want the kubelet's 4 s, within the grace period"


def test_the_pods_of_a_deleted_node_are_collected(core: client.CoreV1Api, orphaned: str | None) -> None:
    """A node deleted from the API takes its pods with it: the controller-manager's pod garbage
    collector deletes pods bound to a node that no longer exists (after its fixed 40 s quarantine
    and up to 20 s more for its next pass; ``orphaned`` made the pod at the session's start, so that
    wait ran while the tests before this one did)."""
    assert orphaned is not None

    def collected() -> bool:
        return not core.list_namespaced_pod(orphaned).items

    wait_for(collected, 120, "the orphaned pod deleted by the pod garbage collector", interval=1)
