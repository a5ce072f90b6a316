"""VolumeBinding: reading a pod's claims, Filter on bound claims, the refusal of claims still to bind,
hints.

Ported from upstream v1.35.4 ``plugins/volumebinding/volume_binding_test.go`` (TestVolumeBinding: the
cases a pod with bound claims, missing or lost claims and Immediate claims meets; ids are upstream's
case names) and ``binder_test.go``'s bound-claim node affinity cases. The cases that bind a
WaitForFirstConsumer claim ("unbound claims no matches", "bound and unbound unsatisfied", the
capacity scores) are ported below with a volume binder; without one (a bare framework) such a pod is
refused, which the first table shows.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.storage import CSINode, CSIStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass
from scheduler.backend.cache.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.volumebinding.binder import ERR_REASON_NODE_CONFLICT, ERR_REASON_PV_NOT_EXIST
from scheduler.plugins.volumebinding.volume_binding import VolumeBinding
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import make_cache, pre_filter_then_filter

VB = "VolumeBinding"
SKIP = Status(Code.SKIP)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
HOSTNAME = "kubernetes.io/hostname"


def unresolvable(*reasons: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)


def sc(name: str, mode: str) -> StorageClass:
    return StorageClass.from_dict({"metadata": {"name": name}, "provisioner": "p", "volumeBindingMode": mode})


IMMEDIATE_SC = sc("immediate-sc", "Immediate")
WAIT_SC = sc("wait-sc", "WaitForFirstConsumer")


def pvc(
    name: str,
    class_name: str | None,
    *,
    bound_pv: str = "",
    phase: str = "",
    deleting: bool = False,
    namespace: str = "default",
    owner: str | None = None,
) -> PersistentVolumeClaim:
    """Upstream's ``makePVC(name, class)`` with ``withBoundPV`` (volumeName + bind-completed)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if bound_pv:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "true"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner, "controller": True}]
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"]}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if bound_pv:
        spec["volumeName"] = bound_pv
    return PersistentVolumeClaim.from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase}})


def pv(
    name: str,
    class_name: str,
    affinity: dict[str, list[str]] | None = None,
    *,
    labels: dict[str, str] | None = None,
    source: dict[str, Any] | None = None,
) -> PersistentVolume:
    """Upstream's ``makePV(name, class).withNodeAffinity(...)``."""
    spec: dict[str, Any] = {
        "storageClassName": class_name,
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        **(source or {"csi": {"driver": "d", "volumeHandle": name}}),
    }
    if affinity is not None:
        exprs = [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    return PersistentVolume.from_dict({"metadata": {"name": name, "labels": labels or {}}, "spec": spec})


def pod_with(*claims: str) -> Pod:
    b = make_pod("pod-a")
    for claim in claims:
        b = b.pvc(claim, claim)
    return b.build()


def cache_with(*objects: Any) -> Cache:
    cache = make_cache()
    for obj in (IMMEDIATE_SC, WAIT_SC, *objects):
        cache.storage.upsert(obj)
    return cache


def run(pod: Pod, node: NodeInfo, *objects: Any) -> tuple[Status | None, Status | None]:
    return pre_filter_then_filter(VolumeBinding({}, Handle(snapshot=cache_with(*objects))), pod, node)


def node(name: str = "node-a", **labels: str) -> NodeInfo:
    b = make_node(name)
    for key, value in labels.items():
        b = b.label(key, value)
    return NodeInfo(b.build())


def refusal(volume: int, name: str) -> Status:
    return unresolvable(
        f'spec.volumes[{volume}].persistentVolumeClaim (volume "{name}") needs the VolumeBinding plugin: '
        "binding a WaitForFirstConsumer claim, which spread-scheduler does not do yet"
    )


@pytest.mark.parametrize(
    ("pod", "objects", "want_pre", "want"),
    [
        pytest.param(make_pod("pod-a").build(), [], SKIP, None, id="pod has not pvcs"),
        pytest.param(
            pod_with("pvc-a"),
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pv("pv-a", "wait-sc")],
            None,
            None,
            id="all bound",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [],
            unresolvable('persistentvolumeclaim "pvc-a" not found'),
            None,
            id="PVC does not exist",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
            unresolvable('persistentvolumeclaim "pvc-b" not found'),
            None,
            id="Part of PVCs do not exist",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [pvc("pvc-a", "immediate-sc")],
            unresolvable("pod has unbound immediate PersistentVolumeClaims"),
            None,
            id="immediate claims not bound",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [pvc("pvc-a", "wait-sc")],
            refusal(0, "pvc-a"),
            None,
            id="a waiting claim without a volume binder is refused",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [
                pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                pvc("pvc-b", "wait-sc"),
                pv("pv-a", "wait-sc", {"foo": ["bar"]}),
            ],
            refusal(1, "pvc-b"),
            None,
            id="bound and waiting claims without a volume binder are refused",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
            None,
            unresolvable(ERR_REASON_PV_NOT_EXIST, plugin=VB),
            id="pv not found",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
            unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
            None,
            id="pv not found claim lost",
        ),
    ],
)
def test_volume_binding(pod: Pod, objects: list[Any], want_pre: Status | None, want: Status | None) -> None:
    assert run(pod, node(foo="barbar"), *objects) == (want_pre, want)


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param({HOSTNAME: "node-a"}, None, id="bound-pvc,pv node affinity matches"),
        pytest.param(
            {HOSTNAME: "node-b"}, unresolvable(ERR_REASON_NODE_CONFLICT, plugin=VB), id="bound-pvc,node-mismatch"
        ),
        pytest.param({}, unresolvable(ERR_REASON_NODE_CONFLICT, plugin=VB), id="bound-pvc,node-without-label"),
    ],
)
def test_bound_claims_follow_their_volume(labels: dict[str, str], want: Status | None) -> None:
    """``checkBoundClaims``: the bound PV's node affinity decides (binder_test's bound cases)."""
    objects = [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pv("pv-a", "wait-sc", {HOSTNAME: ["node-a"]})]
    assert run(pod_with("pvc-a"), node("node-x", **labels), *objects) == (None, want)


