"""VolumeZone: zone and region labels of bound volumes against the node's, unbound claims, hints.

Ported from upstream v1.35.4 ``plugins/volumezone/volume_zone_test.go`` (TestSingleZone,
TestMultiZone, TestWithBinding, TestIsSchedulableAfterPersistentVolumeClaimAdded,
TestIsSchedulableAfterStorageClassAdded, TestIsSchedulableAfterPersistentVolumeChange); ids are
upstream's case names. Two texts differ from upstream's test on purpose: upstream's fake lister says
``storageclasses.storage.k8s.io "Class_0" not found`` where client-go's real lister (which the
scheduler runs) says ``storageclass.storage.k8s.io``; and a StorageClass without
``volumeBindingMode`` cannot exist (the API server defaults it to Immediate), so the
"VolumeBindingMode not set" case is ported with the mode the API server gives it.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from scheduler.backend.cache.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.volumezone.volume_zone import ERR_REASON_CONFLICT, VolumeZone
from scheduler.testing import make_node, make_pod
from tests.helpers import make_cache

VZ = "VolumeZone"
SKIP = Status(Code.SKIP)
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,), VZ)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def pv(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}}, "spec": {}}


def pvc(name: str, volume: str = "", storage_class: str | None = None, namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"volumeName": volume} if volume else {}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def sc(name: str, mode: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": "p"}
    if mode is not None:
        obj["volumeBindingMode"] = mode
    return obj


PARSERS = {
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
}


def storage_cache(*objects: dict[str, Any]) -> Cache:
    cache = make_cache()
    for obj in objects:
        cache.storage.upsert(PARSERS[obj["kind"]].from_dict(obj))
    return cache


def pod_with_volume(claim: str) -> Pod:
    """Upstream's ``createPodWithVolume``."""
    return make_pod("pod_1").pvc("v", claim).build()


def node(labels: dict[str, str]) -> NodeInfo:
    b = make_node("host1")
    for key, value in labels.items():
        b = b.label(key, value)
    return NodeInfo(b.build())


def run(cache: Cache, pod: Pod, info: NodeInfo) -> tuple[Status | None, Status | None]:
    """PreFilter, then Filter whatever PreFilter said (as upstream's tests do: Filter re-reads)."""
    plugin = VolumeZone({}, Handle(snapshot=cache))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [info])
    return pre, plugin.filter(state, pod, info)


SINGLE = storage_cache(
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
)
USELESS = {"uselessLabel": "none"}


@pytest.mark.parametrize(
    ("pod", "labels", "want_pre", "want"),
    [
        pytest.param(make_pod("pod_1").build(), {BETA_ZONE: "us-west1-a"}, SKIP, None, id="pod without volume"),
        pytest.param(pod_with_volume("PVC_1"), {}, None, None, id="node without labels"),
        pytest.param(
            pod_with_volume("PVC_1"), {BETA_ZONE: "us-west1-a", **USELESS}, None, None, id="beta zone label matched"
        ),
        pytest.param(
            pod_with_volume("PVC_2"), {BETA_REGION: "us-west1", **USELESS}, None, None, id="beta region label matched"
        ),
        pytest.param(
            pod_with_volume("PVC_2"),
            {BETA_REGION: "no_us-west1", **USELESS},
            None,
            CONFLICT,
            id="beta region label doesn't match",
        ),
        pytest.param(
            pod_with_volume("PVC_1"),
            {BETA_ZONE: "no_us-west1-a", **USELESS},
            None,
            CONFLICT,
            id="beta zone label doesn't match",
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_1"), {ZONE: "us-west1-a", **USELESS}, None, None, id="zone label matched"
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_2"), {REGION: "us-west1", **USELESS}, None, None, id="region label matched"
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_2"),
            {REGION: "no_us-west1", **USELESS},
            None,
            CONFLICT,
            id="region label doesn't match",
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_1"),
            {ZONE: "no_us-west1-a", **USELESS},
            None,
            CONFLICT,
            id="zone label doesn't match",
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_3"),
            {ZONE: "us-west1-a"},
            None,
            CONFLICT,
            id="pv with zone and region, node with only zone",
        ),
        pytest.param(
            pod_with_volume("PVC_Stable_1"),
            {BETA_ZONE: "us-west1-a"},
            None,
            CONFLICT,
            id="pv with zone,node with beta zone",
        ),
        pytest.param(
            pod_with_volume("PVC_1"),
            {ZONE: "us-west1-a"},
            None,
            None,
            id="pv with beta label,node with ga label, matched",
        ),
        pytest.param(
            pod_with_volume("PVC_1"),
            {ZONE: "us-west1-b"},
            None,
            CONFLICT,
            id="pv with beta label,node with ga label, don't match",
        ),
    ],
)
def test_single_zone(pod: Pod, labels: dict[str, str], want_pre: Status | None, want: Status | None) -> None:
    assert run(SINGLE, pod, node(labels)) == (want_pre, want)


