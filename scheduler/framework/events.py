"""Cluster events, queueing hints, and how Node/Pod updates are classified (``framework/events.go``)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from scheduler.api.objects import Node, Pod
from scheduler.api.quantity import milli_value
from scheduler.features import PER_CONTAINER_RULE, Features, PodRequestsRule

__all__ = [
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "EventResource",
    "HintFn",
    "QueueingHint",
    "another_pods_update",
    "as_objects",
    "assigned_pod_resource",
    "counted_by_hints",
    "match_cluster_events",
    "node_scheduling_properties_change",
    "node_taints_changed",
    "object_event",
    "pod_generated_resource_claim_changed",
    "pod_scheduling_properties_change",
    "pod_tolerations_changed",
    "target_pod_resource",
    "target_pod_update_resource",
]


class ActionType(enum.IntFlag):
    """Bit order as upstream; matching compares the numbers (``incoming <= registered``)."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7  # 1.36
    UPDATE_POD_LABEL = 1 << 8
    UPDATE_POD_SCALE_DOWN = 1 << 9
    UPDATE_POD_TOLERATION = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    ALL = (1 << 13) - 1
    UPDATE = ALL & ~(ADD | DELETE)


class EventResource(enum.StrEnum):
    NODE = "Node"
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULABLE_POD = "UnschedulablePod"
    TARGET_POD = "TargetPod"  # 1.37: the pending pod's own update
    SERVICE = "Service"
    REPLICA_SET = "ReplicaSet"
    STATEFUL_SET = "StatefulSet"
    REPLICATION_CONTROLLER = "ReplicationController"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    @property
    def is_wildcard(self) -> bool:
        return self.resource is EventResource.WILDCARD and self.action == ActionType.ALL

    def __str__(self) -> str:
        return self.label or f"{self.resource}/{self.action.name or int(self.action)}"


UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")

_ACTION_LABELS = {ActionType.ADD: "Add", ActionType.UPDATE: "Update", ActionType.DELETE: "Delete"}


def object_event(resource: EventResource, action: ActionType) -> ClusterEvent:
    """The event upstream's generic handlers send for a watched object other than a Node or Pod
    (``buildEvtResHandler``: Add, Update or Delete), labelled as ``ClusterEvent.Label`` does."""
    return ClusterEvent(resource, action, f"{resource}{_ACTION_LABELS[action]}")


