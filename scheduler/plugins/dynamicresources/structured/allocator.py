"""Allocate devices to ResourceClaims for one node, as upstream's structured allocator does: its
*stable* variant (``internal/stable/allocator_stable.go``, v0.35.4) and its *incubating* one
(``internal/incubating/allocator_incubating.go``), which kube-scheduler runs with its default gates.

The search is exhaustive and stops at the first solution: claims in the order given, each claim's
requests in order (a ``firstAvailable`` request tries its subrequests in order), and for each device
a request needs, the candidates in pool, slice and device order, backtracking when a later device
cannot be found. Errors carry upstream's texts. What is not covered yet is in docs/dra-allocator.md.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import uuid
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import overload

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.devicefields import DeviceTaint, DeviceToleration
from scheduler.api.objects import Node
from scheduler.api.resourceclaim import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    DeviceRequest,
    DeviceSubRequest,
    ResourceClaim,
)
from scheduler.api.resourceslice import Device, ResourceSlice
from scheduler.plugins.dynamicresources.cel import Cache
from scheduler.plugins.dynamicresources.structured.capacity import CapacityError, Consumed, consumed_for, fits
from scheduler.plugins.dynamicresources.structured.constraints import Constraint, DistinctAttribute, MatchAttribute
from scheduler.plugins.dynamicresources.structured.errors import AllocationError, FailedOnNodeError
from scheduler.plugins.dynamicresources.structured.features import (
    RELEASES,
    V0_35,
    V0_37,
    Features,
    implementation_for,
    supported,
)
from scheduler.plugins.dynamicresources.structured.pools import (
    NodePools,
    NodeSelectionError,
    Pool,
    PoolID,
    node_matches,
)
from scheduler.plugins.dynamicresources.structured.results import DeviceID, Picked, Selection, build_result

__all__ = ["Allocation", "AllocationError", "Allocator", "DeviceID", "FailedOnNodeError"]


@dataclass(frozen=True, slots=True)
class _Variant:
    """What differs between the variants and releases ported, as facts the search reads."""

    implementation: str
    release: str
    implemented: frozenset[str]  # the features this port runs; others are refused
    # incubating: a request that would exceed the result size limit backtracks past the requests
    # before it (errAllocationResultMaxSizeExceeded); the counters live per pool, not per slice;
    # only NoSchedule/NoExecute taints count; the request's tolerations go into the results.
    incubating: bool
    # v0.35's slips, fixed in v0.36: subrequest i is validated under the device-match cache key of
    # subrequest i-1; an "All" subrequest's second device is sought under subrequest 0's data; a
    # device refused for a taint or a constraint keeps the counters it just took (incubating).
    v0_35_quirks: bool

    # Incubating v0.37: counters per pool ID; the size check before the search per request; a
    # config naming every request names none; CEL runtime errors name the device; counter slices
    # only when they reach the node (else with the pool's other slices); ``distinctAttribute``
    # keeps every value; a claim config is written once however many requests it names; a
    # capacity request the int64 arithmetic cannot hold aborts the allocation; "All" checks a
    # device's capacity alone; an allocated share holding no capacity marks its device shared.
    # (Fields, not properties: the search reads them for every device it tries.)
    v0_37: bool = field(init=False)
    # Incubating from v0.36: pools in ID order (binding conditions last), slices by name; within
    # one request only combinations of devices are tried (``startLocation``); ``distinctAttribute``;
    # CEL sees ``allowMultipleAllocations``; capacity requests refused while the feature is off; a
    # device that binds to the node pins the allocation to it. (Consumable capacity itself is
    # incubating's from v0.36, read from the features.)
    v0_36: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "v0_37", self.incubating and self.release == V0_37)
        object.__setattr__(self, "v0_36", self.incubating and not self.v0_35_quirks)


# Per variant and release: the features the port runs. The stable code's own branches for admin
# access and prioritized lists (its counters and taints are not ported: kube-scheduler never runs
# stable with them on); incubating's whole supported set.
_PORTED: Mapping[tuple[str, str], frozenset[str]] = {
    ("stable", V0_35): Features(admin_access=True, prioritized_list=True).enabled(),
    **{("incubating", release): supported("incubating", release) for release in RELEASES},
}


def _variant(features: Features, release: str, implementation: str | None) -> _Variant:
    chosen = implementation or implementation_for(features, release)
    implemented = _PORTED.get((chosen, release))
    if implemented is None:
        raise ValueError(f"the {chosen} allocator of dynamic-resource-allocation {release} is not ported")
    beyond = features.enabled() - implemented
    if beyond:
        raise ValueError(f"features not implemented by the {chosen} allocator port ({release}): {sorted(beyond)}")
    return _Variant(chosen, release, implemented, chosen == "incubating", release == V0_35)


# What a device taken whole holds of its capacities: one mapping for all of them, as every filtered
# node keeps its results until the cycle ends.
_NO_CAPACITY: Mapping[str, Fraction] = MappingProxyType({})


class _Exceeded:
    """``errAllocationResultMaxSizeExceeded``: not an error to the caller, a signal to backtrack."""


_EXCEEDED = _Exceeded()
_Answer = bool | _Exceeded


@dataclass(frozen=True, slots=True)
class _Request:
    """``requestAccessor``: a request's ``exactly`` (named as the request) or one subrequest.
    ``admin_access`` is read for every device the search looks at, so it is a field, set by ``of``."""

    spec: DeviceSubRequest
    is_subrequest: bool
    admin_access: bool

    @classmethod
    def of(cls, spec: DeviceSubRequest, is_subrequest: bool) -> _Request:
        return cls(spec, is_subrequest, not is_subrequest and spec.admin_access is True)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def has_admin_access(self) -> bool:
        return not self.is_subrequest and self.spec.admin_access is not None


@dataclass(slots=True)
class _Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool | None  # None for an "All" request's devices, as upstream leaves it


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: str | None  # the request holding this subrequest
    device_class: DeviceClass | None = None
    num_devices: int = 0
    selected_subrequest: int = 0  # kept on the entry of subrequest 0
    all_devices: list[_Candidate] = field(default_factory=list)

    @property
    def request_name(self) -> str:
        return self.request.name if self.parent is None else f"{self.parent}/{self.request.name}"


def _klog_name(claim: ResourceClaim) -> str:
    """``klog.KObj(claim)``: ``namespace/name``, or the name alone without a namespace."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


