"""The volume binder's static matching (component-helpers ``FindMatchingVolume``), which VolumeBinding
will use to bind WaitForFirstConsumer claims (issue #18's next step; PreFilter refuses such claims
until PreBind's writes land).

Ported from component-helpers v0.35.4 ``storage/volume/pv_helpers_test.go`` (TestFindMatchVolumeWithNode,
VolumeAttributesClass on as in 1.35; ids are upstream's scenario names; a volume is named by the UID
upstream's test checks).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.plugins.volumebinding.binder import find_matching_volume


def volume(uid: str, name: str, capacity: str, available: bool, **spec: Any) -> PersistentVolume:
    """Upstream's ``makeTestVolume``: a local PV, RWO+ROX, Filesystem."""
    body: dict[str, Any] = {
        "capacity": {"storage": capacity},
        "local": {"path": "/mnt"},
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "volumeMode": "Filesystem",
        **spec,
    }
    status = {"phase": "Available"} if available else {}
    return PersistentVolume.from_dict({"metadata": {"name": uid, "uid": name}, "spec": body, "status": status})


def affinity(key: str, value: str) -> dict[str, Any]:
    expr = {"key": key, "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


VOLUMES = [
    volume("local-small", "local001", "5G", True),
    volume("local-pd-very-large", "local002", "200E", True, storageClassName="large"),
    volume(
        "affinity-pv", "affinity001", "100G", True, storageClassName="wait", nodeAffinity=affinity("key1", "value1")
    ),
    volume(
        "affinity-pv2", "affinity002", "150G", True, storageClassName="wait", nodeAffinity=affinity("key1", "value1")
    ),
    volume(
        "affinity-prebound",
        "affinity003",
        "100G",
        True,
        storageClassName="wait",
        claimRef={"name": "claim02", "namespace": "myns"},
        nodeAffinity=affinity("key1", "value1"),
    ),
    volume(
        "affinity-pv3", "affinity003", "200G", True, storageClassName="wait", nodeAffinity=affinity("key1", "value3")
    ),
    volume(
        "affinity-pv4", "affinity004", "200G", False, storageClassName="wait", nodeAffinity=affinity("key1", "value4")
    ),
]


def with_vac(name: str) -> list[PersistentVolume]:
    return [
        PersistentVolume.from_dict(
            {**pv.raw, "spec": {**pv.raw["spec"], "volumeAttributesClassName": name}, "status": pv.raw.get("status")}
        )
        for pv in VOLUMES
    ]


def claim(name: str, size: str, modes: list[str], vac: str | None = None) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {
        "accessModes": modes,
        "resources": {"requests": {"storage": size}},
        "storageClassName": "wait",
        "volumeMode": "Filesystem",
    }
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return PersistentVolumeClaim.from_dict({"metadata": {"name": name, "namespace": "myns"}, "spec": spec})


RWO, RWX = ["ReadWriteOnce"], ["ReadWriteMany"]


@pytest.mark.parametrize(
    ("expected", "volumes", "pvc", "value", "excluded"),
    [
        pytest.param("affinity-pv", VOLUMES, claim("claim01", "100G", RWO), "value1", set(), id="success-match"),
        pytest.param(
            "affinity-prebound", VOLUMES, claim("claim02", "100G", RWO), "value1", set(), id="success-prebound"
        ),
        pytest.param(
            "affinity-pv2", VOLUMES, claim("claim01", "100G", RWO), "value1", {"affinity001"}, id="success-exclusion"
        ),
        pytest.param(
            None,
            VOLUMES,
            claim("claim01", "100G", RWO),
            "value1",
            {"affinity001", "affinity002", "affinity002-vac"},
            id="fail-exclusion",
        ),
        pytest.param(None, VOLUMES, claim("claim01", "100G", RWX), "value1", set(), id="fail-accessmode"),
        pytest.param(None, VOLUMES, claim("claim01", "100G", RWO), "value2", set(), id="fail-nodeaffinity"),
        pytest.param(None, VOLUMES, claim("claim02", "100G", RWO), "value3", set(), id="fail-prebound-node-affinity"),
        pytest.param(None, VOLUMES, claim("claim04", "100G", RWO), "value4", set(), id="fail-nonavaliable"),
        pytest.param(
            "affinity-pv3",
            VOLUMES,
            claim("claim03", "100G", RWO),
            "value3",
            set(),
            id="success-bad-and-good-node-affinity",
        ),
        pytest.param(
            "affinity-pv",
            with_vac("gold"),
            claim("claim01", "100G", RWO, "gold"),
            "value1",
            set(),
            id="success-match-with-vac",
        ),
        pytest.param(None, VOLUMES, claim("claim01", "100G", RWO, "silver"), "value1", set(), id="fail-vac"),
        pytest.param(
            None, with_vac("gold"), claim("claim02", "100G", RWO, "silver"), "value1", set(), id="fail-prebound-vac"
        ),
    ],
)
def test_find_match_volume_with_node(
    expected: str | None, volumes: list[PersistentVolume], pvc: PersistentVolumeClaim, value: str, excluded: set[str]
) -> None:
    # Upstream's test excludes by the volumes' names ("affinity001"), which are our uids: map them.
    names = {pv.raw["metadata"]["uid"]: pv.name for pv in volumes}
    excluded_names = {names.get(e, e) for e in excluded}
    found = find_matching_volume(pvc, volumes, {"key1": value}, excluded_names)
    assert (found.name if found else None) == expected


def test_the_first_of_equal_size_wins_and_a_selector_filters() -> None:
    a = volume("a", "a", "10G", True, storageClassName="wait")
    b = volume("b", "b", "10G", True, storageClassName="wait")
    labelled = PersistentVolume.from_dict(
        {**b.raw, "metadata": {"name": "b", "labels": {"tier": "fast"}}, "status": {"phase": "Available"}}
    )
    assert find_matching_volume(claim("c", "1G", RWO), [a, b], {}) == a
    selecting = PersistentVolumeClaim.from_dict(
        {
            "metadata": {"name": "c", "namespace": "myns"},
            "spec": {
                "accessModes": RWO,
                "resources": {"requests": {"storage": "1G"}},
                "storageClassName": "wait",
                "selector": {"matchLabels": {"tier": "fast"}},
            },
        }
    )
    found = find_matching_volume(selecting, [a, labelled], {})
    assert found is not None and found.name == "b"