def test_a_field_requirement_on_the_pv_is_not_checked() -> None:
    """``CheckNodeAffinity`` builds a node from the labels alone: with an empty name the node selector
    leaves ``matchFields`` unchecked (``nodeSelectorTerm.match`` needs node fields), so every node
    passes a PV that names a node by field."""
    volume = PersistentVolume.from_dict(
        {
            "metadata": {"name": "pv-a"},
            "spec": {
                "csi": {"driver": "d", "volumeHandle": "h"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
                        ]
                    }
                },
            },
        }
    )
    _, status = run(pod_with("pvc-a"), node("node-b"), pvc("pvc-a", "wait-sc", bound_pv="pv-a"), volume)
    assert status is None


def test_claims_being_deleted_and_ephemeral_volumes() -> None:
    deleting = pvc("pvc-a", "wait-sc", bound_pv="pv-a", deleting=True)
    assert run(pod_with("pvc-a"), node(), deleting)[0] == unresolvable('persistentvolumeclaim "pvc-a" is being deleted')
    ephemeral = make_pod("p").set("metadata.uid", "u1").volume("v", ephemeral={"volumeClaimTemplate": {"spec": {}}})
    assert run(ephemeral.build(), node())[0] == unresolvable(
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-v"'
    )
    foreign = pvc("p-v", "wait-sc", bound_pv="pv-a", owner="other")
    assert run(ephemeral.build(), node(), foreign, pv("pv-a", "wait-sc"))[0] == unresolvable(
        "PVC default/p-v was not created for pod default/p (pod is not owner)"
    )
    own = pvc("p-v", "wait-sc", bound_pv="pv-a", owner="u1")
    assert run(ephemeral.build(), node(), own, pv("pv-a", "wait-sc")) == (None, None)


def test_a_claim_named_but_not_bound_by_the_controller_is_immediate() -> None:
    """``isPVCFullyBound`` needs the bind-completed annotation; without it a claim naming a volume is
    not delay-binding (its volumeName is set): upstream lists it with the Immediate ones."""
    claim = PersistentVolumeClaim.from_dict(
        {
            "metadata": {"name": "pvc-a", "namespace": "default"},
            "spec": {"storageClassName": "wait-sc", "volumeName": "pv-a"},
        }
    )
    assert run(pod_with("pvc-a"), node(), claim)[0] == unresolvable("pod has unbound immediate PersistentVolumeClaims")


def test_an_in_tree_pv_on_a_migrated_node_is_matched_on_the_csi_topology_key() -> None:
    """``tryTranslatePVToCSI``: where the CSINode lists the plugin, an EBS PV's zone requirement moves
    to ``topology.ebs.csi.aws.com/zone``, which a node without that label does not have."""
    ebs = {"awsElasticBlockStore": {"volumeID": "vol-1"}}
    volume = pv("pv-a", "wait-sc", {"topology.kubernetes.io/zone": ["z1"]}, source=ebs)
    objects = [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), volume]
    plain = node("node-a", **{"topology.kubernetes.io/zone": "z1"})
    assert run(pod_with("pvc-a"), plain, *objects) == (None, None)  # no CSINode: the in-tree PV as it is
    migrated = CSINode.from_dict(
        {
            "metadata": {
                "name": "node-a",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"},
            },
            "spec": {"drivers": []},
        }
    )
    assert run(pod_with("pvc-a"), plain, *objects, migrated)[1] == unresolvable(ERR_REASON_NODE_CONFLICT, plugin=VB)
    csi_labelled = node("node-a", **{"topology.ebs.csi.aws.com/zone": "z1"})
    assert run(pod_with("pvc-a"), csi_labelled, *objects, migrated) == (None, None)
    # A zone label on the PV and no affinity: the requirement is added on the CSI key.
    labelled = pv("pv-a", "wait-sc", labels={"topology.kubernetes.io/zone": "z1__z2"}, source=ebs)
    objects = [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), labelled, migrated]
    assert run(pod_with("pvc-a"), plain, *objects)[1] == unresolvable(ERR_REASON_NODE_CONFLICT, plugin=VB)
    assert run(pod_with("pvc-a"), node("node-a", **{"topology.ebs.csi.aws.com/zone": "z2"}), *objects) == (None, None)