# (claim index, request index, subrequest index, device index)
_Indices = tuple[int, int, int, int]
# (pool, slice, device) where a request's next device is sought (``deviceLocation``, v0.36)
_Location = tuple[int, int, int]
_START: _Location = (0, 0, 0)
_Step = Generator[tuple[_Indices, bool, _Location], _Answer, _Answer]
_Counters = dict[str, dict[str, Fraction]]  # counter set -> counter -> value


class Allocator:
    """``structured.Allocator``: the cluster's slices, classes and allocated devices, reusable for many
    nodes and claim sets.

    ``release`` is the ``dynamic-resource-allocation`` release to behave as; the variant is the one
    ``NewAllocator`` picks for ``features`` there, unless ``implementation`` names one (as upstream's
    tests call a variant directly). Features or variants not ported raise ``ValueError``.

    ``shared_devices`` and ``aggregated_capacity`` are the consumable capacity part of upstream's
    ``AllocatedState``; ``share_id`` makes each new share's ID (``GenerateShareID``, a random UUID
    unless given).

    ``node_pools`` keeps each node's pools for the next allocator given the same slices (the
    scheduler makes one allocator a pod); by default this allocator keeps its own.

    ``stop`` is polled before each step of the search, as upstream checks its context: when it
    returns a cause (``"context deadline exceeded"``), ``allocate`` raises
    ``filter operation aborted: <cause>``. The scheduler bounds the search by time
    (DRASchedulerFilterTimeout); a pure module takes the clock from its caller.
    """

    def __init__(
        self,
        features: Features,
        allocated_devices: Collection[DeviceID],
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        cel_cache: Cache,
        *,
        release: str = V0_35,
        implementation: str | None = None,
        stop: Callable[[], str | None] | None = None,
        shared_devices: Collection[DeviceID] = (),
        aggregated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] | None = None,
        share_id: Callable[[], str] | None = None,
        node_pools: NodePools | None = None,
    ) -> None:
        self.variant = _variant(features, release, implementation)
        self.features = features
        self.build_options = _BuildOptions(
            self.variant.incubating, features.device_binding_and_status, self.variant.v0_37
        )
        self.allocated_devices = frozenset(allocated_devices)
        # Consumable capacity (``AllocatedState``): the devices with allocated shares
        # (``AllocatedSharedDeviceIDs`` less the share IDs), and what those shares hold together.
        self.shared_devices = frozenset(shared_devices)
        self.aggregated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] = aggregated_capacity or {}
        self.share_id = share_id or (lambda: str(uuid.uuid4()))
        self.classes = classes
        self.slices = slices
        self.node_pools = node_pools if node_pools is not None else NodePools()
        self.node_pools.index(slices)
        self.cel_cache = cel_cache
        self.stop = stop
        # Per pool name (upstream keys them so, without the driver): the counters left once the
        # allocated devices took theirs. Computed on first use, as upstream caches them.
        self.available_counters: dict[str | PoolID, _Counters] = {}
        self.steps = 0  # allocateOne calls, all searches together (upstream's GetStats)
        # The claims last prepared, and what preparing them gave: the same for every node unless a
        # request asks for "All" devices (the scheduler's Filter asks again per node, claims alike).
        self._prepared_claims: tuple[ResourceClaim, ...] = ()
        self._prepared: _Prepared | None = None

    def prepared(self, claims: Sequence[ResourceClaim]) -> _Prepared | None:
        """What preparing ``claims`` gave the last time, when it holds for any node."""
        known = self._prepared_claims
        if self._prepared is None or len(known) != len(claims) or not all(map(operator.is_, known, claims)):
            return None
        return self._prepared

    def keep_prepared(self, claims: Sequence[ResourceClaim], prepared: _Prepared) -> None:
        if not any(_asks_for_all(claim) for claim in claims):
            self._prepared_claims = tuple(claims)
            self._prepared = prepared

    def allocate(self, node: Node | None, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One result per claim, in the claims' order; None when the claims do not fit the node.

        Raises ``AllocationError`` (``FailedOnNodeError`` for this node only) with upstream's text.
        """
        found = self.search(node, claims)
        return None if found is None else list(found)

    def search(self, node: Node | None, claims: Sequence[ResourceClaim]) -> Allocation | None:
        """``allocate``'s answer, each result built when it is first read: the scheduler filters
        many nodes with a solution and reads the results of few."""
        return _Search(self, node, claims).run()


@dataclass(frozen=True, slots=True)
class _BuildOptions:
    """How an allocator's results are built (``build_result``'s flags), the same for every search."""

    tolerations: bool
    binding: bool
    configs_once: bool


class Allocation(Sequence[AllocationResult]):
    """The results of one search, one per claim: the devices picked are fixed, each claim's
    ``AllocationResult`` is made on first reading. It keeps what they are built of, not the search
    (its pools and caches go with it), and no closure: one is made for every node a pod filters."""

    __slots__ = ("_built", "_claims", "_node_name", "_options", "_picked", "_selections")

    def __init__(
        self,
        claims: Sequence[ResourceClaim],
        picked: list[list[Picked]],
        selections: Sequence[Sequence[Selection]],
        options: _BuildOptions,
        node_name: str | None,
    ) -> None:
        self._claims = claims
        self._picked = picked
        self._selections = selections
        self._options = options
        self._node_name = node_name
        self._built: dict[int, AllocationResult] | None = None

    def __len__(self) -> int:
        return len(self._claims)

    @overload
    def __getitem__(self, index: int) -> AllocationResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[AllocationResult]: ...

    def __getitem__(self, index: int | slice) -> AllocationResult | list[AllocationResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._claims)))]
        if index < 0:
            index += len(self._claims)
        if not 0 <= index < len(self._claims):
            raise IndexError(index)
        if self._built is None:
            self._built = {}
        found = self._built.get(index)
        if found is None:
            options = self._options
            found = self._built[index] = build_result(
                self._claims[index],
                self._picked[index],
                self._selections[index],
                tolerations=options.tolerations,
                binding=options.binding,
                node_name=self._node_name,
                configs_once=options.configs_once,
            )
        return found


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Checking the claims before the search: per request its data, per claim how to make its
    constraints (each search takes devices into fresh ones), or the error it ended with."""

    request_data: dict[tuple[int, int, int], _RequestData]
    constraints: list[list[Callable[[], Constraint]]]
    error: str | None
    # Per claim, per request, what its devices are allocated as, when no request has subrequests
    # (else each search's choice says).
    selections: list[list[Selection]] | None = None


