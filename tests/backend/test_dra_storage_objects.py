"""DynamicResources' objects in the cache's storage objects: ResourceSlices by node (and those
without a node apart), claims and templates by namespace/name, each read as the cluster's minor;
the events upstream's informers send for slices and claims, none for templates; bad input kept with
a warning naming the field, the other objects unaffected."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from scheduler.api.resourceclaim import ResourceClaim, ResourceClaimTemplate
from scheduler.api.resourceslice import ResourceSlice
from scheduler.api.storage import VolumeAttachment
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.config import load_config
from scheduler.eventhandlers import EventHandlers, HeldChanges
from scheduler.features import SUPPORTED, features_at
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.simulate import Simulation


def resource_slice(name: str, version: str = "1", *, node: str | None = "node-1", **spec: Any) -> dict[str, Any]:
    """A slice of one device; on ``node``, or placed by ``spec`` (``allNodes``, ``nodeSelector``...)."""
    body: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}, "capacity": {"memory": {"value": "80Gi"}}}
        ],
    }
    if node is not None:
        body["nodeName"] = node
    body.update(spec)
    return {"kind": "ResourceSlice", "metadata": {"name": name, "resourceVersion": version}, "spec": body}


def resource_claim(name: str, version: str = "1", namespace: str = "team-a") -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "resourceVersion": version}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    return {"kind": "ResourceClaim", "metadata": meta, "spec": {"devices": {"requests": [request]}}}


def claim_template(name: str, version: str = "1", namespace: str = "team-a") -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "resourceVersion": version}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    return {
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"metadata": {"labels": {"app": "inference"}}, "spec": {"devices": {"requests": [request]}}},
    }


def parsed_slice(name: str, version: str = "1", **kwargs: Any) -> ResourceSlice:
    return ResourceSlice.from_dict(resource_slice(name, version, **kwargs))


def names(slices: Any) -> list[str]:
    return sorted(s.name for s in slices)


class RecordingQueue:
    def __init__(self) -> None:
        self.moves: list[tuple[ClusterEvent, object, object]] = []

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: object, new: object) -> None:
        self.moves.append((event, old, new))


def handlers(minor: str = "1.37") -> tuple[EventHandlers, Cache, RecordingQueue]:
    cache, queue = Cache(), RecordingQueue()
    h = EventHandlers(cache, queue, {}, HeldChanges(), features=features_at(minor))  # type: ignore[arg-type]
    return h, cache, queue


class TestSlicesByNode:
    def test_slices_with_a_node_name_are_indexed_by_it_and_the_others_kept_apart(self) -> None:
        store = StorageObjects()
        store.upsert(parsed_slice("a"))
        store.upsert(parsed_slice("b"))
        store.upsert(parsed_slice("c", node="node-2"))
        store.upsert(parsed_slice("everywhere", node=None, allNodes=True))
        selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}
        store.upsert(parsed_slice("zone-1", node=None, nodeSelector=selector))
        store.upsert(parsed_slice("per-device", node=None, perDeviceNodeSelection=True, devices=[]))
        assert names(store.resource_slices_on("node-1")) == ["a", "b"]
        assert names(store.resource_slices_on("node-2")) == ["c"]
        assert names(store.resource_slices_on("node-3")) == []
        assert names(store.resource_slices_off_node()) == ["everywhere", "per-device", "zone-1"]

    def test_every_slice_is_listed_once_for_the_allocator(self) -> None:
        store = StorageObjects()
        store.upsert(parsed_slice("a"))
        store.upsert(parsed_slice("c", node="node-2"))
        store.upsert(parsed_slice("everywhere", node=None, allNodes=True))
        store.upsert(parsed_slice("a", version="2", node="node-2"))
        assert sorted(names(store.resource_slices())) == ["a", "c", "everywhere"]

    def test_the_slices_are_one_sequence_until_a_slice_changes(self) -> None:
        """The allocator keeps each node's pools while it is given the same sequence of slices."""
        store = StorageObjects()
        store.upsert(parsed_slice("a"))
        listed = store.resource_slices()
        assert store.resource_slices() is listed
        store.upsert(parsed_slice("b", node="node-2"))
        after_add = store.resource_slices()
        assert after_add is not listed and sorted(names(after_add)) == ["a", "b"]
        store.remove(parsed_slice("a"))
        assert names(store.resource_slices()) == ["b"]

    def test_an_update_replaces_the_indexed_object(self) -> None:
        store = StorageObjects()
        store.upsert(parsed_slice("a", "1"), "1")
        newer = parsed_slice("a", "2")
        old = store.upsert(newer, "2")
        assert isinstance(old, ResourceSlice) and old.resource_version == "1"
        assert list(store.resource_slices_on("node-1")) == [newer]

    def test_a_slice_moving_node_leaves_its_old_place(self) -> None:
        store = StorageObjects()
        store.upsert(parsed_slice("a", "1"), "1")
        store.upsert(parsed_slice("a", "2", node="node-2"), "2")
        assert names(store.resource_slices_on("node-1")) == []
        assert names(store.resource_slices_on("node-2")) == ["a"]
        store.upsert(parsed_slice("a", "3", node=None, allNodes=True), "3")
        assert names(store.resource_slices_on("node-2")) == [] and names(store.resource_slices_off_node()) == ["a"]
        store.upsert(parsed_slice("a", "4", node="node-3"), "4")
        assert names(store.resource_slices_off_node()) == [] and names(store.resource_slices_on("node-3")) == ["a"]
        assert store._slices_on.keys() == {"node-3"}  # no empty entry kept for the nodes it left

    def test_a_deleted_slice_leaves_the_index(self) -> None:
        store = StorageObjects()
        store.upsert(parsed_slice("a"))
        store.upsert(parsed_slice("b", node=None, allNodes=True))
        store.remove(parsed_slice("a"))
        store.remove(parsed_slice("b", node=None, allNodes=True))
        assert names(store.resource_slices_on("node-1")) == [] and names(store.resource_slices_off_node()) == []
        assert store.api_object("ResourceSlice", "a") is None
        assert store.remove(parsed_slice("a")) is None  # already gone: nothing

    def test_volume_attachments_are_still_indexed_by_node(self) -> None:
        """The per-node index is shared with VolumeAttachments: one kind does not disturb the other."""
        store = StorageObjects()
        store.upsert(VolumeAttachment("va", node_name="node-1"))
        store.upsert(parsed_slice("a"))
        assert [va.name for va in store.volume_attachments_on("node-1")] == ["va"]
        store.remove(VolumeAttachment("va", node_name="node-1"))
        assert list(store.volume_attachments_on("node-1")) == [] and names(store.resource_slices_on("node-1")) == ["a"]