def test_reserve_and_pre_bind_write_nothing_for_bound_claims() -> None:
    import asyncio  # noqa: PLC0415

    cache = cache_with(pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pv("pv-a", "wait-sc"))
    plugin = VolumeBinding({}, Handle(snapshot=cache))
    state = CycleState()
    plugin.pre_filter(state, pod_with("pvc-a"), [node()])
    assert plugin.reserve(state, pod_with("pvc-a"), "node-a") is None
    assert asyncio.run(plugin.pre_bind(state, pod_with("pvc-a"), "node-a")) is None
    assert plugin.pre_bind_pre_flight(state, pod_with("pvc-a"), "node-a") == Status(Code.SKIP)
    plugin.unreserve(state, pod_with("pvc-a"), "node-a")


# -- queueing hints ---------------------------------------------------------------------------

PLUGIN = VolumeBinding({}, Handle())


def test_pvc_hint_queues_for_the_pods_own_claims() -> None:
    pod = make_pod("p").pvc("a", "pvc-a").volume("e", ephemeral={"volumeClaimTemplate": {"spec": {}}}).build()
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, None, pvc("pvc-a", None)) is QUEUE
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, None, pvc("p-e", None)) is QUEUE
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, None, pvc("other", None)) is QUEUE_SKIP
    other_ns = pvc("pvc-a", None, namespace="x")
    assert PLUGIN.is_schedulable_after_persistent_volume_claim_change(pod, None, other_ns) is QUEUE_SKIP


def test_storage_class_hint_queues_on_add_and_topology_changes() -> None:
    pod = pod_with("pvc-a")
    topo = StorageClass.from_dict(
        {
            "metadata": {"name": "wait-sc"},
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
        }
    )
    assert PLUGIN.is_schedulable_after_storage_class_change(pod, None, WAIT_SC) is QUEUE
    assert PLUGIN.is_schedulable_after_storage_class_change(pod, WAIT_SC, WAIT_SC) is QUEUE_SKIP
    assert PLUGIN.is_schedulable_after_storage_class_change(pod, WAIT_SC, topo) is QUEUE


def _csi_node(annotation: str | None) -> CSINode:
    meta: dict[str, Any] = {"name": "n"}
    if annotation is not None:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": annotation}
    return CSINode.from_dict({"metadata": meta, "spec": {"drivers": []}})


def test_csi_node_hint_queues_on_add_and_migration_changes() -> None:
    pod = pod_with("pvc-a")
    assert PLUGIN.is_schedulable_after_csi_node_change(pod, None, _csi_node(None)) is QUEUE
    assert PLUGIN.is_schedulable_after_csi_node_change(pod, _csi_node("a"), _csi_node("a")) is QUEUE_SKIP
    assert PLUGIN.is_schedulable_after_csi_node_change(pod, _csi_node("a"), _csi_node("a,b")) is QUEUE