def _asks_for_all(claim: ResourceClaim) -> bool:
    """A request (or subrequest) of ``claim`` takes all matching devices: what it takes depends on
    the node's pools."""
    return any(
        (request.exactly is not None and request.exactly.allocation_mode == ALLOCATION_MODE_ALL)
        or any(sub.allocation_mode == ALLOCATION_MODE_ALL for sub in request.first_available)
        for request in claim.devices.requests
    )


class _Undo:
    """What one ``_allocate_device`` did, and taking it back when called: an object, where a closure
    made a dozen cells for every device the search tried."""

    __slots__ = (
        "added",
        "base",
        "before",
        "candidate",
        "claim_index",
        "constraints",
        "marked",
        "picked",
        "reserved",
        "search",
        "share",
        "sub",
    )

    def __init__(
        self,
        search: _Search,
        candidate: _Candidate,
        claim_index: int,
        picked: list[Picked],
        before: int,
        constraints: list[Constraint],
        base: str,
        sub: str,
        reserved: bool,
    ) -> None:
        self.search = search
        self.candidate = candidate
        self.claim_index = claim_index
        self.picked = picked
        self.before = before
        self.constraints = constraints
        self.base = base
        self.sub = sub
        self.reserved = reserved
        self.added = 0  # constraints the device was added to
        self.marked = False  # whether it is marked as being allocated to the claim
        self.share: tuple[Consumed, bool] | None = None  # the share it got; whether the entry existed

    def __call__(self) -> None:
        del self.picked[self.before :]
        search, device_id = self.search, self.candidate.id
        if self.share is not None:
            search._remove_share(device_id, *self.share)
        if self.marked:
            search.allocating[device_id].discard(self.claim_index)
        for constraint in self.constraints[: self.added]:
            constraint.remove(self.base, self.sub)
        if self.reserved:
            search._give_counters(self.candidate)


