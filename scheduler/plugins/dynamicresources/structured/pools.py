"""The resource pools a node can reach, gathered from ResourceSlices as upstream's allocators do
(``internal/stable/pools_stable.go`` and ``internal/incubating/pools_incubating.go``, v0.35.4).

A pool is identified by driver and pool name. Only slices of its newest generation count; a pool is
*incomplete* while fewer slices of that generation exist than ``resourceSliceCount`` says, and
*invalid* when two of its devices share a name. The incubating variant keeps the slices that carry
``sharedCounters`` apart (the pool's counter sets), checks that every device consumes known
counters, and keeps the pool's device slices that do not reach the node (their allocated devices
still consume counters); an incomplete pool it does not check at all. From v0.36 it searches the
pools in the order of their IDs, those with binding conditions last, and a pool's slices by name.
Pure: no I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.nodeselector import NodeSelector
from scheduler.api.objects import Node
from scheduler.api.resourceslice import CounterSet, Device, ResourceSlice
from scheduler.plugins.dynamicresources.structured.capacity import taken_whole
from scheduler.plugins.dynamicresources.structured.features import Features
from scheduler.plugins.dynamicresources.structured.results import DeviceID

__all__ = ["NodePools", "Pool", "PoolID", "SliceIndex", "gather_pools", "node_matches"]


@dataclass(frozen=True, slots=True, order=True)
class PoolID:
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


@dataclass(slots=True)
class Pool:
    """The device slices of one pool that reach the node, in the order they were listed; for the
    incubating variant also its counter sets and the device slices that do not reach the node."""

    id: PoolID
    slices: list[ResourceSlice] = field(default_factory=list)
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    other_slices: list[ResourceSlice] = field(default_factory=list)
    _ids: list[tuple[DeviceID, ...]] | None = None

    def device_ids(self) -> list[tuple[DeviceID, ...]]:
        """Per slice, its devices' IDs, made on first use (a pool serves many searches)."""
        if self._ids is None:
            driver, name = self.id.driver, self.id.pool
            self._ids = [tuple(DeviceID(driver, name, d.name) for d in s.devices) for s in self.slices]
        return self._ids


class NodeSelectionError(Exception):
    """A node selector upstream's ``nodeaffinity.NewNodeSelector`` refuses."""


