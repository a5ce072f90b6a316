"""NodeResourcesFit: a node must have room for the pod's requests; LeastAllocated scoring by default.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (1.35, SidecarContainers and
InPlacePodVerticalScaling on, DRAExtendedResource off).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Node, Pod
from scheduler.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, Resource, is_extended_resource_name
from scheduler.api.storage import DEVICE_CLASS_PREFIX, DeviceClass
from scheduler.features import DEFAULT_FEATURES, Features, PodRequestsRule
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
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
from scheduler.plugins.noderesources.dra_scoring import DRAScoreState, DRAScoring
from scheduler.plugins.noderesources.resource_allocation import ResourceAllocationScorer, parse_fit_args

__all__ = ["DRA_SIGNATURE_DISABLED", "Fit", "InsufficientResource", "delegated_to_dra", "fits_request"]

NAME = names.NODE_RESOURCES_FIT
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
PRE_SCORE_DRA_KEY = PRE_SCORE_STATE_KEY + "/DRA"  # upstream's preScoreState.draPreScoreState


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One resource the node is short of; ``unresolvable`` when even an empty node would be."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def fits_request(
    request: Resource,
    info: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    delegated: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """``fitsRequest``: the pod count first, then cpu, memory, ephemeral storage, scalar resources.

    ``delegated``: the requested resources a DeviceClass backs (DRAExtendedResource); on a node that
    offers none of one, DynamicResources answers for it (``shouldDelegateResourceToDRA``).
    """
    out: list[InsufficientResource] = []
    alloc = info.node.allocatable
    pods = len(info.pods)
    if pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource("pods", "Too many pods", 1, pods, alloc.allowed_pod_number))
    if request.is_zero_request():
        return out
    checks = (
        (CPU, request.milli_cpu, info.requested_milli_cpu, alloc.milli_cpu),
        (MEMORY, request.memory, info.requested_memory, alloc.memory),
        (EPHEMERAL_STORAGE, request.ephemeral_storage, info.requested_ephemeral_storage, alloc.ephemeral_storage),
    )
    for name, want, used, capacity in checks:
        if want > 0 and want > capacity - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, capacity, want > capacity))
    # Upstream walks a Go map here (random order); sorted names make our reason order stable.
    for name in sorted(request.scalar):
        want = request.scalar[name]
        if want == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or (ignored_groups and name.split("/", 1)[0] in ignored_groups)
        ):
            continue
        capacity = alloc.scalar.get(name, 0)
        if capacity <= 0 and name in delegated:
            continue
        used = info.requested_scalar.get(name, 0)
        if want > capacity - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, capacity, want > capacity))
    return out


def _fits_empty(pod: Pod, node: Node | None) -> bool:
    """``isFit``: the pod fits ``node`` with nothing else on it."""
    return node is not None and not fits_request(pod.resources.requests, NodeInfo(node))


def _any_requested_increased(pod: Pod, old: Node, new: Node) -> bool:
    """``haveAnyRequestedResourcesIncreased``: more pods allowed, or more of something the pod asks for."""
    request, before, after = pod.resources.requests, old.allocatable, new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.is_zero_request():
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(want and after.scalar.get(name, 0) > before.scalar.get(name, 0) for name, want in request.scalar.items())


def _scaled_down_for(target: Pod, old: Pod, new: Pod, rule: PodRequestsRule) -> bool:
    """``isSchedulableAfterPodScaleDown``: the target itself shrank, or an assigned pod released
    some of a resource the target asks for (each counted by the minor's ``rule``)."""
    if new.uid == target.uid:
        return True
    if not new.node_name:
        return False
    before, after = old.resources.under(rule).usage, new.resources.under(rule).usage
    for name, quantity in target.resources.under(rule).effective_requests.items():
        if quantity == 0:
            continue
        if name == CPU:
            shrank = before.milli_cpu > after.milli_cpu
        elif name == MEMORY:
            shrank = before.memory > after.memory
        elif name == EPHEMERAL_STORAGE:
            shrank = before.ephemeral_storage > after.ephemeral_storage
        else:
            shrank = before.scalar.get(name, 0) > after.scalar.get(name, 0)
        if shrank:
            return True
    return False


DRA_SIGNATURE_DISABLED = Status(
    Code.UNSCHEDULABLE, ("signature disabled when dra extended resources are used in the cluster",)
)


def delegated_to_dra(handle: Handle, pod: Pod, *, enabled: bool) -> frozenset[str]:
    """The extended resources the pod requests that a DeviceClass backs (DRAExtendedResource on)."""
    if not enabled or handle.snapshot is None:
        return frozenset()
    storage = handle.snapshot.storage
    return frozenset(
        name for name, want in pod.resources.requests.scalar.items() if want and storage.device_class_for(name)
    )


class Fit:
    """PreFilter, Filter, PreScore, Score and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        parsed = parse_fit_args(args)
        self.ignored_resources = parsed.ignored_resources
        self.ignored_resource_groups = parsed.ignored_resource_groups
        self.scorer = ResourceAllocationScorer.for_strategy(parsed)
        self.handle = handle
        self.features = features
        self.dra_extended_resource = features.enable_dra_extended_resource
        # DRA-backed extended resources among the scored ones are counted in devices (NewFit gives
        # its scorer the DRA manager with DRAExtendedResource on).
        self.dra = (
            DRAScoring(features.minor, consumable_capacity=features.enabled("DRAConsumableCapacity"))
            if self.dra_extended_resource
            else None
        )
        self.requests_rule = features.pod_requests_rule

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        if delegated_to_dra(self.handle, pod, enabled=self.dra_extended_resource):
            return (), DRA_SIGNATURE_DISABLED
        return [(signers.RESOURCES_SIGNER_NAME, signers.resources_signer(pod))], None

    # -- events ----------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        events = [
            # A pod leaving a node, or shrinking in place, frees what it requested.
            ClusterEventWithHint(
                ClusterEvent(
                    assigned_pod_resource(self.features), ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                ),
                self.is_schedulable_after_pod_event,
            ),
            # A new node, or a node offering more, may have room.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self.features.target_pod_events:
            # The pod itself asking for less (before 1.37 the Pod registration above saw it too).
            events.insert(
                1,
                ClusterEventWithHint(
                    ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                    self.is_schedulable_after_target_pod_scale_down,
                ),
            )
        if self.dra_extended_resource:
            # A class that now backs a resource the pod asks for hands it to DynamicResources
            # ("Insufficient X" no longer applies where no device plugin offers X).
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                    self.is_schedulable_after_device_class_event,
                )
            )
        return events

    def is_schedulable_after_target_pod_scale_down(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        """Since 1.37: the pending pod asks for less, which may fit now."""
        return QueueingHint.QUEUE

    def is_schedulable_after_device_class_event(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """Upstream's ``isSchedulableAfterDeviceClassEvent``: an added class whose implicit name the pod
        asks for, or a class added or changed to back an extended resource name the pod asks for."""
        objs = as_objects(DeviceClass, old, new)
        modified = objs[1] if objs is not None else None
        if objs is None or modified is None:
            return QueueingHint.QUEUE
        original = objs[0]
        requests = pod.resources.requests.scalar  # resource.PodRequests of the spec
        if original is not None:
            if original.extended_resource_name == modified.extended_resource_name:
                return QueueingHint.QUEUE_SKIP  # the name a class backs implicitly never changes
        elif DEVICE_CLASS_PREFIX + modified.name in requests:
            return QueueingHint.QUEUE
        if modified.extended_resource_name is not None and modified.extended_resource_name in requests:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_event(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(Pod, old, new)
        if objs is None:
            return QueueingHint.QUEUE
        original, modified = objs
        if original is None:
            return QueueingHint.QUEUE
        if modified is None:  # deleted: only a pod that held (or was about to hold) a node frees anything
            if not original.node_name and not original.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        return (
            QueueingHint.QUEUE
            if _scaled_down_for(pod, original, modified, self.requests_rule)
            else QueueingHint.QUEUE_SKIP
        )

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(Node, old, new)
        if objs is None:
            return QueueingHint.QUEUE
        original, modified = objs
        if not _fits_empty(pod, modified):
            return QueueingHint.QUEUE_SKIP
        if original is None or modified is None:
            return QueueingHint.QUEUE
        if not _any_requested_increased(pod, original, modified):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- filtering -------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> Hashable:
        r = pod.resources.requests
        requests = (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalar.items())))
        # The DeviceClasses of the moment are part of what Filter reads: in the signature.
        delegated = delegated_to_dra(self.handle, pod, enabled=self.dra_extended_resource)
        return requests, tuple(self.scorer.pod_requests(pod)), delegated

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, pod.resources.requests)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        request = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(request, Resource):
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        delegated = delegated_to_dra(self.handle, pod, enabled=self.dra_extended_resource)
        short = fits_request(request, node_info, self.ignored_resources, self.ignored_resource_groups, delegated)
        if not short:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if any(r.unresolvable for r in short) else Code.UNSCHEDULABLE
        return Status(code, tuple(r.reason for r in short), NAME)

    # -- scoring ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self.scorer.pod_requests(pod))
        dra = self.dra.pre_score(self.handle, self.scorer.names) if self.dra is not None else None
        if dra is not None:
            state.write(PRE_SCORE_DRA_KEY, dra)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        requests = state.get(PRE_SCORE_STATE_KEY)
        dra = state.get(PRE_SCORE_DRA_KEY)
        if not isinstance(requests, list):  # PreScore did not run: upstream reads the devices here
            requests = self.scorer.pod_requests(pod)
            dra = self.dra.pre_score(self.handle, self.scorer.names) if self.dra is not None else None
        return self.scorer.score(node_info, requests, dra if isinstance(dra, DRAScoreState) else None)