def test_claims_and_templates_by_namespace_and_name() -> None:
    h, cache, _ = handlers()
    h.on_object("ADDED", resource_claim("c1"))
    h.on_object("ADDED", resource_claim("c1", namespace="team-b"))
    h.on_object("ADDED", claim_template("t1"))
    first = cache.storage.resource_claim("team-a", "c1")
    assert isinstance(first, ResourceClaim) and first.devices.requests[0].name == "gpu"
    assert cache.storage.resource_claim("team-b", "c1") is not None
    assert cache.storage.resource_claim("team-c", "c1") is None
    assert sorted(c.key for c in cache.storage.resource_claims()) == ["team-a/c1", "team-b/c1"]
    template = cache.storage.resource_claim_template("team-a", "t1")
    assert isinstance(template, ResourceClaimTemplate) and template.labels == {"app": "inference"}
    assert cache.storage.resource_claim_template("team-b", "t1") is None
    h.on_object("MODIFIED", resource_claim("c1", "2"))
    updated = cache.storage.resource_claim("team-a", "c1")
    assert updated is not None and updated is not first and updated.resource_version == "2"
    h.on_object("DELETED", resource_claim("c1", "2"))
    h.on_object("DELETED", claim_template("t1"))
    assert cache.storage.resource_claim("team-a", "c1") is None
    assert cache.storage.resource_claim_template("team-a", "t1") is None
    assert [c.key for c in cache.storage.resource_claims()] == ["team-b/c1"]


