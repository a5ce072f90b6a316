"""Issue #18 on the real control plane (kube-controller-manager's PV controller binds the claims):
pods with PersistentVolumeClaims as far as spread-scheduler schedules them today.

- A claim bound to a PersistentVolume of zone a: the pod lands in zone a although spreading prefers
  the other zones (VolumeBinding's and VolumeZone's Filter).
- A claim with no class and no volume yet (Immediate binding, which only the PV controller does):
  Pending with upstream's "pod has unbound immediate PersistentVolumeClaims"; a PersistentVolume
  pre-bound to it appears, the controller binds the claim, and the claim's update requeues the pod
  (VolumeBinding's queueing hint) so it binds within 5 s of the claim being bound.
- A StatefulSet of three with a WaitForFirstConsumer class, local PVs on one node of each zone and a
  hard zone spread: one pod per zone, each claim bound to the PV on its pod's node (VolumeBinding
  writes the PV's claimRef, the PV controller binds the claim, then the pod is bound). A claim of a
  class with a provisioner: VolumeBinding selects the node, a stand-in provisioner in the test creates
  a PV there, and the pod binds where its volume is.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    HOSTNAME,
    ZONE,
    node_of,
    pod_body,
    stateful_set,
    wait_for,
    wait_unschedulable,
    without_preemption,
    zone_spread,
    zoned_nodes,
)


def _pv(name: str, claim: tuple[str, str], zone: str | None = None) -> dict[str, Any]:
    """A PersistentVolume pre-bound to ``claim`` (namespace, name), no class, zone affinity optional."""
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "",
        "persistentVolumeReclaimPolicy": "Retain",
        "csi": {"driver": "e2e.example.com", "volumeHandle": name},
        "claimRef": {"namespace": claim[0], "name": claim[1]},
    }
    if zone is not None:
        expr = {"key": ZONE, "operator": "In", "values": [zone]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _local_pv(name: str, storage_class: str, node: str) -> dict[str, Any]:
    """A free PersistentVolume of ``storage_class`` that only ``node`` can use (hostname affinity)."""
    body = _pv(name, ("", ""))
    del body["spec"]["claimRef"]
    body["spec"]["storageClassName"] = storage_class
    expr = {"key": HOSTNAME, "operator": "In", "values": [node]}
    body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    return body


def _claim(name: str, storage_class: str | None = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name}, "spec": spec}


def _bound(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    claim = core.read_namespaced_persistent_volume_claim(name, namespace)
    annotations = claim.metadata.annotations or {}
    return claim.status.phase == "Bound" and "pv.kubernetes.io/bind-completed" in annotations


def _data(claim: str) -> list[dict[str, Any]]:
    return [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]


def test_claims_bound_immediate_and_waiting(
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zones = zoned_nodes(nodes, {"a": 1, "b": 1, "c": 1})
    node_zone = dict(zones)
    pvs: list[str] = []
    try:
        # -- a claim bound to a PV of zone a ----------------------------------------------------------
        pv_a = f"{namespace}-zone-a"
        core.create_persistent_volume(_pv(pv_a, (namespace, "in-a"), zone="a"))
        pvs.append(pv_a)
        claim = _claim("in-a")
        claim["spec"]["volumeName"] = pv_a
        core.create_namespaced_persistent_volume_claim(namespace, claim)
        wait_for(lambda: _bound(core, namespace, "in-a"), 60, "claim in-a bound by the PV controller")
        app = {"app": "db"}
        for i in range(2):  # zone a is taken: soft spreading prefers b and c
            core.create_namespaced_pod(namespace, pod_body(f"db-{i}", app, nodeSelector={ZONE: "a"}))
        wait_for(lambda: all(node_of(core, namespace, f"db-{i}") for i in range(2)), 30, "db pods bound")
        spread = [zone_spread(1, app, when="ScheduleAnyway")]
        core.create_namespaced_pod(
            namespace, pod_body("db-vol", app, topologySpreadConstraints=spread, volumes=_data("in-a"))
        )
        bound_to = wait_for(lambda: node_of(core, namespace, "db-vol"), 30, "db-vol bound")
        assert node_zone[bound_to] == "a"

        # -- an unbound claim without a class: Immediate, bound by the PV controller ---------------------
        core.create_namespaced_persistent_volume_claim(namespace, _claim("later"))
        core.create_namespaced_pod(namespace, pod_body("waits", volumes=_data("later")))

        cond = wait_unschedulable(core, namespace, "waits")
        assert (
            without_preemption(cond.message)
            == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        )
        pv_later = f"{namespace}-later"
        core.create_persistent_volume(_pv(pv_later, (namespace, "later")))
        pvs.append(pv_later)
        wait_for(lambda: _bound(core, namespace, "later"), 60, "claim later bound by the PV controller")
        claim_bound = time.monotonic()
        wait_for(lambda: node_of(core, namespace, "waits"), 5, "waits bound within 5 s of its claim")
        assert time.monotonic() - claim_bound < 5

        attempts = [
            entry
            for entry in map(json.loads, scheduler.log().splitlines())
            if entry.get("msg") == "Attempting to bind pod to node"
        ]
        assert [e.get("pod") for e in attempts].count({"name": "waits", "namespace": namespace}) == 1
    finally:
        for pod in core.list_namespaced_pod(namespace).items:
            core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
        for name in pvs:
            core.delete_persistent_volume(name)


def _pv_node(pv: Any) -> str:
    """The node a PV's required node affinity names (hostname In [node])."""
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    (expr,) = term.match_expressions
    return str(expr.values[0])


