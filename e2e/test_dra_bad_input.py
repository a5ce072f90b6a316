"""Issue #49 live: bad DRA input on a control plane, each case told, none allocating a device twice,
and a normal pod bound beside them.

- A DeviceClass selector that does not compile, and one whose estimated cost is over the limit: the
  API server refuses the class (422, naming ``spec.selectors[0].cel.expression``), so no scheduler
  ever reads one (the scheduler's own texts for them are unit tests:
  tests/plugins/dynamicresources/test_dra_bad_input.py).
- A selector that fails at run time (a missing attribute): the pod's FailedScheduling Event and
  PodScheduled condition name the class and the selector, upstream's text.
- A ResourceSlice naming a node that does not exist: accepted by the API server; its device is on no
  node, so nothing is allocated from it.
- A claim someone else allocated (status written here, as another scheduler or driver would) for the
  device we would pick: our pod takes the other node's device, the next one fits nowhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import events_for, node_of, pod_body, scheduled_condition, wait_for
from scheduler.testing import node_resource_slice

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "bad.example.com"
PREFIX = "live-bad-"  # conftest's resources fixture deletes live-... classes and slices
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def _class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceClass",
        "metadata": {"name": PREFIX + name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _claim(name: str, class_name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": PREFIX + class_name}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    }


def _expensive() -> str:
    expression = "true"
    for var in ("z5", "z4", "z3", "z2", "z", "y", "x"):
        expression = f"{TEN}.all({var}, {expression})"
    return f"device.driver == {DRIVER!r} && {expression}"


def test_bad_dra_input_is_told_and_never_allocates_a_device_twice(
    resources: client.CustomObjectsApi,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    for name, expression in (("no-compile", f"device.driver == {DRIVER!r} &&"), ("expensive", _expensive())):
        with pytest.raises(ApiException) as refused:
            resources.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", _class(name, expression))
        assert refused.value.status == 422, refused.value.body
        assert "spec.selectors[0].cel.expression" in str(refused.value.body)

    a, b = nodes("a"), nodes("b")
    good = _class("gpu", f"device.driver == {DRIVER!r}")
    runtime = _class("runtime", f'device.attributes["{DRIVER}"].model == "a100"')
    for obj in (good, runtime):
        resources.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", obj)
    for node in (a, b, "ghost-node-that-does-not-exist"):
        resources.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", node_resource_slice(PREFIX + node, DRIVER, node)
        )

    claims = {"theirs": "gpu", "runtime": "runtime", "ours": "gpu", "extra": "gpu"}
    for name, class_name in claims.items():
        resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", _claim(name, class_name))
    # Someone else allocates node a's device: ours can only be b's.
    theirs = resources.get_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", "theirs")
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [a]}]}]
    theirs["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": a, "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": terms},
        }
    }
    resources.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, "resourceclaims", "theirs", theirs)

    for name in ("runtime", "ours", "extra"):
        body = pod_body(f"p-{name}", resourceClaims=[{"name": "gpu", "resourceClaimName": name}])
        body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        core.create_namespaced_pod(namespace, body)

    def refused(pod: str, reason: str) -> str | None:
        cond = scheduled_condition(core.read_namespaced_pod(pod, namespace))
        return str(cond.message) if cond is not None and cond.reason == reason else None

    assert wait_for(lambda: node_of(core, namespace, "p-ours"), 60, "the normal pod bound") == b
    runtime_message = wait_for(lambda: refused("p-runtime", "SchedulerError"), 60, "the runtime error told")
    assert runtime_message.startswith(
        f'running "DynamicResources" filter plugin: class {PREFIX}runtime: selector #0'
    ), runtime_message
    assert "CEL runtime error: no such key: model" in runtime_message
    notes = [
        e.get("note", "") for e in events_for(core, namespace, "p-runtime") if e.get("reason") == "FailedScheduling"
    ]
    assert any(runtime_message == note for note in notes), notes
    extra = wait_for(lambda: refused("p-extra", "Unschedulable"), 60, "the extra pod refused")
    assert extra.startswith("0/2 nodes are available: 2 cannot allocate all claims."), extra

    held: list[tuple[str, str]] = []
    for item in resources.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")["items"]:
        allocation = (item.get("status") or {}).get("allocation")
        if allocation:
            held += [(r["pool"], r["device"]) for r in allocation["devices"]["results"]]
    assert sorted(held) == sorted([(a, "gpu-0"), (b, "gpu-0")])  # theirs and ours, nothing twice
    assert node_of(core, namespace, "p-runtime") is None and node_of(core, namespace, "p-extra") is None