def _capacity(capacity: str | None, maximum: str | None = None) -> CSIStorageCapacity:
    obj: dict[str, Any] = {"metadata": {"name": "c", "namespace": "default"}, "storageClassName": "wait-sc"}
    if capacity is not None:
        obj["capacity"] = capacity
    if maximum is not None:
        obj["maximumVolumeSize"] = maximum
    return CSIStorageCapacity.from_dict(obj)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, _capacity("1Gi"), QUEUE, id="new capacity"),
        pytest.param(_capacity("1Gi"), _capacity("2Gi"), QUEUE, id="capacity grew"),
        pytest.param(_capacity("2Gi"), _capacity("1Gi"), QUEUE_SKIP, id="capacity shrank"),
        pytest.param(_capacity(None), _capacity("1Gi"), QUEUE, id="capacity appeared"),
        pytest.param(_capacity("5Gi", "1Gi"), _capacity("5Gi", "2Gi"), QUEUE, id="maximum volume size grew"),
        pytest.param(_capacity("1Gi"), _capacity(None), QUEUE_SKIP, id="capacity gone"),
    ],
)
def test_csi_storage_capacity_hint(old: CSIStorageCapacity | None, new: CSIStorageCapacity, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_csi_storage_capacity_change(pod_with("pvc-a"), old, new) is want


def test_pods_with_claims_in_the_pipeline() -> None:
    """Through the default profile: a pod whose claim is bound to a PV of zone a lands in zone a,
    whatever spreading would prefer; VolumeZone and VolumeBinding agree on it."""
    from scheduler.config import load_config  # noqa: PLC0415
    from scheduler.simulate import Simulation  # noqa: PLC0415

    zone = "topology.kubernetes.io/zone"
    nodes = [make_node(f"n-{z}").zone(z).allocatable(cpu="4", memory="8Gi", pods="110").dict() for z in "abc"]
    volume = {
        "kind": "PersistentVolume",
        "metadata": {"name": "pv-a", "labels": {zone: "a"}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "wait-sc",
            "csi": {"driver": "d", "volumeHandle": "h"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": zone, "operator": "In", "values": ["a"]}]}]
                }
            },
        },
    }
    claim = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default", "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "wait-sc", "volumeName": "pv-a"},
        "status": {"phase": "Bound"},
    }
    # n-a is busy: scoring alone would choose another zone (checked without the claim).
    existing = [make_pod(f"e{i}").labels({"app": "db"}).requests(cpu="1500m").node("n-a").dict() for i in range(2)]

    def place(pod: PodBuilder) -> str | None:
        sim = Simulation(load_config(None), seed=0)
        sim.add_objects([*nodes, *existing, volume, claim, pod.dict()])
        (attempt,) = sim.run()
        return attempt.host

    assert place(make_pod("p").labels({"app": "db"})) != "n-a"
    assert place(make_pod("p").labels({"app": "db"}).pvc("data", "data")) == "n-a"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, None),
        ({"bindTimeoutSeconds": 0}, None),
        (
            {"bindTimeoutSeconds": -1},
            "bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
        ),
        ({"bindTimeoutSeconds": "10s"}, "bindTimeoutSeconds: Invalid value: '10s': must be an integer"),
        (
            {"shape": [{"utilization": 0, "score": 0}]},
            "shape: Invalid value: [{'utilization': 0, 'score': 0}]: unexpected field `shape`, remove it or turn on "
            "the feature gate StorageCapacityScoring",
        ),
    ],
)
def test_args_are_validated_at_start(args: dict[str, Any], error: str | None) -> None:
    """``ValidateVolumeBindingArgsWithOptions`` with StorageCapacityScoring off (alpha in 1.35)."""
    from scheduler.config import ConfigError, parse_config  # noqa: PLC0415

    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": "VolumeBinding", "args": args}]}],
    }
    if error is None:
        parse_config(doc)
        return
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert str(info.value) == f"profiles[0].pluginConfig[VolumeBinding].args: {error}"


# -- binding claims that wait for their first consumer (with a volume binder) --------------------


