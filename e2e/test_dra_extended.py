"""Issues #47 and #49, live: DRAExtendedResource (beta on in 1.36, GA in 1.37) on a real control plane.

An extended resource that a DeviceClass backs (``spec.extendedResourceName``) is DynamicResources'
on a node that does not offer it: both schedulers try to allocate devices for it; with no
ResourceSlices the Filter fails with ``cannot allocate all claims``, message for message the same as
kube-scheduler of the control plane's own release, beside us.

For that, ``run`` watches DeviceClasses (``scheduler.kube.client.watch.watched``), and a class
created, or changed to back a resource, after a pod was refused "Insufficient <resource>" moves
that pod to be tried again (NodeResourcesFit's DeviceClass hint, as upstream's), on both schedulers.

Needs a 1.36+ control plane: ``SPREAD_E2E_KUBE_VERSION=1.37.2``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import node_of, pod_body, scheduled_condition, server_minor, wait_for
from scheduler.testing import node_resource_slice

pytestmark = pytest.mark.every_release  # skipped on 1.35 (no DRAExtendedResource); make e2e runs 1.36 and 1.37

UPSTREAM = "dra-upstream"
OURS = "spread-scheduler"
GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "deviceclasses"
UPSTREAM_REASON = "cannot allocate all claims"
GPU = "example.com/gpu"


@pytest.fixture
def device_classes(api: client.ApiClient) -> Iterator[client.CustomObjectsApi]:
    """The CustomObjectsApi, on a 1.36+ server; every DeviceClass is deleted afterwards."""
    minor = server_minor(api)
    if minor < 36:
        pytest.skip(f"no DRAExtendedResource on a 1.{minor} control plane (make e2e: 1.36.3, 1.37.2)")
    objects = client.CustomObjectsApi(api)
    yield objects
    for item in objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]:
        objects.delete_cluster_custom_object(GROUP, VERSION, PLURAL, item["metadata"]["name"])


def _device_class(name: str, resource: str | None) -> dict[str, Any]:
    spec = {"extendedResourceName": resource} if resource else {}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def _pod(name: str, scheduler: str, resource: str) -> dict[str, Any]:
    body = pod_body(name, scheduler=scheduler)
    body["spec"]["containers"][0]["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    return body


def _refused(core: client.CoreV1Api, namespace: str, name: str, containing: str) -> str | None:
    """The pod's PodScheduled=False message once it contains ``containing``."""
    cond = scheduled_condition(core.read_namespaced_pod(name, namespace))
    if cond is None or cond.status != "False" or containing not in (cond.message or ""):
        return None
    return str(cond.message)


def _both(core: client.CoreV1Api, namespace: str, resource: str, containing: Callable[[str], str]) -> dict[str, str]:
    """Each scheduler's message for its pod asking for ``resource``, once it contains ``containing(who)``."""
    return {
        who: wait_for(
            lambda who=who: _refused(core, namespace, f"{who}-{resource.split('/')[1]}", containing(who)),
            60,
            f"{who}'s pod refused with {containing(who)!r}",
        )
        for who in (OURS, UPSTREAM)
    }


