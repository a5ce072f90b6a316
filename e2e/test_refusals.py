"""Issue #17 on a real control plane: a pod that needs a plugin we do not run is refused, visibly.

A pod with a PersistentVolumeClaim and a pod with ``spec.resourceClaims`` (the ResourceClaim created
through ``resource.k8s.io/v1``, which 1.35 serves by default, asking for a DeviceClass that does not
exist) get PodScheduled=False with the refusing plugin's message and one FailedScheduling event from
spread-scheduler per verdict; the scheduler's
own log shows that it never decided to bind them (what we attempted, not what the API shows),
while a plain pod next to them binds. The PVC pod comes before its claim: VolumeRestrictions (ported,
issue #18) refuses it with the lister's NotFound text, as upstream does, and the claim's creation
requeues it at once (its queueing hint) to meet VolumeBinding's refusal of an unbound Immediate claim.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    SCHEDULER,
    events_for,
    node_of,
    pod_body,
    scheduled_condition,
    server_minor,
    wait_for,
    wait_unschedulable,
)
from tests.helpers import preemption_not_helpful

pytestmark = pytest.mark.every_release  # what differs by version: make e2e runs it on 1.36 and 1.37 too

# A PreFilter refusal before DynamicResources' (VolumeRestrictions', VolumeBinding's) ends the
# PostFilter run as upstream's does, with no preemption; upstream's message then ends with its
# internal "not found", ours with the reason (docs/differences.md).
MISSING_CLAIM_MESSAGE = '0/1 nodes are available: persistentvolumeclaim "data-0" not found.'
# The claim names no class and the control plane has no default one: Immediate binding, which only
# the PV controller does (upstream's VolumeBinding text).
PVC_MESSAGE = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def claim_message(minor: int) -> str:
    """DynamicResources' refusal of a claim whose DeviceClass does not exist (upstream's PreFilter text),
    its PostFilter's "no new claims to deallocate" through 1.36, then DefaultPreemption finding every
    node UnschedulableAndUnresolvable."""
    post_filter = "no new claims to deallocate, " if minor < 37 else ""
    return (
        "0/1 nodes are available: request gpu: device class gpu.example.com does not exist. "
        + post_filter
        + preemption_not_helpful(1)
    )


RESULTS = {
    "Successfully bound pod to node": "scheduled",
    "Unable to schedule pod; no fit; waiting": "unschedulable",
    "Error scheduling pod; retrying": "error",
    "Attempting to bind pod to node": "bind attempted",
}


def _attempts(scheduler: SchedulerProcess, key: str) -> list[str]:
    """What the scheduler logged for ``key`` (JSON lines at -v 3): each cycle's outcome and every
    Binding it attempted, in upstream's words."""
    namespace, name = key.split("/")
    results = []
    for line in scheduler.log().splitlines():
        entry: dict[str, Any] = json.loads(line)
        if entry.get("pod") == {"name": name, "namespace": namespace} and entry["msg"] in RESULTS:
            results.append(RESULTS[entry["msg"]])
    return results


def test_pvc_and_resource_claim_pods_are_refused_with_one_event_and_no_binding(
    core: client.CoreV1Api,
    api: client.ApiClient,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    served = {g.name: [v.version for v in g.versions] for g in client.ApisApi(api).get_api_versions().groups}
    assert "v1" in served.get("resource.k8s.io", []), served.get("resource.k8s.io")
    nodes("n0")
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "resource.k8s.io",
        "v1",
        namespace,
        "resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu-0"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        },
    )
    data = {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}
    core.create_namespaced_pod(namespace, pod_body("pvc", volumes=[data]))
    core.create_namespaced_pod(
        namespace, pod_body("claim", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-0"}])
    )
    core.create_namespaced_pod(namespace, pod_body("plain"))

    wait_for(lambda: node_of(core, namespace, "plain"), 30, "the plain pod bound")

    def failed_scheduling(name: str, count: int) -> list[Any]:
        return wait_for(
            lambda: [e for e in events_for(core, namespace, name) if e["reason"] == "FailedScheduling"][count - 1 :],
            30,
            f"{name}'s FailedScheduling event #{count}",
        )

    cond = wait_unschedulable(core, namespace, "pvc")
    assert (cond.reason, cond.message) == ("Unschedulable", MISSING_CLAIM_MESSAGE)
    failed_scheduling("pvc", 1)
    core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "metadata": {"name": "data-0"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    wait_for(
        lambda: (c := scheduled_condition(core.read_namespaced_pod("pvc", namespace))) and c.message == PVC_MESSAGE,
        5,
        "the pvc pod retried within 5 s of its claim's creation (VolumeRestrictions' hint)",
    )
    claim_refusal = claim_message(server_minor(api))
    for name, messages in (("pvc", [MISSING_CLAIM_MESSAGE, PVC_MESSAGE]), ("claim", [claim_refusal])):
        cond = wait_unschedulable(core, namespace, name)
        assert (cond.reason, cond.message) == ("Unschedulable", messages[-1])
        failed_scheduling(name, len(messages))
        failed = [e for e in events_for(core, namespace, name) if e["reason"] == "FailedScheduling"]
        failed.sort(key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])
        assert [(e["type"], e["note"], e["reportingController"]) for e in failed] == [
            ("Warning", m, SCHEDULER) for m in messages
        ]
        assert node_of(core, namespace, name) is None
        key = f"{namespace}/{name}"
        results = wait_for(lambda k=key: _attempts(scheduler, k), 10, f"{key}'s attempt in the log")
        assert "scheduled" not in results and "bind attempted" not in results and "unschedulable" in results, results
    assert "scheduled" in _attempts(scheduler, f"{namespace}/plain")


def test_a_pod_refused_for_an_existing_pods_anti_affinity_comes_back_when_relabelled_from_1_36(
    core: client.CoreV1Api,
    api: client.ApiClient,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    """Issue #47: a pending pod InterPodAffinity refused (a bound pod's anti-affinity matches its
    labels) is relabelled. 1.36's hint requeues it on its own label change (1.37's through a TargetPod
    event), so it binds within its backoff; 1.35's skips it as an unscheduled pod, and it stays parked."""
    minor = server_minor(api)
    node = nodes("n0")
    hates_web = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    core.create_namespaced_pod(namespace, pod_body("guard", {"app": "guard"}, affinity=hates_web))
    wait_for(lambda: node_of(core, namespace, "guard"), 30, "the guard bound")
    core.create_namespaced_pod(namespace, pod_body("web", {"app": "web"}))
    cond = wait_unschedulable(core, namespace, "web")
    assert "didn't satisfy existing pods anti-affinity rules" in cond.message, cond.message
    core.patch_namespaced_pod("web", namespace, {"metadata": {"labels": {"app": "api"}}})
    if minor >= 36:
        assert wait_for(lambda: node_of(core, namespace, "web"), 15, "web bound after its relabelling") == node
    else:
        time.sleep(5)
        assert node_of(core, namespace, "web") is None
