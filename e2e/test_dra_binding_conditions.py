"""Issue #49 live: DynamicResources' PreBind waits for binding conditions (DRADeviceBindingConditions
with DRAResourceClaimDeviceStatus, beta and on from 1.36, in the API server and in the scheduler).

The test acts as the DRA driver: its ResourceSlice's device has ``bindingConditions`` (``attached``)
and ``bindingFailureConditions`` (``failed``). The pod's claim is allocated and reserved for it in
PreBind, which then waits (Event ``BindingConditionsPending``), polling every 5 s: the pod stays
unbound until the driver reports the device ``attached`` in the claim's ``status.devices``, and is
bound then. A true failure condition fails the binding instead; the next cycle deallocates the claim.

Needs a 1.36+ control plane: ``SPREAD_E2E_KUBE_VERSION=1.36.3`` (make e2e runs it on 1.36 and 1.37).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import events_for, node_of, pod_body, server_minor, wait_for
from scheduler.testing import driver_device_class, node_resource_slice

pytestmark = pytest.mark.every_release  # skipped on 1.35 (DRADeviceBindingConditions alpha, off)

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "attach.example.com"


@pytest.fixture
def driver(
    api: client.ApiClient, resources: client.CustomObjectsApi, scheduler: SchedulerProcess, nodes: Callable[..., str]
) -> Iterator[tuple[client.CustomObjectsApi, str]]:
    """A node whose one device must be attached before a pod may bind to it, and a class for it."""
    minor = server_minor(api)
    if minor < 36:
        pytest.skip(f"DRADeviceBindingConditions is off on a 1.{minor} control plane (make e2e: 1.36.3, 1.37.2)")
    node = nodes("attach")
    device = {"name": "gpu-0", "bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}
    resources.create_cluster_custom_object(
        GROUP, VERSION, "resourceslices", node_resource_slice(f"live-{node}", DRIVER, node, device)
    )
    resources.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", driver_device_class("live-attach", DRIVER))
    yield resources, node


def _claim_and_pod(core: client.CoreV1Api, resources: client.CustomObjectsApi, namespace: str) -> None:
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "live-attach"}}]}},
    }
    resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)
    body = pod_body("p", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}])
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    core.create_namespaced_pod(namespace, body)


def _reserved(resources: client.CustomObjectsApi, namespace: str) -> dict[str, Any] | None:
    """The claim once PreBind has allocated it and reserved it for the pod."""
    claim: dict[str, Any] = resources.get_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", "gpu")
    status = claim.get("status") or {}
    return claim if status.get("allocation") and status.get("reservedFor") else None


def _report(resources: client.CustomObjectsApi, namespace: str, node: str, condition: str) -> None:
    """As the driver: the device's ``condition`` True in the claim's ``status.devices``."""
    now = datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry = {"type": condition, "status": "True", "reason": "Reported", "message": "by e2e", "lastTransitionTime": now}
    devices = [{"driver": DRIVER, "pool": node, "device": "gpu-0", "conditions": [entry]}]
    resources.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "resourceclaims", "gpu", {"status": {"devices": devices}}
    )


def test_the_pod_binds_once_the_device_is_attached(
    driver: tuple[client.CustomObjectsApi, str], core: client.CoreV1Api, namespace: str
) -> None:
    resources, node = driver
    _claim_and_pod(core, resources, namespace)
    claim = wait_for(lambda: _reserved(resources, namespace), 60, "the claim allocated and reserved")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p"]
    assert claim["status"]["allocation"]["devices"]["results"][0]["bindingConditions"] == ["attached"]
    waiting = wait_for(
        lambda: [e for e in events_for(core, namespace, "p") if e["reason"] == "BindingConditionsPending"],
        30,
        "the BindingConditionsPending Event",
    )
    assert waiting[0]["note"] == f"waiting for binding conditions for device on node {node}"
    assert waiting[0]["type"] == "Normal" and waiting[0]["action"] == "Scheduling"
    time.sleep(1)  # the pod waits: no driver has said the device is attached
    assert node_of(core, namespace, "p") is None
    _report(resources, namespace, node, "attached")
    assert wait_for(lambda: node_of(core, namespace, "p"), 30, "the pod bound") == node


def test_a_failed_attachment_fails_the_binding_and_frees_the_device(
    driver: tuple[client.CustomObjectsApi, str], core: client.CoreV1Api, namespace: str
) -> None:
    """The driver reports ``failed``: PreBind fails with upstream's ErrDeviceBindingFailed words, the
    pod stays unbound, and its next cycle's Filter and PostFilter deallocate the claim (its device
    status goes with the allocation), so that the device can be tried again."""
    resources, node = driver
    _claim_and_pod(core, resources, namespace)
    wait_for(lambda: _reserved(resources, namespace), 60, "the claim allocated and reserved")
    _report(resources, namespace, node, "failed")
    want = 'device binding failed: claim=gpu, reason=Reported, message="by e2e"'
    failed = wait_for(
        lambda: [e for e in events_for(core, namespace, "p") if want in (e.get("note") or "")],
        30,
        "the binding failed",
    )
    assert failed[0]["reason"] == "FailedScheduling"

    def cleared() -> bool | None:
        claim = resources.get_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", "gpu")
        return True if not (claim.get("status") or {}).get("devices") else None

    wait_for(cleared, 30, "the claim deallocated, its failed device status gone")
    assert node_of(core, namespace, "p") is None