def _provision(core: client.CoreV1Api, namespace: str, storage_class: str, stop: threading.Event) -> None:
    """A stand-in external provisioner: for each claim of ``storage_class`` annotated with the node
    VolumeBinding selected, a PV pinned to that node and pre-bound to the claim."""
    made: set[str] = set()
    while not stop.wait(0.2):
        for claim in core.list_namespaced_persistent_volume_claim(namespace).items:
            node = (claim.metadata.annotations or {}).get("volume.kubernetes.io/selected-node")
            if claim.spec.storage_class_name != storage_class or not node or claim.metadata.name in made:
                continue
            name = f"{namespace}-{claim.metadata.name}"
            body = _pv(name, (namespace, claim.metadata.name))
            body["spec"]["storageClassName"] = storage_class
            body["spec"]["claimRef"]["uid"] = claim.metadata.uid
            expr = {"key": HOSTNAME, "operator": "In", "values": [node]}
            body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
            core.create_persistent_volume(body)
            made.add(claim.metadata.name)


def test_a_statefulset_across_zones_binds_one_claim_per_zone_and_a_claim_is_provisioned(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zones = zoned_nodes(nodes, {"a": 2, "b": 2, "c": 2})
    first = {zone: name for name, zone in sorted(zones.items(), reverse=True)}  # one node per zone
    storage = client.StorageV1Api(api)
    local, dynamic = f"{namespace}-local", f"{namespace}-dynamic"
    storage.create_storage_class(
        {
            "metadata": {"name": local},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    storage.create_storage_class(
        {
            "metadata": {"name": dynamic},
            "provisioner": "e2e.example.com/stand-in",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    pvs = []
    stop = threading.Event()
    provisioner = threading.Thread(target=_provision, args=(core, namespace, dynamic, stop), daemon=True)
    provisioner.start()
    try:
        for zone, node in first.items():
            core.create_persistent_volume(_local_pv(f"{namespace}-{zone}", local, node))
            pvs.append(f"{namespace}-{zone}")
        spread = zone_spread(1, {"app": "db"})
        client.AppsV1Api(api).create_namespaced_stateful_set(namespace, stateful_set("db", 3, local, spread))

        def all_placed() -> dict[int, str] | None:
            pods = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(namespace).items}
            found = {i: pods.get(f"db-{i}") for i in range(3)}
            return {i: str(n) for i, n in found.items()} if all(found.values()) else None

        placed = wait_for(all_placed, 90, "the three StatefulSet pods bound")
        assert sorted(zones[node] for node in placed.values()) == ["a", "b", "c"]
        for i, node in placed.items():
            claim = core.read_namespaced_persistent_volume_claim(f"data-db-{i}", namespace)
            assert claim.spec.volume_name, f"data-db-{i} unbound"
            assert _pv_node(core.read_persistent_volume(claim.spec.volume_name)) == node
        # -- dynamic provisioning through the selected-node annotation ------------------------------
        core.create_namespaced_persistent_volume_claim(namespace, _claim("made", dynamic))
        core.create_namespaced_pod(namespace, pod_body("provisioned", volumes=_data("made")))
        node = wait_for(lambda: node_of(core, namespace, "provisioned"), 60, "the provisioned pod bound")
        claim = core.read_namespaced_persistent_volume_claim("made", namespace)
        assert (claim.metadata.annotations or {}).get("volume.kubernetes.io/selected-node") == node
        pvs.append(claim.spec.volume_name)
        assert _pv_node(core.read_persistent_volume(claim.spec.volume_name)) == node
    finally:
        stop.set()
        provisioner.join(5)
        client.AppsV1Api(api).delete_collection_namespaced_stateful_set(namespace)  # its pods go with it
        for pv in core.list_persistent_volume().items:
            if pv.metadata.name.startswith(namespace):
                core.delete_persistent_volume(pv.metadata.name)
        storage.delete_storage_class(local)
        storage.delete_storage_class(dynamic)