@pytest.fixture
def beside_upstream(
    device_classes: client.CustomObjectsApi,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> client.CustomObjectsApi:
    """Ours and kube-scheduler running, one node offering no extended resource: the DeviceClasses' API."""
    kube_scheduler({"schedulerName": UPSTREAM})
    nodes("plain")
    return device_classes


def test_a_class_backed_resource_fails_to_allocate_as_upstream(
    beside_upstream: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str
) -> None:
    """A class backing ``example.com/gpu``, a node without it and no devices: both allocators fail,
    in the same words (preemption's part too)."""
    device_classes = beside_upstream
    device_classes.create_cluster_custom_object(GROUP, VERSION, PLURAL, _device_class("gpu.example.com", GPU))
    for who in (OURS, UPSTREAM):
        core.create_namespaced_pod(namespace, _pod(f"{who}-gpu", who, GPU))
    messages = _both(core, namespace, GPU, lambda _who: UPSTREAM_REASON)
    assert messages[OURS].startswith(f"0/1 nodes are available: 1 {UPSTREAM_REASON}.")
    assert messages[OURS] == messages[UPSTREAM]


@pytest.mark.parametrize("change", ["created", "updated"])
def test_a_class_that_comes_to_back_the_resource_moves_the_pending_pod(
    change: str, beside_upstream: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str
) -> None:
    """Refused "Insufficient example.com/fpga" first; then a DeviceClass backing it is created (or an
    existing one is changed to back it): both schedulers try the pod again at once (NodeResourcesFit's
    hint for DeviceClass Add and Update), and now leave the resource to DynamicResources."""
    device_classes = beside_upstream
    fpga = "example.com/fpga"
    if change == "updated":
        device_classes.create_cluster_custom_object(GROUP, VERSION, PLURAL, _device_class("fpga.example.com", None))
    for who in (OURS, UPSTREAM):
        core.create_namespaced_pod(namespace, _pod(f"{who}-fpga", who, fpga))
    before = _both(core, namespace, fpga, lambda _who: f"Insufficient {fpga}")
    assert before[OURS] == before[UPSTREAM]
    backing = _device_class("fpga.example.com", fpga)
    if change == "created":
        device_classes.create_cluster_custom_object(GROUP, VERSION, PLURAL, backing)
    else:
        device_classes.patch_cluster_custom_object(
            GROUP, VERSION, PLURAL, "fpga.example.com", {"spec": backing["spec"]}
        )
    # Well within the 5-minute flush of unschedulable pods: only the event can have moved them.
    after = _both(core, namespace, fpga, lambda _who: UPSTREAM_REASON)
    assert after[OURS] == after[UPSTREAM]


def test_the_devices_behind_a_class_backed_resource_are_allocated_in_a_claim_created_for_the_pod(
    device_classes: client.CustomObjectsApi,
    resources: client.CustomObjectsApi,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    core: client.CoreV1Api,
    namespace: str,
) -> None:
    """Issue #49: a node publishing two devices of the class and offering no ``example.com/tpu``
    itself. A pod asking for two is bound there: PreBind created its claim (``generateName``, owned by
    the pod), allocated both devices and reserved them for it, and patched the pod's
    ``status.extendedResourceClaimStatus``; a second pod finds no device left."""
    tpu, driver = "example.com/tpu", "tpu.example.com"
    node = nodes("devices")
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    backing = _device_class("live-tpu", tpu)
    backing["spec"]["selectors"] = [selector]
    device_classes.create_cluster_custom_object(GROUP, VERSION, PLURAL, backing)
    devices = ({"name": "tpu-0"}, {"name": "tpu-1"})
    resources.create_cluster_custom_object(
        GROUP, VERSION, "resourceslices", node_resource_slice(f"live-{node}", driver, node, *devices)
    )
    first = _pod("first", OURS, tpu)
    first["spec"]["containers"][0]["resources"] = {"requests": {tpu: "2"}, "limits": {tpu: "2"}}
    core.create_namespaced_pod(namespace, first)
    assert wait_for(lambda: node_of(core, namespace, "first"), 60, "the first pod bound") == node
    pod = core.read_namespaced_pod("first", namespace)
    status = pod.status.extended_resource_claim_status
    assert status is not None and status.resource_claim_name.startswith("first-extended-resources-")
    assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
        ("c", tpu, "container-0-request-0")
    ]
    claim = device_classes.get_namespaced_custom_object(
        GROUP, VERSION, namespace, "resourceclaims", status.resource_claim_name
    )
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod.metadata.uid
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["tpu-0", "tpu-1"]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod.metadata.uid]
    core.create_namespaced_pod(namespace, _pod("second", OURS, tpu))
    wait_for(lambda: _refused(core, namespace, "second", UPSTREAM_REASON), 60, "the second pod refused")
