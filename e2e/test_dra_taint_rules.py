"""Issue #49 live: a DeviceTaintRule (resource.k8s.io/v1, 1.37: DRADeviceTaintRules GA) taints the
devices it selects for the scheduler as if the driver had published the taint. Two nodes with one
device each, a rule tainting node a's device NoSchedule: of two pods with a claim each, one goes to
node b and the other cannot be allocated; once the rule is deleted (node a's slice changed, as the
scheduler sees it), the waiting pod is requeued and takes node a's device. Before 1.37 the kind is not served in v1 (and
not watched), so the test runs at 1.37 only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import node_of, pod_body, scheduled_condition, server_minor, wait_for
from scheduler.testing import node_resource_slice

pytestmark = pytest.mark.every_release

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "taint.example.com"
PREFIX = "live-taint-"  # conftest's resources fixture deletes live-... classes and slices


def _claim_and_pod(resources: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str, name: str) -> None:
    request = {"name": "gpu", "exactly": {"deviceClassName": PREFIX + "gpu"}}
    claim: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim", "metadata": {"name": name}}
    claim["spec"] = {"devices": {"requests": [request]}}
    resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)
    body = pod_body(name, resourceClaims=[{"name": "gpu", "resourceClaimName": name}])
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    core.create_namespaced_pod(namespace, body)


def test_a_rules_taint_keeps_pods_off_the_device_until_the_rule_is_deleted(
    api: client.ApiClient,
    resources: client.CustomObjectsApi,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    if server_minor(api) < 37:
        pytest.skip("DeviceTaintRules are served in resource.k8s.io/v1 (and on by default) from 1.37")
    a, b = nodes("a"), nodes("b")
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    device_class = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": PREFIX + "gpu"}}
    resources.create_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", {**device_class, "spec": {"selectors": [selector]}}
    )
    for node in (a, b):
        resources.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", node_resource_slice(PREFIX + node, DRIVER, node)
        )
    rule = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceTaintRule",
        "metadata": {"name": PREFIX + namespace},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": a},
            "taint": {"key": "example.com/unhealthy", "effect": "NoSchedule"},
        },
    }
    resources.create_cluster_custom_object(GROUP, VERSION, "devicetaintrules", rule)
    try:
        for name in ("p1", "p2"):
            _claim_and_pod(resources, core, namespace, name)

        def one_bound_one_refused() -> tuple[str, str] | None:
            bound = [p for p in ("p1", "p2") if node_of(core, namespace, p)]
            if len(bound) != 1:
                return None
            other = "p2" if bound == ["p1"] else "p1"
            cond = scheduled_condition(core.read_namespaced_pod(other, namespace))
            return (bound[0], other) if cond is not None and cond.reason == "Unschedulable" else None

        first, waiting = wait_for(one_bound_one_refused, 60, "one pod bound, the other refused")
        assert node_of(core, namespace, first) == b
        cond = scheduled_condition(core.read_namespaced_pod(waiting, namespace))
        assert str(cond.message).startswith("0/2 nodes are available: 2 cannot allocate all claims."), cond.message
    finally:
        resources.delete_cluster_custom_object(GROUP, VERSION, "devicetaintrules", PREFIX + namespace)
    # The rule's deletion changes node a's slice as the scheduler sees it: the waiting pod is requeued.
    assert wait_for(lambda: node_of(core, namespace, waiting), 30, "the waiting pod bound once untainted") == a