MULTI = storage_cache(
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
)


@pytest.mark.parametrize(
    ("pod", "labels", "want"),
    [
        pytest.param(pod_with_volume("PVC_3"), {}, None, id="node without labels"),
        pytest.param(
            pod_with_volume("PVC_3"), {BETA_ZONE: "us-west1-a", **USELESS}, None, id="beta zone label matched"
        ),
        pytest.param(
            pod_with_volume("PVC_1"), {BETA_ZONE: "us-west1-b", **USELESS}, CONFLICT, id="beta zone label doesn't match"
        ),
        pytest.param(pod_with_volume("PVC_Stable_2"), {ZONE: "us-west1-a", **USELESS}, None, id="zone label matched"),
        pytest.param(
            pod_with_volume("PVC_Stable_1"), {ZONE: "us-west1-b", **USELESS}, CONFLICT, id="zone label doesn't match"
        ),
    ],
)
def test_multi_zone(pod: Pod, labels: dict[str, str], want: Status | None) -> None:
    assert run(MULTI, pod, node(labels)) == (None, want)


def test_a_missing_volume_and_a_malformed_zone_list() -> None:
    """A claim bound to a volume the lister lacks refuses with its NotFound text; a zone list with an
    empty member (``LabelZonesToSet`` fails) is ignored, so that volume constrains nothing."""
    missing = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolume "Vol_not_exist" not found',))
    assert run(SINGLE, pod_with_volume("PVC_4"), node({ZONE: "a"})) == (missing, missing)
    cache = storage_cache(pv("Vol_bad", {ZONE: "us-west1-a__"}), pvc("PVC_bad", "Vol_bad"))
    assert run(cache, pod_with_volume("PVC_bad"), node({ZONE: "elsewhere"})) == (SKIP, None)


WITH_BINDING = storage_cache(
    sc("Class_Immediate"),
    sc("Class_Wait", "WaitForFirstConsumer"),
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
)
TEST_NODE = {BETA_ZONE: "us-west1-a", **USELESS}


def unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


@pytest.mark.parametrize(
    ("claim", "want_pre", "want"),
    [
        pytest.param("PVC_1", None, None, id="label zone failure domain matched"),
        pytest.param(
            "PVC_EmptySC",
            unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
            unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
            id="unbound volume empty storage class",
        ),
        pytest.param(
            "PVC_NoSC",
            unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            id="unbound volume no storage class",
        ),
        pytest.param(
            "PVC_ImmediateSC",
            unresolvable("PersistentVolume had no name"),
            unresolvable("PersistentVolume had no name"),
            id="unbound volume immediate binding mode",
        ),
        pytest.param("PVC_WaitSC", SKIP, None, id="unbound volume wait binding mode"),
    ],
)
def test_with_binding(claim: str, want_pre: Status | None, want: Status | None) -> None:
    assert run(WITH_BINDING, pod_with_volume(claim), node(TEST_NODE)) == (want_pre, want)


def test_a_claim_without_a_name_and_a_missing_claim() -> None:
    no_name = make_pod("pod_1").volume("v", persistentVolumeClaim={"claimName": ""}).build()
    assert run(SINGLE, no_name, node({}))[0] == unresolvable("PersistentVolumeClaim had no name")
    missing = unresolvable('persistentvolumeclaim "nope" not found')
    assert run(SINGLE, pod_with_volume("nope"), node({}))[0] == missing


