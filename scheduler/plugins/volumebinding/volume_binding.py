"""VolumeBinding: claims bound, or bound on the chosen node (``volumebinding/volume_binding.go``).

PreFilter reads every claim (upstream's texts for a missing, foreign, lost, deleted or unbound
Immediate one); Filter checks bound claims' PVs and finds, for each claim waiting for its first
consumer, a static PV on the node or a way to provision there (``binder.find_pod_volumes``); Reserve
assumes the choice in the cache, PreBind writes it through the handle's ``VolumeBinder`` and waits
for the PV controller, Unreserve reverts. Without a volume binder (a bare framework in tests) a pod
whose claims still need binding is refused in PreFilter, naming the volume. Score stays off, as
upstream's by default (``StorageCapacityScoring`` is alpha in 1.35).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    StorageClass,
)
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
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.math import go_round
from scheduler.plugins.helper.not_run import refusal
from scheduler.plugins.helper.shape_score import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, broken_linear, parse_shape
from scheduler.plugins.helper.volumes import claim_hint, claim_name_of, sign_volumes
from scheduler.plugins.volumebinding import binder

__all__ = ["SOURCES", "VolumeBinding"]

NAME = names.VOLUME_BINDING
STATE_KEY = NAME
SOURCES = frozenset({"persistentVolumeClaim", "ephemeral"})
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# What a claim waiting for its first consumer needs and a framework without a volume binder cannot do.
DELAY_BINDING = "binding a WaitForFirstConsumer claim"
_SKIP = Status(Code.SKIP)


@dataclass(slots=True)
class _State:
    """``stateData``: the pod's claims by state and the PVs of the waiting claims' classes
    (read-only for the cycle), what binding them takes per node (Filter), and Reserve's verdict
    with the versions it assumed."""

    claims: binder.PodVolumeClaims = field(default_factory=binder.PodVolumeClaims)
    volumes_by_class: Mapping[str, Sequence[PersistentVolume]] = field(default_factory=dict)
    by_node: dict[str, binder.PodVolumes] = field(default_factory=dict)
    all_bound: bool = True
    assumed: binder.PodVolumes | None = None

    def clone(self) -> _State:
        return self


DEFAULT_BIND_TIMEOUT_SECONDS = 600


# SetDefaults_VolumeBindingArgs with StorageCapacityScoring: the emptier a node's storage, the better.
DEFAULT_SHAPE = ((0, MAX_CUSTOM_PRIORITY_SCORE), (MAX_UTILIZATION, 0))


def parse_shape_args(args: Mapping[str, Any], features: Features) -> tuple[tuple[int, int], ...] | None:
    """The capacity-scoring shape (None: StorageCapacityScoring off, no scoring). With the gate an
    absent or empty shape is defaulted and a given one validated; a ValueError names the field."""
    if not features.enabled("StorageCapacityScoring"):
        return None
    raw = args.get("shape")
    if raw is None or raw == []:
        return DEFAULT_SHAPE
    errors: list[str] = []
    points = parse_shape(raw, "shape", errors)
    if errors:
        raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return tuple(points)


def parse_args(args: Mapping[str, Any], features: Features = DEFAULT_FEATURES) -> int:
    """``VolumeBindingArgs`` -> bindTimeoutSeconds, defaulted and validated as upstream
    (``SetDefaults_VolumeBindingArgs``, ``ValidateVolumeBindingArgsWithOptions``; ``shape`` is
    ``parse_shape_args``'s, refused here with StorageCapacityScoring off); a ValueError names the field."""
    timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ValueError(f"bindTimeoutSeconds: Invalid value: {timeout!r}: must be an integer")
    problems = []
    if timeout < 0:
        problems.append(
            f"bindTimeoutSeconds: Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value"
        )
    if args.get("shape") is not None and not features.enabled("StorageCapacityScoring"):
        problems.append(
            f"shape: Invalid value: {args['shape']!r}: unexpected field `shape`, remove it or turn on the "
            "feature gate StorageCapacityScoring"
        )
    if problems:
        raise ValueError(", ".join(problems) if len(problems) == 1 else "[" + ", ".join(problems) + "]")
    return timeout


class VolumeBinding:
    """PreFilter, Filter, Reserve, PreBind and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        # Kept for PreBind's wait once claims are bound here; validated now so a bad value stops the start.
        self.bind_timeout_seconds = parse_args(args, features)
        shape = parse_shape_args(args, features)
        self.handle = handle
        # StorageCapacityScoring: the per-class score of a utilization (``buildScorerFunction``).
        self.utilization_score = (
            broken_linear([(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape])
            if shape is not None
            else None
        )

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        return sign_volumes(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_update), self.is_schedulable_after_storage_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update),
                self.is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_update), self.is_schedulable_after_csi_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE), self.is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add_update),
                self.is_schedulable_after_csi_storage_capacity_change,
            ),
        ]

    # -- queueing hints --------------------------------------------------------------------------

    def is_schedulable_after_csi_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        objs = as_objects(CSINode, old, new)
        if objs is None or objs[0] is None or objs[1] is None:
            return QueueingHint.QUEUE
        changed = objs[0].migrated_annotation != objs[1].migrated_annotation
        return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_claim_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        return claim_hint(pod, old, new, ephemeral=True)

    def is_schedulable_after_storage_class_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        objs = as_objects(StorageClass, old, new)
        if objs is None or objs[1] is None or objs[0] is None:
            return QueueingHint.QUEUE
        changed = objs[0].allowed_topologies != objs[1].allowed_topologies
        return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_storage_capacity_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        objs = as_objects(CSIStorageCapacity, old, new)
        if objs is None or objs[1] is None or objs[0] is None:
            return QueueingHint.QUEUE
        before, after = _volume_limit(objs[0]), _volume_limit(objs[1])
        if after is not None and (before is None or after > before):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(CSIDriver, old, new)
        if objs is None or objs[0] is None or objs[1] is None:
            return QueueingHint.QUEUE
        original, modified = objs[0], objs[1]
        for volume in pod.volumes:
            csi = volume.spec.get("csi")
            if not isinstance(csi, Mapping) or csi.get("driver") != modified.name:
                continue
            if original.storage_capacity and not modified.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- scheduling ------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        storage = self.handle.current().storage
        try:
            claims = binder.pod_volume_claims(storage, pod)
        except binder.ClaimError as e:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(e),))
        if claims is None:
            state.write(STATE_KEY, _State())
            return None, _SKIP
        if claims.unbound_immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNBOUND_IMMEDIATE,))
        if claims.unbound_delay_binding and self.handle.volume_binder is None:
            waiting = {c.name for c in claims.unbound_delay_binding}
            field_ = _claim_field(pod, waiting) or "spec.volumes"
            return None, refusal(field_, NAME, f"{DELAY_BINDING}, which spread-scheduler does not do yet")
        volumes = binder.unbound_volumes(storage, claims.unbound_delay_binding)
        state.write(STATE_KEY, _State(claims, volumes))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            stored = state.read(STATE_KEY, _State)
        except StateKeyError as e:
            return Status.as_error(str(e))
        if not stored.claims.bound and not stored.claims.unbound_delay_binding:
            return None
        node = node_info.node
        try:
            volumes, reasons = binder.find_pod_volumes(
                self.handle.current().storage, stored.claims, stored.volumes_by_class, node.name, node.labels
            )
        except binder.ClaimError as e:
            return Status.as_error(str(e))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), NAME)
        stored.by_node[node.name] = volumes
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """``AssumePodVolumes``: the chosen node's PVs bound to their claims and its claims to
        provision marked with the node, in the cache only, so the next pod sees them taken."""
        stored = state.get(STATE_KEY)
        if not isinstance(stored, _State):
            return None
        planned = stored.by_node.get(node_name)
        if planned is None or not stored.claims.unbound_delay_binding:
            stored.all_bound = True
            return None
        storage = self.handle.current().storage
        assumed = binder.PodVolumes()
        for claim, pv in planned.static_bindings:
            bound = binder.bind_volume_to_claim(pv, claim)
            if bound is not pv:
                storage.assume(bound, pv.resource_version)
            assumed.static_bindings.append((claim, bound))
        for claim in planned.dynamic_provisions:
            selected = binder.with_selected_node(claim, node_name)
            storage.assume(selected, claim.resource_version)
            assumed.dynamic_provisions.append(selected)
        stored.all_bound, stored.assumed = False, assumed
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """``RevertAssumedPodVolumes``."""
        stored = state.get(STATE_KEY)
        if not isinstance(stored, _State) or stored.assumed is None:
            return
        storage = self.handle.current().storage
        for _, pv in stored.assumed.static_bindings:
            storage.restore(pv)
        for claim in stored.assumed.dynamic_provisions:
            storage.restore(claim)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Skip when every claim is bound already: PreBind has nothing to write or wait for."""
        stored = state.get(STATE_KEY)
        if not isinstance(stored, _State) or stored.all_bound:
            return _SKIP
        if stored.assumed is None:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """``BindPodVolumes``: the writes, then the wait for the PV controller (``bindTimeoutSeconds``)."""
        stored = state.get(STATE_KEY)
        if not isinstance(stored, _State) or stored.all_bound:
            return None
        if stored.assumed is None or self.handle.volume_binder is None:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        try:
            await self.handle.volume_binder.bind_pod_volumes(
                pod,
                node_name,
                stored.assumed.static_bindings,
                stored.assumed.dynamic_provisions,
                self.bind_timeout_seconds,
            )
        except Exception as e:  # any failure fails PreBind; Unreserve reverts
            return Status.as_error(f"binding volumes: {e}")
        return None


def _claim_field(pod: Pod, claims: set[str]) -> str | None:
    """``spec.volumes[i].<source> (volume "<name>")`` of the first volume using one of ``claims``."""
    for i, volume in enumerate(pod.volumes):
        name = claim_name_of(pod, volume)
        if name in claims:
            source = "persistentVolumeClaim" if "persistentVolumeClaim" in volume.sources else "ephemeral"
            return f'spec.volumes[{i}].{source} (volume "{volume.name}")'
    return None


def _volume_limit(capacity: CSIStorageCapacity) -> Fraction | None:
    """``volumeLimit``: maximumVolumeSize when set, else capacity."""
    return capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity


class VolumeBindingWithCapacityScoring(VolumeBinding):
    """With StorageCapacityScoring (beta on from 1.37) VolumeBinding scores too: per StorageClass,
    the utilization its volumes would have on the node (static bindings: the claims' requests over
    the PVs' capacities; else dynamic provisions: over the CSIStorageCapacity they fit in), through
    the shape, averaged over the classes. The class the minor's registry hands out
    (``scheduler.plugins.registry.registry``), so profiles without the gate list no Score."""

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        # The gate is on: upstream's PreScore never skips (its state is always there after PreFilter).
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        stored = state.get(STATE_KEY)
        planned = stored.by_node.get(node_info.name) if isinstance(stored, _State) else None
        if planned is None or self.utilization_score is None:
            return 0
        classes: dict[str, list[int]] = {}  # class -> [requested, capacity]
        if planned.static_bindings:
            for claim, pv in planned.static_bindings:
                entry = classes.setdefault(pv.storage_class, [0, 0])
                entry[0] += _value(claim.request)
                entry[1] += _value(pv.capacity)
        else:
            for claim, node_capacity in zip(planned.dynamic_provisions, planned.node_capacities, strict=True):
                if node_capacity is None:
                    continue
                entry = classes.setdefault(claim.storage_class, [0, 0])
                entry[1] = _value(node_capacity.capacity)  # not +=: two claims of one class share its capacity
                entry[0] += _value(claim.request)
        if not classes:
            return 0
        score = self.utilization_score
        total = 0
        for requested, capacity in classes.values():
            utilization = (
                MAX_UTILIZATION if capacity == 0 or requested > capacity else requested * MAX_UTILIZATION // capacity
            )
            total += score(utilization)
        return go_round(total / len(classes))


def _value(quantity: Fraction | None) -> int:
    """``Quantity.Value()``: rounded up to a whole number; absent is 0."""
    return 0 if quantity is None else math.ceil(quantity)