class _Search:
    """``allocator``: the state of one ``Allocate`` call (one a Filter call: slots, no dict)."""

    __slots__ = (
        "allocating",
        "allocating_capacity",
        "claims",
        "constraint_makers",
        "constraints",
        "consumed",
        "features",
        "matches",
        "node",
        "owner",
        "picked",
        "pools",
        "request_data",
        "selections",
        "variant",
    )

    def __init__(self, owner: Allocator, node: Node | None, claims: Sequence[ResourceClaim]) -> None:
        self.owner = owner
        self.features = owner.features
        self.variant = owner.variant
        self.consumed: dict[str | PoolID, _Counters] = {}
        self.node = node
        self.claims = claims
        self.pools: list[Pool] = []
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.constraint_makers: list[list[Callable[[], Constraint]]] = []
        self.selections: list[list[Selection]] | None = None
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        # Per device allowing multiple allocations: what this call's shares of it hold together
        # (``allocatingCapacity``); an entry, even empty, marks the device as shared.
        self.allocating_capacity: dict[DeviceID, Consumed] = {}
        self.picked: list[list[Picked]] = [[] for _ in claims]

    def run(self) -> Allocation | None:
        try:
            self.pools = self.owner.node_pools.pools(
                self.owner.slices,
                self.node,
                self.features,
                incubating=self.variant.incubating,
                ordered=self.variant.v0_36,
                counters_by_node=self.variant.v0_37,
            )
        except NodeSelectionError as err:
            raise AllocationError(f"gather pool information: {err}") from None
        self._prepare_claims()
        # Upstream starts the search with an empty device-match cache: what the checks above cached
        # (v0.35: an "All" subrequest's matches under the previous subrequest's key) is dropped.
        self.matches = {}
        one = self._single_device_request()
        answer = self._drive((0, 0, 0, 0), False) if one is None else self._first_device(one)
        if answer is _EXCEEDED:
            raise AllocationError("allocation max size exceeded")  # upstream returns its sentinel as is
        if answer is not True:
            if any(pool.is_invalid for pool in self.pools):
                raise FailedOnNodeError("invalid resource pools were encountered")
            return None
        # The subrequests chosen are read now: the request data serves the next search too. The
        # results keep what they are built of, not the search (its pools and caches go with it).
        selections = self.selections or [self._selected_classes(i, claim) for i, claim in enumerate(self.claims)]
        node_name = self.node.name if self.node is not None and self.variant.v0_36 else None
        return Allocation(self.claims, self.picked, selections, self.owner.build_options, node_name)

    def _selected_classes(self, claim_index: int, claim: ResourceClaim) -> list[Selection]:
        """Per request: what was allocated (the request or its chosen subrequest) and its class."""
        out: list[Selection] = []
        for request_index, request in enumerate(claim.devices.requests):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent is None:
                out.append(Selection(request.name, None, data.device_class))
                continue
            data = self.request_data[(claim_index, request_index, data.selected_subrequest)]
            out.append(Selection(request.name, data.request_name, data.device_class))
        return out

    # Checks before the search.

    def _prepare_claims(self) -> None:
        """``_prepare_claim`` for each claim, or what it gave for another node."""
        prepared = self.owner.prepared(self.claims)
        if prepared is None:
            error: str | None = None
            try:
                for claim_index, claim in enumerate(self.claims):
                    self._prepare_claim(claim_index, claim)
            except AllocationError as err:
                error = str(err)
            selections = None
            if error is None and all(data.parent is None for data in self.request_data.values()):
                selections = [self._selected_classes(i, claim) for i, claim in enumerate(self.claims)]
            prepared = _Prepared(self.request_data, self.constraint_makers, error, selections)
            self.owner.keep_prepared(self.claims, prepared)
        if prepared.error is not None:
            raise AllocationError(prepared.error)
        self.request_data = prepared.request_data
        self.selections = prepared.selections
        self.constraints = [[make() for make in makers] for makers in prepared.constraints]

    def _prepare_claim(self, claim_index: int, claim: ResourceClaim) -> None:
        min_devices = 0
        for request_index, request in enumerate(claim.devices.requests):
            if request.first_available and not self.features.prioritized_list:
                raise AllocationError(
                    f"claim {_klog_name(claim)}, request {request.name}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            self._check_capacity(claim, request)
            if request.first_available:
                fewest: int | None = None
                for sub_index, sub in enumerate(request.first_available):
                    # v0.35 validates subrequest i under the key of subrequest i-1 (its loop sets the
                    # index after the call): the device-match cache of "All" is shared so.
                    own = sub_index - 1 if self.variant.v0_35_quirks else sub_index
                    key = (claim_index, request_index, max(own, 0))
                    data = self._validate(claim, key, _Request.of(sub, True), request.name)
                    self.request_data[(claim_index, request_index, sub_index)] = data
                    fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                adding = fewest or 0
            else:
                spec = request.exactly or DeviceSubRequest(name=request.name, device_class_name="")
                data = self._validate(claim, (claim_index, request_index, 0), _Request.of(spec, False), None)
                self.request_data[(claim_index, request_index, 0)] = data
                adding = data.num_devices
            if self.variant.v0_37 and adding > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                raise AllocationError(
                    f"claim {_klog_name(claim)}, request {request.name}: adding {adding} devices exceeds "
                    f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already accounted for"
                )
            min_devices += adding
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {_klog_name(claim)}: number of requested devices {min_devices} "
                f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        constraints: list[Callable[[], Constraint]] = []
        for i, constraint in enumerate(claim.devices.constraints):
            names = frozenset(constraint.requests)
            if constraint.match_attribute is not None:
                constraints.append(functools.partial(MatchAttribute, names, constraint.match_attribute))
            elif constraint.distinct_attribute is not None and self.variant.v0_36:
                constraints.append(
                    functools.partial(DistinctAttribute, names, constraint.distinct_attribute, every=self.variant.v0_37)
                )
            else:
                raise AllocationError(
                    f"claim {_klog_name(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
        self.constraint_makers.append(constraints)

    def _check_capacity(self, claim: ResourceClaim, request: DeviceRequest) -> None:
        """v0.36: capacity requests are refused while consumable capacity is off."""
        if not self.variant.v0_36 or self.features.consumable_capacity:
            return
        exact = [request.exactly] if request.exactly is not None else []
        for spec, kind in [(s, "request") for s in exact] + [(s, "subrequest") for s in request.first_available]:
            if not spec.capacity:
                continue
            raise AllocationError(
                f"claim {_klog_name(claim)}, {kind} {spec.name}: has capacity requests, "
                "but the DRAConsumableCapacity feature is disabled"
            )

    def _validate(
        self, claim: ResourceClaim, key: tuple[int, int, int], request: _Request, parent: str | None
    ) -> _RequestData:
        """``validateDeviceRequest``; for "All", the devices it will take, fixed here."""
        prefix = f"claim {_klog_name(claim)}, request {request.name}"
        data = _RequestData(request, parent)
        for i, selector in enumerate(request.spec.selectors):
            if not selector:  # our types hold a selector without CEL as ""
                raise AllocationError(f"{prefix}, selector #{i}: CEL expression empty (unsupported selector type?)")
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(f"{prefix}: admin access is requested, but the feature is disabled")
        class_name = request.spec.device_class_name
        if not class_name:
            raise AllocationError(f"{prefix}: missing device class name (unsupported request type?)")
        device_class = self.owner.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"{prefix}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        data.device_class = device_class
        mode = request.spec.allocation_mode
        if mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.spec.count
        elif mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"{prefix}: asks for all devices, but resource pool {pool.id} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"{prefix}: asks for all devices, but resource pool {pool.id} is currently invalid"
                    )
                for slice_, ids in zip(pool.slices, pool.device_ids(), strict=True):
                    for device, device_id in zip(slice_.devices, ids, strict=True):
                        if self._selectable(key, data, slice_, device, device_id) and self._fits_for_all(
                            claim, request, slice_, device
                        ):
                            data.all_devices.append(
                                _Candidate(device_id, device, slice_, pool if self.variant.v0_36 else None)
                            )
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"{prefix}: unsupported count mode {mode}")
        return data

    # The search.

    def _drive(self, start: _Indices, sub_request: bool) -> _Answer:
        """Runs ``allocateOne`` without Python's recursion limit: a step that needs the answer of
        another is a generator that yields that step; the steps that only hand on to the next one
        (``_enter``) make none. ``None`` on the stack: the answer below is a claim's, made a bool."""
        stack: list[_Step | None] = []
        answer = self._enter(stack, start, sub_request, _START)
        while True:
            if answer is not None:
                while stack and stack[-1] is None:
                    stack.pop()
                    answer = answer is True  # another claim's limit says nothing about this one's choices
                if not stack:
                    return answer
            step = stack[-1]
            assert step is not None
            try:
                call = step.send(answer) if answer is not None else next(step)
            except StopIteration as done:
                stack.pop()
                answer = done.value
                continue
            answer = self._enter(stack, *call)

    def _enter(self, stack: list[_Step | None], r: _Indices, sub_request: bool, start: _Location) -> _Answer | None:
        """``allocateOne``'s start: whether every device from ``r`` on can be allocated (``_EXCEEDED``:
        not within the result size limit, whatever the devices); None when the step that needs to
        search was pushed on ``stack``. Each ``allocateOne`` call counts as a step."""
        while True:
            self._step()
            claim_index, request_index, sub_index, device_index = r
            if claim_index >= len(self.claims):
                return True
            if request_index >= len(self.claims[claim_index].devices.requests):
                stack.append(None)
                r, sub_request, start = (claim_index + 1, 0, 0, 0), False, _START
                continue
            data = self.request_data[(claim_index, request_index, sub_index)]
            if sub_request or data.parent is None:
                if data.request.spec.allocation_mode == ALLOCATION_MODE_ALL and not data.all_devices:
                    return False
                if device_index >= data.num_devices:
                    r, sub_request, start = (claim_index, request_index + 1, 0, 0), False, _START
                    continue
                if len(self.picked[claim_index]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
                    # Stable keeps searching; incubating backtracks to where fewer devices may be asked.
                    return _EXCEEDED if self.variant.incubating else False
            stack.append(self._one(r, sub_request, start, data))
            return None

    def _one(self, r: _Indices, sub_request: bool, start: _Location, data: _RequestData) -> _Step:
        """``allocateOne`` past ``_enter``'s checks: a request's subrequests, or its next device."""
        claim_index, request_index, sub_index, device_index = r
        key = (claim_index, request_index, sub_index)
        if not sub_request and data.parent is not None:
            # Try each subrequest in turn; the first that allocates wins. If every one exceeds the
            # limit, so would any other choice of the devices before them.
            index = 0
            all_exceeded = True
            while (claim_index, request_index, index) in self.request_data:
                answer = yield ((claim_index, request_index, index, device_index), True, _START)
                if answer is True:
                    data.selected_subrequest = index
                    return True
                if answer is not _EXCEEDED:
                    all_exceeded = False
                index += 1
            return _EXCEEDED if all_exceeded and self.variant.incubating else False

        request = data.request
        all_mode = request.spec.allocation_mode == ALLOCATION_MODE_ALL
        next_r = (claim_index, request_index, sub_index, device_index + 1)
        if all_mode:
            if self.variant.v0_35_quirks:
                # v0.35 drops the subrequest index here: the next device is sought under subrequest
                # 0's data (its mode, count and selectors), and named as subrequest 0.
                next_r = (claim_index, request_index, 0, device_index + 1)
            undo = self._allocate_device(r, data, data.all_devices[device_index], must=True)
            if undo is None:
                return False  # all of them or none: the order does not matter
            answer = yield (next_r, sub_request, _START)
            if answer is True:
                return True
            undo()
            return answer

        # v0.36 tries a request's devices as combinations: the next one is sought after this one.
        first_pool, first_slice, first_device = start if self.variant.v0_36 else _START
        for pool_index in range(first_pool, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.is_incomplete or pool.is_invalid:
                continue
            from_slice = first_slice if pool_index == first_pool else 0
            pool_ids = pool.device_ids()
            for slice_index in range(from_slice, len(pool.slices)):
                slice_ = pool.slices[slice_index]
                ids = pool_ids[slice_index]
                at_start = pool_index == first_pool and slice_index == first_slice
                for device_index_in_slice in range(first_device if at_start else 0, len(slice_.devices)):
                    device = slice_.devices[device_index_in_slice]
                    device_id = ids[device_index_in_slice]
                    if request.admin_access:
                        if claim_index in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, slice_, device, device_id):
                        continue
                    if self.features.consumable_capacity and not self._fits(r, request, device_id, device, "checking"):
                        continue
                    undo = self._allocate_device(
                        r, data, _Candidate(device_id, device, slice_, pool), must=False, checked=True
                    )
                    if undo is None:
                        continue
                    answer = yield (next_r, sub_request, (pool_index, slice_index, device_index_in_slice + 1))
                    if answer is True:
                        return True
                    undo()
                    if answer is _EXCEEDED:
                        return answer
        return False

    def _single_device_request(self) -> _RequestData | None:
        """The request, when the pods' most common shape is all there is to search: one claim asking
        one device by count, without subrequests, constraints or admin access."""
        if len(self.claims) != 1 or len(self.claims[0].devices.requests) != 1 or self.constraints[0]:
            return None
        data = self.request_data[(0, 0, 0)]
        request = data.request
        if (
            data.parent is not None
            or data.num_devices != 1
            or request.admin_access
            or request.spec.allocation_mode != ALLOCATION_MODE_EXACT_COUNT
        ):
            return None
        return data

    def _step(self, calls: int = 1) -> None:
        """``allocateOne`` calls, as ``_enter`` counts and checks them (once for several in a row:
        nothing happens between them)."""
        self.owner.steps += calls
        if self.owner.stop is not None:
            cause = self.owner.stop()
            if cause is not None:
                raise AllocationError(f"filter operation aborted: {cause}")

    def _first_device(self, data: _RequestData) -> bool:
        """``_drive`` for ``_single_device_request``'s shape, in one loop: the first device that
        allocates is the answer (no later choice can undo it), with the same checks in the same
        order and the same ``allocateOne`` calls counted: the first, and after the device the three
        that find the request, the claim and the claims done."""
        self._step()
        r, request = (0, 0, 0, 0), data.request
        capacity = self.features.consumable_capacity
        for pool in self.pools:
            if pool.is_incomplete or pool.is_invalid:
                continue
            for slice_, ids in zip(pool.slices, pool.device_ids(), strict=True):
                for device, device_id in zip(slice_.devices, ids, strict=True):
                    # Each device is looked at once: the device-match cache would only be written.
                    if self._in_use(device_id) or not self._selects(0, data, slice_, device, device_id):
                        continue
                    if capacity and not self._fits(r, request, device_id, device, "checking"):
                        continue
                    candidate = _Candidate(device_id, device, slice_, pool)
                    if self._allocate_device(r, data, candidate, must=False, checked=True) is None:
                        continue
                    self._step(3)
                    return True
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated_devices or bool(self.allocating.get(device_id))

    def _selectable(
        self, key: tuple[int, int, int], data: _RequestData, slice_: ResourceSlice, device: Device, device_id: DeviceID
    ) -> bool:
        """``isSelectable``, kept in the search's device-match cache."""
        cache_key = (device_id, *key)
        known = self.matches.get(cache_key)
        if known is None:
            known = self.matches[cache_key] = self._selects(key[0], data, slice_, device, device_id)
        return known

    def _selects(
        self, claim_index: int, data: _RequestData, slice_: ResourceSlice, device: Device, device_id: DeviceID
    ) -> bool:
        """``isSelectable``: a device with binding conditions only with the feature, the class's and
        the request's selectors, and per-device node selection."""
        if device.binding_conditions and not self.features.device_binding_and_status:
            return False
        selectors = data.request.spec.selectors
        ok = (data.device_class is None or self._class_selects(device_id, device, data.device_class)) and (
            not selectors or self._selectors_match(claim_index, device_id, device, None, selectors)
        )
        if ok and slice_.per_device_node_selection:
            try:
                ok = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
            except NodeSelectionError as err:
                raise AllocationError(str(err)) from None
        return ok

    def _class_selects(self, device_id: DeviceID, device: Device, device_class: DeviceClass) -> bool:
        """The class's selectors' answer for the device, as the last pod's search found it (a
        function of the two alone); an error is raised again each time, as it was first."""
        known = self.owner.node_pools.class_selects(device_class, self.variant.v0_36)
        found = known.get(id(device))
        if found is None:
            found = self._selectors_match(0, device_id, device, device_class, device_class.selectors)
            known[id(device)] = found
        return found

    def _selectors_match(
        self,
        claim_index: int,
        device_id: DeviceID,
        device: Device,
        device_class: DeviceClass | None,
        selectors: Sequence[str],
    ) -> bool:
        # Until v0.36 upstream hands CEL the driver, attributes and capacity only.
        view = (
            device
            if device.allow_multiple_allocations is None or self.variant.v0_36
            else dataclasses.replace(device, allow_multiple_allocations=None)
        )
        for i, expression in enumerate(selectors):
            compiled = self.owner.cel_cache.get_or_compile(expression)
            if compiled.error is not None:
                owner = self._selector_owner(claim_index, device_class)
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
            result = compiled.device_matches(view)
            if result.error is not None:
                owner = self._selector_owner(claim_index, device_class)
                if not self.variant.v0_37:
                    raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {result.error}")
                raise AllocationError(
                    f"{owner}: selector #{i} on device {device_id}: CEL runtime error: {_enhanced(result.error)}"
                )
            if not result.matches:
                return False
        return True

    def _selector_owner(self, claim_index: int, device_class: DeviceClass | None) -> str:
        """Whose selector failed, as an error names it."""
        if device_class is not None:
            return f"class {device_class.name}"
        return f"claim {_klog_name(self.claims[claim_index])}"

    def _allocate_device(
        self, r: _Indices, data: _RequestData, candidate: _Candidate, *, must: bool, checked: bool = False
    ) -> _Undo | None:
        """``allocateDevice``: marks the candidate as allocated if it is free and satisfies the
        claim's constraints; returns how to take it back, or None. A device allowing multiple
        allocations (consumable capacity) is not marked: it gets a new share instead, holding the
        capacity the request consumes of it. ``checked``: the caller has just found the request
        fits the device's capacity, and nothing here changes what that reads (the shares) before
        upstream's recheck, so the recheck would answer the same."""
        claim_index = r[0]
        request = data.request
        multiple = self.features.consumable_capacity and candidate.device.allow_multiple_allocations is True
        if request.admin_access:
            if not multiple and claim_index in self.allocating.get(candidate.id, ()):
                return None
        elif self._in_use(candidate.id):
            return None
        consumes = bool(candidate.device.consumes_counters)
        if not self.features.partitionable_devices and consumes:
            return None
        # A further share of a shared device does not take its counters again.
        reserved = consumes and not (multiple and self._capacity_in_use(candidate.id))
        if reserved and not self._take_counters(candidate):
            return None
        base = data.parent if data.parent is not None else request.name
        sub = request.name if data.parent is not None else ""
        constraints = self.constraints[claim_index]
        picked = self.picked[claim_index]
        undo = _Undo(self, candidate, claim_index, picked, len(picked), constraints, base, sub, reserved)

        # v0.35 returns here without giving back the counters just taken (taint or constraint): they
        # stay consumed for the rest of this call, so later candidates see fewer.
        keep = self.variant.v0_35_quirks
        if self.features.device_taints and candidate.device.taints and _taint_prevents(candidate.device, request.spec):
            if reserved and not keep:
                self._give_counters(candidate)
            return None
        for constraint in constraints:
            if not constraint.add(base, sub, candidate.device, candidate.id.driver):
                if must:
                    raise AllocationError(
                        f"claim {_klog_name(self.claims[claim_index])}, request {request.name}: cannot add device "
                        f"{candidate.id} because a claim constraint would not be satisfied"
                    )
                if keep:
                    undo.reserved = False
                undo()
                return None
            undo.added += 1
        if not multiple:
            self.allocating.setdefault(candidate.id, set()).add(claim_index)
            undo.marked = True
        consumed: Consumed = {}
        share_id: str | None = None
        if self.features.consumable_capacity:
            try:
                ok = checked or self._fits(r, request, candidate.id, candidate.device, "rechecking")
            except AllocationError:
                undo()
                raise
            if not ok:
                undo()
                return None
            if multiple:
                try:
                    consumed = consumed_for(
                        request.spec.capacity,
                        candidate.device,
                        fractional=self.features.fractional_capacity_range,
                        strict=self.variant.v0_37,
                    )
                except CapacityError as err:
                    undo()
                    raise AllocationError(
                        f"claim {_klog_name(self.claims[claim_index])}, request {request.name}: computing consumed "
                        f"capacity for device {candidate.id}: {err}"
                    ) from None
                share_id = self.owner.share_id()
                undo.share = (consumed, candidate.id in self.allocating_capacity)
                held = self.allocating_capacity.setdefault(candidate.id, {})
                for name, amount in consumed.items():
                    held[name] = held.get(name, Fraction(0)) + amount
        picked.append(
            Picked(
                request=data.request_name,
                id=candidate.id,
                slice=candidate.slice,
                device=candidate.device,
                admin_access=True if request.admin_access else None,
                tolerations=request.spec.tolerations,
                share_id=share_id,
                consumed_capacity=consumed if consumed else _NO_CAPACITY,
            )
        )
        return undo

    # Consumable capacity: shares of devices allowing multiple allocations.

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        """``deviceCapacityInUse``: the device has shares, allocated or being allocated (an allocated
        share that holds no capacity counts from v0.37)."""
        return (
            device_id in self.owner.aggregated_capacity
            or (self.variant.v0_37 and device_id in self.owner.shared_devices)
            or device_id in self.allocating_capacity
        )

    def _fits(self, r: _Indices, request: _Request, device_id: DeviceID, device: Device, verb: str) -> bool:
        """``CmpRequestOverCapacity`` beside the device's allocated and allocating shares; v0.37
        aborts the allocation for a request that cannot be computed."""
        if (
            not request.spec.capacity
            and device_id not in self.owner.aggregated_capacity
            and device_id not in self.allocating_capacity
            and self.owner.node_pools.taken_whole(device, self.variant.v0_37)
        ):
            return True  # ``fits``' own first answer, kept per device
        try:
            return fits(
                request.spec.capacity,
                device,
                self.owner.aggregated_capacity.get(device_id, {}),
                self.allocating_capacity.get(device_id, {}),
                fractional=self.features.fractional_capacity_range,
                strict=self.variant.v0_37,
            )
        except CapacityError as err:
            raise AllocationError(
                f"claim {_klog_name(self.claims[r[0]])}, request {request.name}: {verb} capacity for device "
                f"{device_id}: {err}"
            ) from None

    def _fits_for_all(self, claim: ResourceClaim, request: _Request, slice_: ResourceSlice, device: Device) -> bool:
        """Whether an "All" request may take the device: beside its allocated shares (v0.36), or,
        from v0.37, within its capacities alone (the rest is checked when it is allocated, so "All"
        fails rather than skips a device that is full)."""
        if not self.features.consumable_capacity:
            return True
        device_id = DeviceID(slice_.driver, slice_.pool.name, device.name)
        in_use = {} if self.variant.v0_37 else self.owner.aggregated_capacity.get(device_id, {})
        try:
            return fits(
                request.spec.capacity,
                device,
                in_use,
                {},
                fractional=self.features.fractional_capacity_range,
                strict=self.variant.v0_37,
            )
        except CapacityError as err:
            raise AllocationError(
                f"claim {_klog_name(claim)}, request {request.name}: checking capacity for device {device.name}: {err}"
            ) from None

    def _remove_share(self, device_id: DeviceID, consumed: Consumed, existed: bool) -> None:
        """``ConsumedCapacityCollection.Remove``: the entry goes once it holds nothing, unless an
        earlier share of this call keeps it (as the mark that the device is shared)."""
        held = self.allocating_capacity.get(device_id)
        if held is not None:
            for name, amount in consumed.items():
                if name in held:
                    held[name] -= amount
            if all(v == 0 for v in held.values()):
                del self.allocating_capacity[device_id]
        if existed and device_id not in self.allocating_capacity:
            self.allocating_capacity[device_id] = {}

    # Counters (partitionable devices, incubating): per pool name, as upstream keys them.

    def _pool_key(self, pool: Pool) -> str | PoolID:
        """Until v0.37 upstream keys counters by the pool's name alone, not its driver."""
        return pool.id if self.variant.v0_37 else pool.id.pool

    def _available(self, pool: Pool) -> _Counters:
        """The pool's counters less what the allocated devices (of any slice of it) consume."""
        known = self.owner.available_counters.get(self._pool_key(pool))
        if known is not None:
            return known
        available = {name: dict(cs.counters) for name, cs in pool.counter_sets.items()}
        for slice_ in (*pool.slices, *pool.other_slices):
            for device in slice_.devices:
                if not self._allocated(DeviceID(slice_.driver, slice_.pool.name, device.name)):
                    continue
                for consumption in device.consumes_counters:
                    counters = available.get(consumption.counter_set, {})
                    for name, value in consumption.counters.items():
                        if name in counters:
                            counters[name] -= value
        self.owner.available_counters[self._pool_key(pool)] = available
        return available

    def _allocated(self, device_id: DeviceID) -> bool:
        """``IsDeviceAllocated``: allocated whole, or holding allocated shares."""
        return (
            device_id in self.owner.allocated_devices
            or device_id in self.owner.shared_devices
            or device_id in self.owner.aggregated_capacity
        )

    def _take_counters(self, candidate: _Candidate) -> bool:
        """``checkAvailableCounters``: takes the device's counters if every counter of the pool
        stays within what is available."""
        if candidate.pool is None:
            # Upstream's "All" devices carry no pool, and this dereferences it: a panic there.
            raise AllocationError(
                f'internal error: device {candidate.id} of an "All" request consumes counters '
                "(upstream dereferences a nil pool here)"
            )
        available = self._available(candidate.pool)
        consumed = self.consumed.setdefault(self._pool_key(candidate.pool), {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, value in consumption.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            if any(value < used.get(name, 0) for name, value in counters.items()):
                self._give_counters(candidate)
                return False
        return True

    def _give_counters(self, candidate: _Candidate) -> None:
        assert candidate.pool is not None
        consumed = self.consumed[self._pool_key(candidate.pool)]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, value in consumption.counters.items():
                counters[name] -= value


def _taint_prevents(device: Device, request: DeviceSubRequest) -> bool:
    """``taintPreventsAllocation`` (incubating): a NoSchedule or NoExecute taint no toleration of the
    request tolerates (other effects, None among them, do not count)."""
    return any(
        taint.effect in ("NoSchedule", "NoExecute") and not any(_tolerates(t, taint) for t in request.tolerations)
        for taint in device.taints
    )


def _tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _enhanced(error: str) -> str:
    """``cel.EnhanceRuntimeError`` (v0.37): a missing key gets a hint, once (a CEL module of 1.37 may
    have given it already)."""
    if "no such key:" not in error or "consider using CEL optional chaining" in error:
        return error
    return (
        f"{error}. consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
        "with has() for optional fields"
    )
