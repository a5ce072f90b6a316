"""Upstream's ``dynamicresources_test.go`` cases of the pure path (names kept as ids), per release
where behaviour differs, against ``StructuredDynamicResources`` (the default profile's DynamicResources)."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Node, Pod
from scheduler.api.resourceclaim import AllocationResult, DeviceAllocationResult, ResourceClaim
from scheduler.api.resourceslice import ResourceSlice
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status, StatusError
from scheduler.framework.types import NodeInfo
from scheduler.plugins.dynamicresources.plugin.claimwrites import FINALIZER, ClaimDeallocation
from scheduler.plugins.dynamicresources.plugin.plugin import DEALLOCATION_KEY, UNRESERVE_KEY, StructuredDynamicResources
from scheduler.plugins.dynamicresources.plugin.score import claims_score

MINORS = ("1.35", "1.36", "1.37")
NS, POD, POD_UID, DRIVER, CLASS = "default", "my-pod", "1234", "some-driver", "my-resource-class"
CLAIM = "my-pod-my-resource"
NODE = "worker"


class Lister:
    def __init__(self, claims: list[dict[str, Any]], classes: list[str], slices: list[dict[str, Any]]) -> None:
        self.claims = {c["metadata"]["name"]: ResourceClaim.from_dict(c) for c in claims}
        self.classes = {n: DeviceClass.from_dict({"metadata": {"name": n}}) for n in classes}
        self.slices = [ResourceSlice.from_dict(s) for s in slices]

    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(name)

    def resource_claims(self) -> list[ResourceClaim]:
        return list(self.claims.values())

    def resource_slices(self) -> list[ResourceSlice]:
        return self.slices

    def device_class(self, name: str) -> DeviceClass | None:
        return self.classes.get(name)


def pod_with(
    entries: list[dict[str, str]], statuses: list[dict[str, str]] | None = None, *, name: str = POD, uid: str = POD_UID
) -> Pod:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NS, "uid": uid},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": entries},
    }
    if statuses is not None:
        raw["status"] = {"resourceClaimStatuses": statuses}
    return Pod.from_dict(raw)


def pod(*, template: bool = False, status: bool = False) -> Pod:
    """``podWithClaimName``, ``podWithClaimTemplate``, ``podWithClaimTemplateInStatus``."""
    entry = {"name": "my-resource", ("resourceClaimTemplateName" if template else "resourceClaimName"): CLAIM}
    return pod_with([entry], [{"name": "my-resource", "resourceClaimName": CLAIM}] if status else None)


def claim(request: dict[str, Any] | None = None) -> dict[str, Any]:
    """``claim``: one request ``req-1`` of the class, owned by the pod (``pendingClaim``)."""
    return {
        "metadata": {
            "name": CLAIM,
            "namespace": NS,
            "uid": "claim-uid",
            "ownerReferences": [{"kind": "Pod", "name": POD, "uid": POD_UID, "controller": True}],
        },
        "spec": {"devices": {"requests": [request or {"name": "req-1", "exactly": {"deviceClassName": CLASS}}]}},
    }


def allocated(base: dict[str, Any], node: str = NODE, reserved: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out["metadata"]["finalizers"] = [FINALIZER]
    out["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "req-1", "driver": DRIVER, "pool": NODE, "device": "instance-1"}]},
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            },
        }
    }
    if reserved:
        out["status"]["reservedFor"] = [{"resource": "pods", "name": POD, "uid": POD_UID}]
    return out


def worker_slice(node: str = NODE, attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    """``MakeResourceSlice(node, driver).Device("instance-1", attributes)``."""
    device: dict[str, Any] = {"name": "instance-1"}
    if attributes:
        device["attributes"] = attributes
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


def node_info() -> NodeInfo:
    node = Node.from_dict({"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
    return NodeInfo(node)


def plugin(minor: str, lister: Lister) -> StructuredDynamicResources:
    return StructuredDynamicResources({}, Handle(), features_at(minor), lister=lister)


def unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))


PRE_ENQUEUE = [
    (
        "missing-claim",
        pod(template=True),
        [claim()],
        unresolvable('pod "default/my-pod": ResourceClaim not created yet'),
    ),
    (
        "deleted-claim",
        pod(template=True, status=True),
        [{**claim(), "metadata": {**claim()["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}],
        unresolvable('resourceclaim "my-pod-my-resource" is being deleted'),
    ),
    (
        "wrong-claim",
        pod(template=True, status=True),
        [
            {
                **claim(),
                "metadata": {**claim()["metadata"], "ownerReferences": [{"uid": "1234123", "controller": True}]},
            }
        ],
        unresolvable(
            "ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod (pod is not owner)"
        ),
    ),
    ("claim-template", pod(template=True, status=True), [allocated(claim())], None),
    ("claim-reference", pod(), [allocated(claim())], None),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "the_pod", "claims", "want"), PRE_ENQUEUE, ids=[c[0] for c in PRE_ENQUEUE])
def test_pre_enqueue(minor: str, name: str, the_pod: Pod, claims: list[dict[str, Any]], want: Status | None) -> None:
    pl = plugin(minor, Lister(claims, [CLASS], []))
    assert pl.pre_enqueue(the_pod) == want
    if want is None:
        # claim-reference, claim-template: the allocated claim is reserved for the pod in PreBind.
        state, status = cycle(pl, the_pod)
        assert status is None
        [write] = pl.pre_bind_writes(state, the_pod, NODE)
        assert (write.name, write.allocation, write.reserved_for.uid) == (CLAIM, None, POD_UID)


PRE_FILTER = [
    ("missing-class", [claim()], [], "request req-1: device class my-resource-class does not exist"),
    (
        "claim-with-request-with-unknown-device-class",
        [claim({"name": "req-1", "exactly": {"deviceClassName": "does-not-exist"}})],
        [CLASS],
        "request req-1: device class does-not-exist does not exist",
    ),
    (
        "claim-with-prioritized-list-unknown-device-class",
        [claim({"name": "req-1", "firstAvailable": [{"name": "subreq-1", "deviceClassName": "does-not-exist"}]})],
        [CLASS],
        "request req-1/subreq-1: device class does-not-exist does not exist",
    ),
    (
        # Not upstream's table: the first missing class of several subrequests (a differential cluster).
        "claim-with-prioritized-list-unknown-device-class-then-more",
        [
            claim(
                {
                    "name": "req-1",
                    "firstAvailable": [
                        {"name": "subreq-1", "deviceClassName": "does-not-exist"},
                        {"name": "subreq-2", "deviceClassName": "gone-too"},
                    ],
                }
            )
        ],
        [CLASS],
        "request req-1/subreq-1: device class does-not-exist does not exist",
    ),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "claims", "classes", "reason"), PRE_FILTER, ids=[c[0] for c in PRE_FILTER])
def test_pre_filter_refuses(
    minor: str, name: str, claims: list[dict[str, Any]], classes: list[str], reason: str
) -> None:
    pl = plugin(minor, Lister(claims, classes, []))
    state = CycleState()
    assert pl.pre_filter(state, pod(), [node_info()]) == (None, unresolvable(reason))
    _, status = pl.post_filter(state, pod(), {})
    assert status == (
        Status(Code.UNSCHEDULABLE) if minor == "1.37" else Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",))
    )


def cycle(pl: StructuredDynamicResources, the_pod: Pod) -> tuple[CycleState, Status | None]:
    state = CycleState()
    _, status = pl.pre_filter(state, the_pod, [node_info()])
    assert status is None
    return state, pl.filter(state, the_pod, node_info())


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(
    ("name", "claims"),
    [
        ("no-resources", [claim()]),
        ("exhausted-resources", [claim(), {**allocated(claim()), "metadata": {"name": "other", "uid": "other-uid"}}]),
    ],
    ids=["no-resources", "exhausted-resources"],
)
def test_filter_cannot_allocate(minor: str, name: str, claims: list[dict[str, Any]]) -> None:
    slices = [] if name == "no-resources" else [worker_slice()]
    pl = plugin(minor, Lister(claims, [CLASS], slices))
    state, status = cycle(pl, pod())
    assert status == unresolvable("cannot allocate all claims")
    _, post = pl.post_filter(state, pod(), {})
    assert post == (
        Status(Code.UNSCHEDULABLE) if minor == "1.37" else Status(Code.UNSCHEDULABLE, ("still not schedulable",))
    )


@pytest.mark.parametrize("minor", MINORS)
def test_with_resources(minor: str) -> None:
    """``with-resources``: allocated in Filter, in flight after Reserve, written by PreBind."""
    pl = plugin(minor, Lister([claim()], [CLASS], [worker_slice()]))
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.reserve(state, pod(), NODE) is None
    in_flight = pl.in_flight.get("claim-uid")
    assert in_flight is not None and in_flight.finalizers == (FINALIZER,)
    assert in_flight.allocation is not None
    assert [(r.driver, r.pool, r.device) for r in in_flight.allocation.results] == [(DRIVER, NODE, "instance-1")]
    # The next pod's cycle sees the claim in flight, and its device taken.
    _, again = pl.pre_filter(CycleState(), pod(), [node_info()])
    assert again == unresolvable("resource claim default/my-pod-my-resource is in the process of being allocated")
    [write] = pl.pre_bind_writes(state, pod(), NODE)
    assert write.add_finalizer and write.allocation is in_flight.allocation
    # From 1.36 (binding conditions and device status on) the write stamps allocationTimestamp.
    assert write.stamp_allocation == (minor != "1.35")
    assert (write.reserved_for.resource, write.reserved_for.name, write.reserved_for.uid) == ("pods", POD, POD_UID)
    pl.unreserve(state, pod(), NODE)
    assert not pl.in_flight.has("claim-uid")


@pytest.mark.parametrize("minor", MINORS)
def test_with_resources_has_finalizer(minor: str) -> None:
    base = claim()
    base["metadata"]["finalizers"] = [FINALIZER]
    pl = plugin(minor, Lister([base], [CLASS], [worker_slice()]))
    state, _ = cycle(pl, pod())
    pl.reserve(state, pod(), NODE)
    [write] = pl.pre_bind_writes(state, pod(), NODE)
    assert not write.add_finalizer and write.allocation is not None


@pytest.mark.parametrize("minor", MINORS)
def test_wrong_topology(minor: str) -> None:
    pl = plugin(minor, Lister([allocated(claim(), node="other")], [CLASS], []))
    state, status = cycle(pl, pod())
    assert status == unresolvable("resourceclaim not available on the node")
    _, post = pl.post_filter(state, pod(), {})
    assert post == Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",))
    assert state.get(DEALLOCATION_KEY) == ClaimDeallocation(NS, CLAIM, "claim-uid")


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize("name", ["good-topology", "claim-reference", "reserved-okay"])
def test_allocated_claims(minor: str, name: str) -> None:
    pl = plugin(minor, Lister([allocated(claim(), reserved=name == "reserved-okay")], [CLASS], []))
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.reserve(state, pod(), NODE) is None
    writes = pl.pre_bind_writes(state, pod(), NODE)
    if name == "reserved-okay":
        assert writes == []
    else:
        [write] = writes
        assert write.allocation is None and not write.add_finalizer and write.reserved_for.uid == POD_UID


SHARE_ID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"


def shared_slice() -> dict[str, Any]:
    """One device of 10Gi that allows many allocations (DRAConsumableCapacity)."""
    out = worker_slice()
    out["spec"]["devices"] = [
        {"name": "instance-1", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "10Gi"}}}
    ]
    return out


def memory_claim(name: str, uid: str, memory: str) -> dict[str, Any]:
    out = claim({"name": "req-1", "exactly": {"deviceClassName": CLASS, "capacity": {"requests": {"memory": memory}}}})
    out["metadata"] = {**out["metadata"], "name": name, "uid": uid}
    return out


def share_of(base: dict[str, Any], memory: str, uid: str) -> dict[str, Any]:
    """``base`` allocated as a share of the device, consuming ``memory``."""
    out = copy.deepcopy(base)
    out["metadata"]["uid"] = uid
    result = {"request": "req-1", "driver": DRIVER, "pool": NODE, "device": "instance-1"}
    result |= {"shareID": SHARE_ID, "consumedCapacity": {"memory": memory}}
    out["status"] = {"allocation": {"devices": {"results": [result]}}}
    return out


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
@pytest.mark.parametrize(("asked", "fits"), [pytest.param("2Gi", True, id="fits-beside-the-share"), ("4Gi", False)])
def test_gather_allocated_state_counts_consumed_capacity(minor: str, asked: str, fits: bool) -> None:
    """``GatherAllocatedState`` (DRAConsumableCapacity on from 1.36): another claim's share of the device
    consumes 8Gi of its 10Gi; the rest stays free for the pod (before, the share took the whole device)."""
    held = share_of(memory_claim("held", "held-uid", "8Gi"), "8Gi", "held-uid")
    pl = plugin(minor, Lister([memory_claim(CLAIM, "claim-uid", asked), held], [CLASS], [shared_slice()]))
    _, status = cycle(pl, pod())
    assert status == (None if fits else unresolvable("cannot allocate all claims"))


def test_with_consumable_capacity_off_a_share_takes_its_device() -> None:
    """1.35 (DRAConsumableCapacity alpha, off): ``ListAllAllocatedDevices`` counts a share as its device."""
    held = share_of(memory_claim("held", "held-uid", "8Gi"), "8Gi", "held-uid")
    pl = plugin("1.35", Lister([memory_claim(CLAIM, "claim-uid", "2Gi"), held], [CLASS], [shared_slice()]))
    _, status = cycle(pl, pod())
    assert status is not None and not status.is_success()


# ---- queueing hints: upstream's Test_isSchedulableAfterClaimChange and Test_isSchedulableAfterPodChange
# (1.37: Test_isSchedulableAfterTargetPodUpdate). The cache holds the case's claims and, as upstream's
# test writes it through the client first, the new claim. An error upstream returns is Queue here.

OTHER = {**claim(), "metadata": {"name": "not-my-claim", "namespace": NS, "uid": "other-uid"}}
WRONG_OWNER = {
    **allocated(claim()),
    "metadata": {**allocated(claim())["metadata"], "ownerReferences": [{"uid": "1234123", "controller": True}]},
}
UNRELATED = {**allocated(claim()), "metadata": {**allocated(claim())["metadata"], "name": CLAIM + "-foo", "uid": "x"}}
WITH_FOO_FINALIZER = {**claim(), "metadata": {**claim()["metadata"], "finalizers": ["foo"]}}
EMPTY_ALLOCATION = {**claim(), "status": {"allocation": {}}}
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
OLD_ONLY = ("1.35", "1.36")

# name, minors, pod, cached claims, old, new, hint
CLAIM_HINTS: list[tuple[str, tuple[str, ...], Pod, list[dict[str, Any]], object, object, QueueingHint]] = [
    ("skip-deletes", OLD_ONLY, pod(template=True), [], allocated(claim()), None, SKIP),
    ("skip-deletes", ("1.37",), pod(template=True), [], claim(), None, SKIP),
    ("queue-on-delete-with-allocation", ("1.37",), pod(template=True), [], allocated(claim()), None, Q),
    ("backoff-wrong-new-object", MINORS, pod(template=True), [], None, "not-a-claim", Q),
    ("skip-wrong-claim", MINORS, pod(template=True), [], None, WRONG_OWNER, SKIP),
    ("skip-unrelated-claim", MINORS, pod(template=True), [allocated(claim())], None, UNRELATED, SKIP),
    ("queue-on-add", MINORS, pod(), [], None, claim(), Q),
    ("backoff-wrong-old-object", MINORS, pod(), [claim()], "not-a-claim", claim(), Q),
    ("skip-adding-finalizer", MINORS, pod(), [claim()], claim(), WITH_FOO_FINALIZER, SKIP),
    ("queue-on-status-change", MINORS, pod(), [claim()], claim(), EMPTY_ALLOCATION, Q),
    ("claim-deallocate", MINORS, pod(), [claim(), allocated(OTHER)], allocated(OTHER), OTHER, Q),
]


def _as_claim(value: object) -> object:
    return ResourceClaim.from_dict(value) if isinstance(value, dict) else value


@pytest.mark.parametrize(
    ("name", "minor", "the_pod", "cached", "old", "new", "want"),
    [(c[0], m, *c[2:]) for c in CLAIM_HINTS for m in c[1]],
    ids=[f"{c[0]}-{m}" for c in CLAIM_HINTS for m in c[1]],
)
def test_is_schedulable_after_claim_change(
    name: str, minor: str, the_pod: Pod, cached: list[dict[str, Any]], old: object, new: object, want: QueueingHint
) -> None:
    in_cache = [c for c in cached if not isinstance(new, dict) or c["metadata"]["name"] != new["metadata"]["name"]]
    lister = Lister([*in_cache, *([new] if isinstance(new, dict) else [])], [CLASS], [])
    pl = plugin(minor, lister)
    new_obj = lister.claims[new["metadata"]["name"]] if isinstance(new, dict) else new
    registered = {e.event.resource for e in pl.events_to_register()}
    assert EventResource.RESOURCE_CLAIM in registered
    assert pl.hints.after_claim_change(the_pod, _as_claim(old), new_obj) is want


TWO_TEMPLATES = pod_with(
    [
        {"name": "my-resource", "resourceClaimTemplateName": CLAIM},
        {"name": "my-resource-2", "resourceClaimTemplateName": CLAIM},
    ],
    [{"name": "my-resource", "resourceClaimName": CLAIM}],
)
OTHER_POD = pod_with([{"name": "my-resource", "resourceClaimTemplateName": CLAIM}], name=POD + "2", uid=POD_UID + "2")

# name, minors, pod, cached claims, updated pod, hint
POD_HINTS: list[tuple[str, tuple[str, ...], Pod, list[dict[str, Any]], object, QueueingHint]] = [
    ("backoff-wrong-new-object", MINORS, pod(template=True), [], "not-a-claim", Q),
    ("complete", MINORS, pod(template=True), [claim()], pod(template=True, status=True), Q),
    ("wrong-pod", OLD_ONLY, OTHER_POD, [claim()], pod(template=True, status=True), SKIP),
    ("missing-claim", MINORS, pod(template=True), [], pod(template=True, status=True), SKIP),
    ("incomplete", MINORS, TWO_TEMPLATES, [claim()], TWO_TEMPLATES, SKIP),
]


@pytest.mark.parametrize(
    ("name", "minor", "the_pod", "cached", "updated", "want"),
    [(c[0], m, *c[2:]) for c in POD_HINTS for m in c[1]],
    ids=[f"{c[0]}-{m}" for c in POD_HINTS for m in c[1]],
)
def test_is_schedulable_after_pod_change(
    name: str, minor: str, the_pod: Pod, cached: list[dict[str, Any]], updated: object, want: QueueingHint
) -> None:
    pl = plugin(minor, Lister(cached, [CLASS], []))
    assert pl.hints.after_pod_change(the_pod, None, updated) is want


@pytest.mark.parametrize("minor", MINORS)
def test_events_to_register(minor: str) -> None:
    registered = plugin(minor, Lister([], [], [])).events_to_register()
    events = {e.event.resource: e.event.action for e in registered}
    claim_actions = ActionType.ADD | ActionType.UPDATE
    if minor == "1.37":
        claim_actions |= ActionType.DELETE  # a deleted allocated claim frees its devices
    assert events[EventResource.RESOURCE_CLAIM] == claim_actions
    assert events[EventResource.RESOURCE_SLICE] == ActionType.ADD | ActionType.UPDATE
    assert events[EventResource.DEVICE_CLASS] == ActionType.ADD | ActionType.UPDATE
    node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    assert events[EventResource.NODE] == node_actions
    pod_resource = EventResource.TARGET_POD if minor == "1.37" else EventResource.POD
    assert events[pod_resource] == ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM


# ---- Score: upstream's Test_computesScore (per release: until 1.36 results are indexed by the
# claim's position among all claims) and single-claim-prioritized-list-scoring.


def _prioritized_claim(*requests: tuple[str, int]) -> ResourceClaim:
    """``NamedRequestWithPrioritizedList(name, subreq-1 .. subreq-n)`` for each (name, n)."""
    reqs = [
        {"name": name, "firstAvailable": [{"name": f"subreq-{i}", "deviceClassName": CLASS} for i in range(1, n + 1)]}
        for name, n in requests
    ]
    return ResourceClaim.from_dict({"metadata": {"name": "c"}, "spec": {"devices": {"requests": reqs}}})


def _results(*requests: str) -> AllocationResult:
    return AllocationResult(results=tuple(DeviceAllocationResult(r, DRIVER, NODE, "instance-1") for r in requests))


# name, minors, claims, node results, score (None: Error)
COMPUTE_SCORE: list[tuple[str, tuple[str, ...], list[ResourceClaim], list[AllocationResult], int | None]] = [
    (
        "more-claims-than-allocations",
        MINORS,
        [_prioritized_claim(("req-1", 1)), _prioritized_claim(("req-2", 1))],
        [],
        None,
    ),
    (
        "mix-of-allocated-and-unallocated-claims",
        ("1.36", "1.37"),
        [ResourceClaim.from_dict(allocated(claim())), ResourceClaim.from_dict(claim())],
        [_results("req-1")],
        0,
    ),
    (
        "mix-of-allocated-and-unallocated-claims",
        ("1.35",),
        [ResourceClaim.from_dict(allocated(claim())), ResourceClaim.from_dict(claim())],
        [_results("req-1")],
        None,
    ),
    (
        "single-request-only-subrequest-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 1))],
        [_results("req-1/subreq-1")],
        8,
    ),
    (
        "single-request-last-subrequest-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 8))],
        [_results("req-1/subreq-8")],
        1,
    ),
    (
        "multiple-requests-with-middle-subrequests-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 4), ("req-2", 5))],
        [_results("req-1/subreq-4", "req-2/subreq-5")],
        9,
    ),
    (
        "multiple-requests-with-top-subrequests-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 8), ("req-2", 1))],
        [_results("req-1/subreq-8", "req-2/subreq-1")],
        9,
    ),
    (
        "multiple-claims-with-last-subrequests-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 8)), _prioritized_claim(("req-2", 8))],
        [_results("req-1/subreq-8"), _results("req-2/subreq-8")],
        2,
    ),
    (
        "multiple-claims-with-top-subrequests-allocated",
        MINORS,
        [_prioritized_claim(("req-1", 1)), _prioritized_claim(("req-2", 1))],
        [_results("req-1/subreq-1"), _results("req-2/subreq-1")],
        16,
    ),
]


@pytest.mark.parametrize(
    ("name", "minor", "claims", "results", "want"),
    [(c[0], m, *c[2:]) for c in COMPUTE_SCORE for m in c[1]],
    ids=[f"{c[0]}-{m}" for c in COMPUTE_SCORE for m in c[1]],
)
def test_computes_score(
    name: str, minor: str, claims: list[ResourceClaim], results: list[AllocationResult], want: int | None
) -> None:
    read_allocated = minor != "1.35"  # Features.dra_score_allocated_claims (test_score_facts)
    if want is None:
        with pytest.raises(StatusError):
            claims_score(claims, results, allocated_claims_read=read_allocated)
    else:
        assert claims_score(claims, results, allocated_claims_read=read_allocated) == want


def test_score_facts() -> None:
    assert [features_at(m).dra_score_allocated_claims for m in MINORS] == [False, True, True]


def _healthy_slice(node: str, healthy: bool) -> dict[str, Any]:
    return worker_slice(node, {"healthy": {"bool": healthy}})


@pytest.mark.parametrize("minor", MINORS)
def test_single_claim_prioritized_list_scoring(minor: str) -> None:
    """subreq-1 wants a healthy device (only on ``worker``), subreq-2 any: 8 and 7, normalized 100 and 87."""
    selector = {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
    pending = claim(
        {
            "name": "req-1",
            "firstAvailable": [
                {"name": "subreq-1", "deviceClassName": CLASS, "selectors": [selector]},
                {"name": "subreq-2", "deviceClassName": CLASS},
            ],
        }
    )
    pl = plugin(minor, Lister([pending], [CLASS], [_healthy_slice(NODE, True), _healthy_slice("worker-2", False)]))
    nodes = [
        NodeInfo(Node.from_dict({"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}}))
        for n in (NODE, "worker-2")
    ]
    state = CycleState()
    assert pl.pre_filter(state, pod(), nodes) == (None, None)
    assert [pl.filter(state, pod(), n) for n in nodes] == [None, None]
    scores = [pl.score(state, pod(), n) for n in nodes]
    assert scores == [8, 7]
    assert pl.normalize_score(state, pod(), scores, nodes) is None
    assert scores == [100, 87]
    assert pl.reserve(state, pod(), NODE) is None
    [write] = pl.pre_bind_writes(state, pod(), NODE)
    assert write.allocation is not None
    assert [r.request for r in write.allocation.results] == ["req-1/subreq-1"]


# ---- binding conditions (DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, on from 1.36;
# upstream's test turns them on at 1.35 too, where kube-scheduler's defaults leave them off).


def bound(condition: str, failed: str, *, allocated_at: str = "0001-01-01T00:00:00Z") -> dict[str, Any]:
    """``boundClaim`` / ``failedBindingClaim``: ``allocationResultWithBindingConditions`` with a status."""
    out = allocated(claim())
    out["status"]["allocation"]["allocationTimestamp"] = allocated_at
    out["status"]["allocation"]["devices"]["results"][0].update(
        {"bindingConditions": ["condition"], "bindingFailureConditions": ["failed"]}
    )
    conditions = [
        {"type": "condition", "status": condition, "reason": "r", "message": "", "lastTransitionTime": allocated_at},
        {"type": "failed", "status": failed, "reason": "r", "message": "", "lastTransitionTime": allocated_at},
    ]
    out["status"]["devices"] = [{"driver": DRIVER, "pool": NODE, "device": "instance-1", "conditions": conditions}]
    return out


def _ten_minutes_ago() -> str:
    return datetime.fromtimestamp(time.time() - 600 - 1, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


BINDING = [
    ("bound-claim-with-succeeded-binding-conditions", lambda: bound("True", "False"), False),
    ("bound-claim-with-failed-binding", lambda: bound("False", "True"), True),
    ("bound-claim-with-timed-out-binding", lambda: bound("False", "False", allocated_at=_ten_minutes_ago()), True),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "make", "blocked"), BINDING, ids=[c[0] for c in BINDING])
def test_binding_conditions(minor: str, name: str, make: Any, blocked: bool) -> None:
    raw = make()
    parsed_claim = ResourceClaim.from_dict(raw)
    assert not parsed_claim.errors, parsed_claim.errors
    pl = plugin(minor, Lister([raw], [CLASS], [worker_slice()]))
    state, status = cycle(pl, pod())
    if blocked and features_at(minor).enabled("DRADeviceBindingConditions"):
        assert status == unresolvable("resourceclaim not available on the node")
        _, post = pl.post_filter(state, pod(), {})
        assert post == Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",))
    else:
        assert status is None
        [write] = pl.pre_bind_writes(state, pod(), NODE)
        assert write.allocation is None and write.reserved_for.uid == POD_UID and not write.stamp_allocation


# ---- more of upstream's TestPlugin cases: what the allocator is handed (allocated devices, features,
# CEL errors) as the plugin hands it.


@pytest.mark.parametrize("minor", MINORS)
def test_empty(minor: str) -> None:
    """``empty``: a pod without claims is skipped; PostFilter has nothing to deallocate."""
    pl = plugin(minor, Lister([], [], []))
    state = CycleState()
    no_claims = Pod.from_dict({"metadata": {"name": "foo", "namespace": NS}, "spec": {"containers": [{"name": "c"}]}})
    assert pl.pre_filter(state, no_claims, [node_info()]) == (None, Status(Code.SKIP))
    _, post = pl.post_filter(state, no_claims, {})
    want = (
        Status(Code.UNSCHEDULABLE) if minor == "1.37" else Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",))
    )
    assert post == want
    assert pl.pre_bind_pre_flight(state, no_claims, NODE) == Status(Code.SKIP)


def _tainted_slice() -> dict[str, Any]:
    out = worker_slice()
    for device in out["spec"]["devices"]:
        device["taints"] = [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]
    return out


@pytest.mark.parametrize("minor", MINORS)
def test_tainted_device(minor: str) -> None:
    """``tainted-device-disabled`` at 1.35 (DRADeviceTaints off), ``tainted-device-enabled`` from 1.36."""
    pl = plugin(minor, Lister([claim()], [CLASS], [_tainted_slice()]))
    _, status = cycle(pl, pod())
    assert status == (None if minor == "1.35" else unresolvable("cannot allocate all claims"))


def _admin_access(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for request in out["spec"]["devices"]["requests"]:
        request["exactly"]["adminAccess"] = True
    for result in out.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
        result["adminAccess"] = True
    return out


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(
    ("name", "claims"),
    [
        ("request-admin-access-with-DRAAdminAccess-featuregate", [_admin_access(claim()), allocated(OTHER)]),
        ("structured-ignore-allocated-admin-access", [claim(), _admin_access(allocated(OTHER))]),
    ],
    ids=["request-admin-access-with-DRAAdminAccess-featuregate", "structured-ignore-allocated-admin-access"],
)
def test_admin_access(minor: str, name: str, claims: list[dict[str, Any]]) -> None:
    pl = plugin(minor, Lister(claims, [CLASS], [worker_slice()]))
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.reserve(state, pod(), NODE) is None
    in_flight = pl.in_flight.get("claim-uid")
    assert in_flight is not None and in_flight.allocation is not None
    [result] = in_flight.allocation.results
    assert (result.device, bool(result.admin_access)) == ("instance-1", name.startswith("request-admin-access"))


def _broken_cel_claim() -> dict[str, Any]:
    out = claim()
    out["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
    ]
    return out


CEL_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue())"
    " or guarding the check with has() for optional fields"
)


@pytest.mark.parametrize("minor", MINORS)
def test_claim_parameters_cel_runtime_error(minor: str) -> None:
    pl = plugin(minor, Lister([_broken_cel_claim()], [CLASS], [worker_slice()]))
    _, status = cycle(pl, pod())
    if minor == "1.37":
        want = (
            "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: "
            "CEL runtime error: no such key: healthy" + CEL_HINT
        )
    else:
        want = "claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"
    assert status == Status.as_error(want)


@pytest.mark.parametrize("minor", MINORS)
def test_class_parameters_cel_runtime_error(minor: str) -> None:
    lister = Lister([claim()], [], [worker_slice()])
    lister.classes[CLASS] = DeviceClass.from_dict(
        {
            "metadata": {"name": CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}]},
        }
    )
    _, status = cycle(plugin(minor, lister), pod())
    if minor == "1.37":
        want = (
            "class my-resource-class: selector #0 on device some-driver/worker/instance-1: "
            "CEL runtime error: no such key: healthy" + CEL_HINT
        )
    else:
        want = "class my-resource-class: selector #0: CEL runtime error: no such key: healthy"
    assert status == Status.as_error(want)


def _slice_with(node: str, count: int) -> dict[str, Any]:
    out = worker_slice(node)
    out["spec"]["devices"] = [{"name": f"instance-{i}"} for i in range(1, count + 1)]
    return out


def _prioritized_requests(name: str, uid: str, *requests: tuple[int, ...]) -> dict[str, Any]:
    """``RequestWithPrioritizedList(SubRequest("subreq-j", class, count_j)...)`` per request (req-1, ...)."""
    out = claim()
    out["metadata"].update({"name": name, "uid": uid})
    out["spec"]["devices"]["requests"] = [
        {
            "name": f"req-{i}",
            "firstAvailable": [
                {"name": f"subreq-{j}", "deviceClassName": CLASS, "count": count}
                for j, count in enumerate(counts, start=1)
            ],
        }
        for i, counts in enumerate(requests, start=1)
    ]
    return out


TWO_CLAIM_NAMES = pod_with(
    [
        {"name": "my-resource", "resourceClaimName": CLAIM},
        {"name": "my-resource-2", "resourceClaimName": CLAIM + "-2"},
    ]
)

# name, pod, claims, devices per node (worker, worker-2, worker-3), Filter status per node, scores, normalized
SCORING = [
    (
        "multiple-claims-prioritized-list-scoring",
        TWO_CLAIM_NAMES,
        [_prioritized_requests(CLAIM, "claim-uid", (1,)), _prioritized_requests(CLAIM + "-2", "uid-2", (4, 3, 2, 1))],
        (4, 2, 1),
        [None, None, unresolvable("cannot allocate all claims")],
        [15, 13],
        [100, 86],
    ),
    (
        "multiple-requests-prioritized-list-scoring",
        pod(),
        [_prioritized_requests(CLAIM, "claim-uid", (2, 1), (2, 1))],
        (4, 3, 2),
        [None, None, None],
        [16, 15, 14],
        [100, 93, 87],
    ),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(
    ("name", "the_pod", "claims", "devices", "filters", "scores", "normalized"), SCORING, ids=[c[0] for c in SCORING]
)
def test_prioritized_list_scoring(
    minor: str,
    name: str,
    the_pod: Pod,
    claims: list[dict[str, Any]],
    devices: tuple[int, ...],
    filters: list[Status | None],
    scores: list[int],
    normalized: list[int],
) -> None:
    node_names = (NODE, "worker-2", "worker-3")
    pl = plugin(minor, Lister(claims, [CLASS], [_slice_with(n, c) for n, c in zip(node_names, devices, strict=True)]))
    nodes = [
        NodeInfo(Node.from_dict({"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}})) for n in node_names
    ]
    state = CycleState()
    assert pl.pre_filter(state, the_pod, nodes) == (None, None)
    assert [pl.filter(state, the_pod, n) for n in nodes] == filters
    feasible = [n for n, status in zip(nodes, filters, strict=True) if status is None]
    got = [pl.score(state, the_pod, n) for n in feasible]
    assert got == scores
    assert pl.normalize_score(state, the_pod, got, feasible) is None
    assert got == normalized
    assert pl.reserve(state, the_pod, NODE) is None
    assert [w.name for w in pl.pre_bind_writes(state, the_pod, NODE)] == [c["metadata"]["name"] for c in claims]


@pytest.mark.parametrize("minor", MINORS)
def test_bind_failure(minor: str) -> None:
    """``bind-failure``: PreBind reserved the claim, binding failed, Unreserve removes the reservation."""
    pl = plugin(minor, Lister([allocated(claim())], [CLASS], []))
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.reserve(state, pod(), NODE) is None
    [write] = pl.pre_bind_writes(state, pod(), NODE)
    assert write.reserved_for.uid == POD_UID
    pl.claim_written(state, ResourceClaim.from_dict(allocated(claim(), reserved=True)))
    pl.unreserve(state, pod(), NODE)
    assert [c.key for c in state.get(UNRESERVE_KEY)] == [f"{NS}/{CLAIM}"]


class _Clock:
    """A clock that jumps ``step`` seconds at each reading: the Filter's deadline passes mid-search."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize("name", ["timeout", "timeout_not_reached"])
def test_filter_timeout(minor: str, name: str) -> None:
    """``timeout``: the search outlives DRASchedulerFilterTimeout (10 s by default); 1.35 answers
    UnschedulableAndUnresolvable, from 1.36 an Error naming the node."""
    large = claim()
    large["spec"]["devices"]["requests"] = [
        {"name": f"req-{i}", "exactly": {"deviceClassName": CLASS}} for i in range(1, 6)
    ]
    big_slice = worker_slice()
    big_slice["spec"]["devices"] = [{"name": f"instance-{i}"} for i in range(1, 5)]
    pl = plugin(minor, Lister([large], [CLASS], [big_slice]))
    pl.clock = _Clock(11.0 if name == "timeout" else 0.0)
    _, status = cycle(pl, pod())
    if name == "timeout_not_reached":
        assert status == unresolvable("cannot allocate all claims")
    elif minor == "1.35":
        assert status == unresolvable("timed out trying to allocate devices")
    else:
        assert status == Status.as_error("node worker: timed out trying to allocate devices")
