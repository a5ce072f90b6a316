"""VolumeRestrictions: a disk attached once per node, a ReadWriteOncePod claim used by one pod.

Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``. Two rules:

- an in-tree gcePersistentDisk, awsElasticBlockStore, rbd or iscsi volume conflicts with the same
  disk in a pod already on the node (unless both mount it read-only; EBS even then), and
- a claim with access mode ReadWriteOncePod that a pod on any node already uses makes every node
  unschedulable for the pod (the snapshot's ``IsPVCUsedByPods``), until that pod is deleted.

PreFilter looks up every ``persistentVolumeClaim`` volume's claim (a missing one refuses the pod with
the lister's NotFound text) and skips a pod with neither kind of volume. Generic ephemeral volumes
are not looked at, as upstream.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import not_found
from scheduler.api.volumes import Volume
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState, StateKeyError
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    as_objects,
    assigned_pod_resource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.volumes import claim_hint, claim_names, sign_volumes

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "PreFilterState",
    "VolumeRestrictions",
    "satisfies_volume_conflicts",
]

NAME = names.VOLUME_RESTRICTIONS
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_SKIP = Status(Code.SKIP)
_DISK_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,), NAME)
_RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,), NAME)


def _conflicts(volume: Volume, pod: Pod) -> bool:
    """``isVolumeConflict``: a disk of ``volume`` is also attached by one of ``pod``'s volumes."""
    return any(disk.conflicts(other) for disk in volume.disks for v in pod.volumes for other in v.disks)


def satisfies_volume_conflicts(pod: Pod, pods: Collection[Pod]) -> bool:
    """``satisfyVolumeConflicts``: none of ``pod``'s disks is attached by one of ``pods`` (a node's)."""
    return not any(volume.disks and any(_conflicts(volume, other) for other in pods) for volume in pod.volumes)


@dataclass(slots=True)
class PreFilterState:
    """The pod's ReadWriteOncePod claims, and how many uses of them pods on nodes make (kept as
    preemption's dry runs add and remove pods)."""

    read_write_once_pod_claims: frozenset[str]
    conflicting_claim_refs: int

    def clone(self) -> PreFilterState:
        return PreFilterState(self.read_write_once_pod_claims, self.conflicting_claim_refs)

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        self.conflicting_claim_refs += multiplier * sum(
            1 for claim in claim_names(pod) if claim in self.read_write_once_pod_claims
        )


class VolumeRestrictions:
    """PreFilter (+ AddPod/RemovePod), Filter and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        return sign_volumes(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A deleted pod frees its disks and its ReadWriteOncePod claims.
            ClusterEventWithHint(
                ClusterEvent(assigned_pod_resource(self.features), ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            # A new node has no disk attached (no hint: always worth a try).
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            # The missing claim that refused the pod at PreFilter.
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_persistent_volume_claim_added,
            ),
        ]

    def is_schedulable_after_persistent_volume_claim_added(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        return claim_hint(pod, old, new, ephemeral=False)

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(Pod, old, None)
        if objs is None or objs[0] is None:
            return QueueingHint.QUEUE
        deleted = objs[0]
        if deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_volume_conflicts(pod, [deleted]):
            return QueueingHint.QUEUE
        claims = set(claim_names(pod))
        if any(claim in claims for claim in claim_names(deleted)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(v.disks for v in pod.volumes)
        snapshot = self.handle.current()
        rwop: set[str] = set()
        for claim_name in claim_names(pod):
            claim = snapshot.storage.persistent_volume_claim(pod.namespace, claim_name)
            if claim is None:
                missing = not_found("PersistentVolumeClaim", claim_name)
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (missing,))
            if READ_WRITE_ONCE_POD in claim.access_modes:
                rwop.add(claim.name)
        used = sum(1 for name in rwop if snapshot.is_pvc_used_by_pods(f"{pod.namespace}/{name}"))
        if not needs_check and used == 0:
            return None, _SKIP
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(frozenset(rwop), used))
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_add, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_remove, -1)

    @staticmethod
    def _update(state: CycleState, other: Pod, multiplier: int) -> Status | None:
        try:
            stored = state.read(PRE_FILTER_STATE_KEY, PreFilterState)
        except StateKeyError as e:
            return Status.as_error(str(e))
        stored.update_with_pod(other, multiplier)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfies_volume_conflicts(pod, node_info.pods.values()):
            return _DISK_CONFLICT
        try:
            stored = state.read(PRE_FILTER_STATE_KEY, PreFilterState)
        except StateKeyError as e:
            return Status.as_error(str(e))
        return _RWOP_CONFLICT if stored.conflicting_claim_refs > 0 else None
