"""Storage objects from the watch into the cache: lookups like a lister's, the events the queue gets,
relists that change nothing, bad input kept with a warning; and simulate reading them from files."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.storage import DEVICE_CLASS_PREFIX, DeviceClass, PersistentVolumeClaim, StorageClass, not_found
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.storage_objects import STORAGE_KINDS, StorageObjects
from scheduler.config import load_config
from scheduler.eventhandlers import EventHandlers, HeldChanges
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.simulate import Simulation


def claim(name: str, version: str = "1", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "resourceVersion": version}
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


class RecordingQueue:
    """The queue's one method storage events reach, recorded."""

    def __init__(self) -> None:
        self.moves: list[tuple[ClusterEvent, object, object]] = []

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: object, new: object) -> None:
        self.moves.append((event, old, new))


def handlers() -> tuple[EventHandlers, Cache, RecordingQueue]:
    cache, queue = Cache(), RecordingQueue()
    return EventHandlers(cache, queue, {}, HeldChanges()), cache, queue  # type: ignore[arg-type]


def test_lookups_are_keyed_like_a_listers() -> None:
    store = StorageObjects()
    store.upsert(PersistentVolumeClaim.from_dict(claim("data", namespace="a")))
    assert store.persistent_volume_claim("a", "data") is not None
    assert store.persistent_volume_claim("b", "data") is None  # another namespace's claim is not ours
    assert store.storage_class("data") is None
    assert set(STORAGE_KINDS) == {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "DeviceTaintRule",
    }


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("PersistentVolumeClaim", 'persistentvolumeclaim "x" not found'),
        ("PersistentVolume", 'persistentvolume "x" not found'),
        ("StorageClass", 'storageclass.storage.k8s.io "x" not found'),
        ("CSINode", 'csinode.storage.k8s.io "x" not found'),
    ],
)
def test_not_found_is_client_gos_lister_text(kind: str, text: str) -> None:
    """``apierrors.NewNotFound(<group>.Resource("<kind>"), name)``, as client-go v0.35.4's listers."""
    assert not_found(kind, "x") == text


def test_add_update_delete_reach_the_queue_with_old_and_new() -> None:
    h, cache, queue = handlers()
    h.on_object("ADDED", claim("data", "1"))
    h.on_object("MODIFIED", claim("data", "1"))  # a relist: the same version again
    h.on_object("MODIFIED", claim("data", "2", volumeName="pv-1"))
    h.on_object("DELETED", claim("data", "2", volumeName="pv-1"))
    h.on_object("DELETED", claim("data", "2"))  # already gone: nothing
    events = [(e.resource, e.action) for e, _, _ in queue.moves]
    pvc = EventResource.PERSISTENT_VOLUME_CLAIM
    assert events == [(pvc, ActionType.ADD), (pvc, ActionType.UPDATE), (pvc, ActionType.DELETE)]
    (_, old_add, new_add), (_, old_update, new_update), (_, old_delete, new_delete) = queue.moves
    assert old_add is None and isinstance(new_add, PersistentVolumeClaim)
    assert isinstance(old_update, PersistentVolumeClaim) and old_update.volume_name == ""
    assert isinstance(new_update, PersistentVolumeClaim) and new_update.volume_name == "pv-1"
    assert isinstance(old_delete, PersistentVolumeClaim) and new_delete is None
    assert cache.storage.persistent_volume_claim("default", "data") is None
    assert str(queue.moves[0][0]) == "PersistentVolumeClaimAdd"  # upstream's ClusterEvent.Label()


