"""DynamicResources for claims with structured parameters: PreEnqueue, PreFilter, Filter, PostFilter,
Score, Reserve, Unreserve and PreBind (upstream's ``dynamicresources.go``), in the default profile of
every minor. PreBind's writes go through a ``ClaimWriter``; without one a pod with claims to write is
not bound. Extended resources a DeviceClass backs (DRAExtendedResource) are allocated in a claim of
their own, which PreBind creates (``extendedclaim``; docs/dra-plugin.md says what else is missing).
Where devices have binding conditions (DRADeviceBindingConditions), PreBind then waits for them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import structlog

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.nodeselector import NodeSelector
from scheduler.api.objects import NodeName, Pod
from scheduler.api.resourceclaim import AllocationResult, DeviceClaim, ResourceClaim
from scheduler.api.resources import container_requests
from scheduler.api.resourceslice import ResourceSlice
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import Handle, NominatingInfo
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.logs import enabled, kobj
from scheduler.plugins import names
from scheduler.plugins.dynamicresources import cel
from scheduler.plugins.dynamicresources.extended import (
    CANNOT_FIT_RESOURCE,
    NO_CLAIMS_TO_DEALLOCATE,
    backed_extended_resources,
    is_dra_extended_resource_name,
)
from scheduler.plugins.dynamicresources.plugin.args import DynamicResourcesArgs, parse_args
from scheduler.plugins.dynamicresources.plugin.binding import (
    ERR_DEVICE_BINDING_TIMEOUT,
    STATUS_ERROR,
    STATUS_FAILED,
    STATUS_SUCCESS,
    STATUS_TIMEOUT,
    BindingFailedError,
    BindingTimeoutError,
    binding_conditions_status,
    binding_timed_out,
    format_status_one_line,
    has_binding_conditions,
    pod_ready_for_binding,
    ready_for_binding,
    statuses_for,
)
from scheduler.plugins.dynamicresources.plugin.claimwrites import (
    FINALIZER,
    ClaimBinding,
    ClaimDeallocation,
    ClaimWriter,
    binding_for,
)
from scheduler.plugins.dynamicresources.plugin.extendedclaim import (
    CANNOT_SCHEDULE,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    ContainerRequestMapping,
    ExtendedClaimCreation,
    find_extended_resource_claim,
    node_extended_resources,
    pod_status_patch,
    requests_and_mappings,
)
from scheduler.plugins.dynamicresources.plugin.hints import ClaimHints
from scheduler.plugins.dynamicresources.plugin.inflight import InFlightAllocations, gather_allocated_state
from scheduler.plugins.dynamicresources.plugin.podclaims import ClaimNotUsableError, is_reserved_for, pod_claims
from scheduler.plugins.dynamicresources.plugin.score import claims_score
from scheduler.plugins.dynamicresources.structured import Allocation, AllocationError, Allocator, FailedOnNodeError
from scheduler.plugins.dynamicresources.structured.features import for_scheduler
from scheduler.plugins.dynamicresources.structured.pools import NodePools
from scheduler.plugins.helper.normalize_score import default_normalize_score

__all__ = ["BindingConditionsMetrics", "DRALister", "StructuredDynamicResources"]

log = structlog.get_logger("spread-scheduler")

STATE_KEY = names.DYNAMIC_RESOURCES
DEALLOCATION_KEY = names.DYNAMIC_RESOURCES + "/deallocation"
UNRESERVE_KEY = names.DYNAMIC_RESOURCES + "/unreserve"
NOT_FOUND = "not found"  # getStateData returns CycleState.Read's fwk.ErrNotFound as it is
BINDING_CONDITIONS_POLL_SECONDS = 5.0  # PreBind's wait.PollUntilContextTimeout interval
DEADLINE_EXCEEDED = f"{ERR_DEVICE_BINDING_TIMEOUT}: context deadline exceeded"  # the wait's own timeout
CEL_CACHE_SIZE = 10  # the scheduler's cel.NewCache(10, ...)
NO_CLAIM_WRITER = "no claim writer is configured to write its allocation and reservation, so the pod is not bound"


@runtime_checkable
class DRALister(Protocol):
    """The DRA objects the plugin reads (the cache's ``StorageObjects``)."""

    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None: ...

    def resource_claims(self) -> Iterable[ResourceClaim]: ...

    def resource_slices(self) -> Sequence[ResourceSlice]: ...

    def device_class(self, name: str) -> DeviceClass | None: ...


class BindingConditionsMetrics(Protocol):
    """One profile's ``scheduler_dra_bindingconditions_*`` metrics (registered where the minor has them)."""

    def observe_wait(self, driver: str, status: str, seconds: float) -> None:
        """``dra_bindingconditions_wait_duration_seconds``: PreBind's wait, once per allocated device."""
        ...

    def count_allocation(self, driver: str, status: str) -> None:
        """``dra_bindingconditions_allocations_total``: one per device with binding conditions."""
        ...


class _Classes(Mapping[str, DeviceClass]):
    """The DeviceClass lister as the allocator's mapping (it only looks classes up by name)."""

    def __init__(self, lister: DRALister) -> None:
        self.lister = lister

    def __getitem__(self, name: str) -> DeviceClass:
        found = self.lister.device_class(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0


@dataclass(slots=True)
class _State:
    """``stateData``: the pod's claims, per claim where an allocated one is available, the allocator."""

    claims: list[ResourceClaim] = field(default_factory=list)
    available_on: list[NodeSelector | None] = field(default_factory=list)
    allocator: Allocator | None = None
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, Allocation] = field(default_factory=dict)  # results built when read
    allocations: dict[int, AllocationResult] = field(default_factory=dict)  # set by Reserve
    pending: list[ResourceClaim] = field(default_factory=list)  # the claims to allocate, for every Filter
    # DRAExtendedResource: the index in ``claims`` of the claim for the pod's class-backed extended
    # resources (the in-memory one, or the one an earlier cycle created), the pod's DRA extended
    # resource requests, the classes backing them, and per node the claim with that node's requests
    # and the container mappings (None: the node needs no devices for them).
    extended_index: int | None = None
    extended_requested: dict[str, int] = field(default_factory=dict)
    extended_classes: dict[str, str] = field(default_factory=dict)
    node_extended: dict[str, tuple[ResourceClaim, tuple[ContainerRequestMapping, ...]] | None] = field(
        default_factory=dict
    )
    reserved_extended: tuple[ResourceClaim, tuple[ContainerRequestMapping, ...]] | None = None  # set by Reserve

    @property
    def extended(self) -> bool:
        return self.extended_index is not None

    def user_claims(self) -> bool:
        return len(self.claims) > (1 if self.extended else 0)

    def to_allocate(self) -> list[int]:
        return [i for i, claim in enumerate(self.claims) if claim.allocation is None]


class _Deadline:
    """The Filter's context with DRASchedulerFilterTimeout: the allocator polls ``cause``."""

    def __init__(self, clock: Callable[[], float], timeout: float) -> None:
        self.clock = clock
        self.end = clock() + timeout
        self.passed = False

    def cause(self) -> str | None:
        if self.clock() > self.end:
            self.passed = True
            return "context deadline exceeded"
        return None


class _StoppedError(Exception):
    """The scheduler stopped while PreBind waited (upstream's cancelled context)."""


def _klog(claim: ResourceClaim) -> str:
    return f"{claim.namespace}/{claim.name}"


def _unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))


