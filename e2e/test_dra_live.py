"""Issue #49 live: DynamicResources in the default profile, on a control plane of each release.

The test acts as a DRA driver: one ResourceSlice per kwok node, one device each, and a DeviceClass
selecting the driver's devices. Three pods each ask for a device through a ResourceClaimTemplate;
kube-controller-manager generates their claims. spread-scheduler allocates each pod's claim in its
cycle, writes the allocation and reservation in PreBind (``scheduler.kube.resourceclaims``) and binds:
two pods run, each on its own node with its node's device, and the third, for which no device is
left, gets upstream's ``cannot allocate all claims``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import node_of, pod_body, scheduled_condition, wait_for
from scheduler.testing import driver_device_class, node_resource_slice

pytestmark = pytest.mark.every_release

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "gpu.example.com"


def _claim_of(objects: client.CustomObjectsApi, namespace: str, pod: client.V1Pod) -> dict[str, Any]:
    (status,) = pod.status.resource_claim_statuses
    claim: dict[str, Any] = objects.get_namespaced_custom_object(
        GROUP, VERSION, namespace, "resourceclaims", status.resource_claim_name
    )
    return claim


def test_claims_from_templates_are_allocated_written_and_bound(
    resources: client.CustomObjectsApi,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    node_names = [nodes("a"), nodes("b")]
    resources.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", driver_device_class("live-gpu", DRIVER))
    for name in node_names:
        resources.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", node_resource_slice(f"live-{name}", DRIVER, name)
        )
    template = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "live-gpu"}}]}}},
    }
    resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaimtemplates", template)
    pods = ["p0", "p1", "p2"]
    for name in pods:
        body = pod_body(name, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}])
        body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        core.create_namespaced_pod(namespace, body)

    def settled() -> tuple[dict[str, str], list[str]] | None:
        bound = {p: n for p in pods if (n := node_of(core, namespace, p))}
        waiting = []
        for p in pods:
            cond = scheduled_condition(core.read_namespaced_pod(p, namespace))
            if p not in bound and cond is not None and cond.status == "False":
                waiting.append(str(cond.message))
        return (bound, waiting) if len(bound) == 2 and len(waiting) == 1 else None

    bound, (message,) = wait_for(settled, 60, "two pods bound and one refused")
    assert sorted(bound.values()) == sorted(node_names)
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    for name, node in bound.items():
        claim = _claim_of(resources, namespace, core.read_namespaced_pod(name, namespace))
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["device"]) == (DRIVER, node, "gpu-0")
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [name]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
