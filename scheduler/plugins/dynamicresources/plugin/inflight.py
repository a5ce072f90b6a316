"""The claims being allocated between Reserve and the end of PreBind, and the devices taken: upstream's
claim tracker (``dra_manager.go``: ``inFlightAllocations``, ``ListAllAllocatedDevices``,
``GatherAllocatedState``) and ``allocateddevices.go``'s ``foreachAllocatedDevice``.

The next cycle's allocator sees an in-flight claim's devices as taken, and a pod whose claim is in
flight waits, so two pods never get one device while the first one's PreBind has not written yet.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from scheduler.api.resourceclaim import ResourceClaim
from scheduler.plugins.dynamicresources.structured import DeviceID

__all__ = ["AllocatedState", "InFlightAllocations", "gather_allocated_state"]


class InFlightAllocations:
    """Claim UID -> the claim as Reserve allocated it (finalizer added, ``status.allocation`` set)."""

    def __init__(self) -> None:
        self._claims: dict[str, ResourceClaim] = {}

    def has(self, uid: str) -> bool:
        """``ClaimHasPendingAllocation``."""
        return uid in self._claims

    def get(self, uid: str) -> ResourceClaim | None:
        return self._claims.get(uid)

    def signal(self, claim: ResourceClaim) -> None:
        """``SignalClaimPendingAllocation``."""
        self._claims[claim.uid] = claim

    def remove(self, uid: str) -> bool:
        """``RemoveClaimPendingAllocation``: whether the claim was in flight."""
        return self._claims.pop(uid, None) is not None

    def claims(self) -> Iterable[ResourceClaim]:
        return tuple(self._claims.values())


@dataclass(slots=True)
class AllocatedState:
    """``structured.AllocatedState``: the devices taken whole, and (DRAConsumableCapacity) the devices
    with allocated shares and the capacity those shares consume together, per device."""

    devices: set[DeviceID] = field(default_factory=set)
    shared_devices: set[DeviceID] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Fraction]] = field(default_factory=dict)


# DeviceID's own constructor is a Python function (NamedTuple's); this one is tuple's, in C, for the
# one id a pod's PreFilter makes for every allocated device of the cluster.
_device_id = functools.partial(tuple.__new__, DeviceID)


def gather_allocated_state(
    claims: Iterable[ResourceClaim], in_flight: InFlightAllocations, *, consumable_capacity: bool
) -> AllocatedState:
    """What every allocated claim of the cache and every claim in flight takes (``GatherAllocatedState``,
    or ``ListAllAllocatedDevices`` with DRAConsumableCapacity off: then a share takes its whole device,
    as upstream's fallback to dedicated devices). Admin access takes nothing."""
    state = AllocatedState()
    for claim in (*claims, *in_flight.claims()):
        if claim.allocation is None:
            continue
        for result in claim.allocation.results:
            if result.admin_access:
                continue
            device = _device_id((result.driver, result.pool, result.device))
            if consumable_capacity and result.share_id is not None:
                state.shared_devices.add(device)
                # ``ConsumedCapacityCollection.Insert``: summed per device and capacity name. Our
                # parse cannot tell an empty ``consumedCapacity`` from none: either adds nothing.
                if result.consumed_capacity:
                    held = state.aggregated_capacity.setdefault(device, {})
                    for name, amount in result.consumed_capacity.items():
                        held[name] = held.get(name, Fraction(0)) + amount
                continue
            state.devices.add(device)
    return state