class RecordingBinder:
    """The PreBind writes, recorded."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple[str, str, list[str], list[str]]] = []
        self.fail = fail

    async def bind_pod_volumes(
        self,
        pod: Pod,
        node_name: str,
        bindings: Any,
        provisions: Any,
        timeout: float,
    ) -> None:
        self.calls.append(
            (pod.name, node_name, [f"{c.name}->{v.name}" for c, v in bindings], [c.name for c in provisions])
        )
        if self.fail:
            raise RuntimeError(self.fail)


def binding_plugin(*objects: Any, volume_binder: Any = None) -> tuple[VolumeBinding, Cache]:
    cache = cache_with(*objects)
    handle = Handle(snapshot=cache, volume_binder=volume_binder or RecordingBinder())
    return VolumeBinding({}, handle), cache


def local_pv(name: str, host: str, size: str = "1Gi", class_name: str = "wait-sc") -> PersistentVolume:
    """An Available local PV pinned to one host."""
    return PersistentVolume.from_dict(
        {
            "metadata": {"name": name, "resourceVersion": "10"},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": class_name,
                "local": {"path": "/mnt"},
                "nodeAffinity": affinity_on(HOSTNAME, host),
            },
            "status": {"phase": "Available"},
        }
    )


def affinity_on(key: str, value: str) -> dict[str, Any]:
    expr = {"key": key, "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def host(name: str) -> NodeInfo:
    return node(name, **{HOSTNAME: name})


def waiting(name: str, class_name: str = "wait-sc", size: str = "1Gi") -> PersistentVolumeClaim:
    return PersistentVolumeClaim.from_dict(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "5"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": class_name,
                "resources": {"requests": {"storage": size}},
            },
        }
    )


def test_unbound_claims_no_matches() -> None:
    """Upstream's case of that name: no PV and a class without provisioner ("p" here provisions, so
    the class is replaced by one that cannot): ErrReasonBindConflict."""
    manual = sc("manual", "WaitForFirstConsumer")
    manual = StorageClass.from_dict(
        {
            "metadata": {"name": "manual"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    plugin, _ = binding_plugin(manual, waiting("pvc-a", "manual"))
    state = CycleState()
    assert plugin.pre_filter(state, pod_with("pvc-a"), [host("node-a")]) == (None, None)
    assert plugin.filter(state, pod_with("pvc-a"), host("node-a")) == unresolvable(
        "node(s) didn't find available persistent volumes to bind", plugin=VB
    )


def test_bound_and_unbound_unsatisfied() -> None:
    """Upstream's case: the bound PV's affinity fails and the waiting claim finds nothing: both reasons."""
    manual = StorageClass.from_dict(
        {
            "metadata": {"name": "wait-sc"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    objects = [
        manual,
        pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
        waiting("pvc-b"),
        pv("pv-a", "wait-sc", {"foo": ["bar"]}),
    ]
    plugin, _ = binding_plugin(*objects)
    state = CycleState()
    pod = pod_with("pvc-a", "pvc-b")
    assert plugin.pre_filter(state, pod, [node(foo="barbar")]) == (None, None)
    assert plugin.filter(state, pod, node(foo="barbar")) == unresolvable(
        ERR_REASON_NODE_CONFLICT, "node(s) didn't find available persistent volumes to bind", plugin=VB
    )


def test_a_static_pv_binds_on_its_node_and_is_taken_for_the_next_pod() -> None:
    binder = RecordingBinder()
    manual = StorageClass.from_dict(
        {
            "metadata": {"name": "wait-sc"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    plugin, cache = binding_plugin(
        manual, waiting("pvc-a"), waiting("pvc-b"), local_pv("pv-1", "node-a"), volume_binder=binder
    )
    state = CycleState()
    first = pod_with("pvc-a")
    plugin.pre_filter(state, first, [])
    assert plugin.filter(state, first, host("node-a")) is None
    assert plugin.filter(state, first, host("node-b")) == unresolvable(
        "node(s) didn't find available persistent volumes to bind", plugin=VB
    )
    assert plugin.reserve(state, first, "node-a") is None
    assumed = cache.storage.persistent_volume("pv-1")
    assert assumed is not None and assumed.claim_ref is not None and assumed.claim_ref.name == "pvc-a"
    # The next pod's claim no longer finds the PV (assumed bound to pvc-a).
    second_state = CycleState()
    plugin.pre_filter(second_state, pod_with("pvc-b"), [])
    assert plugin.filter(second_state, pod_with("pvc-b"), host("node-a")) is not None
    import asyncio  # noqa: PLC0415

    assert asyncio.run(plugin.pre_bind(state, first, "node-a")) is None
    assert binder.calls == [("pod-a", "node-a", ["pvc-a->pv-1"], [])]
    plugin.unreserve(state, first, "node-a")  # a failure later: the PV is free again
    again = CycleState()
    plugin.pre_filter(again, pod_with("pvc-b"), [])
    assert plugin.filter(again, pod_with("pvc-b"), host("node-a")) is None


def test_dynamic_provisioning_topology_and_capacity() -> None:
    """``checkVolumeProvisions``: a provisioner, allowedTopologies, CSIStorageCapacity."""
    zonal = StorageClass.from_dict(
        {
            "metadata": {"name": "zonal"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
        }
    )
    binder = RecordingBinder()
    plugin, cache = binding_plugin(zonal, waiting("pvc-a", "zonal", "5Gi"), volume_binder=binder)
    state = CycleState()
    plugin.pre_filter(state, pod_with("pvc-a"), [])
    in_a, in_b = node("n-a", zone="a"), node("n-b", zone="b")
    assert plugin.filter(state, pod_with("pvc-a"), in_a) is None
    assert plugin.filter(state, pod_with("pvc-a"), in_b) == unresolvable(
        "node(s) didn't find available persistent volumes to bind", plugin=VB
    )
    assert plugin.reserve(state, pod_with("pvc-a"), "n-a") is None
    selected = cache.storage.persistent_volume_claim("default", "pvc-a")
    assert selected is not None and selected.annotations["volume.kubernetes.io/selected-node"] == "n-a"
    import asyncio  # noqa: PLC0415

    assert asyncio.run(plugin.pre_bind(state, pod_with("pvc-a"), "n-a")) is None
    assert binder.calls == [("pod-a", "n-a", [], ["pvc-a"])]
    # A driver that publishes capacity: only a CSIStorageCapacity of the class, big enough, whose
    # topology selects the node lets it provision there.
    from scheduler.api.storage import CSIDriver  # noqa: PLC0415

    cache.storage.upsert(
        CSIDriver.from_dict({"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}})
    )
    plugin.unreserve(state, pod_with("pvc-a"), "n-a")
    state = CycleState()
    plugin.pre_filter(state, pod_with("pvc-a"), [])
    assert plugin.filter(state, pod_with("pvc-a"), in_a) == unresolvable(
        "node(s) did not have enough free storage", plugin=VB
    )
    cache.storage.upsert(
        CSIStorageCapacity.from_dict(
            {
                "metadata": {"name": "cap", "namespace": "default"},
                "storageClassName": "zonal",
                "capacity": "10Gi",
                "nodeTopology": {"matchLabels": {"zone": "a"}},
            }
        )
    )
    assert plugin.filter(state, pod_with("pvc-a"), in_a) is None


def test_a_failed_pre_bind_says_why() -> None:
    manual = StorageClass.from_dict(
        {
            "metadata": {"name": "wait-sc"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    plugin, _ = binding_plugin(
        manual, waiting("pvc-a"), local_pv("pv-1", "node-a"), volume_binder=RecordingBinder("409 Conflict")
    )
    state = CycleState()
    plugin.pre_filter(state, pod_with("pvc-a"), [])
    plugin.filter(state, pod_with("pvc-a"), host("node-a"))
    plugin.reserve(state, pod_with("pvc-a"), "node-a")
    import asyncio  # noqa: PLC0415

    assert plugin.pre_bind_pre_flight(state, pod_with("pvc-a"), "node-a") is None  # PreBind has work
    status = asyncio.run(plugin.pre_bind(state, pod_with("pvc-a"), "node-a"))
    assert status is not None and status.code is Code.ERROR and "binding volumes: 409 Conflict" in status.message()


def test_simulate_binds_a_statefulset_one_claim_per_zone() -> None:
    """Three replicas, each with its WaitForFirstConsumer claim, hard zone spread, local PVs on a node
    of each zone: one per zone, each claim bound to a PV on its pod's node."""
    from scheduler.config import load_config  # noqa: PLC0415
    from scheduler.simulate import Simulation  # noqa: PLC0415

    zone = "topology.kubernetes.io/zone"
    objects: list[dict[str, Any]] = [
        {
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    ]
    for z in "abc":
        for i in range(2):
            name = f"n-{z}{i}"
            objects.append(
                make_node(name).zone(z).label(HOSTNAME, name).allocatable(cpu="4", memory="8Gi", pods="110").dict()
            )
            if i == 0:
                objects.append(
                    {
                        "kind": "PersistentVolume",
                        "metadata": {"name": f"pv-{z}"},
                        "spec": {
                            "capacity": {"storage": "1Gi"},
                            "accessModes": ["ReadWriteOnce"],
                            "storageClassName": "local",
                            "local": {"path": "/mnt"},
                            "nodeAffinity": affinity_on(HOSTNAME, name),
                        },
                        "status": {"phase": "Available"},
                    }
                )
    for r in range(3):
        objects.append(
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"data-db-{r}", "namespace": "default", "uid": f"u{r}"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "local",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )
        pod = make_pod(f"db-{r}").labels({"app": "db"}).spread(zone, 1, match={"app": "db"}).pvc("data", f"data-db-{r}")
        objects.append(pod.dict())
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(objects)
    results = sim.run()
    hosts = {a.pod.name: a.host for a in results}
    assert sorted(h[2] for h in hosts.values() if h) == ["a", "b", "c"], hosts
    for r in range(3):
        claim = sim.cache.storage.persistent_volume_claim("default", f"data-db-{r}")
        assert claim is not None and claim.volume_name == f"pv-{hosts[f'db-{r}'][2]}"


def test_bad_storage_objects_are_named_and_other_pods_still_bind() -> None:
    """Objects the API server refuses, from a file: a PV with a malformed node affinity, a class with
    an unknown binding mode, a claim naming a class that does not exist. Each is reported with its
    field, the pods using them get upstream's reasons, nothing crashes, a plain pod binds."""
    from scheduler.config import load_config  # noqa: PLC0415
    from scheduler.simulate import Simulation  # noqa: PLC0415

    bad_affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]}}
    objects: list[dict[str, Any]] = [
        make_node("n1").allocatable(cpu="4", memory="8Gi", pods="110").dict(),
        {"kind": "StorageClass", "metadata": {"name": "odd"}, "provisioner": "p", "volumeBindingMode": "Later"},
        {
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-bad"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "d", "volumeHandle": "h"},
                "nodeAffinity": bad_affinity,
            },
        },
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "on-bad-pv",
                "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-bad"},
        },
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "odd-class", "namespace": "default"},
            "spec": {"storageClassName": "odd"},
        },
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "no-class", "namespace": "default"},
            "spec": {"storageClassName": "gone"},
        },
        make_pod("uses-bad-pv").pvc("v", "on-bad-pv").dict(),
        make_pod("uses-odd-class").pvc("v", "odd-class").dict(),
        make_pod("uses-missing-class").pvc("v", "no-class").dict(),
        make_pod("plain").dict(),
    ]
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(objects)
    problems = {p.what: p.message for p in sim.problems}
    assert "volumeBindingMode" in problems["StorageClass odd"]
    assert (
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator"
        in problems["PersistentVolume pv-bad"]
    )
    results = {a.pod.name: a for a in sim.run()}
    assert results["plain"].host == "n1"
    # The term the API server would refuse matches no node, as upstream's selector skips it.
    assert results["uses-bad-pv"].message.startswith(
        "0/1 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity. "
    )
    # An unknown mode is not WaitForFirstConsumer, a missing class neither: Immediate, as upstream reads them.
    for name in ("uses-odd-class", "uses-missing-class"):
        assert results[name].message == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."