def test_slices_and_claims_are_upstreams_events_and_templates_none() -> None:
    """``resource.k8s.io/ResourceSlice`` and ``resource.k8s.io/ResourceClaim`` (fwk ``types.go``);
    kube-scheduler has no template informer, so a template moves no pod."""
    h, _, queue = handlers()
    h.on_object("ADDED", resource_slice("a", "1"))
    h.on_object("MODIFIED", resource_slice("a", "1"))  # a relist: the same version again
    h.on_object("MODIFIED", resource_slice("a", "2", node="node-2"))
    h.on_object("DELETED", resource_slice("a", "2", node="node-2"))
    h.on_object("ADDED", resource_claim("c1"))
    h.on_object("MODIFIED", resource_claim("c1", "2"))
    h.on_object("DELETED", resource_claim("c1", "2"))
    h.on_object("ADDED", claim_template("t1"))
    h.on_object("MODIFIED", claim_template("t1", "2"))
    h.on_object("DELETED", claim_template("t1", "2"))
    assert [str(e) for e, _, _ in queue.moves] == [
        "resource.k8s.io/ResourceSliceAdd",
        "resource.k8s.io/ResourceSliceUpdate",
        "resource.k8s.io/ResourceSliceDelete",
        "resource.k8s.io/ResourceClaimAdd",
        "resource.k8s.io/ResourceClaimUpdate",
        "resource.k8s.io/ResourceClaimDelete",
    ]
    assert {e.resource for e, _, _ in queue.moves} == {EventResource.RESOURCE_SLICE, EventResource.RESOURCE_CLAIM}
    (_, old, new) = queue.moves[1]
    assert isinstance(old, ResourceSlice) and old.node_name == "node-1"
    assert isinstance(new, ResourceSlice) and new.node_name == "node-2"
    assert queue.moves[2][2] is None and queue.moves[0][0].action == ActionType.ADD


@pytest.mark.parametrize("minor", SUPPORTED)
def test_objects_are_read_as_the_clusters_minor(minor: str) -> None:
    """A list attribute (``ints``) is a value from 1.36's k8s.io/api on; 1.35's has no such field."""
    h, cache, _ = handlers(minor)
    obj = resource_slice("a")
    obj["spec"]["devices"][0]["attributes"] = {"cores": {"ints": [1, 2]}}
    h.on_object("ADDED", obj)
    held = cache.storage.api_object("ResourceSlice", "a")
    assert isinstance(held, ResourceSlice)
    errors = [str(e) for e in held.errors]
    if features_at(minor).dra_api.list_attributes:
        assert errors == [] and held.devices[0].attributes["cores"].int_values == (1, 2)
    else:
        assert errors == ["spec.devices[0].attributes[cores]: Invalid value: exactly one value must be specified"]