def test_the_beta_storage_class_annotation_wins() -> None:
    """``GetPersistentVolumeClaimClass``: the beta annotation before ``storageClassName``."""
    claim = pvc("PVC_Annotated", storage_class="Class_Immediate")
    claim["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "Class_Wait"}
    cache = storage_cache(sc("Class_Immediate"), sc("Class_Wait", "WaitForFirstConsumer"), claim)
    assert run(cache, pod_with_volume("PVC_Annotated"), node(TEST_NODE)) == (SKIP, None)


# -- queueing hints ---------------------------------------------------------------------------

PLUGIN = VolumeZone({}, Handle())
CLAIM_1 = PersistentVolumeClaim.from_dict(pvc("PVC_1", "Vol_1"))


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(pod_with_volume("PVC_1"), None, "not-a-pvc", QUEUE, id="error-wrong-new-object"),
        pytest.param(make_pod("pod_1").build(), None, CLAIM_1, QUEUE_SKIP, id="pvc-was-added-but-pod-refers-no-pvc"),
        pytest.param(
            pod_with_volume("PVC_2"), None, CLAIM_1, QUEUE_SKIP, id="pvc-was-added-and-pod-was-bound-to-different-pvc"
        ),
        pytest.param(
            pod_with_volume("PVC_1"),
            None,
            PersistentVolumeClaim.from_dict(pvc("PVC_1", "Vol_1", namespace="ns1")),
            QUEUE_SKIP,
            id="pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        ),
        pytest.param(pod_with_volume("PVC_1"), None, CLAIM_1, QUEUE, id="pvc-was-added-and-pod-was-bound-to-the-pvc"),
        pytest.param(
            pod_with_volume("PVC_1"),
            PersistentVolumeClaim.from_dict(pvc("PVC_1")),
            CLAIM_1,
            QUEUE,
            id="pvc-was-updated-and-pod-was-bound-to-the-pvc",
        ),
        pytest.param(
            make_pod("pod_1").build(),
            PersistentVolumeClaim.from_dict(pvc("PVC_1")),
            CLAIM_1,
            QUEUE_SKIP,
            id="pvc-was-updated-but-pod-refers-no-pvc",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_claim_added(
    pod: Pod, old: object, new: object, want: QueueingHint
) -> None:
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, old, new) is want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param("not-a-storageclass", QUEUE, id="error-wrong-new-object"),
        pytest.param(StorageClass.from_dict(sc("SC_1")), QUEUE_SKIP, id="sc-doesn't-have-volume-binding-mode"),
        pytest.param(
            StorageClass.from_dict(sc("SC_1", "WaitForFirstConsumer")),
            QUEUE,
            id="new-sc-is-wait-for-first-consumer-mode",
        ),
    ],
)
def test_is_schedulable_after_storage_class_added(new: object, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_storage_class_added(pod_with_volume("PVC_1"), None, new) is want


def _pv(labels: dict[str, str]) -> PersistentVolume:
    return PersistentVolume.from_dict(pv("Vol_1", labels))


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, "not-a-pv", QUEUE, id="error-wrong-new-object"),
        pytest.param("not-a-pv", _pv({}), QUEUE, id="error-wrong-old-object"),
        pytest.param(None, _pv({BETA_ZONE: "us-west1-b"}), QUEUE, id="new-pv-was-added"),
        pytest.param(
            _pv({BETA_ZONE: "us-west1-a"}),
            _pv({BETA_ZONE: "us-west1-b"}),
            QUEUE,
            id="pv-was-updated-and-changed-topology",
        ),
        pytest.param(
            _pv({BETA_ZONE: "us-west1-a"}),
            _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QUEUE,
            id="pv-was-updated-and-added-topology-label",
        ),
        pytest.param(
            _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QUEUE_SKIP,
            id="pv-was-updated-but-no-topology-is-changed",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_change(old: object, new: object, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_persistent_volume_change(pod_with_volume("PVC_1"), old, new) is want


def test_a_claim_event_without_a_new_claim_is_skipped() -> None:
    """VolumeZone's answer where the event carries no new claim (the shared hint queues by default)."""
    pod = Pod.from_dict(make_pod("p").dict())
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, None, None) is QUEUE_SKIP
