"""The resource pools a node can reach, gathered from ResourceSlices as upstream's stable allocator does
(``k8s.io/dynamic-resource-allocation/structured/internal/stable/pools_stable.go``, v0.35.4).

A pool is identified by driver and pool name. Only slices of its newest generation count; a pool is
*incomplete* while fewer slices of that generation exist than ``resourceSliceCount`` says, and
*invalid* when two of its devices share a name. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.nodeselector import NodeSelector
from scheduler.api.objects import Node
from scheduler.api.resourceslice import ResourceSlice
from scheduler.plugins.dynamicresources.structured.features import Features

__all__ = ["Pool", "PoolID", "gather_pools", "node_matches"]


@dataclass(frozen=True, slots=True, order=True)
class PoolID:
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


@dataclass(slots=True)
class Pool:
    """The slices of one pool that reach the node, in the order they were listed."""

    id: PoolID
    slices: list[ResourceSlice] = field(default_factory=list)
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""


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


def gather_pools(slices: Sequence[ResourceSlice], node: Node | None, features: Features) -> list[Pool]:
    """``GatherPools``: every pool with a slice (or, per device, a device) for the node.

    Upstream builds the result by ranging over a Go map, so the order of the pools it searches is
    random; we keep the order in which each pool's first slice was listed (docs/dra-allocator.md).
    Raises ``NodeSelectionError`` with upstream's wording when a selector cannot be parsed.
    """
    pools: dict[PoolID, Pool] = {}
    for slice_ in slices:
        if not features.partitionable_devices and slice_.per_device_node_selection:
            continue
        if slice_.node_name or slice_.all_nodes or slice_.node_selector is not None:
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
        if not complete:
            obsolete, count = _count_slices(slices, pool_id, first.generation)
            if obsolete:
                # The driver is replacing this generation; the newer one has no slice for the node.
                continue
            complete = count == first.resource_slice_count
        pool.is_incomplete = not complete
        pool.is_invalid, pool.invalid_reason = _invalid(pool)
        result.append(pool)
    return result


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


def _invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for slice_ in pool.slices:
        for device in slice_.devices:
            if device.name in seen:
                return True, f"duplicate device name {device.name}"
            seen.add(device.name)
    return False, ""


def _count_slices(slices: Sequence[ResourceSlice], pool_id: PoolID, generation: int) -> tuple[bool, int]:
    """``checkSlicesInPool``: whether a newer generation exists, else how many slices this one has."""
    count = 0
    for slice_ in slices:
        if slice_.driver != pool_id.driver or slice_.pool.name != pool_id.pool:
            continue
        if slice_.pool.generation == generation:
            count += 1
        elif slice_.pool.generation > generation:
            return True, 0
    return False, count