def test_cluster_scoped_kinds_and_their_labels() -> None:
    h, cache, queue = handlers()
    h.on_object("ADDED", {"kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "p"})
    h.on_object("ADDED", {"kind": "CSINode", "metadata": {"name": "n1"}, "spec": {"drivers": []}})
    assert isinstance(cache.storage.storage_class("fast"), StorageClass)
    assert cache.storage.csi_node("n1") is not None
    assert [str(e) for e, _, _ in queue.moves] == ["storage.k8s.io/StorageClassAdd", "storage.k8s.io/CSINodeAdd"]


def test_an_invalid_object_is_kept_with_a_warning_and_one_without_a_name_is_dropped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The API server refuses both; from a file or a future field they must not stop the scheduler."""
    h, cache, queue = handlers()
    h.on_object("ADDED", {"kind": "StorageClass", "metadata": {"name": "odd"}, "volumeBindingMode": "Later"})
    h.on_object("ADDED", {"kind": "PersistentVolume", "metadata": {}, "spec": {}})
    captured = capsys.readouterr()
    out = captured.out + captured.err  # stdout under structlog's defaults, stderr once logs.configure ran
    assert "StorageClass has invalid fields" in out and "volumeBindingMode" in out
    assert "without a name" in out
    assert cache.storage.storage_class("odd") is not None
    assert len(queue.moves) == 1


def test_simulate_reads_storage_objects_and_names_bad_fields() -> None:
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(
        [
            claim("data"),
            {"kind": "StorageClass", "metadata": {"name": "odd"}, "volumeBindingMode": "Later"},
            {"kind": "PersistentVolume", "metadata": {}, "spec": {}},
        ]
    )
    assert sim.cache.storage.persistent_volume_claim("default", "data") is not None
    assert not sim.unused_kinds
    problems = {p.what: (p.message, p.skipped) for p in sim.problems}
    assert problems["StorageClass odd"] == (
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
        False,
    )
    assert problems["PersistentVolume"] == ("metadata.name: Required value", True)


def test_an_assumed_version_is_seen_until_the_watch_brings_it_or_newer() -> None:
    """VolumeBinding's assume cache: Reserve's version hides the watch's older one; the watch's write
    of it (or anything newer) replaces it; Restore drops it at once; ``api_object`` is the watch's."""
    store = StorageObjects()
    store.upsert(PersistentVolumeClaim.from_dict(claim("data", "5")), "5")
    assumed = PersistentVolumeClaim.from_dict(
        {**claim("data", "5"), "metadata": {**claim("data", "5")["metadata"], "annotations": {"x": "y"}}}
    )
    store.assume(assumed, "5")
    assert store.persistent_volume_claim("default", "data") is assumed
    api = store.api_object("PersistentVolumeClaim", "default/data")
    assert isinstance(api, PersistentVolumeClaim) and api is not assumed
    store.upsert(PersistentVolumeClaim.from_dict(claim("data", "4")), "4")  # older: ignored for lookups
    assert store.persistent_volume_claim("default", "data") is assumed
    newer = PersistentVolumeClaim.from_dict(claim("data", "6"))
    store.upsert(newer, "6")
    assert store.persistent_volume_claim("default", "data") is newer
    store.assume(assumed, "6")
    store.restore(assumed)
    assert store.persistent_volume_claim("default", "data") is newer


class TestExtendedResourceNamesKeptAsUpstreams:
    """Upstream's ExtendedResourceCache depends on the order classes arrive in (scenarios from the
    differential test, seed 6000643 at 1.36: an older class arriving after a newer one that holds its
    extendedResourceName is not recorded at all, not even under its implicit name)."""

    @staticmethod
    def cls(name: str, resource: str | None, created: str) -> DeviceClass:
        return DeviceClass(name=name, extended_resource_name=resource, created=created)

    def test_an_older_class_arriving_second_keeps_no_name(self) -> None:
        store = StorageObjects()
        store.upsert(self.cls("new", "x.io/gpu", "2026-01-02T00:00:00Z"))
        store.upsert(self.cls("old", "x.io/gpu", "2026-01-01T00:00:00Z"))
        assert store.device_class_for("x.io/gpu").name == "new"  # type: ignore[union-attr]
        assert store.device_class_for(DEVICE_CLASS_PREFIX + "old") is None

    def test_arriving_first_it_keeps_its_implicit_name(self) -> None:
        store = StorageObjects()
        store.upsert(self.cls("old", "x.io/gpu", "2026-01-01T00:00:00Z"))
        store.upsert(self.cls("new", "x.io/gpu", "2026-01-02T00:00:00Z"))
        assert store.device_class_for("x.io/gpu").name == "new"  # type: ignore[union-attr]
        assert store.device_class_for(DEVICE_CLASS_PREFIX + "old").name == "old"  # type: ignore[union-attr]

    def test_the_winner_deleted_leaves_the_name_unbacked(self) -> None:
        store = StorageObjects()
        store.upsert(self.cls("old", "x.io/gpu", "2026-01-01T00:00:00Z"))
        newer = self.cls("new", "x.io/gpu", "2026-01-02T00:00:00Z")
        store.upsert(newer)
        store.remove(newer)
        assert store.device_class_for("x.io/gpu") is None
        assert store.device_class_for(DEVICE_CLASS_PREFIX + "old").name == "old"  # type: ignore[union-attr]

    def test_a_class_renamed_away_drops_its_old_name(self) -> None:
        store = StorageObjects()
        store.upsert(self.cls("gpu", "x.io/gpu", "2026-01-01T00:00:00Z"))
        store.upsert(self.cls("gpu", "x.io/other", "2026-01-01T00:00:00Z"))
        assert store.device_class_for("x.io/gpu") is None
        assert store.device_class_for("x.io/other").name == "gpu"  # type: ignore[union-attr]
