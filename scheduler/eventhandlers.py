"""Watch events into the cache and the queue (upstream ``pkg/scheduler/eventhandlers.go``). No I/O.

Handlers are synchronous: on one event loop they never interleave with a synchronous scheduling
cycle, which lets the cache serve as the cycle's snapshot without copying. A cycle that awaits an
extender opens a ``HeldChanges`` window: every cache change that arrives meanwhile runs right after
that cycle, in order, as if it had arrived then.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import structlog

from scheduler.api.devicetaintrule import DeviceTaintRule
from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import SELECTING_KINDS, Namespace, Node, Pod, PodKey, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.storage_objects import STORAGE_KINDS, key_of, parse_storage_object
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import events as ev

__all__ = ["EventHandlers", "HeldChanges"]

log = structlog.get_logger("spread-scheduler")

T = TypeVar("T")


class HeldChanges:
    """Cache changes held while a cycle awaits an extender; applied in order when it ends."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: list[Callable[[], None]] | None = None

    def hold(self, change: Callable[[], None]) -> bool:
        """True when a cycle is open: ``change`` then runs after that cycle instead of now."""
        if self._held is None:
            return False
        self._held.append(change)
        return True

    def open(self) -> None:
        self._held = []

    def close(self) -> None:
        """End the window and apply what it held (changes held meanwhile run too, in order)."""
        held, self._held = self._held or [], None
        for change in held:
            change()