def test_an_invalid_object_is_kept_with_a_warning_naming_the_field_and_the_others_go_on() -> None:
    h, cache, queue = handlers()
    bad = resource_slice("bad")
    bad["spec"]["devices"][0]["capacity"] = {"memory": {"value": "lots"}}
    with structlog.testing.capture_logs() as logs:
        h.on_object("ADDED", resource_slice("before"))
        h.on_object("ADDED", bad)
        h.on_object("ADDED", {"kind": "ResourceClaim", "metadata": {"namespace": "team-a"}, "spec": {}})
        h.on_object("ADDED", {"kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "x"}, "spec": 7})
        h.on_object("ADDED", resource_slice("after"))
        h.on_object("ADDED", resource_claim("c1"))
    warnings = [(entry["event"], entry.get("errors")) for entry in logs if entry["log_level"] == "warning"]
    assert warnings[0][0] == "ResourceSlice has invalid fields"
    assert any("spec.devices[0].capacity[memory].value" in e for e in warnings[0][1])
    assert warnings[1][0] == "ignoring a storage object without a name"
    assert warnings[2][0] == "ResourceClaimTemplate has invalid fields" and any("spec" in e for e in warnings[2][1])
    assert len(warnings) == 3
    assert names(cache.storage.resource_slices_on("node-1")) == ["after", "bad", "before"]
    assert cache.storage.resource_claim("team-a", "c1") is not None
    assert len(queue.moves) == 4  # three slices and the claim (the template is held, but moves no pod)


def test_simulate_reads_dra_objects_as_its_minor() -> None:
    sim = Simulation(load_config(None), seed=0)  # 1.35: no list attributes
    listed = resource_slice("a")
    listed["spec"]["devices"][0]["attributes"] = {"cores": {"ints": [1, 2]}}
    sim.add_objects([listed, resource_claim("c1"), claim_template("t1")])
    assert not sim.unused_kinds
    assert names(sim.cache.storage.resource_slices_on("node-1")) == ["a"]
    assert sim.cache.storage.resource_claim("team-a", "c1") is not None
    assert sim.cache.storage.resource_claim_template("team-a", "t1") is not None
    problems = {p.what: (p.message, p.skipped) for p in sim.problems}
    assert problems == {
        "ResourceSlice a": (
            "spec.devices[0].attributes[cores]: Invalid value: exactly one value must be specified",
            False,
        )
    }


def allocated(name: str, version: str, device: str = "gpu-0") -> ResourceClaim:
    """``name`` as PreBind's write returned it: allocated one device of node-1's slice."""
    obj = resource_claim(name, version)
    results = [{"request": "gpu", "driver": "gpu.example.com", "pool": "s1", "device": device}]
    obj["status"] = {"allocation": {"devices": {"results": results}}}
    return ResourceClaim.from_dict(obj)


def test_the_allocators_list_of_claims_shows_an_assumed_claim() -> None:
    """The list every PreFilter takes the allocated devices from holds the assumed version of a claim,
    not the watch's older one: a device PreBind took stays taken across the gap."""
    storage = StorageObjects()
    storage.upsert(ResourceClaim.from_dict(resource_claim("c", "5")), "5")
    written = allocated("c", "6")
    storage.assume(written, "6")
    assert list(storage.resource_claims()) == [written]


def test_a_written_claim_is_seen_by_every_lookup_until_the_watch_brings_it() -> None:
    """``AssumeClaimAfterAPICall``: the claim PreBind wrote (version 6) is what lookups and the list of
    allocated claims show while the watch still holds version 5; the watch's version 6 replaces it."""
    storage = StorageObjects()
    storage.upsert(ResourceClaim.from_dict(resource_claim("c", "5")), "5")
    storage.upsert(ResourceClaim.from_dict(resource_claim("other", "3")), "3")
    written = allocated("c", "6")
    assert storage.assume_written(written) is None
    assert storage.resource_claim("team-a", "c") is written
    assert [c.allocation is not None for c in storage.resource_claims()] == [True, False]
    from_watch = allocated("c", "6")
    storage.upsert(from_watch, "6")
    assert storage.resource_claim("team-a", "c") is from_watch
    assert next(iter(storage.resource_claims())) is from_watch


def test_a_write_older_than_the_watch_or_of_a_gone_claim_is_not_assumed() -> None:
    """Upstream's assume cache refuses both (the watch is ahead, or the claim was deleted meanwhile)."""
    storage = StorageObjects()
    storage.upsert(ResourceClaim.from_dict(resource_claim("c", "7")), "7")
    out_of_sync = 'ResourceClaim "team-a/c" is out of sync (stored: 7, assume: 6)'
    assert storage.assume_written(allocated("c", "6")) == out_of_sync
    assert storage.assume_written(allocated("gone", "6")) == 'could not find ResourceClaim "team-a/gone"'
    assert all(c.allocation is None for c in storage.resource_claims())


def test_a_forgotten_claim_shows_the_watchs_version_again() -> None:
    storage = StorageObjects()
    storage.upsert(ResourceClaim.from_dict(resource_claim("c", "5")), "5")
    written = allocated("c", "6")
    storage.assume_written(written)
    storage.restore(written)
    held = storage.resource_claim("team-a", "c")
    assert held is not None and held.allocation is None
