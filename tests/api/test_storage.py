"""Storage objects as the volume plugins read them (issue #18): what is kept, and bad input named by
field (the API server's paths) while the object still parses."""

from __future__ import annotations

from fractions import Fraction

from scheduler.api.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

ZONE = "topology.kubernetes.io/zone"


def pv(**spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"}, "spec": spec}


def test_a_local_pv_with_node_affinity_and_a_claim() -> None:
    parsed = PersistentVolume.from_dict(
        pv(
            capacity={"storage": "10Gi"},
            accessModes=["ReadWriteOnce"],
            storageClassName="local",
            claimRef={"namespace": "db", "name": "data-0", "uid": "u1"},
            nodeAffinity={
                "required": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}]
                }
            },
            local={"path": "/mnt/disk"},
        )
        | {"status": {"phase": "Bound"}}
    )
    assert parsed.errors == ()
    assert parsed.capacity == Fraction(10 * 2**30)
    assert parsed.access_modes == frozenset({"ReadWriteOnce"})
    assert parsed.claim_ref == ClaimRef("db", "data-0", "u1")
    assert parsed.node_affinity is not None and parsed.node_affinity.matches("n1", {ZONE: "a"})
    assert not parsed.node_affinity.matches("n1", {ZONE: "b"})
    assert (parsed.phase, parsed.storage_class, parsed.volume_mode, parsed.sources) == (
        "Bound",
        "local",
        "Filesystem",
        frozenset({"local"}),
    )


def test_the_beta_annotation_names_the_class_first() -> None:
    raw = pv(storageClassName="spec-class")
    raw["metadata"] = {"name": "pv-a", "annotations": {BETA_STORAGE_CLASS_ANNOTATION: "beta-class"}}
    assert PersistentVolume.from_dict(raw).storage_class == "beta-class"
    claim = PersistentVolumeClaim.from_dict({"metadata": {"name": "c", "namespace": "ns"}, "spec": {}})
    assert (claim.storage_class, claim.storage_class_name) == ("", None)


def test_bad_input_names_the_field() -> None:
    bad_pv = PersistentVolume.from_dict(
        pv(
            capacity={"storage": "ten gigs"},
            accessModes=["ReadWriteSometimes"],
            nodeAffinity={"required": {"nodeSelectorTerms": []}},
        )
    )
    paths = [e.path for e in bad_pv.errors]
    assert paths == ["spec.capacity.storage", "spec.accessModes[0]", "spec.nodeAffinity.required.nodeSelectorTerms"]
    bad_class = StorageClass.from_dict({"metadata": {"name": "fast"}, "volumeBindingMode": "Whenever"})
    assert [str(e) for e in bad_class.errors] == [
        'volumeBindingMode: Unsupported value: "Whenever": supported values: "Immediate", "WaitForFirstConsumer"'
    ]
    bad_claim = PersistentVolumeClaim.from_dict(
        {"metadata": {"name": "c"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}
    )
    assert [e.path for e in bad_claim.errors] == ["spec.selector.matchExpressions[0].operator"]
    assert PersistentVolume.from_dict("not an object").errors[0].path == "persistentVolume"


def test_claim_fields() -> None:
    claim = PersistentVolumeClaim.from_dict(
        {
            "metadata": {"name": "data-0", "namespace": "db", "uid": "u1"},
            "spec": {
                "accessModes": ["ReadWriteOncePod"],
                "storageClassName": "local",
                "resources": {"requests": {"storage": "5Gi"}},
                "selector": {"matchLabels": {"tier": "fast"}},
                "volumeMode": "Block",
            },
            "status": {"phase": "Pending"},
        }
    )
    assert claim.errors == ()
    assert (claim.key, claim.request, claim.volume_mode, claim.phase) == (
        "db/data-0",
        Fraction(5 * 2**30),
        "Block",
        "Pending",
    )
    assert claim.selector is not None and claim.selector.matches({"tier": "fast"})


def test_csi_objects() -> None:
    node = CSINode.from_dict(
        {
            "metadata": {"name": "n1"},
            "spec": {
                "drivers": [
                    {"name": "ebs.csi.aws.com", "nodeID": "i-1", "topologyKeys": [ZONE], "allocatable": {"count": 25}}
                ]
            },
        }
    )
    assert node.errors == () and node.drivers[0].allocatable_count == 25 and node.drivers[0].topology_keys == (ZONE,)
    assert CSIDriver.from_dict({"metadata": {"name": "d"}, "spec": {}}).attach_required is True
    assert CSIDriver.from_dict({"metadata": {"name": "d"}, "spec": {"attachRequired": False}}).attach_required is False
    capacity = CSIStorageCapacity.from_dict(
        {
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "fast",
            "nodeTopology": {"matchLabels": {ZONE: "a"}},
            "capacity": "100Gi",
        }
    )
    assert capacity.errors == () and capacity.capacity == Fraction(100 * 2**30)
    assert capacity.node_topology is not None and capacity.node_topology.matches({ZONE: "a"})