class StructuredDynamicResources:
    """The plugin; ``in_flight`` is the claim tracker every profile of one scheduler shares."""

    NAME = names.DYNAMIC_RESOURCES

    def __init__(
        self,
        args: Mapping[str, Any],
        handle: Handle,
        features: Features = DEFAULT_FEATURES,
        *,
        lister: DRALister | None = None,
        in_flight: InFlightAllocations | None = None,
    ) -> None:
        self.handle = handle
        self.features = features
        self._lister = lister
        self.in_flight = in_flight if in_flight is not None else InFlightAllocations()
        self.allocator_features, self.release = for_scheduler(features)
        self.cel_cache = cel.Cache(CEL_CACHE_SIZE, cel.compiler_for(int(features.minor.split(".")[1])))
        self.node_pools = NodePools()  # each node's pools, for every pod's allocator while the slices stay
        self.hints = ClaimHints(features, self._claim)
        self.binding_conditions = "device_binding_and_status" in self.allocator_features.enabled()
        self.consumable_capacity = self.allocator_features.consumable_capacity
        # PreBind's writes (``Scheduler.use_claim_writer``); None: a pod with claims to write is not bound.
        self.claim_writer: ClaimWriter | None = None
        self.clock: Callable[[], float] = time.time
        self.args: DynamicResourcesArgs = parse_args(args, features)
        self.filter_timeout = self.args.filter_timeout
        self.binding_timeout = self.args.binding_timeout
        self.poll_interval = BINDING_CONDITIONS_POLL_SECONDS
        # Where PreBind's binding-conditions outcome is counted (``Scheduler.use_binding_conditions_metrics``).
        self.binding_metrics: BindingConditionsMetrics | None = None
        # Off in a dry run (``simulate``): no driver will ever meet the conditions, so the pod binds
        # as it would once they are met.
        self.wait_for_binding_conditions = True

    def use_lister(self, lister: DRALister) -> None:
        """Read the DRA objects from ``lister`` (the scheduler's cache) at every extension point:
        PreEnqueue and the queueing hints run outside any cycle, where no snapshot is set (upstream's
        informer-backed DRA manager)."""
        self._lister = lister

    def lister(self) -> DRALister:
        if self._lister is not None:
            return self._lister
        storage = self.handle.current().storage
        if not isinstance(storage, DRALister):
            raise RuntimeError("the snapshot's storage holds no DRA objects")
        return storage

    def _claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim tracker's ``Get``: the cache's claim; an in-flight allocation is not in it yet."""
        return self.lister().resource_claim(namespace, name)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self.hints.events_to_register()

    def pre_enqueue(self, pod: Pod) -> Status | None:
        try:
            pod_claims(pod, self._claim)
        except ClaimNotUsableError as err:
            return _unresolvable(str(err))
        return None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)
        try:
            claims = pod_claims(pod, self._claim)
        except ClaimNotUsableError as err:
            return None, _unresolvable(str(err))
        if self.features.enable_dra_extended_resource and self.handle.snapshot is not None:
            extended = backed_extended_resources(pod, self.handle.snapshot.storage)
            if extended:
                claims.append(self._extended_claim(pod, s, extended))
                s.extended_index = len(claims) - 1
        if not claims:
            return None, Status(Code.SKIP)
        available_on: list[NodeSelector | None] = []
        to_allocate = 0
        for claim in claims:
            selector = None
            if claim.allocation is not None:
                # resourceclaim.CanBeReserved is always true: an allocated claim never blocks here.
                selector = claim.allocation.node_selector
                if selector is not None and selector.parse_errors:
                    return None, Status.as_error("; ".join(selector.parse_errors))
            else:
                to_allocate += 1
                if self.in_flight.has(claim.uid):
                    return None, _unresolvable(f"resource claim {_klog(claim)} is in the process of being allocated")
                refused = self._check_requests(claim)
                if refused is not None:
                    return None, refused
            available_on.append(selector)
        s.available_on = available_on
        if to_allocate:
            lister = self.lister()
            allocated = gather_allocated_state(
                lister.resource_claims(), self.in_flight, consumable_capacity=self.consumable_capacity
            )
            s.allocator = Allocator(
                self.allocator_features,
                allocated.devices,
                _Classes(lister),
                lister.resource_slices(),
                self.cel_cache,
                release=self.release,
                shared_devices=allocated.shared_devices,
                aggregated_capacity=allocated.aggregated_capacity,
                node_pools=self.node_pools,
            )
        s.claims = claims
        s.pending = [claims[i] for i in s.to_allocate()]
        return None, None

    def _extended_claim(self, pod: Pod, s: _State, extended: tuple[tuple[str, str], ...]) -> ResourceClaim:
        """``preFilterExtendedResources``: the claim an earlier cycle created for the pod's extended
        resources, else one in memory (no requests: Filter gives it each node's)."""
        requests = pod.resources.requests.scalar
        s.extended_requested = {
            name: int(q) for name, q in requests.items() if q and is_dra_extended_resource_name(name)
        }
        s.extended_classes = dict(extended)
        found = find_extended_resource_claim(pod, self.lister().resource_claims())
        if found is not None:
            return found
        return ResourceClaim(
            pod.namespace,
            SPECIAL_CLAIM_NAME,
            uid=str(uuid.uuid4()),
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            controller_uid=pod.uid,
        )

    def _filter_extended(
        self, s: _State, pod: Pod, node_info: NodeInfo
    ) -> tuple[tuple[ResourceClaim, tuple[ContainerRequestMapping, ...]] | None, Status | None]:
        """``filterExtendedResources``: the claim with the requests this node needs devices for (the
        class-backed resources it does not offer itself), with the container mappings."""
        if s.extended_index is None:
            return None, None
        claim = s.claims[s.extended_index]
        if claim.devices.requests:
            return None, _unresolvable(CANNOT_SCHEDULE)
        node = node_info.node
        needed = node_extended_resources(
            s.extended_requested, node.allocatable.scalar, lambda name: name in s.extended_classes
        )
        if needed is None:
            return None, _unresolvable(CANNOT_FIT_RESOURCE)
        if (not s.user_claims() and not needed) or claim.allocation is not None:
            return None, None
        containers = container_requests(pod.raw.get("spec") or {})
        requests, mappings = requests_and_mappings(containers, needed, s.extended_classes.get)
        return (_with(claim, devices=DeviceClaim(requests=requests)), mappings), None

    def _check_requests(self, claim: ResourceClaim) -> Status | None:
        """Each request's class must exist (``validateDeviceClass``), subrequests only with the feature."""
        for request in claim.devices.requests:
            if request.exactly is not None:
                refused = self._check_class(request.exactly.device_class_name, request.name)
            elif request.first_available:
                if "prioritized_list" not in self.allocator_features.enabled():
                    return _unresolvable(
                        f"resource claim {_klog(claim)}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                refused = None
                for sub in request.first_available:
                    refused = self._check_class(sub.device_class_name, f"{request.name}/{sub.name}")
                    if refused is not None:
                        break  # the first subrequest whose class is missing
            else:
                return _unresolvable(f"resource claim {_klog(claim)}, request {request.name}: unknown request type")
            if refused is not None:
                return refused
        return None

    def _check_class(self, class_name: str, request: str) -> Status | None:
        if not class_name:
            return Status.as_error(f"request {request}: unsupported request type")
        if self.lister().device_class(class_name) is None:
            return _unresolvable(f"request {request}: device class {class_name} does not exist")
        return None

    def _state(self, state: CycleState) -> _State | None:
        found = state.get(STATE_KEY)
        return found if isinstance(found, _State) else None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status.as_error(NOT_FOUND)
        node_extended, refused = self._filter_extended(s, pod, node_info)
        if refused is not None:
            return refused
        if node_extended is None and not s.user_claims():
            return None
        node = node_info.node
        unavailable = [
            i
            for i, selector in enumerate(s.available_on)
            if (selector is not None and not selector.matches(node.name, node.labels))
            or (self.binding_conditions and self._binding_blocked(s.claims[i]))
        ]
        allocations: Allocation | None = None
        if s.allocator is not None:
            # The same claims for every node (so prepared once) unless this node's extended claim
            # stands in for the pod's in-memory one.
            to_allocate = s.pending
            if node_extended is not None and s.extended_index is not None:
                to_allocate = [node_extended[0] if i == s.extended_index else s.claims[i] for i in s.to_allocate()]
            deadline = _Deadline(self.clock, self.filter_timeout)
            # The cycle's allocator serves one Filter at a time (the framework filters nodes in turn).
            s.allocator.stop = deadline.cause if self.filter_timeout else None
            try:
                allocations = s.allocator.search(node, to_allocate)
            except FailedOnNodeError as err:
                return _unresolvable(str(err))
            except (AllocationError, ValueError) as err:
                if deadline.passed:
                    if self.features.dra_filter_timeout_error:
                        return Status.as_error(f"node {node.name}: timed out trying to allocate devices")
                    return _unresolvable("timed out trying to allocate devices")
                return Status.as_error(str(err))
            if allocations is None or len(allocations) != len(to_allocate):
                return _unresolvable("cannot allocate all claims")
        if unavailable:
            s.unavailable.update(unavailable)
            return _unresolvable("resourceclaim not available on the node")
        if allocations is not None:
            s.node_allocations[node.name] = allocations
        if s.extended:
            s.node_extended[node.name] = node_extended
        return None

    def _binding_blocked(self, claim: ResourceClaim) -> bool:
        """An allocated claim whose binding failed, or is not ready and timed out (``Filter``)."""
        if claim.allocation is None:
            return False
        try:
            ready = ready_for_binding(claim)
        except BindingFailedError:
            return True
        return not ready and binding_timed_out(claim, self.clock(), self.binding_timeout)

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        """Deallocate an allocated claim that was not available on some node and that nobody else uses
        (upstream picks one at random among them; here the first): the write is left in the cycle
        state as a ``ClaimDeallocation`` for ``write_deallocation``, which ``ScheduleOne`` awaits."""
        s = self._state(state)
        if s is None:
            return None, Status(Code.ERROR, (), "", "")
        silent = self.features.dra_post_filter_silent
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE) if silent else Status(
                Code.UNSCHEDULABLE, (NO_CLAIMS_TO_DEALLOCATE,)
            )
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            users = claim.reserved_for
            if not users or (len(users) == 1 and users[0].uid == pod.uid):
                state.write(DEALLOCATION_KEY, ClaimDeallocation(claim.namespace, claim.name, claim.uid))
                return None, Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",))
        return None, Status(Code.UNSCHEDULABLE) if silent else Status(Code.UNSCHEDULABLE, ("still not schedulable",))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = self._state(state)
        if s is None or not s.claims:
            return 0
        found = s.node_allocations.get(node_info.node.name)
        if found is None:
            return 0
        return claims_score(s.claims, found, allocated_claims_read=self.features.dra_score_allocated_claims)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` of every node, the state read once: a pod without claims (most) costs no call per node."""
        s = self._state(state)
        if s is None or not s.claims:
            return [0] * len(nodes)
        found = s.node_allocations.get
        read = self.features.dra_score_allocated_claims
        return [
            0
            if (results := found(node.node.name)) is None
            else claims_score(s.claims, results, allocated_claims_read=read)
            for node in nodes
        ]

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: NodeName) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status.as_error(NOT_FOUND)
        indices = s.to_allocate()
        if not s.claims or not indices or s.allocator is None:
            return None
        found = s.node_allocations.get(node_name)
        if not found:
            # Only the extended resources' claim, which this node's device plugin serves: nothing to allocate.
            if not any(i != s.extended_index for i in indices):
                return None
            return Status.as_error("claim allocation not found for node")
        if len(found) != len(indices):
            return Status.as_error(
                f"internal error, have {len(found)} allocations, {len(indices)} claims to allocate, "
                f"want {len(indices)} claims"
            )
        node_extended = s.node_extended.get(node_name)
        for index, allocation in zip(indices, found, strict=True):
            s.allocations[index] = allocation
            claim = s.claims[index]
            if index == s.extended_index and node_extended is not None:
                claim = node_extended[0]
                s.reserved_extended = node_extended
            finalizers = claim.finalizers if FINALIZER in claim.finalizers else (*claim.finalizers, FINALIZER)
            self.in_flight.signal(_with(claim, allocation=allocation, finalizers=finalizers))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: NodeName) -> None:
        """Drop this pod's in-flight allocations. The claims whose ``reservedFor`` entry for the pod
        upstream then removes with a strategic-merge patch are left in the cycle state
        (``UNRESERVE_KEY``, the claims as the cycle holds them) for ``write_unreserve``: Unreserve runs
        synchronously, the patch is awaited by whoever ran it (``ScheduleOne``)."""
        s = self._state(state)
        if s is None:
            return
        patches = []
        for i, claim in enumerate(s.claims):
            self.in_flight.remove(claim.uid)
            if i == s.extended_index:
                # ``unreserveExtendedResourceClaim``: a claim created for the pod's extended resources
                # is deleted (``write_unreserve`` tells it by its annotation and owner), not patched.
                if claim.name != SPECIAL_CLAIM_NAME:
                    patches.append(claim)
            elif claim.allocation is not None and is_reserved_for(pod, claim):
                patches.append(claim)
        state.write(UNRESERVE_KEY, tuple(patches))

    @staticmethod
    def pending_deallocation(state: CycleState) -> ClaimDeallocation | None:
        """The deallocation PostFilter decided in this cycle, for ``write_deallocation``."""
        found = state.get(DEALLOCATION_KEY)
        return found if isinstance(found, ClaimDeallocation) else None

    @staticmethod
    def pending_unreserve(state: CycleState) -> tuple[ResourceClaim, ...]:
        """The claims Unreserve left for ``write_unreserve`` (each taken once: a second Unreserve
        of the same cycle writes the key again)."""
        found = state.get(UNRESERVE_KEY)
        if not isinstance(found, tuple):
            return ()
        state.write(UNRESERVE_KEY, ())
        return tuple(c for c in found if isinstance(c, ResourceClaim))

    async def write_deallocation(self, pod: Pod, deallocation: ClaimDeallocation) -> None:
        """PostFilter's ``UpdateStatus`` through ``claim_writer``; raises on failure (upstream's
        PostFilter then answers with the error). Without a writer nothing is written."""
        if self.claim_writer is None:
            return
        if enabled(5):
            claim = kobj(f"{deallocation.namespace}/{deallocation.name}")
            log.info("Deallocation of ResourceClaim", v=5, pod=kobj(pod.key), resourceclaim=claim)
        await self.claim_writer.deallocate_claim(deallocation)

    async def write_unreserve(self, pod: Pod, claims: Sequence[ResourceClaim]) -> None:
        """Unreserve's patches through ``claim_writer``, one claim after the other; a failure is logged
        and the next claim patched, as upstream ("We will get here again when pod scheduling is retried")."""
        if self.claim_writer is None:
            return
        for claim in claims:
            if enabled(5):
                log.info("unreserve", v=5, resourceclaim=kobj(_klog(claim)), pod=kobj(pod.key))
            try:
                if find_extended_resource_claim(pod, (claim,)) is not None:
                    await self.claim_writer.delete_claim(claim)
                else:
                    await self.claim_writer.unreserve_claim(pod, claim)
            except Exception as err:
                log.error("unreserve", resourceclaim=kobj(_klog(claim)), err=str(err) or type(err).__name__)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: NodeName) -> Status | None:
        """PreBind has work for a pod with claims only."""
        s = self._state(state)
        if s is None:
            return Status.as_error(NOT_FOUND)
        return None if s.claims else Status(Code.SKIP)

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod``: a pod with claims is not batched."""
        if signers.has_items(signers.spec_field(pod, "resourceClaims")):
            return (), Status(Code.UNSCHEDULABLE, ("pods with dra resource claims are not signable",))
        return (), None

    def claim_written(self, state: CycleState, claim: ResourceClaim) -> None:
        """PreBind's write of ``claim`` succeeded: the cycle now holds the claim as written (upstream's
        ``state.claims.set``), so Unreserve sees the reservation, and the allocation leaves the
        in-flight set. Call it once the cache holds the written claim (upstream's
        ``AssumeClaimAfterAPICall``): until then the in-flight entry is what keeps its devices taken."""
        s = self._state(state)
        if s is None:
            return
        for i, held in enumerate(s.claims):
            if held.uid == claim.uid:
                s.claims[i] = claim
        self.in_flight.remove(claim.uid)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: NodeName) -> Status | None:
        """Upstream's PreBind: each claim not yet reserved for the pod is written (``bindClaim``) through
        ``claim_writer``, in the pod's order, and the written claim kept for Unreserve. Without a writer
        a pod with writes to make fails here: binding it would leave its devices allocated to nobody
        in the API, free for the next pod once the in-flight allocation is dropped.

        Then, with DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, when some allocated
        device has binding conditions: waits for the driver to meet them (``_wait_for_binding``).
        """
        s = self._state(state)
        if s is None:
            return Status.as_error(NOT_FOUND)
        writes = self.pre_bind_writes(state, pod, node_name)
        if writes and self.claim_writer is None:
            return Status.as_error(f"resource claim {writes[0].namespace}/{writes[0].name}: {NO_CLAIM_WRITER}")
        for binding in writes:
            assert self.claim_writer is not None
            if binding.allocation is not None and self._allocated_meanwhile(binding):
                # bindClaim's check. A pod naming one claim twice meets it at the second entry: upstream
                # writes from the cycle's copy, conflicts, reads the claim again and finds it allocated.
                return Status.as_error(
                    f"claim {binding.namespace}/{binding.name} got allocated elsewhere in the meantime"
                )
            try:
                written = await self.claim_writer.bind_claim(pod, binding)
            except Exception as err:  # any failure fails PreBind; Unreserve drops the in-flight allocations
                return Status.as_error(str(err))
            self.claim_written(state, written)
        status = await self._pre_bind_extended(state, s, pod)
        if status is not None or not self.binding_conditions or not self.wait_for_binding_conditions:
            return status
        if not has_binding_conditions(s.claims):
            return None
        return await self._wait_for_binding(s, pod, node_name)

    async def _wait_for_binding(self, s: _State, pod: Pod, node_name: NodeName) -> Status | None:
        """Upstream's wait: an Event, then every ``poll_interval`` (the first at once) the pod's claims
        read again from the cache until all are ready, for at most ``binding_timeout``. A failure
        condition, a claim past its timeout, the wait's own timeout, or the scheduler stopping fails
        PreBind with an error: the pod is tried again, and that cycle's Filter and PostFilter
        deallocate a claim whose binding failed or timed out. A preemption that cancels the binding
        cycle is counted as an error and the cancellation goes on."""
        if self.handle.events is not None:
            self.handle.events.eventf(
                pod,
                "Normal",
                "BindingConditionsPending",
                "Scheduling",
                f"waiting for binding conditions for device on node {node_name}",
            )
        loop = asyncio.get_running_loop()
        started = loop.time()
        error: str | None = None
        outcome = STATUS_SUCCESS
        try:
            await self._poll_until_ready(s, started + self.binding_timeout)
        except BindingTimeoutError as err:
            error, outcome = str(err), STATUS_TIMEOUT
        except BindingFailedError as err:
            error, outcome = str(err), STATUS_FAILED
        except (_StoppedError, LookupError) as err:
            error, outcome = str(err), STATUS_ERROR
        except asyncio.CancelledError:
            self._observe_binding(s, STATUS_ERROR, loop.time() - started)
            raise
        self._observe_binding(s, outcome, loop.time() - started)
        devices = format_status_one_line(statuses_for(s.claims, outcome))
        if error is None:
            if enabled(5):
                log.info("BindingConditions is met", v=5, pod=kobj(pod.key), node=node_name, devices=devices)
            return None
        if enabled(5):
            log.info("dynamic resource plugin failed", v=5, pod=kobj(pod.key), err=error, devices=devices)
        return Status.as_error(error)

    async def _poll_until_ready(self, s: _State, deadline: float) -> None:
        """``wait.PollUntilContextTimeout`` over ``isPodReadyForBinding``, the claims read again put in
        ``s.claims`` (for Unreserve). Raises as ``pod_ready_for_binding`` does, ``BindingTimeoutError``
        once ``deadline`` (loop time) passes and ``_StoppedError`` when the scheduler stops."""
        loop = asyncio.get_running_loop()
        stopping = self.handle.stopping
        # The claim for extended resources that the node's device plugin serves was never created.
        indices = [i for i, claim in enumerate(s.claims) if claim.name != SPECIAL_CLAIM_NAME]
        while True:
            if stopping.is_set():
                raise _StoppedError("context canceled")
            claims = [s.claims[i] for i in indices]
            try:
                if pod_ready_for_binding(claims, self._claim, self.clock(), self.binding_timeout):
                    return
            finally:
                for i, claim in zip(indices, claims, strict=True):
                    s.claims[i] = claim
            left = deadline - loop.time()
            if left <= 0:
                raise BindingTimeoutError(DEADLINE_EXCEEDED)
            try:
                await asyncio.wait_for(stopping.wait(), min(self.poll_interval, left))
            except TimeoutError:
                if self.poll_interval >= left:
                    raise BindingTimeoutError(DEADLINE_EXCEEDED) from None

    def _observe_binding(self, s: _State, outcome: str, seconds: float) -> None:
        """The wait's duration once per allocated device, and one count per device with binding conditions."""
        metrics = self.binding_metrics
        if metrics is None:
            return
        for claim in s.claims:
            if claim.allocation is None:
                continue
            for result in claim.allocation.results:
                metrics.observe_wait(result.driver, outcome, seconds)
            for status in binding_conditions_status(claim):
                metrics.count_allocation(status.driver, outcome)

    def _allocated_meanwhile(self, binding: ClaimBinding) -> bool:
        """The claim PreBind is to allocate is allocated in the cache (the informer's state with the
        claims the scheduler wrote assumed), which an in-flight allocation is not."""
        held = self._claim(binding.namespace, binding.name)
        return held is not None and held.uid == binding.uid and held.allocation is not None

    def pre_bind_extended(self, state: CycleState, pod: Pod) -> ExtendedClaimCreation | None:
        """PreBind's create of the claim for the pod's extended resources, as data: None when Reserve
        allocated none (the node's device plugin serves them, or an earlier cycle created it)."""
        s = self._state(state)
        if s is None or s.reserved_extended is None or s.extended_index is None:
            return None
        claim, mappings = s.reserved_extended
        if claim.name != SPECIAL_CLAIM_NAME:
            return None
        return ExtendedClaimCreation(pod, claim.devices.requests, mappings)

    async def _pre_bind_extended(self, state: CycleState, s: _State, pod: Pod) -> Status | None:
        """``bindClaim`` of the extended resources' claim: created (``generateName``), allocated and
        reserved as any claim, then the pod's ``status.extendedResourceClaimStatus`` patched."""
        creation = self.pre_bind_extended(state, pod)
        if creation is None or s.reserved_extended is None or s.extended_index is None:
            return None
        claim, mappings = s.reserved_extended
        writer = self.claim_writer
        if writer is None:
            return Status.as_error(f"resource claim {claim.namespace}/{claim.name}: {NO_CLAIM_WRITER}")
        try:
            created = await writer.create_claim(pod.namespace, creation.body())
        except Exception as err:
            return Status.as_error(f"create claim for extended resources {pod.namespace}/<generated>: {err}")
        # Unreserve now deletes the created claim. The in-memory claim's in-flight entry keeps its
        # devices taken until the allocation is written (and assumed), or the write failed.
        s.claims[s.extended_index] = created
        binding = binding_for(
            pod, created, s.allocations.get(s.extended_index), binding_conditions=self.binding_conditions
        )
        try:
            written = await writer.bind_claim(pod, binding)
        except Exception as err:
            return Status.as_error(str(err))
        finally:
            self.in_flight.remove(claim.uid)
        s.claims[s.extended_index] = written
        try:
            await writer.patch_pod_status(pod, pod_status_patch(pod, written.name, mappings))
        except Exception as err:
            return Status.as_error(str(err))
        return None

    def pre_bind_writes(self, state: CycleState, pod: Pod, node_name: NodeName) -> list[ClaimBinding]:
        """PreBind's writes, as data: each claim not yet reserved for the pod, in the pod's order."""
        s = self._state(state)
        if s is None:
            return []
        return [
            binding_for(pod, claim, s.allocations.get(i), binding_conditions=self.binding_conditions)
            for i, claim in enumerate(s.claims)
            if not is_reserved_for(pod, claim) and claim.name != SPECIAL_CLAIM_NAME
        ]


def _with(claim: ResourceClaim, **changes: Any) -> ResourceClaim:
    return dataclasses.replace(claim, **changes)
