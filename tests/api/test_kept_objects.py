"""What the cache keeps of an API object (issue #22's memory): a pending pod whole, a bound pod and a
node only as far as something reads them, and whole nodes when an extender is sent them."""

from __future__ import annotations

import copy
from typing import Any

from bench.memory import kubelet_node, kubelet_pod
from scheduler.api.objects import Node, Pod
from scheduler.api.volumes import SPEC_READ_SOURCES
from scheduler.config import parse_config
from scheduler.framework import events as ev
from scheduler.kube.extender import HTTPExtender
from scheduler.plugins.nodevolumelimits.csi import IN_TREE_MIGRATABLE
from scheduler.scheduler import Scheduler
from tests.fakes import FakeBinder, FakeClock, FakeRecorder

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def bound_pod(**status: Any) -> dict[str, Any]:
    pod = kubelet_pod(1, "node-00001")
    pod["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    )
    pod["status"].update(status)
    return pod


def test_a_pending_pod_keeps_its_whole_object() -> None:
    obj = bound_pod()
    del obj["spec"]["nodeName"]
    assert Pod.from_dict(obj).raw is obj  # signing, extenders and status writes read any of it


def test_a_bound_pod_keeps_what_its_readers_read() -> None:
    obj = bound_pod(extendedResourceClaimStatus={"resourceClaimName": "c"})
    pod = Pod.from_dict(obj)
    raw = pod.raw
    assert raw["metadata"] is obj["metadata"]
    assert raw["spec"] == {k: obj["spec"][k] for k in ("nodeName", "schedulerName", "priority", "tolerations")}
    assert raw["status"] == {
        "phase": "Running",
        "extendedResourceClaimStatus": {"resourceClaimName": "c"},
        # Ready (rebalancing) and DisruptionTarget (preemption's patch) only.
        "conditions": [c for c in obj["status"]["conditions"] if c["type"] in ("Ready", "DisruptionTarget")],
    }
    # What was parsed from the dropped parts stays.
    assert pod.images == ("registry.example.com/team-1/app-1:v1.1",)
    assert [v.name for v in pod.volumes] == [obj["spec"]["volumes"][0]["name"]]
    assert pod.preempted_by_scheduler and pod.start_time is not None


def test_a_bound_pods_update_events_still_see_toleration_seconds_and_claim_status() -> None:
    old = Pod.from_dict(bound_pod())
    longer = bound_pod()
    longer["spec"]["tolerations"][0]["tolerationSeconds"] = 600
    claimed = bound_pod(extendedResourceClaimStatus={"resourceClaimName": "c"})
    assert ev.pod_tolerations_changed(Pod.from_dict(longer), old)
    assert ev.pod_generated_resource_claim_changed(Pod.from_dict(claimed), old)
    assert not ev.pod_tolerations_changed(Pod.from_dict(bound_pod()), old)


def test_a_node_keeps_what_its_update_events_read() -> None:
    obj = kubelet_node(1)
    node = Node.from_dict(obj)
    assert set(node.raw["status"]) == {"allocatable", "conditions"}
    assert node.raw["status"]["conditions"][0] == {"type": "MemoryPressure", "status": "False"}
    assert node.raw["metadata"] is obj["metadata"] and node.raw["spec"] is obj["spec"]
    assert len(node.images) == 60  # parsed before the images were dropped
    assert Node.from_dict(obj, whole=True).raw is obj


def test_node_condition_and_allocatable_changes_are_still_events() -> None:
    old = Node.from_dict(kubelet_node(1))
    heartbeat, not_ready, bigger = kubelet_node(1), kubelet_node(1), kubelet_node(1)
    heartbeat["status"]["conditions"][4]["lastHeartbeatTime"] = "2026-11-27T00:01:00Z"
    not_ready["status"]["conditions"][4]["status"] = "True"
    bigger["status"]["allocatable"] = {**bigger["status"]["allocatable"], "cpu": "16"}
    names = [
        [e.label for e in ev.node_scheduling_properties_change(Node.from_dict(n), old)]
        for n in (heartbeat, not_ready, bigger)
    ]
    assert names == [[], ["NodeConditionChange"], ["NodeAllocatableChange"]]


def test_whole_nodes_only_for_an_extender_that_is_sent_them() -> None:
    def kept(extender: dict[str, Any] | None) -> Any:
        doc = {**API, "extenders": [extender]} if extender else API
        config = parse_config(doc)
        clients = [HTTPExtender(e) for e in config.extenders]
        sched = Scheduler(config, FakeBinder(), FakeRecorder(), clock=FakeClock(), extenders=clients)
        obj = kubelet_node(1)
        sched.on_object("ADDED", obj)
        info = sched.cache.get(obj["metadata"]["name"])
        assert info is not None
        return "images" in info.node.raw["status"]

    ext = {"urlPrefix": "http://127.0.0.1:1", "filterVerb": "filter"}
    assert kept(ext) is True
    assert kept({**ext, "nodeCacheCapable": True}) is False
    assert kept(None) is False


def test_every_volume_source_a_plugin_reads_keeps_its_spec() -> None:
    assert IN_TREE_MIGRATABLE | {"csi"} <= SPEC_READ_SOURCES
    projected = Pod.from_dict(kubelet_pod(1, "n")).volumes[0]
    assert projected.spec == {} and projected.uses("projected")


def test_pods_of_one_spec_share_its_parse_and_still_report_their_own_errors() -> None:
    """``_SPEC_PARSES``: the pod's own events once bound and once running, and a second pod of
    the same spec, reuse the first parse (the same objects); what is a pod's own (its name, its
    labels' validity, its container statuses' requests) is still its own."""
    first = kubelet_pod(1, "")
    del first["spec"]["nodeName"]
    first["status"] = {"phase": "Pending"}  # as the ReplicaSet controller creates it
    bound = copy.deepcopy(first)
    bound["spec"]["nodeName"] = "node-00001"
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    second = copy.deepcopy(bound)
    second["metadata"].update(name="second", uid="u2")
    pods = [Pod.from_dict(obj) for obj in (first, bound, second)]
    assert not any(p.errors for p in pods) and [p.name for p in pods] == [first["metadata"]["name"]] * 2 + ["second"]
    assert all(p.tolerations is pods[0].tolerations and p.resources is pods[0].resources for p in pods)
    other = kubelet_pod(2, "")  # another pod of the template: a token volume (and mount) of its own
    del other["spec"]["nodeName"]
    other["status"] = first["status"]
    pod = Pod.from_dict(other)
    assert pod.resources is pods[0].resources and pod.volumes[0].name != pods[0].volumes[0].name
    running = kubelet_pod(1, "node-00001")  # the kubelet's updates: only the containers' state moves
    later = copy.deepcopy(running)
    later["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": "2026-11-27T00:01:00Z"}}
    assert Pod.from_dict(running).resources is Pod.from_dict(later).resources

    invalid = copy.deepcopy(first)
    invalid["metadata"]["labels"] = {**first["metadata"]["labels"], "tier": "v" * 64}
    assert Pod.from_dict(invalid).error_message.startswith("metadata.labels")
    invalid["metadata"]["labels"] = first["metadata"]["labels"]
    del invalid["metadata"]["name"]
    assert Pod.from_dict(invalid).error_message == "metadata.name: Required value: name or generateName is required"

    resized = copy.deepcopy(later)
    resized["status"]["containerStatuses"] = [
        {"name": c["name"], "resources": {"requests": {"cpu": "3"}}} for c in resized["spec"]["containers"]
    ]
    assert Pod.from_dict(resized).resources.usage.milli_cpu == 3000 * len(resized["spec"]["containers"])