def node_matches(
    node: Node | None, node_name: str | None, all_nodes: bool | None, node_selector: NodeSelector | None
) -> bool:
    """``NodeMatches``: a node name, all nodes, or a selector, checked in that order; nothing set
    matches no node."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        if node_selector.parse_errors:
            raise NodeSelectionError(f"failed to parse node selector: {'; '.join(node_selector.parse_errors)}")
        if node is None:
            return False
        return node_selector.matches(node.name, node.labels)
    return False


class SliceIndex:
    """The slices one node may take, in the cluster's order, without a walk over every slice: a slice
    naming a node (and sharing no counters, which count whatever node a pool's devices reach) is
    filed under that node; every other slice is looked at for every node. ``GatherPools`` upstream
    ranges over all slices per node; on 1,000 nodes that walk was most of a Filter call here."""

    __slots__ = ("_on", "_rest", "slices")

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.slices = slices
        self._on: dict[str, list[int]] = {}
        self._rest: list[int] = []
        for i, slice_ in enumerate(slices):
            if slice_.node_name and not slice_.shared_counters:
                self._on.setdefault(slice_.node_name, []).append(i)
            else:
                self._rest.append(i)

    def for_node(self, node: Node | None) -> list[ResourceSlice]:
        """The slices ``gather_pools`` could add for ``node`` (a slice of another node adds nothing)."""
        own = self._on.get(node.name, []) if node is not None else []
        indices = heapq.merge(own, self._rest) if own and self._rest else own or self._rest
        return [self.slices[i] for i in indices]


class NodePools:
    """Each node's pools (``gather_pools``), kept across allocators, so across pods: a node's pools
    are made of the slices and the node alone, and the search only reads them. Everything kept is
    dropped when the allocator is given another sequence of slices (the cache lists the same one
    until a slice changes) or reads them as another variant; a node's entry when the node object
    is another (its labels may have changed). At most ``MAX_NODES`` nodes are kept.

    Upstream gathers every node's pools in every Filter, ranging over all slices each time.
    """

    MAX_NODES = 65_536
    MAX_CLASSES = 64

    __slots__ = ("_by_node", "_class_selects", "_gathering", "_index", "_slices", "_taken_whole")

    def __init__(self) -> None:
        self._slices: Sequence[ResourceSlice] | None = None
        # What ``gather_pools`` reads besides the slices and the node: the features and the variant's flags.
        self._gathering: tuple[Features, bool, bool, bool] | None = None
        self._index: SliceIndex | None = None
        self._by_node: dict[str, tuple[Node | None, list[Pool]]] = {}
        # Per DeviceClass (the object: an update is another) and whether CEL sees a device's
        # ``allowMultipleAllocations``: the class's answer per device, keyed by the device's id()
        # (the slices held here keep every device alive until they are replaced, and this with them).
        self._class_selects: dict[tuple[int, bool], tuple[object, dict[int, bool]]] = {}
        # Per device (its id(), as above) and strictness: ``capacity.taken_whole``.
        self._taken_whole: dict[tuple[int, bool], bool] = {}

    def index(self, slices: Sequence[ResourceSlice]) -> SliceIndex:
        """The ``SliceIndex`` of ``slices``, made once per sequence."""
        if slices is not self._slices or self._index is None:
            self._slices = slices
            self._index = SliceIndex(slices)
            self._by_node.clear()
            self._class_selects.clear()
            self._taken_whole.clear()
        return self._index

    def taken_whole(self, device: Device, strict: bool) -> bool:
        """``capacity.taken_whole`` of the device, kept while the slices stay."""
        key = (id(device), strict)
        found = self._taken_whole.get(key)
        if found is None:
            found = self._taken_whole[key] = taken_whole(device, strict)
        return found

    def class_selects(self, device_class: object, multiple_allocations_seen: bool) -> dict[int, bool]:
        """Where the allocator keeps whether ``device_class``'s selectors select a device of the
        slices last indexed (by the device's id()); errors are not kept."""
        key = (id(device_class), multiple_allocations_seen)
        kept = self._class_selects.get(key)
        if kept is not None and kept[0] is device_class:
            return kept[1]
        if len(self._class_selects) >= self.MAX_CLASSES:
            self._class_selects.clear()
        found: dict[int, bool] = {}
        self._class_selects[key] = (device_class, found)
        return found

    def pools(
        self,
        slices: Sequence[ResourceSlice],
        node: Node | None,
        features: Features,
        *,
        incubating: bool,
        ordered: bool,
        counters_by_node: bool,
    ) -> list[Pool]:
        """``gather_pools`` of ``node``, as it was the last time unless the slices, the variant or
        the node changed. Raises as ``gather_pools`` does (an error is not kept)."""
        index = self.index(slices)
        gathering = (features, incubating, ordered, counters_by_node)
        if gathering != self._gathering:
            self._gathering = gathering
            self._by_node.clear()
        name = node.name if node is not None else ""
        kept = self._by_node.get(name)
        if kept is not None and kept[0] is node:
            return kept[1]
        found = gather_pools(
            slices,
            node,
            features,
            incubating=incubating,
            ordered=ordered,
            counters_by_node=counters_by_node,
            candidates=index.for_node(node),
        )
        if len(self._by_node) >= self.MAX_NODES:
            self._by_node.clear()
        self._by_node[name] = (node, found)
        return found


def gather_pools(
    slices: Sequence[ResourceSlice],
    node: Node | None,
    features: Features,
    *,
    incubating: bool = False,
    ordered: bool = False,
    counters_by_node: bool = False,
    candidates: Sequence[ResourceSlice] | None = None,
) -> list[Pool]:
    """``GatherPools``: every pool with a slice (or, per device, a device) for the node; the
    incubating variant's when ``incubating``, v0.36's order when ``ordered``, and with
    ``counters_by_node`` (v0.37) a counter slice taken only when it reaches the node, else with the
    pool's other slices.

    Upstream builds the result by ranging over a Go map, so the order of the pools it searches is
    random; we keep the order in which each pool's first slice was listed (docs/dra-allocator.md).
    Raises ``NodeSelectionError`` with upstream's wording when a selector cannot be parsed.
    ``candidates``: the slices to look at for the node (``SliceIndex.for_node``), all by default;
    ``slices`` stays every slice (a pool's other slices are looked up there).
    """
    pools: dict[PoolID, Pool] = {}
    for slice_ in slices if candidates is None else candidates:
        if not features.partitionable_devices and (
            slice_.per_device_node_selection or (incubating and slice_.shared_counters)
        ):
            continue
        if incubating and slice_.shared_counters and not counters_by_node:
            _add_slice(pools, slice_)  # a pool's counters count whatever node its devices reach
        elif slice_.node_name or slice_.all_nodes or slice_.node_selector is not None:
            try:
                match = node_matches(node, slice_.node_name, slice_.all_nodes, slice_.node_selector)
            except NodeSelectionError as err:
                raise NodeSelectionError(f"failed to perform node selection for slice {slice_.name}: {err}") from None
            if match:
                _add_slice(pools, slice_)
        elif slice_.per_device_node_selection:
            for device in slice_.devices:
                try:
                    match = node_matches(node, device.node_name, device.all_nodes, device.node_selector)
                except NodeSelectionError as err:
                    raise NodeSelectionError(
                        f"failed to perform node selection for device {device.name} in slice {slice_.name}: {err}"
                    ) from None
                if match:
                    _add_slice(pools, slice_)
                    break
        # Else: some future way of selecting nodes; such a slice is skipped, as upstream does.

    result: list[Pool] = []
    for pool_id, pool in pools.items():
        first = pool.slices[0].pool
        complete = len(pool.slices) == first.resource_slice_count
        generation: list[ResourceSlice] | None = None
        if not complete:
            obsolete, generation = _slices_in_pool(slices, pool_id, first.generation)
            if obsolete:
                # The driver is replacing this generation; the newer one has no slice for the node.
                continue
            complete = len(generation) == first.resource_slice_count
        pool.is_incomplete = not complete
        if not incubating:
            pool.is_invalid, pool.invalid_reason = _invalid(pool.slices)
        elif pool.is_incomplete:
            pool.slices = []  # never allocated from, so never checked
        else:
            _build_incubating(pool, features, generation, ordered, counters_by_node)
        result.append(pool)
    if ordered:
        result.sort(key=lambda p: (_has_binding_conditions(p), p.id))
    return result


def _has_binding_conditions(pool: Pool) -> bool:
    """``poolHasBindingConditions``; upstream keeps no slices of an invalid or incomplete pool."""
    if pool.is_invalid or pool.is_incomplete:
        return False
    return any(device.binding_conditions for s in pool.slices for device in s.devices)


def _build_incubating(
    pool: Pool,
    features: Features,
    generation: list[ResourceSlice] | None,
    ordered: bool,
    counters_by_node: bool,
) -> None:
    """``buildPool``: split off the counter sets and check them, as far as the features need."""
    partitionable = features.partitionable_devices
    targeting = sorted(pool.slices, key=lambda s: s.name) if ordered else pool.slices
    counter_slices = [s for s in targeting if s.shared_counters] if partitionable else []
    pool.slices = [s for s in targeting if not s.shared_counters] if partitionable else targeting
    others: list[ResourceSlice] = []
    if generation is not None and len(generation) != len(targeting):
        names = {s.name for s in targeting}
        others = [s for s in generation if s.name not in names]
    if counters_by_node:  # v0.37: the other slices' counter sets count too
        counter_slices += [s for s in others if partitionable and s.shared_counters]
        others = [s for s in others if not (partitionable and s.shared_counters)]
    pool.is_invalid, pool.invalid_reason = _invalid(pool.slices)
    if pool.is_invalid or not partitionable:
        return
    for slice_ in counter_slices:
        for counter_set in slice_.shared_counters:
            if counter_set.name in pool.counter_sets:
                pool.is_invalid, pool.invalid_reason = True, f"duplicate counter set name {counter_set.name}"
                return
            pool.counter_sets[counter_set.name] = counter_set
    reason = _unknown_counters(pool.counter_sets, pool.slices) or _unknown_counters(pool.counter_sets, others)
    if reason:
        pool.is_invalid, pool.invalid_reason = True, reason
    else:
        pool.other_slices = others


def _unknown_counters(counter_sets: dict[str, CounterSet], slices: Sequence[ResourceSlice]) -> str:
    """``validateDeviceCounterConsumption``: every consumed counter set and counter exists."""
    for slice_ in slices:
        for device in slice_.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return ""


def _add_slice(pools: dict[PoolID, Pool], slice_: ResourceSlice) -> None:
    pool_id = PoolID(slice_.driver, slice_.pool.name)
    pool = pools.get(pool_id)
    if pool is None:
        pools[pool_id] = Pool(pool_id, [slice_])
        return
    generation = pool.slices[0].pool.generation
    if slice_.pool.generation < generation:
        return  # out of date
    if slice_.pool.generation > generation:
        pool.slices.clear()  # a newer generation replaces all older slices
    pool.slices.append(slice_)


def _invalid(slices: Sequence[ResourceSlice]) -> tuple[bool, str]:
    seen: set[str] = set()
    for slice_ in slices:
        for device in slice_.devices:
            if device.name in seen:
                return True, f"duplicate device name {device.name}"
            seen.add(device.name)
    return False, ""


def _slices_in_pool(
    slices: Sequence[ResourceSlice], pool_id: PoolID, generation: int
) -> tuple[bool, list[ResourceSlice]]:
    """``checkSlicesInPool``: whether a newer generation exists, else this generation's slices."""
    out: list[ResourceSlice] = []
    for slice_ in slices:
        if slice_.driver != pool_id.driver or slice_.pool.name != pool_id.pool:
            continue
        if slice_.pool.generation == generation:
            out.append(slice_)
        elif slice_.pool.generation > generation:
            return True, []
    return False, out