# -- StorageCapacityScoring (beta on from 1.37): upstream v1.37.2's TestVolumeBinding score cases --------

NODE_LABEL = "topology.kubernetes.io/node"  # upstream's nodeLabelKey
CAPACITY_SC = StorageClass.from_dict(
    {"metadata": {"name": "wait-sc-with-storage-capacity"}, "provisioner": "driver-with-storage-capacity",
     "volumeBindingMode": "WaitForFirstConsumer"}
)  # fmt: skip
CAPACITY_DRIVER = {"metadata": {"name": "driver-with-storage-capacity"}, "spec": {"storageCapacity": True}}


def _node_capacity(node_name: str, size: str) -> CSIStorageCapacity:
    """Upstream's ``makeCapacity(name, class, node, capacity, "")``: topology selects the node's label."""
    return CSIStorageCapacity.from_dict(
        {
            "metadata": {"name": node_name, "namespace": "default"},
            "storageClassName": CAPACITY_SC.name,
            "capacity": size,
            "nodeTopology": {"matchLabels": {NODE_LABEL: node_name}},
        }
    )


def _scores(minor: str, pod: Pod, nodes: list[str], *objects: Any, args: dict[str, Any] | None = None) -> list[int]:
    from scheduler.api.storage import CSIDriver  # noqa: PLC0415
    from scheduler.features import features_at  # noqa: PLC0415
    from scheduler.plugins.registry import registry  # noqa: PLC0415

    cache = cache_with(CAPACITY_SC, CSIDriver.from_dict(CAPACITY_DRIVER), *objects)
    features = features_at(minor)
    plugin: Any = registry(features)[VB](args or {}, Handle(snapshot=cache, volume_binder=RecordingBinder()), features)
    infos = [node(name, **{NODE_LABEL: name}) for name in nodes]
    state = CycleState()
    assert plugin.pre_filter(state, pod, infos) == (None, None)
    assert [plugin.filter(state, pod, info) for info in infos] == [None] * len(infos)
    if not hasattr(plugin, "score"):
        return []
    assert plugin.pre_score(state, pod, infos) is None
    return [plugin.score(state, pod, info) for info in infos]


