"""DRA-backed extended resources in NodeResourcesFit's and NodeResourcesBalancedAllocation's scores
(DRAExtendedResource, on from 1.36): ``getDRAPreScoredParams`` and
``calculateDRAExtendedResourceAllocatableRequest`` of upstream's ``resource_allocation.go``.

A scored extended resource the node's allocatable does not list (or lists as 0) is read from the
devices instead, when a DeviceClass backs it: allocatable is the number of devices the class selects
among those the node reaches (its slices', all nodes' slices', and per device where the slice
selects per device), allocated the number of those an allocated or in-flight claim holds (whole or a
share). PreScore gathers the allocated state and the slices once per pod, and only when a configured
resource is a name a class backs. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Node
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.resourceslice import Device, ResourceSlice
from scheduler.framework.interface import Handle
from scheduler.plugins.dynamicresources import cel
from scheduler.plugins.dynamicresources.extended import is_dra_extended_resource_name
from scheduler.plugins.dynamicresources.plugin.inflight import (
    AllocatedState,
    InFlightAllocations,
    gather_allocated_state,
)
from scheduler.plugins.dynamicresources.structured import DeviceID
from scheduler.plugins.dynamicresources.structured.pools import NodeSelectionError, node_matches

__all__ = ["DRAObjects", "DRAScoreState", "DRAScoring", "claims_in_flight"]

CEL_CACHE_SIZE = 10  # upstream's cel.NewCache(10, ...) in NewFit


@runtime_checkable
class DRAObjects(Protocol):
    """What the scorers read of the cache's DRA objects (its ``StorageObjects``)."""

    def device_class_for(self, resource: str) -> DeviceClass | None: ...

    def resource_claims(self) -> Iterable[ResourceClaim]: ...

    def resource_slices(self) -> list[ResourceSlice]: ...


@dataclass(frozen=True, slots=True)
class DRAScoreState:
    """``draPreScoreState``: what the claims hold and the slices, as PreScore found them, with the
    scorer that reads them and the classes of the moment."""

    scoring: DRAScoring
    storage: DRAObjects
    allocated: AllocatedState
    slices: tuple[ResourceSlice, ...]

    def allocatable_allocated(self, node: Node, resource: str) -> tuple[int, int]:
        return self.scoring.allocatable_allocated(self, node, resource)

    def is_allocated(self, device: DeviceID) -> bool:
        """``IsDeviceAllocated``: taken whole, or shared by some claim."""
        held = self.allocated
        return device in held.devices or device in held.shared_devices or device in held.aggregated_capacity

    def clone(self) -> DRAScoreState:
        return self


def claims_in_flight(handle: Handle) -> InFlightAllocations | None:
    """The scheduler's claims in flight, as the profile's handle carries them."""
    held = handle.claims_in_flight
    return held if isinstance(held, InFlightAllocations) else None

    def is_allocated(self, device: DeviceID) -> bool:
        """``IsDeviceAllocated``: taken whole, or shared by some claim."""
        return (
            device in self.allocated.devices
            or device in self.allocated.shared_devices
            or device in self.allocated.aggregated_capacity
        )


class DRAScoring:
    """One scorer's DRA reading (upstream keeps its caches on the scorer): the CEL compilations and
    each selector's answer per device, which upstream never forgets either."""

    def __init__(self, minor: str, *, consumable_capacity: bool) -> None:
        self.consumable_capacity = consumable_capacity
        self.cel_cache = cel.Cache(CEL_CACHE_SIZE, cel.compiler_for(int(minor.split(".")[1])))
        self._matches: dict[tuple[str, str, str, str], bool] = {}

    def pre_score(self, handle: Handle, resources: Iterable[str]) -> DRAScoreState | None:
        """``getDRAPreScoredParams``: None unless some scored resource is a name a class backs."""
        if handle.snapshot is None:
            return None
        storage, in_flight = handle.snapshot.storage, claims_in_flight(handle)
        if not isinstance(storage, DRAObjects):
            return None
        if not any(is_dra_extended_resource_name(r) and storage.device_class_for(r) for r in resources):
            return None
        allocated = gather_allocated_state(
            storage.resource_claims(),
            in_flight if in_flight is not None else InFlightAllocations(),
            consumable_capacity=self.consumable_capacity,
        )
        return DRAScoreState(self, storage, allocated, tuple(storage.resource_slices()))

    def allocatable_allocated(self, state: DRAScoreState, node: Node, resource: str) -> tuple[int, int]:
        """``calculateDRAExtendedResourceAllocatableRequest``: (devices, allocated devices) of the
        class backing ``resource`` on ``node``; (0, 0) without a class, or where a node selector or a
        selector fails (upstream logs the error and scores as if nothing were offered)."""
        device_class = state.storage.device_class_for(resource)
        if device_class is None:
            return 0, 0
        capacity = allocated = 0
        try:
            for slice_ in state.slices:
                for device in _reached(slice_, node):
                    if self._selects(device_class, slice_, device):
                        capacity += 1
                        allocated += state.is_allocated(DeviceID(slice_.driver, slice_.pool.name, device.name))
        except (NodeSelectionError, _SelectorError):
            return 0, 0
        return capacity, allocated

    def _selects(self, device_class: DeviceClass, slice_: ResourceSlice, device: Device) -> bool:
        """``deviceMatchesClass``: every CEL selector of the class true for the device (upstream hands
        CEL the driver, attributes and capacity only)."""
        view = None
        for expression in device_class.selectors:
            key = (expression, slice_.driver, slice_.pool.name, device.name)
            known = self._matches.get(key)
            if known is not None:
                if not known:
                    return False
                continue
            compiled = self.cel_cache.get_or_compile(expression)
            if compiled.error is not None:
                raise _SelectorError(str(compiled.error))
            if view is None:
                view = dataclasses.replace(device, allow_multiple_allocations=None)
            result = compiled.device_matches(view)
            if result.error is not None:
                raise _SelectorError(result.error)
            if not result.matches:
                return False  # upstream caches only the selectors that matched
            self._matches[key] = True
        return True


class _SelectorError(Exception):
    """A class selector that did not compile or failed on a device."""


def _reached(slice_: ResourceSlice, node: Node) -> Iterable[Device]:
    """The devices of ``slice_`` upstream counts for ``node`` (``calculateDRAResourceTotals``' walk:
    a slice naming another node is skipped, one with a selector is asked, the rest count whole)."""
    if slice_.per_device_node_selection:
        for device in slice_.devices:
            named = device.all_nodes or (device.node_name and device.node_name == node.name)
            if named or (
                device.node_selector is not None
                and node_matches(node, device.node_name, device.all_nodes, device.node_selector)
            ):
                yield device
        return
    if not slice_.all_nodes and slice_.node_name != node.name and slice_.node_selector is not None:
        if not node_matches(node, slice_.node_name, slice_.all_nodes, slice_.node_selector):
            return
    elif not slice_.all_nodes and slice_.node_name and slice_.node_name != node.name:
        return
    yield from slice_.devices