class EventHandlers:
    """What the watch tells: nodes and assigned pods into the cache, our pending pods into the queue.

    ``pending`` holds the latest version of every pod of ours that is not bound yet (upstream
    reads it from the informer); the cycles take the pod they schedule from it.
    """

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: Mapping[str, object],
        held: HeldChanges,
        *,
        whole_nodes: bool = False,
        features: Features = DEFAULT_FEATURES,
    ) -> None:
        self.cache = cache
        # The cluster's minor: what the resource.k8s.io/v1 objects are read as.
        self.minor = features.minor
        # Node updates of declared features are an event only with NodeDeclaredFeatures (1.36+).
        self.declared_features = features.enable_node_declared_features
        # How a resize counts, for an assigned pod's scale-down event.
        self.requests_rule = features.pod_requests_rule
        # DeviceTaintRules count where the minor applies them (simulate may be handed one at any minor).
        self.device_taint_rules = features.dra_device_taint_rules
        # Keep each Node's API object whole (an extender is sent them), not without its images.
        self.whole_nodes = whole_nodes
        self.queue = queue
        self._profiles = profiles
        self.held = held
        self.pending: dict[PodKey, Pod] = {}
        self.forgotten: list[Callable[[PodKey], None]] = []  # called with each pod that left for good
        # Observers of the cache (spread keeping after placement): called with (old, new) once an
        # assigned pod or a node entered, changed or left it (None for the side that is absent).
        self.pod_changes: list[Callable[[Pod | None, Pod | None], None]] = []
        self.node_changes: list[Callable[[Node | None, Node | None], None]] = []
        self.synced = False

    def on_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        if kind == "Pod":
            self.on_pod(event_type, obj)
        elif kind == "Node":
            self.on_node(event_type, obj)
        elif kind in SELECTING_KINDS:
            self.on_selecting_object(event_type, obj)
        elif kind == "Namespace":
            self.on_namespace(event_type, obj)
        elif kind == "PodDisruptionBudget":
            self.on_pdb(event_type, obj)
        elif kind in STORAGE_KINDS:
            self.on_storage_object(event_type, obj)

    def on_node(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self.node_event(event_type, Node.from_dict(obj, whole=self.whole_nodes))

    def node_event(self, event_type: str | None, node: Node) -> None:
        if self.held.hold(functools.partial(self.node_event, event_type, node)):
            return
        if not node.name:
            log.warning("ignoring node without a name", errors=[str(e) for e in node.errors])
            return
        old_info = self.cache.get(node.name)
        if event_type == "DELETED":
            if old_info is not None:
                self.cache.remove_node(node.name)
                self.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, old_info.node, None)
                self._tell(self.node_changes, old_info.node, None)
            return
        if old_info is None:
            self.cache.add_node(node)
            self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node)
            self._tell(self.node_changes, None, node)
            return
        old = old_info.node
        if node.resource_version and node.resource_version == old.resource_version:
            return
        if _older(node.resource_version, old.resource_version):
            return  # an event older than the version we hold (integer resourceVersions): never go back
        self.cache.update_node(old, node)
        for event in ev.node_scheduling_properties_change(node, old, declared_features=self.declared_features):
            self.queue.move_all_to_active_or_backoff(event, old, node)
        self._tell(self.node_changes, old, node)

    def on_pod(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self.pod_event(event_type, Pod.from_dict(obj))

    def pod_event(self, event_type: str | None, pod: Pod) -> None:
        if self.held.hold(functools.partial(self.pod_event, event_type, pod)):
            return
        key = pod.key
        held = self.cache.pod(key) or self.pending.get(key)
        if event_type != "DELETED" and held is not None and _older(pod.resource_version, held.resource_version):
            return  # an event older than the version we hold (integer resourceVersions): never go back
        if event_type == "DELETED" or pod.terminal:
            self._forget_pod(pod)
            return
        if pod.assigned:
            self._on_assigned_pod(pod)
            return
        if pod.scheduler_name not in self._profiles:
            return  # not ours
        old_pending = self.pending.get(key)
        if self.cache.is_assumed(key):
            # Decided, binding in flight: no new attempt, but keep the latest version, which a failed
            # binding requeues (upstream re-reads the informer). A deletion that starts now frees the
            # assumed place at once (1.35 ``handleAssumedPodDeletion``).
            if old_pending is not None:
                self.pending[key] = pod
            assumed = self.cache.pod(key)
            if pod.terminating and not (old_pending is not None and old_pending.terminating) and assumed:
                self.cache.forget_pod(assumed)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None)
            return
        self.pending[key] = pod
        if old_pending is None:
            self.queue.add(pod)
        elif old_pending.resource_version != pod.resource_version or not pod.resource_version:
            self.queue.update(old_pending, pod)

    def _on_assigned_pod(self, pod: Pod) -> None:
        key = pod.key
        if key in self.pending:
            del self.pending[key]
            self.queue.delete(key)
        old = self.cache.pod(key)
        was_assumed = self.cache.is_assumed(key)
        self.cache.add_pod(pod)
        self._tell(self.pod_changes, old, pod)
        if old is None or was_assumed:
            self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, pod)
        elif old.resource_version != pod.resource_version or not pod.resource_version:
            for event in ev.pod_scheduling_properties_change(
                pod, old, ev.EventResource.ASSIGNED_POD, rule=self.requests_rule
            ):
                self.queue.move_all_to_active_or_backoff(event, old, pod)

    def _forget_pod(self, pod: Pod) -> None:
        key = pod.key
        for forgotten in self.forgotten:
            forgotten(key)
        if self.pending.pop(key, None) is not None:
            self.queue.delete(key)
        old = self.cache.pod(key)
        if old is not None:
            self.cache.remove_pod(old)
            self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old, None)
            self._tell(self.pod_changes, old, None)

    @staticmethod
    def _tell(observers: list[Callable[[T | None, T | None], None]], old: T | None, new: T | None) -> None:
        for observer in observers:
            observer(old, new)

    def on_selecting_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Services, ReplicaSets, StatefulSets, ReplicationControllers: inputs of default spreading."""
        if self.held.hold(functools.partial(self.on_selecting_object, event_type, obj)):
            return
        selecting = parse_selecting_object(obj)
        if selecting is None:
            return
        if event_type == "DELETED":
            self.cache.remove_selecting_object(selecting.kind, selecting.namespace, selecting.name)
        else:
            self.cache.upsert_selecting_object(selecting)

    def on_namespace(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Namespaces: their labels resolve InterPodAffinity's namespaceSelector. Like upstream (whose
        plugins register no Namespace event), a namespace change moves no pod in the queue."""
        if self.held.hold(functools.partial(self.on_namespace, event_type, obj)):
            return
        namespace = Namespace.from_dict(obj)
        if not namespace.name:
            return
        if event_type == "DELETED":
            self.cache.remove_namespace(namespace.name)
        else:
            self.cache.upsert_namespace(namespace)

    def on_pdb(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """PodDisruptionBudgets: preemption counts them against victims. A PDB the API server would
        refuse (a malformed selector) is kept matching nothing, as upstream's filter skips it; like
        upstream (no plugin registers a PDB event), a change moves no pod in the queue."""
        if self.held.hold(functools.partial(self.on_pdb, event_type, obj)):
            return
        pdb = PodDisruptionBudget.from_dict(obj)
        if not pdb.name:
            return
        if event_type == "DELETED":
            self.cache.remove_pdb(pdb.namespace, pdb.name)
            return
        if pdb.errors:
            log.warning("PodDisruptionBudget has invalid fields", pdb=pdb.key, errors=[str(e) for e in pdb.errors])
        self.cache.upsert_pdb(pdb)

    def on_storage_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """PersistentVolumes, claims, StorageClasses, the CSI objects and DynamicResources' objects:
        what the volume and DRA plugins look up, and events their queueing hints judge (upstream's
        ``buildEvtResHandler``: Add, Update, Delete with the old and new objects). An object the API
        server would refuse is kept, with a warning naming its fields; the plugins that read it say so
        in the pod's status."""
        if self.held.hold(functools.partial(self.on_storage_object, event_type, obj)):
            return
        kind = str(obj.get("kind"))
        parsed = parse_storage_object(kind, obj, self.minor)
        if not parsed.name:
            log.warning("ignoring a storage object without a name", kind=kind)
            return
        resource = _STORAGE_RESOURCES.get(kind)
        if isinstance(parsed, DeviceTaintRule):
            self.on_device_taint_rule(event_type, parsed)
            return
        if event_type == "DELETED":
            old = self.cache.storage.remove(parsed)
            if old is not None and resource is not None:
                self.queue.move_all_to_active_or_backoff(ev.object_event(resource, ev.ActionType.DELETE), old, None)
            return
        meta = obj.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        version = version if isinstance(version, str) else ""
        key = key_of(parsed)
        if version and version == self.cache.storage.resource_version(kind, key):
            return  # the same version again (a relist): nothing changed
        if parsed.errors:
            log.warning(f"{kind} has invalid fields", name=key, errors=[str(e) for e in parsed.errors])
        old = self.cache.storage.upsert(parsed, version)
        if resource is not None:
            action = ev.ActionType.ADD if old is None else ev.ActionType.UPDATE
            self.queue.move_all_to_active_or_backoff(ev.object_event(resource, action), old, parsed)

    def on_device_taint_rule(self, event_type: str | None, rule: DeviceTaintRule) -> None:
        """A DeviceTaintRule changes the slices' devices, not an object a plugin registers for: as the
        tracker does, each slice whose devices' taints changed is an update of that ResourceSlice."""
        if not self.device_taint_rules:
            return
        storage = self.cache.storage
        held_version = storage.resource_version("DeviceTaintRule", rule.name)
        if event_type != "DELETED" and rule.resource_version and rule.resource_version == held_version:
            return  # the same version again (a relist): nothing changed
        before = {s.name: s for s in storage.resource_slices()}
        if event_type == "DELETED":
            storage.remove(rule)
        else:
            if rule.errors:
                log.warning("DeviceTaintRule has invalid fields", name=rule.name, errors=[str(e) for e in rule.errors])
            storage.upsert(rule, rule.resource_version)
        update = ev.object_event(ev.EventResource.RESOURCE_SLICE, ev.ActionType.UPDATE)
        for after in storage.resource_slices():
            held = before.get(after.name)
            if held is not None and held is not after:
                self.queue.move_all_to_active_or_backoff(update, held, after)

    def reconcile(self, kind: str, listed: Mapping[str, str], list_version: str) -> int:
        """Drop what a fresh LIST of ``kind`` (Pod or Node), taken at ``list_version``, no longer has.

        ``listed`` maps each listed key to its resourceVersion. As client-go's ``Replace`` does for
        deletions: an object we hold that the list lacks, and that is not newer than the list, was
        deleted while no watch told us; it becomes a deletion. Objects newer than the list are left
        to the watch, and so are additions and updates (the watch still delivers those).
        Returns how many objects were dropped.
        """
        candidates: Iterable[tuple[str, Pod | Node]]
        if kind == "Pod":
            pods: dict[PodKey, Pod] = {pod.key: pod for pod in self.cache.pods()}
            pods.update(self.pending)
            candidates = pods.items()
        else:
            candidates = ((info.name, info.node) for info in self.cache.node_infos())
        gone = [obj for key, obj in candidates if key not in listed and not _newer(obj.resource_version, list_version)]
        for obj in gone:
            if isinstance(obj, Pod):
                self.pod_event("DELETED", obj)
            else:
                self.node_event("DELETED", obj)
        return len(gone)


_STORAGE_RESOURCES = {
    "PersistentVolume": ev.EventResource.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": ev.EventResource.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": ev.EventResource.STORAGE_CLASS,
    "CSINode": ev.EventResource.CSI_NODE,
    "CSIDriver": ev.EventResource.CSI_DRIVER,
    "CSIStorageCapacity": ev.EventResource.CSI_STORAGE_CAPACITY,
    "VolumeAttachment": ev.EventResource.VOLUME_ATTACHMENT,
    "DeviceClass": ev.EventResource.DEVICE_CLASS,
    "ResourceClaim": ev.EventResource.RESOURCE_CLAIM,
    "ResourceSlice": ev.EventResource.RESOURCE_SLICE,
    # ResourceClaimTemplate: none. kube-scheduler has no informer of templates, so no event of theirs
    # may move a pod (not even one that failed with an error, which any event requeues).
}


def _older(version: str, than: str) -> bool:
    """Strictly older, when both are etcd's integer resourceVersions (never for other spellings)."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)


def _newer(version: str, than: str) -> bool:
    """resourceVersions are opaque, but etcd's are integers: compare those, otherwise assume newer."""
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than