THREE = ["node-a", "node-b", "node-c"]
CAPACITIES = (_node_capacity("node-a", "100Gi"), _node_capacity("node-b", "50Gi"), _node_capacity("node-c", "10Gi"))
FAVOUR_FULL = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}


@pytest.mark.parametrize(
    ("claims", "objects", "nodes", "args", "want"),
    [
        pytest.param([waiting("pvc-dynamic", CAPACITY_SC.name, "10Gi")], CAPACITIES, THREE, None, [90, 80, 0],
                     id="storage capacity score"),
        pytest.param(
            [waiting("pvc-dynamic", CAPACITY_SC.name, "10Gi"), waiting("pvc-static", "wait-sc", "50Gi")],
            (*CAPACITIES, *(local_pv(f"pv-static-{n[-1]}", n, "100Gi") for n in THREE)),
            THREE, None, [50, 50, 50],
            id="storage capacity score with static binds",
        ),
        pytest.param(
            [waiting("pvc-dynamic-0", CAPACITY_SC.name, "50Gi"), waiting("pvc-dynamic-1", CAPACITY_SC.name, "50Gi")],
            (_node_capacity("node-a", "100Gi"),), ["node-a"], None, [0],
            id="dynamic provisioning with multiple PVCs of the same StorageClass",
        ),
        pytest.param(
            [waiting("pvc-dynamic", CAPACITY_SC.name, "10Gi")],
            (_node_capacity("node-a", "100Gi"), _node_capacity("node-b", "20Gi"), _node_capacity("node-c", "10Gi")),
            THREE, FAVOUR_FULL, [10, 50, 100], id="prefer node with least allocatable",
        ),
        pytest.param(
            [waiting("pvc-dynamic", CAPACITY_SC.name, "10Gi")],
            (_node_capacity("node-a", "100Gi"), _node_capacity("node-b", "20Gi"), _node_capacity("node-c", "10Gi")),
            THREE, None, [90, 50, 0], id="prefer node with maximum allocatable",
        ),
    ],
)  # fmt: skip
def test_storage_capacity_scoring(
    claims: list[PersistentVolumeClaim],
    objects: tuple[Any, ...],
    nodes: list[str],
    args: dict[str, Any] | None,
    want: list[int],
) -> None:
    pod = pod_with(*(c.name for c in claims))
    assert _scores("1.37", pod, nodes, *claims, *objects, args=args) == want
    assert _scores("1.36", pod, nodes, *claims, *objects) == []  # gate off: no Score at all


