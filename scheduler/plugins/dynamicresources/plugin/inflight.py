"""The claims being allocated between Reserve and the end of PreBind, and the devices taken: upstream's
claim tracker (``dra_manager.go``: ``inFlightAllocations``, ``ListAllAllocatedDevices``) and
``allocateddevices.go``'s ``foreachAllocatedDevice``.

The next cycle's allocator sees an in-flight claim's devices as taken, and a pod whose claim is in
flight waits, so two pods never get one device while the first one's PreBind has not written yet.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.api.resourceclaim import ResourceClaim
from scheduler.plugins.dynamicresources.structured import DeviceID

__all__ = ["InFlightAllocations", "allocated_devices"]


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


def allocated_devices(claims: Iterable[ResourceClaim], in_flight: InFlightAllocations) -> set[DeviceID]:
    """The devices of every allocated claim and every claim in flight; admin access does not take one."""
    out: set[DeviceID] = set()
    for claim in (*claims, *in_flight.claims()):
        if claim.allocation is None:
            continue
        for result in claim.allocation.results:
            if result.admin_access:
                continue
            out.add(DeviceID(result.driver, result.pool, result.device))
    return out
