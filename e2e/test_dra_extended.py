"""Issue #47, live: DRAExtendedResource (beta on in 1.36, GA in 1.37) on a real control plane.

An extended resource that a DeviceClass backs (``spec.extendedResourceName``) is DynamicResources'
on a node that does not offer it. kube-scheduler then tries to allocate devices; with no
ResourceSlices its Filter fails with ``cannot allocate all claims``. We do not allocate devices yet:
our DynamicResources refuses the same node, with the same plugin and code, in words naming the resource and
the class (docs/differences.md). That is the one difference, checked here message for message
against kube-scheduler of the control plane's own release, beside us.

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
from e2e.kube_helpers import pod_body, scheduled_condition, server_minor, wait_for

pytestmark = pytest.mark.every_release  # skipped on 1.35 (no DRAExtendedResource); make e2e runs 1.36 and 1.37

UPSTREAM = "dra-upstream"
OURS = "spread-scheduler"
GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "deviceclasses"
UPSTREAM_REASON = "cannot allocate all claims"
GPU = "example.com/gpu"


def _refusal(resource: str, device_class: str) -> str:
    return (
        f'extended resource "{resource}" (DeviceClass "{device_class}") needs the DynamicResources plugin: '
        "spread-scheduler does not allocate devices"
    )


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


def test_a_class_backed_resource_is_refused_as_upstream_fails_to_allocate_it(
    beside_upstream: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str
) -> None:
    """A class backing ``example.com/gpu``, a node without it: our refusal names the resource and the
    class where upstream's allocator fails; the rest of the message (preemption's part too) is upstream's."""
    device_classes = beside_upstream
    device_classes.create_cluster_custom_object(GROUP, VERSION, PLURAL, _device_class("gpu.example.com", GPU))
    for who in (OURS, UPSTREAM):
        core.create_namespaced_pod(namespace, _pod(f"{who}-gpu", who, GPU))
    ours_reason = _refusal(GPU, "gpu.example.com")
    messages = _both(core, namespace, GPU, lambda who: ours_reason if who == OURS else UPSTREAM_REASON)
    assert messages[OURS].startswith(f"0/1 nodes are available: 1 {ours_reason}.")
    assert messages[OURS].replace(ours_reason, UPSTREAM_REASON) == messages[UPSTREAM]


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
    ours_reason = _refusal(fpga, "fpga.example.com")
    after = _both(core, namespace, fpga, lambda who: ours_reason if who == OURS else UPSTREAM_REASON)
    assert after[OURS].replace(ours_reason, UPSTREAM_REASON) == after[UPSTREAM]
