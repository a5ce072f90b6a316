"""Issue #49 item 6, live: GPU pods spread over zones, beside kube-scheduler of the same release.

The test acts as a DRA driver: two sets of six kwok nodes (``side_by_side``: zones a, b and c of two
nodes each, one set for spread-scheduler, one for kube-scheduler with the same default profile), a
ResourceSlice of two devices per node, and a DeviceClass whose CEL selector picks the driver's
devices. Each set gets a Deployment of 9 pods with a hard zone spread (``nodeTaintsPolicy: Honor``)
and a ResourceClaimTemplate; kube-controller-manager generates one claim per pod. Then, ours only:

- placed: every pod Running, 3/3/3 under both schedulers, every claim allocated (by whichever
  scheduler placed its pod) to a device of its pod's node (the result's pool and the allocation's
  node selector name the node), no device twice;
- scaled down to 6: our deletion costs keep the spread (2/2/2), and the claims of the deleted pods
  are gone (the resourceclaim controller deletes the claims it generated once their pod is gone), so
  their devices are free;
- zone C lost (a NoExecute taint on its nodes) and back: the replacements land in A and B (3/3/0)
  with claims of their own, and on the zone's return the rebalancer (opted in) brings it back to
  2/2/2, each replacement's claim again on its pod's node.
"""

from __future__ import annotations

import collections
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import ZONE, create_object, deployment, is_ready, pod_body, side_by_side, wait_for
from e2e.zone_loss import DOWN
from scheduler.spread.deletion_cost import COST_ANNOTATION, MARKER_ANNOTATION
from scheduler.spread.rebalance import REBALANCE_ANNOTATION
from scheduler.testing import node_resource_slice

pytestmark = pytest.mark.slow

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "gpu.example.com"
CLASS = "live-zone-gpu"  # live-...: the resources fixture deletes it
UPSTREAM = "gpu-upstream"
REPLICAS, SCALED = 9, 6
DEVICES = ({"name": "gpu-0"}, {"name": "gpu-1"})


def gpu_workload(name: str, scheduler: str, node_set: str, replicas: int = REPLICAS) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods, a device each from the template ``gpu``, spread hard over zones."""
    labels = {"app": name}
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels},
        "nodeTaintsPolicy": "Honor",
    }
    spec = pod_body(
        name,
        labels,
        scheduler=scheduler,
        nodeSelector={"gpu-set": node_set},
        topologySpreadConstraints=[spread],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
    )["spec"]
    spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}], "requests": {"cpu": "10m"}}
    return deployment(name, replicas, spec)


class Gpus:
    """The test's view of one set: its pods, their zones and their claims."""

    def __init__(
        self, core: client.CoreV1Api, objects: client.CustomObjectsApi, namespace: str, zone_of: dict[str, str]
    ) -> None:
        self.core, self.objects, self.namespace, self.zone_of = core, objects, namespace, zone_of

    def live(self, app: str) -> list[Any]:
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}").items
        return [p for p in pods if p.metadata.deletion_timestamp is None]

    def settled(self, app: str, replicas: int) -> dict[str, int] | None:
        """Zone (a/b/c) -> pods, once exactly ``replicas`` pods exist, all bound, Running and Ready."""
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}").items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        if len(pods) != replicas or len(live) != replicas:
            return None
        if not all(p.spec.node_name and p.status.phase == "Running" and is_ready(p) for p in live):
            return None
        counts = collections.Counter(self.zone_of[p.spec.node_name][-1] for p in live)
        return {z: counts.get(z, 0) for z in "abc"}

    def claims(self) -> dict[str, dict[str, Any]]:
        """The namespace's claims by name."""
        items = self.objects.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "resourceclaims")["items"]
        return {c["metadata"]["name"]: c for c in items}

    def devices(self, app: str) -> dict[str, tuple[str, str]]:
        """Pod -> (pool, device) of its claim, checked: allocated on the pod's node and reserved for it."""
        claims = self.claims()
        out = {}
        for pod in self.live(app):
            (status,) = pod.status.resource_claim_statuses
            claim = claims[status.resource_claim_name]
            allocation = claim["status"]["allocation"]
            (result,) = allocation["devices"]["results"]
            node = pod.spec.node_name
            assert (result["driver"], result["pool"]) == (DRIVER, node), (pod.metadata.name, result)
            (term,) = allocation["nodeSelector"]["nodeSelectorTerms"]
            assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": [node]}], term
            assert [r["uid"] for r in claim["status"].get("reservedFor", [])] == [pod.metadata.uid], claim["status"]
            out[pod.metadata.name] = (result["pool"], result["device"])
        assert len(set(out.values())) == len(out), f"a device given twice: {out}"
        return out


