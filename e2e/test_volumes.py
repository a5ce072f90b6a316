"""Issue #18 on the real control plane (kube-controller-manager's PV controller binds the claims):
pods with PersistentVolumeClaims as far as spread-scheduler schedules them today.

- A claim bound to a PersistentVolume of zone a: the pod lands in zone a although spreading prefers
  the other zones (VolumeBinding's and VolumeZone's Filter).
- A claim with no class and no volume yet (Immediate binding, which only the PV controller does):
  Pending with upstream's "pod has unbound immediate PersistentVolumeClaims"; a PersistentVolume
  pre-bound to it appears, the controller binds the claim, and the claim's update requeues the pod
  (VolumeBinding's queueing hint) so it binds within 5 s of the claim being bound.
- A claim of a WaitForFirstConsumer class: refused with the message naming the volume, no Binding
  attempted (binding such claims is issue #18's next step).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    ZONE,
    node_of,
    pod_body,
    scheduled_condition,
    wait_for,
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

        def refused(name: str) -> Any:
            cond = scheduled_condition(core.read_namespaced_pod(name, namespace))
            return cond if cond is not None and cond.status == "False" else None

        cond = wait_for(lambda: refused("waits"), 30, "waits refused")
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

        # -- a claim of a WaitForFirstConsumer class: refused, naming the volume -----------------------
        storage = client.StorageV1Api(core.api_client)
        class_name = f"{namespace}-wait"
        storage.create_storage_class(
            {
                "metadata": {"name": class_name},
                "provisioner": "e2e.example.com",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
        try:
            core.create_namespaced_persistent_volume_claim(namespace, _claim("first", class_name))
            core.create_namespaced_pod(namespace, pod_body("first-consumer", volumes=_data("first")))
            cond = wait_for(lambda: refused("first-consumer"), 30, "first-consumer refused")
            assert without_preemption(cond.message) == (
                '0/3 nodes are available: spec.volumes[0].persistentVolumeClaim (volume "data") needs the '
                "VolumeBinding plugin: binding a WaitForFirstConsumer claim, which spread-scheduler does not do yet."
            )
            time.sleep(1)
            assert node_of(core, namespace, "first-consumer") is None
            attempts = [
                entry
                for entry in map(json.loads, scheduler.log().splitlines())
                if entry.get("msg") == "Attempting to bind pod to node"
            ]
            assert {"name": "first-consumer", "namespace": namespace} not in [e.get("pod") for e in attempts]
            assert {"name": "waits", "namespace": namespace} in [e.get("pod") for e in attempts]  # the check can see
        finally:
            storage.delete_storage_class(class_name)
    finally:
        for pod in core.list_namespaced_pod(namespace).items:
            core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
        for name in pvs:
            core.delete_persistent_volume(name)