def test_the_shape_is_validated_with_the_gate() -> None:
    from scheduler.config import ConfigError, parse_config  # noqa: PLC0415
    from scheduler.features import features_at  # noqa: PLC0415

    bad = {"shape": [{"utilization": 50, "score": 11}, {"utilization": 10, "score": 0}]}
    doc = {"profiles": [{"schedulerName": "s", "pluginConfig": [{"name": VB, "args": bad}]}]}
    with pytest.raises(ConfigError) as info:
        parse_config(doc, features=features_at("1.37"))
    assert str(info.value) == (
        f"profiles[0].pluginConfig[{VB}].args: [shape[1].utilization: Invalid value: 10: values must be sorted in "
        "increasing order, shape[0].score: Invalid value: 11: not in valid range [0, 10]]"
    )
    with pytest.raises(ConfigError, match="turn on the feature gate StorageCapacityScoring"):
        parse_config(doc, features=features_at("1.36"))


def _capacity_cluster() -> list[dict[str, Any]]:
    """Three nodes whose CSIStorageCapacity for class "fast" leaves 100Gi, 12Gi and 11Gi; the pod's
    WaitForFirstConsumer claim asks 10Gi. Node a has the least cpu (3, 5, 4), so the resource
    scores rank b first; b and c are nearly full for the claim."""
    objects: list[dict[str, Any]] = [
        make_node(name).capacity(cpu=cpu, memory="8Gi", pods="110").label(NODE_LABEL, name).dict()
        for name, cpu in (("a", "3"), ("b", "5"), ("c", "4"))
    ]
    objects += [
        {"kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "csi.example.com",
         "volumeBindingMode": "WaitForFirstConsumer"},
        {"kind": "CSIDriver", "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}},
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                  "resources": {"requests": {"storage": "10Gi"}}}},
    ]  # fmt: skip
    objects += [
        {"kind": "CSIStorageCapacity", "metadata": {"name": name, "namespace": "default"},
         "storageClassName": "fast", "capacity": size, "nodeTopology": {"matchLabels": {NODE_LABEL: name}}}
        for name, size in (("a", "100Gi"), ("b", "12Gi"), ("c", "11Gi"))
    ]  # fmt: skip
    return [*objects, make_pod("p").requests(cpu="1", memory="1Gi").pvc("data", "data").dict()]


@pytest.mark.parametrize(("minor", "node"), [("1.35", "b"), ("1.36", "b"), ("1.37", "a")])
def test_1_37_storage_capacity_scoring_prefers_the_emptiest_node(minor: str, node: str) -> None:
    """Issue #47's row "StorageCapacityScoring 1.37": with the gate on (beta from 1.37, v1.37.2
    pkg/features/kube_features.go) VolumeBinding scores each node by the utilization the claim would
    leave (volumebinding/scorer.go ``buildScorerFunction``, default shape emptier is better:
    10*100/100 -> 90, 10*100/12 -> 17, 10*100/11 -> 10), enough to move the pod from b, where the
    resource scores put it up to 1.36, to a."""
    from scheduler.config import load_config  # noqa: PLC0415
    from scheduler.features import features_at  # noqa: PLC0415
    from scheduler.simulate import Simulation  # noqa: PLC0415

    sim = Simulation(load_config(None, features_at(minor)), seed=0)
    sim.add_objects(_capacity_cluster())
    (attempt,) = sim.run()
    assert attempt.host == node
    if minor == "1.37":
        scores = next(s for s in attempt.scores if s.plugin == VB)
        assert dict(zip(attempt.scored_nodes, scores.raw, strict=True)) == {"a": 90, "b": 17, "c": 10}
