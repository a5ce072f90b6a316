"""VolumeZone: a pod goes where the zone and region labels of its bound volumes allow.

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``. PreFilter looks up the claim
of every ``persistentVolumeClaim`` volume (generic ephemeral volumes are not read) and, for a bound
claim, the zone and region labels of its PersistentVolume (beta and GA keys, a value may list zones
joined by ``__``); an unbound claim of a WaitForFirstConsumer class adds nothing, any other unbound
claim refuses the pod. Filter refuses a node that has a zone or region label but not the volume's
value (a beta key on the volume is also looked up as its GA key on the node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import (
    VOLUME_BINDING_WAIT,
    PersistentVolume,
    StorageClass,
    not_found,
)
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    as_objects,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.volumes import claim_hint, claim_names, sign_volumes

__all__ = ["ERR_REASON_CONFLICT", "PVTopology", "VolumeZone", "pv_topologies"]

NAME = names.VOLUME_ZONE
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
_SKIP = Status(Code.SKIP)
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,), NAME)


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound volume: the node must carry ``key`` with one of ``values``."""

    pv_name: str
    key: str
    values: frozenset[str]


def _zones(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: zones joined by ``__``, trimmed; None when one is empty (the label is
    then ignored, as upstream logs and skips it)."""
    zones = [zone.strip() for zone in value.split("__")]
    return None if any(not zone for zone in zones) else frozenset(zones)


def pv_topologies(pv: PersistentVolume) -> tuple[PVTopology, ...]:
    """``getPVTopologies``: the volume's zone and region labels, in upstream's key order."""
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        zones = _zones(value)
        if zones is not None:
            out.append(PVTopology(pv.name, key, zones))
    return tuple(out)


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


class VolumeZone:
    """PreFilter, Filter and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        return sign_volumes(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD), self.is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_persistent_volume_change,
            ),
        ]

    def is_schedulable_after_persistent_volume_claim_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        return claim_hint(pod, old, new, ephemeral=False, no_claim=QueueingHint.QUEUE_SKIP)

    def is_schedulable_after_storage_class_added(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        objs = as_objects(StorageClass, None, new)
        if objs is None or objs[1] is None:
            return QueueingHint.QUEUE
        waits = objs[1].volume_binding_mode == VOLUME_BINDING_WAIT
        return QueueingHint.QUEUE if waits else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        objs = as_objects(PersistentVolume, old, new)
        if objs is None or objs[1] is None:
            return QueueingHint.QUEUE
        original, modified = objs[0], objs[1]
        if original is None or pv_topologies(original) != pv_topologies(modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """``getPVbyPod``: the topologies of the pod's bound volumes, or why the pod cannot be placed."""
        storage = self.handle.current().storage
        out: list[PVTopology] = []
        for claim_name in claim_names(pod):
            if not claim_name:
                return [], _unresolvable("PersistentVolumeClaim had no name")
            claim = storage.persistent_volume_claim(pod.namespace, claim_name)
            if claim is None:
                return [], _unresolvable(not_found("PersistentVolumeClaim", claim_name))
            if not claim.volume_name:
                class_name = claim.storage_class
                if not class_name:
                    return [], _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = storage.storage_class(class_name)
                if storage_class is None:
                    return [], _unresolvable(not_found("StorageClass", class_name))
                if storage_class.volume_binding_mode == VOLUME_BINDING_WAIT:
                    continue
                return [], _unresolvable("PersistentVolume had no name")
            pv = storage.persistent_volume(claim.volume_name)
            if pv is None:
                return [], _unresolvable(not_found("PersistentVolume", claim.volume_name))
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, _SKIP
        state.write(PRE_FILTER_STATE_KEY, tuple(topologies))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        stored = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(stored, tuple):
            topologies: Sequence[PVTopology] = stored
        else:  # no PreFilter ran (upstream looks the volumes up again)
            topologies, status = self._topologies(pod)
            if status is not None:
                return status
        labels = node_info.node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return _CONFLICT
        return None
