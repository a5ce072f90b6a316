"""Issue #49 live: a pod whose ``spec.resourceClaims`` names one claim twice, beside kube-scheduler.

Upstream's PreBind writes the claim for each entry from the copy its cycle read: the first entry's
write allocates and reserves it, the second's conflicts, reads the claim again and finds it
allocated (``claim ns/c got allocated elsewhere in the meantime``). Unreserve takes the pod out of
``reservedFor``; the next attempt reserves it for the first entry, and the second entry's write adds
the pod a second time, which the API server refuses. The pod is never bound: ours fails the same
way, message for message.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import events_for, node_of, pod_body, server_minor, wait_for
from scheduler.testing import driver_device_class, node_resource_slice

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "twice.example.com"
UPSTREAM, OURS = "dra-twice-upstream", "spread-scheduler"

pytestmark = pytest.mark.every_release  # the API server's refusal is its validation's text: each release's


def _failures(core: client.CoreV1Api, namespace: str, pod: str) -> list[str]:
    notes = [e.get("note") or "" for e in events_for(core, namespace, pod) if e["reason"] == "FailedScheduling"]
    return sorted(set(notes))


def test_a_claim_named_twice_fails_prebind_as_upstream(
    api: client.ApiClient,
    resources: client.CustomObjectsApi,
    core: client.CoreV1Api,
    namespace: str,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    kube_scheduler({"schedulerName": UPSTREAM})
    node = nodes("twice")
    devices = [{"name": f"gpu-{i}"} for i in range(4)]
    resources.create_cluster_custom_object(
        GROUP, VERSION, "resourceslices", node_resource_slice(f"live-{node}", DRIVER, node, *devices)
    )
    resources.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", driver_device_class("live-twice", DRIVER))
    for who in (OURS, UPSTREAM):
        claim = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceClaim",
            "metadata": {"name": f"c-{who}"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "live-twice"}}]}},
        }
        resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)
        entries = [{"name": "a", "resourceClaimName": f"c-{who}"}, {"name": "b", "resourceClaimName": f"c-{who}"}]
        core.create_namespaced_pod(namespace, pod_body(f"p-{who}", scheduler=who, resourceClaims=entries))

    def both_failed_twice() -> dict[str, list[str]] | None:
        seen = {who: _failures(core, namespace, f"p-{who}") for who in (OURS, UPSTREAM)}
        return seen if all(len(notes) >= 2 for notes in seen.values()) else None

    try:
        seen = wait_for(both_failed_twice, 60, "both pods failing their PreBind, first and later attempts")
    except AssertionError as timed_out:  # say which side lacked its second event
        so_far = {who: _failures(core, namespace, f"p-{who}") for who in (OURS, UPSTREAM)}
        raise AssertionError(f"{timed_out}; FailedScheduling notes so far: {so_far}") from None

    def normalized(who: str) -> list[str]:
        uid = core.read_namespaced_pod(f"p-{who}", namespace).metadata.uid
        # Our writer puts the API's status code before its message on every failed write
        # (scheduler/kube/writes.py); upstream's client-go error is the message alone.
        notes = [n.replace(f"c-{who}", "c").replace(uid, "<uid>").replace("HTTP 422 Invalid: ", "") for n in seen[who]]
        return [n.replace(f"p-{who}", "p") for n in notes]

    assert normalized(OURS) == normalized(UPSTREAM)
    # 1.37's declarative validation shows the whole entry (Features.duplicate_reservation_as_json).
    value = '{"resource":"pods","name":"p","uid":"<uid>"}' if server_minor(api) >= 37 else '"<uid>"'
    assert normalized(OURS) == [
        f'running PreBind plugin "DynamicResources": add reservation to claim {namespace}/c: '
        f'ResourceClaim.resource.k8s.io "c" is invalid: status.reservedFor[1]: Duplicate value: {value}',
        f'running PreBind plugin "DynamicResources": claim {namespace}/c got allocated elsewhere in the meantime',
    ]
    assert node_of(core, namespace, f"p-{OURS}") is None and node_of(core, namespace, f"p-{UPSTREAM}") is None
