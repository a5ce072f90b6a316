"""VolumeRestrictions: disk conflicts, ReadWriteOncePod claims in use, PreFilter extensions, hints.

Ported from upstream v1.35.4 ``plugins/volumerestrictions/volume_restrictions_test.go``
(TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts,
TestAccessModeConflicts, Test_isSchedulableAfterPodDeleted,
Test_isSchedulableAfterPersistentVolumeClaimChange); ids are upstream's case names. The read-only
rules, the AddPod/RemovePod counts and the whole-pipeline cases are ours, from the plugin's code.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.storage import PersistentVolumeClaim
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.volumerestrictions.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from scheduler.simulate import Simulation
from scheduler.testing import make_node, make_pod
from tests.helpers import make_cache, pre_filter_then_filter

VR = "VolumeRestrictions"
SKIP = Status(Code.SKIP)
DISK_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,), VR)
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,), VR)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}


def vol_pod(source: dict[str, Any] | None = None, name: str = "p", node: str = "") -> Pod:
    b = make_pod(name)
    if source is not None:
        b = b.volume("v", **source)
    if node:
        b = b.node(node)
    return b.build()


def run(pod: Pod, info: NodeInfo, cache: Cache | None = None) -> tuple[Status | None, Status | None]:
    """PreFilter, then Filter on ``info`` when PreFilter succeeded (as upstream's tests)."""
    return pre_filter_then_filter(VolumeRestrictions({}, Handle(snapshot=cache or make_cache())), pod, info)


def info_with(*pods: Pod) -> NodeInfo:
    return NodeInfo(make_node("node-1").build(), {p.key: p for p in pods})


def disk_cases(state: dict[str, Any], state2: dict[str, Any]) -> list[Any]:
    """The four cases each of upstream's Test*DiskConflicts runs, for one disk type."""
    return [
        pytest.param(vol_pod(), info_with(), SKIP, None, id="nothing"),
        pytest.param(vol_pod(), info_with(vol_pod(state, "e")), SKIP, None, id="one state"),
        pytest.param(vol_pod(state), info_with(vol_pod(state, "e")), None, DISK_CONFLICT, id="same state"),
        pytest.param(vol_pod(state2), info_with(vol_pod(state, "e")), None, None, id="different state"),
    ]


@pytest.mark.parametrize(
    ("pod", "info", "want_pre", "want"),
    [
        *disk_cases(GCE, GCE2),
        pytest.param(
            make_pod("p").volume("volume with no restriction").build(),
            info_with(),
            SKIP,
            None,
            id="pod with a volume that doesn't have restrictions",
        ),
    ],
)
def test_gce_disk_conflicts(pod: Pod, info: NodeInfo, want_pre: Status | None, want: Status | None) -> None:
    assert run(pod, info) == (want_pre, want)


@pytest.mark.parametrize(("pod", "info", "want_pre", "want"), disk_cases(AWS, AWS2))
def test_aws_disk_conflicts(pod: Pod, info: NodeInfo, want_pre: Status | None, want: Status | None) -> None:
    assert run(pod, info) == (want_pre, want)


@pytest.mark.parametrize(("pod", "info", "want_pre", "want"), disk_cases(RBD, RBD2))
def test_rbd_disk_conflicts(pod: Pod, info: NodeInfo, want_pre: Status | None, want: Status | None) -> None:
    assert run(pod, info) == (want_pre, want)


@pytest.mark.parametrize(("pod", "info", "want_pre", "want"), disk_cases(ISCSI, ISCSI2))
def test_iscsi_disk_conflicts(pod: Pod, info: NodeInfo, want_pre: Status | None, want: Status | None) -> None:
    assert run(pod, info) == (want_pre, want)


def read_only(source: dict[str, Any]) -> dict[str, Any]:
    ((kind, spec),) = source.items()
    return {kind: {**spec, "readOnly": True}}


@pytest.mark.parametrize(
    ("source", "conflict_when_both_read_only"),
    [("gce", False), ("aws", True), ("rbd", False), ("iscsi", False)],
)
def test_read_only_users_share_a_disk_except_ebs(source: str, conflict_when_both_read_only: bool) -> None:
    """``isVolumeConflict``: GCE PD, RBD and iSCSI may be shared when both mount read-only; an EBS
    volume never (its branch has no read-only test); one read-only user is still a conflict."""
    disk = {"gce": GCE, "aws": AWS, "rbd": RBD, "iscsi": ISCSI}[source]
    ro = read_only(disk)
    _, both_ro = run(vol_pod(ro), info_with(vol_pod(ro, "e")))
    _, one_ro = run(vol_pod(ro), info_with(vol_pod(disk, "e")))
    assert both_ro == (DISK_CONFLICT if conflict_when_both_read_only else None)
    assert one_ro == DISK_CONFLICT


def test_rbd_conflicts_only_with_a_monitor_in_common_and_the_default_pool() -> None:
    """``haveOverlap`` of the monitors, then pool and image; an unset pool is the API default "rbd"."""
    shared = {"rbd": {"monitors": ["b", "z"], "pool": "foo", "image": "bar"}}
    assert run(vol_pod(shared), info_with(vol_pod(RBD, "e")))[1] == DISK_CONFLICT
    no_monitors = {"rbd": {"monitors": [], "pool": "foo", "image": "bar"}}
    assert run(vol_pod(no_monitors), info_with(vol_pod(no_monitors, "e")))[1] is None
    default_pool = {"rbd": {"monitors": ["a"], "image": "bar"}}
    explicit = {"rbd": {"monitors": ["a"], "pool": "rbd", "image": "bar"}}
    assert run(vol_pod(default_pool), info_with(vol_pod(explicit, "e")))[1] == DISK_CONFLICT


# -- TestAccessModeConflicts ------------------------------------------------------------------


def claim(name: str, *modes: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": list(modes)},
    }


RWOP_1, RWOP_2, RWX = (
    claim("claim-with-rwop-1", "ReadWriteOncePod"),
    claim("claim-with-rwop-2", "ReadWriteOncePod"),
    claim("claim-with-rwx", "ReadWriteMany"),
)
POD_WITH_ONE_PVC = make_pod("pod-with-one-pvc").pvc("a", "claim-with-rwop-1").node("node-1").build()
POD_WITH_TWO_PVCS = (
    make_pod("pod-with-two-pvcs").pvc("a", "claim-with-rwop-1").pvc("b", "claim-with-rwop-2").node("node-1").build()
)
POD_WITH_ONE_CONFLICT = make_pod("pod-with-one-conflict").pvc("a", "claim-with-rwop-1").node("node-1").build()
POD_WITH_TWO_CONFLICTS = (
    make_pod("pod-with-two-conflicts")
    .pvc("a", "claim-with-rwop-1")
    .pvc("b", "claim-with-rwop-2")
    .node("node-1")
    .build()
)
POD_WITH_RWX = make_pod("pod-with-rwx").pvc("a", "claim-with-rwx").node("node-1").build()


def cache_with(pods: list[Pod], nodes: list[str], claims: list[dict[str, Any]]) -> Cache:
    cache = make_cache([make_node(n) for n in nodes], pods)
    for c in claims:
        cache.storage.upsert(PersistentVolumeClaim.from_dict(c))
    return cache


@pytest.mark.parametrize(
    ("pod", "info", "pods", "nodes", "claims", "want_pre", "want"),
    [
        pytest.param(vol_pod(), info_with(), [], [], [], SKIP, None, id="nothing"),
        pytest.param(
            POD_WITH_ONE_PVC,
            info_with(),
            [],
            [],
            [],
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "claim-with-rwop-1" not found',)),
            None,
            id="failed to get PVC",
        ),
        pytest.param(
            POD_WITH_ONE_PVC,
            info_with(POD_WITH_RWX),
            [POD_WITH_RWX],
            ["node-1"],
            [RWOP_1, RWX],
            SKIP,
            None,
            id="no access mode conflict",
        ),
        pytest.param(
            POD_WITH_ONE_CONFLICT,
            info_with(POD_WITH_ONE_PVC, POD_WITH_RWX),
            [POD_WITH_ONE_PVC, POD_WITH_RWX],
            ["node-1"],
            [RWOP_1, RWX],
            None,
            RWOP_CONFLICT,
            id="access mode conflict, unschedulable",
        ),
        pytest.param(
            POD_WITH_TWO_CONFLICTS,
            info_with(POD_WITH_TWO_PVCS, POD_WITH_RWX),
            [POD_WITH_TWO_PVCS, POD_WITH_RWX],
            ["node-1"],
            [RWOP_1, RWOP_2, RWX],
            None,
            RWOP_CONFLICT,
            id="two conflicts, unschedulable",
        ),
    ],
)
def test_access_mode_conflicts(
    pod: Pod,
    info: NodeInfo,
    pods: list[Pod],
    nodes: list[str],
    claims: list[dict[str, Any]],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    assert run(pod, info, cache_with(pods, nodes, claims)) == (want_pre, want)


def test_a_claim_used_only_on_a_node_not_in_the_cache_is_not_in_use() -> None:
    """The snapshot's usedPVCSet is the union of its nodes' PVCRefCounts: a pod bound to a node the
    cache has not seen does not count, until that node arrives; it stops counting when the node goes."""
    cache = cache_with([POD_WITH_ONE_PVC], [], [RWOP_1])
    assert run(POD_WITH_ONE_CONFLICT, info_with(), cache)[0] == SKIP
    cache.add_node(make_node("node-1").build())
    assert cache.is_pvc_used_by_pods("default/claim-with-rwop-1")
    assert run(POD_WITH_ONE_CONFLICT, info_with(), cache) == (None, RWOP_CONFLICT)
    cache.remove_node("node-1")
    assert not cache.is_pvc_used_by_pods("default/claim-with-rwop-1")
    cache.add_node(make_node("node-1").build())
    cache.remove_pod(POD_WITH_ONE_PVC)
    assert not cache.is_pvc_used_by_pods("default/claim-with-rwop-1")


def test_add_pod_and_remove_pod_count_uses_of_the_claims() -> None:
    """Preemption's dry runs: removing the pod that uses the claim clears the conflict, adding one
    (a nominated pod) makes it; pods using other claims change nothing."""
    cache = cache_with([POD_WITH_ONE_PVC, POD_WITH_RWX], ["node-1"], [RWOP_1, RWX])
    plugin = VolumeRestrictions({}, Handle(snapshot=cache))
    state = CycleState()
    info = info_with(POD_WITH_ONE_PVC, POD_WITH_RWX)
    assert plugin.pre_filter(state, POD_WITH_ONE_CONFLICT, [info]) == (None, None)
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT
    assert plugin.remove_pod(state, POD_WITH_ONE_CONFLICT, POD_WITH_RWX, info) is None
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT
    copy = state.clone()
    assert plugin.remove_pod(state, POD_WITH_ONE_CONFLICT, POD_WITH_ONE_PVC, info) is None
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, info) is None
    assert plugin.filter(copy, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT  # a clone is its own
    assert plugin.add_pod(state, POD_WITH_ONE_CONFLICT, POD_WITH_TWO_PVCS, info) is None
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT


def test_filter_without_pre_filter_state_is_an_error() -> None:
    plugin = VolumeRestrictions({}, Handle(snapshot=make_cache()))
    status = plugin.filter(CycleState(), vol_pod(GCE), info_with())
    assert status is not None and status.code is Code.ERROR


# -- queueing hints ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "deleted", "want"),
    [
        pytest.param(vol_pod(GCE), vol_pod(GCE, "e"), QUEUE, id="queue-new-object-gcedisk-conflict"),
        pytest.param(vol_pod(GCE), vol_pod(GCE2, "e"), QUEUE_SKIP, id="skip-new-object-gcedisk-no-conflict"),
        pytest.param(vol_pod(AWS), vol_pod(AWS, "e"), QUEUE, id="queue-new-object-awsdisk-conflict"),
        pytest.param(vol_pod(AWS), vol_pod(AWS2, "e"), QUEUE_SKIP, id="skip-new-object-awsdisk-no-conflict"),
        pytest.param(vol_pod(RBD), vol_pod(RBD, "e"), QUEUE, id="queue-new-object-rbddisk-conflict"),
        pytest.param(vol_pod(RBD), vol_pod(RBD2, "e"), QUEUE_SKIP, id="skip-new-object-rbddisk-no-conflict"),
        pytest.param(vol_pod(ISCSI), vol_pod(ISCSI, "e"), QUEUE, id="queue-new-object-iscsidisk-conflict"),
        pytest.param(vol_pod(ISCSI), vol_pod(ISCSI2, "e"), QUEUE_SKIP, id="skip-new-object-iscsidisk-no-conflict"),
        pytest.param(
            make_pod("pod1").pvc("a", "claim-rwop").build(),
            make_pod("pod2").pvc("a", "claim-rwop").build(),
            QUEUE,
            id="queue-has-same-claim",
        ),
        pytest.param(
            make_pod("pod1").pvc("a", "claim-1-rwop").build(),
            make_pod("pod2").pvc("a", "claim-2-rwop").build(),
            QUEUE_SKIP,
            id="skip-no-same-claim",
        ),
        pytest.param(
            make_pod("pod1").pvc("a", "claim-rwop").build(),
            make_pod("pod2", namespace="other").pvc("a", "claim-rwop").build(),
            QUEUE_SKIP,
            id="skip-other-namespace",
        ),
    ],
)
def test_is_schedulable_after_pod_deleted(pod: Pod, deleted: Pod, want: QueueingHint) -> None:
    plugin = VolumeRestrictions({}, Handle(snapshot=make_cache()))
    assert plugin.is_schedulable_after_pod_deleted(pod, deleted, None) is want


POD_RWX_ONE = make_pod("pod-with-one-pvc").pvc("a", "claim-with-rwx-1").node("node-1").build()
POD_RWX_TWO = (
    make_pod("pod-with-two-pvcs").pvc("a", "claim-with-rwx-1").pvc("b", "claim-with-rwx-2").node("node-1").build()
)
POD_OTHER_NAMESPACE = (
    make_pod("pod-with-one-pvc", namespace="kube-system").pvc("a", "claim-with-rwx-1").node("claim-with-rwx-2").build()
)
PVC1 = PersistentVolumeClaim.from_dict(claim("claim-with-rwx-1", "ReadWriteMany"))
PVC2 = PersistentVolumeClaim.from_dict(claim("claim-with-rwx-2", "ReadWriteMany"))


@pytest.mark.parametrize(
    ("pod", "new", "want"),
    [
        pytest.param(POD_RWX_TWO, PVC1, QUEUE, id="queue-new-object-pvc-belong-pod"),
        pytest.param(POD_RWX_ONE, PVC2, QUEUE_SKIP, id="skip-new-object-unused"),
        pytest.param(POD_RWX_ONE, PVC2, QUEUE_SKIP, id="skip-nil-old-object"),
        pytest.param(POD_RWX_ONE, PVC2, QUEUE_SKIP, id="skip-new-object-not-belong-pod"),
        pytest.param(POD_OTHER_NAMESPACE, PVC1, QUEUE_SKIP, id="skip-new-object-namespace-not-equal-pod"),
    ],
)
def test_is_schedulable_after_persistent_volume_claim_change(
    pod: Pod, new: PersistentVolumeClaim, want: QueueingHint
) -> None:
    plugin = VolumeRestrictions({}, Handle(snapshot=make_cache()))
    assert plugin.is_schedulable_after_persistent_volume_claim_added(pod, None, new) is want


def test_an_unexpected_object_queues_the_pod() -> None:
    plugin = VolumeRestrictions({}, Handle(snapshot=make_cache()))
    assert plugin.is_schedulable_after_persistent_volume_claim_added(vol_pod(), None, vol_pod()) is QUEUE
    assert plugin.is_schedulable_after_pod_deleted(vol_pod(), PVC1, None) is QUEUE


# -- the whole pipeline: rbd and iscsi pods, which no stand-in refuses any more -------------------


def _objects(*, existing: list[dict[str, Any]], pending: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [make_node(n).zone("z").allocatable(cpu="4", memory="8Gi", pods="110").dict() for n in ("a", "b")]
    return [*nodes, *existing, pending]


def test_simulate_places_an_rbd_pod_beside_its_disk_never_on_it() -> None:
    """The disk's node is refused with upstream's reason; with every node using it the pod stays
    Pending with upstream's message."""
    on_a = make_pod("on-a").volume("v", **RBD).node("a").dict()
    pending = make_pod("p").volume("v", **RBD).dict()
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(_objects(existing=[on_a], pending=pending))
    (attempt,) = sim.run()
    assert attempt.host == "b"
    on_b = make_pod("on-b").volume("v", **ISCSI).node("b").dict()
    both = [on_a, make_pod("on-b2").volume("v", **RBD).node("b").dict(), on_b]
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(_objects(existing=both, pending=pending))
    (attempt,) = sim.run()
    assert attempt.host is None
    assert attempt.message == (
        "0/2 nodes are available: 2 node(s) had no available disk. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_preemption_evicts_the_pod_holding_the_disk() -> None:
    """RemovePod's dry run: removing the lower-priority pod that attaches the disk frees the node."""
    on_a = make_pod("on-a").volume("v", **RBD).node("a").dict()
    on_b = make_pod("on-b").volume("v", **RBD).node("b").priority(10).dict()
    pending = make_pod("p").volume("v", **RBD).priority(1000).dict()
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(_objects(existing=[on_a, on_b], pending=pending))
    (attempt,) = sim.run()
    assert attempt.host is None
    assert attempt.preemption is not None
    assert attempt.preemption.nominated_node == "a"  # the victim of lower priority
    assert [v.name for v in attempt.preemption.victims] == ["on-a"]
