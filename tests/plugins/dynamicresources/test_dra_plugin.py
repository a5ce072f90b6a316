"""Upstream's ``dynamicresources_test.go`` cases of the pure path (names kept as ids), per release
where behaviour differs, against ``StructuredDynamicResources`` (not yet in the default profile)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Node, Pod
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.resourceslice import ResourceSlice
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.dynamicresources.plugin.claimwrites import FINALIZER, ClaimDeallocation
from scheduler.plugins.dynamicresources.plugin.plugin import DEALLOCATION_KEY, StructuredDynamicResources

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


def pod(*, template: bool = False, status: bool = False) -> Pod:
    entry = {"name": "my-resource", ("resourceClaimTemplateName" if template else "resourceClaimName"): CLAIM}
    raw: dict[str, Any] = {
        "metadata": {"name": POD, "namespace": NS, "uid": POD_UID},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": [entry]},
    }
    if status:
        raw["status"] = {"resourceClaimStatuses": [{"name": "my-resource", "resourceClaimName": CLAIM}]}
    return Pod.from_dict(raw)


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


def worker_slice(*devices: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{NODE}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": NODE,
            "pool": {"name": NODE, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices or ("instance-1",)],
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
    assert plugin(minor, Lister(claims, [CLASS], [])).pre_enqueue(the_pod) == want


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


def prioritized(*subs: str) -> dict[str, Any]:
    return claim({"name": "req-1", "firstAvailable": [{"name": s, "deviceClassName": c} for s, c in subs]})


@pytest.mark.parametrize("minor", MINORS)
def test_single_claim_prioritized_list_scoring(minor: str) -> None:
    """The first subrequest's class has no device here: the second is chosen, 8 - 1 = 7."""
    lister = Lister([prioritized(("subreq-1", "other-class"), ("subreq-2", CLASS))], [CLASS, "other-class"], [])
    lister.slices = [ResourceSlice.from_dict(worker_slice())]
    lister.classes["other-class"] = DeviceClass.from_dict(
        {"metadata": {"name": "other-class"}, "spec": {"selectors": [{"cel": {"expression": "false"}}]}}
    )
    pl = plugin(minor, lister)
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.score(state, pod(), node_info()) == 7


# ---- queueing hints (upstream's TestIsSchedulableAfterClaimChange cases) ----


def parsed(raw: dict[str, Any]) -> ResourceClaim:
    return ResourceClaim.from_dict(raw)


@pytest.mark.parametrize("minor", MINORS)
def test_claim_hints(minor: str) -> None:
    pending = claim()
    pl = plugin(minor, Lister([pending], [CLASS], []))
    after = pl.hints.after_claim_change
    # queue-on-add
    assert after(pod(), None, parsed(pending)) is QueueingHint.QUEUE
    # skip-unrelated-claim
    other = {**claim(), "metadata": {**claim()["metadata"], "name": "other", "uid": "other-uid"}}
    assert after(pod(), None, parsed(other)) is QueueingHint.QUEUE_SKIP
    # skip-adding-finalizer
    with_finalizer = copy.deepcopy(pending)
    with_finalizer["metadata"]["finalizers"] = [FINALIZER]
    assert after(pod(), parsed(pending), parsed(with_finalizer)) is QueueingHint.QUEUE_SKIP
    # queue-on-status-change
    assert after(pod(), parsed(pending), parsed(allocated(pending))) is QueueingHint.QUEUE
    # claim-deallocate: another claim losing its allocation frees devices
    assert after(pod(), parsed(allocated(other)), parsed(other)) is QueueingHint.QUEUE
    # backoff-wrong-new-object
    assert after(pod(), None, "not a claim") is QueueingHint.QUEUE
    # skip-wrong-claim: the pod cannot use its claims yet
    assert after(pod(template=True), None, parsed(pending)) is QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize("minor", MINORS)
def test_events_to_register(minor: str) -> None:
    events = {e.event.resource: e.event.action for e in plugin(minor, Lister([], [], [])).events_to_register()}
    claim_actions = ActionType.ADD | ActionType.UPDATE
    if minor == "1.37":
        claim_actions |= ActionType.DELETE  # a deleted allocated claim frees its devices
    assert events[EventResource.RESOURCE_CLAIM] == claim_actions
    assert events[EventResource.RESOURCE_SLICE] == ActionType.ADD | ActionType.UPDATE
    assert events[EventResource.DEVICE_CLASS] == ActionType.ADD | ActionType.UPDATE
    assert (
        events[EventResource.NODE] == ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    )


@pytest.mark.parametrize("minor", ["1.37"])
def test_claim_delete_hint(minor: str) -> None:
    pl = plugin(minor, Lister([], [], []))
    assert pl.hints.after_claim_change(pod(), parsed(claim()), None) is QueueingHint.QUEUE_SKIP
    assert pl.hints.after_claim_change(pod(), parsed(allocated(claim())), None) is QueueingHint.QUEUE
