"""The claim writes upstream's DynamicResources makes, as data: PreBind's allocation and reservation
(``bindClaim``) and PostFilter's deallocation. ``scheduler/kube/`` is to carry them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import AllocationResult, ConsumerReference, ResourceClaim

__all__ = ["FINALIZER", "ClaimBinding", "ClaimDeallocation", "ClaimWriter", "binding_for"]

FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer


@dataclass(frozen=True, slots=True)
class ClaimBinding:
    """PreBind for one claim not yet reserved for the pod: when ``add_finalizer``, a normal Update adding
    ``FINALIZER`` first; then an UpdateStatus writing ``allocation`` (None: the claim was allocated
    already) and appending ``reserved_for``; with ``stamp_allocation`` (DRADeviceBindingConditions and
    DRAResourceClaimDeviceStatus on, the allocation unstamped) ``allocationTimestamp`` is set to the
    time of the write. Upstream fails the write when the claim is being deleted
    or (with an allocation to write) was allocated elsewhere meanwhile, and retries on conflicts."""

    namespace: str
    name: str
    uid: str
    add_finalizer: bool
    allocation: AllocationResult | None
    reserved_for: ConsumerReference
    stamp_allocation: bool = False
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on: whatever claim a retry re-reads
    # must still be allocated, and its allocation gets stamped if it is not yet.
    binding_conditions: bool = False


@dataclass(frozen=True, slots=True)
class ClaimDeallocation:
    """PostFilter: an UpdateStatus clearing ``reservedFor``, ``allocation`` and ``devices``."""

    namespace: str
    name: str
    uid: str


def binding_for(
    pod: Pod, claim: ResourceClaim, allocation: AllocationResult | None, *, binding_conditions: bool
) -> ClaimBinding:
    written = allocation if allocation is not None else claim.allocation
    return ClaimBinding(
        namespace=claim.namespace,
        name=claim.name,
        uid=claim.uid,
        add_finalizer=allocation is not None and FINALIZER not in claim.finalizers,
        allocation=allocation,
        reserved_for=ConsumerReference(resource="pods", name=pod.name, uid=pod.uid),
        stamp_allocation=binding_conditions and written is not None and written.allocation_timestamp is None,
        binding_conditions=binding_conditions,
    )


class ClaimWriter(Protocol):
    """Carries the writes out (the API in ``run``: ``scheduler.kube.resourceclaims``). Each raises with
    upstream's text on failure."""

    async def bind_claim(self, pod: Pod, binding: ClaimBinding) -> ResourceClaim:
        """``bindClaim``'s writes; the claim as written, already assumed in the cache
        (``AssumeClaimAfterAPICall``) so no other pod is given its devices once it leaves the
        in-flight set."""
        ...

    async def deallocate_claim(self, deallocation: ClaimDeallocation) -> None:
        """PostFilter's ``UpdateStatus`` of the claim as the cache holds it, without allocation."""
        ...

    async def unreserve_claim(self, pod: Pod, claim: ResourceClaim) -> None:
        """Unreserve's strategic-merge patch taking ``pod`` out of ``status.reservedFor``."""
        ...