class QueueingHint(enum.Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


HintFn = Callable[[Pod, object | None, object | None], QueueingHint]
"""``(pending pod, old object, new object) -> hint``; old is None on Add, new is None on Delete."""


def _always_queue(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    return QueueingHint.QUEUE


T = TypeVar("T")


def as_objects(kind: type[T], old: object | None, new: object | None) -> tuple[T | None, T | None] | None:
    """``util.As``: old and new as ``kind`` (None stays None), or None when either is something else.

    A hint that gets None back returns Queue, as upstream does on the conversion error, so an
    unexpected object can never strand a pod.
    """
    old_t = old if isinstance(old, kind) else None
    new_t = new if isinstance(new, kind) else None
    if (old is not None and old_t is None) or (new is not None and new_t is None):
        return None
    return old_t, new_t


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFn = _always_queue


def assigned_pod_resource(features: Features) -> EventResource:
    """What a plugin registers for other pods' Add, Update and Delete: ``AssignedPod`` since 1.37, where
    the ``Pod`` a registration used to name is split in three."""
    return EventResource.ASSIGNED_POD if features.target_pod_events else EventResource.POD


def target_pod_resource(features: Features) -> EventResource:
    """What a plugin registers for the pending pod's own update: ``TargetPod`` since 1.37, ``Pod``
    before (and its hint then compares the updated pod's UID with the pending one's)."""
    return EventResource.TARGET_POD if features.target_pod_events else EventResource.POD


def target_pod_update_resource(features: Features) -> EventResource:
    """The resource of the events the queue sends a pending pod about its own update
    (``PodSchedulingPropertiesChange(new, old, isTargetPod=true)``; before 1.37 the unscheduled one)."""
    return EventResource.TARGET_POD if features.target_pod_events else EventResource.UNSCHEDULABLE_POD


def another_pods_update(features: Features, pod: Pod, updated: Pod) -> bool:
    """Whether a hint for the pending pod's own update skips ``updated``: before 1.37 such a hint is
    registered for every pod's update and tells them apart by UID; since 1.37 it is registered for
    ``TargetPod`` and asks no more (an event of another pod replayed to a pod in flight included)."""
    return not features.target_pod_events and updated.uid != pod.uid


def counted_by_hints(features: Features, *pods: Pod | None) -> bool:
    """Whether every pod of an event (None: none there) is one PodTopologySpread's and InterPodAffinity's
    hints weigh: assigned or, since 1.36, nominated (Filter counts a nominated pod on its node)."""
    return all(
        p is None or p.assigned or (features.hints_count_nominated_pods and bool(p.nominated_node_name)) for p in pods
    )


def _resource_matches(registered: EventResource, incoming: EventResource) -> bool:
    """``matchEventResources``: a ``*`` registration takes every resource, ``Pod`` every pod kind."""
    if registered is EventResource.WILDCARD or registered is incoming:
        return True
    return registered is EventResource.POD and incoming in (
        EventResource.ASSIGNED_POD,
        EventResource.UNSCHEDULABLE_POD,
        EventResource.TARGET_POD,
    )


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """``ClusterEvent.Match``: wildcards match all; else same resource, overlapping and not wider action."""
    if registered.is_wildcard or incoming.is_wildcard:
        return True
    return (
        _resource_matches(registered.resource, incoming.resource)
        and bool(registered.action & incoming.action)
        and incoming.action <= registered.action
    )


def _condition_statuses(node: Node) -> dict[str, str]:
    conds = node.raw.get("status", {}).get("conditions") if isinstance(node.raw.get("status"), dict) else None
    out: dict[str, str] = {}
    for cond in conds if isinstance(conds, list) else ():  # a malformed file may hold anything here
        if isinstance(cond, dict):
            out[str(cond.get("type"))] = str(cond.get("status"))
    return out


def _allocatable(node: Node) -> object:
    """``status.allocatable``; absent and empty compare equal, as in ``equality.Semantic.DeepEqual``."""
    status = node.raw.get("status")
    return (status.get("allocatable") if isinstance(status, dict) else None) or {}


def _annotations(obj: Node | Pod) -> object:
    """``metadata.annotations``; absent and empty compare equal, as in ``equality.Semantic.DeepEqual``."""
    meta = obj.raw.get("metadata")
    return (meta.get("annotations") if isinstance(meta, dict) else None) or {}


def _unparsed(obj: Node | Pod, field: str, key: str) -> list[object]:
    """``spec.<field>[*].<key>`` for the one member of a taint/toleration the parsed form leaves out."""
    spec = obj.raw.get("spec")
    items = spec.get(field) if isinstance(spec, Mapping) else None
    return [item.get(key) if isinstance(item, Mapping) else None for item in (items if isinstance(items, list) else ())]


def node_taints_changed(new: Node, old: Node) -> bool:
    """``!equality.Semantic.DeepEqual`` of ``spec.taints``: ``timeAdded`` is part of a taint too."""
    return new.taints != old.taints or _unparsed(new, "taints", "timeAdded") != _unparsed(old, "taints", "timeAdded")


def pod_tolerations_changed(new: Pod, old: Pod) -> bool:
    """``!equality.Semantic.DeepEqual`` of ``spec.tolerations``: ``tolerationSeconds`` is part of one too."""
    field, key = "tolerations", "tolerationSeconds"
    return new.tolerations != old.tolerations or _unparsed(new, field, key) != _unparsed(old, field, key)


def node_scheduling_properties_change(new: Node, old: Node, *, declared_features: bool = False) -> list[ClusterEvent]:
    """One event per changed aspect, in upstream's extractor order; none when nothing relevant changed.

    ``declared_features``: the NodeDeclaredFeatures gate, with which upstream extracts that change too.
    """
    events: list[ClusterEvent] = []
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"))
    if _allocatable(new) != _allocatable(old):
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"))
    if dict(new.labels) != dict(old.labels):
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"))
    if node_taints_changed(new, old):
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"))
    if _condition_statuses(new) != _condition_statuses(old):
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"))
    if _annotations(new) != _annotations(old):
        events.append(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"))
    if declared_features and new.declared_features != old.declared_features:
        events.append(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeUpdateNodeDeclaredFeature")
        )
    return events


def pod_scheduling_properties_change(
    new: Pod, old: Pod, resource: EventResource, *, rule: PodRequestsRule = PER_CONTAINER_RULE
) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``; a change of none of these aspects is the generic Update.
    ``rule``: how the minor counts a resize (``Features.pod_requests_rule``), for the scale-down.

    Extractors run in upstream's order (labels, scale-down, gates, tolerations, generated resource
    claims), so the event list and with it the hint log read the same.
    """
    events: list[ClusterEvent] = []
    if dict(new.labels) != dict(old.labels):
        events.append(ClusterEvent(resource, ActionType.UPDATE_POD_LABEL, "PodLabelChange"))
    if _scaled_down(new, old, rule):
        events.append(ClusterEvent(resource, ActionType.UPDATE_POD_SCALE_DOWN, "PodRequestScaledDown"))
    if not new.scheduling_gates and old.scheduling_gates:
        events.append(
            ClusterEvent(
                resource,
                ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                "PodSchedulingGateEliminatedChange",
            )
        )
    if len(new.tolerations) != len(old.tolerations):
        events.append(ClusterEvent(resource, ActionType.UPDATE_POD_TOLERATION, "PodTolerationChange"))
    if pod_generated_resource_claim_changed(new, old):
        # Upstream adds this extractor only with DynamicResourceAllocation on: GA and locked on in 1.35.
        events.append(
            ClusterEvent(resource, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, "PodGeneratedResourceClaimChange")
        )
    if not events:
        events.append(ClusterEvent(resource, ActionType.UPDATE, "PodUpdate"))
    return events


def pod_generated_resource_claim_changed(new: Pod, old: Pod) -> bool:
    """``extractPodGeneratedResourceClaimChange``: ``status.resourceClaimStatuses`` (in order) or
    ``status.extendedResourceClaimStatus`` differ."""
    return new.resource_claim_statuses != old.resource_claim_statuses or _extended_claim_status(
        new
    ) != _extended_claim_status(old)


def _extended_claim_status(pod: Pod) -> object:
    status = pod.raw.get("status")
    return status.get("extendedResourceClaimStatus") if isinstance(status, Mapping) else None


def _scaled_down(new: Pod, old: Pod, rule: PodRequestsRule) -> bool:
    """``extractPodScaleDown``: some request (status resources of a resize included) dropped or shrank."""
    after = new.resources.under(rule).effective_requests
    return any(
        name not in after or milli_value(after[name]) < milli_value(before)
        for name, before in old.resources.under(rule).effective_requests.items()
    )