def test_gpu_pods_spread_over_zones_allocated_scaled_down_and_rebalanced(
    api: client.ApiClient,
    core: client.CoreV1Api,
    resources: client.CustomObjectsApi,
    control_plane: Cluster,
    scheduler: SchedulerProcess,
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    if not control_plane.kwok:
        pytest.skip("needs kwok: the pods must run, be Ready and terminate")
    started = time.monotonic()
    sets, zone_of = side_by_side(kube_scheduler, nodes, UPSTREAM, "gpu-set", cpu="16")
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    device_class = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": CLASS}}
    resources.create_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", {**device_class, "spec": {"selectors": [selector]}}
    )
    for node in zone_of:
        body = node_resource_slice(f"live-zone-{node}", DRIVER, node, *DEVICES)
        resources.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)
    template = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}},
    }
    resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaimtemplates", template)
    for node_set, scheduler_name in sets.items():
        body = gpu_workload(node_set, scheduler_name, node_set)
        body["metadata"]["namespace"] = namespace
        if node_set == "ours":
            body["spec"]["template"]["metadata"]["annotations"] = {REBALANCE_ANNOTATION: "true"}
        create_object(api, body)
    gpus = Gpus(core, resources, namespace, zone_of)

    # Placed: 3/3/3 under both, every claim on its pod's node, no device twice.
    for app in sets:
        zones = wait_for(lambda app=app: gpus.settled(app, REPLICAS), 90, f"{app}: 9 pods Running", interval=0.5)
        assert zones == {"a": 3, "b": 3, "c": 3}, (app, zones)
        assert len(gpus.devices(app)) == REPLICAS
    placed = time.monotonic() - started

    # Scaled down: our deletion costs keep the spread; the deleted pods' claims go with them.
    def costs_in_force() -> bool:
        annotations = [p.metadata.annotations or {} for p in gpus.live("ours")]
        return all(
            a.get(COST_ANNOTATION) is not None and a.get(COST_ANNOTATION) == a.get(MARKER_ANNOTATION)
            for a in annotations
        )

    wait_for(costs_in_force, 60, "our pods' deletion costs in force", interval=0.5)
    before = {p.metadata.name: p.status.resource_claim_statuses[0].resource_claim_name for p in gpus.live("ours")}
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment_scale("ours", namespace, {"spec": {"replicas": SCALED}})
    zones = wait_for(lambda: gpus.settled("ours", SCALED), 60, "ours scaled down to 6", interval=0.5)
    assert zones == {"a": 2, "b": 2, "c": 2}, zones
    kept = {p.metadata.name for p in gpus.live("ours")}
    freed = {claim for pod, claim in before.items() if pod not in kept}
    wait_for(lambda: not freed & set(gpus.claims()), 60, f"the deleted pods' claims {sorted(freed)} gone", interval=0.5)
    assert len(gpus.devices("ours")) == SCALED

    # Zone C lost and back: the replacements go to A and B, then the rebalancer brings them back.
    lost = [n for n, zone in zone_of.items() if zone.endswith("-c") and "-ours-" in n]
    for name in lost:
        core.patch_node(name, {"spec": {"taints": [{"key": DOWN, "effect": "NoExecute"}]}})
    zones = wait_for(
        lambda: (z := gpus.settled("ours", SCALED)) and z["c"] == 0 and z,
        90,
        "ours failed over to A and B",
        interval=0.5,
    )
    assert zones == {"a": 3, "b": 3, "c": 0}, zones
    assert len(gpus.devices("ours")) == SCALED
    returned = time.monotonic()
    for name in lost:
        core.patch_node(name, {"spec": {"taints": []}})
    zones = wait_for(
        lambda: (z := gpus.settled("ours", SCALED)) and z["c"] == 2 and z, 120, "ours rebalanced to C", interval=0.5
    )
    assert zones == {"a": 2, "b": 2, "c": 2}, zones
    assert len(gpus.devices("ours")) == SCALED
    print(
        f"\nplaced 2 x {REPLICAS} in {placed:.0f} s; rebalanced {time.monotonic() - returned:.0f} s after the "
        f"zone's return; {time.monotonic() - started:.0f} s in all"
    )
