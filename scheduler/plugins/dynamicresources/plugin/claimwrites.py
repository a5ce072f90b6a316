"""The claim writes upstream's DynamicResources makes, as data: PreBind's allocation and reservation
(``bindClaim``) and PostFilter's deallocation; and ``ClaimWriter``, the seam that carries PreBind's
out (``scheduler/kube/`` in ``run``, memory in ``simulate``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

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
    """Carries the claim writes out (``scheduler/kube/`` in ``run``, memory in ``simulate``); each
    raises with the reason on failure."""

    async def bind_claim(self, pod: Pod, binding: ClaimBinding) -> ResourceClaim:
        """PreBind's writes for one claim; the claim as written, already assumed in the scheduler's
        cache (upstream's ``AssumeClaimAfterAPICall``), so that the next cycle sees its devices taken
        once the plugin drops the in-flight allocation."""
        ...

    async def deallocate_claim(self, deallocation: ClaimDeallocation) -> None:
        """PostFilter's ``UpdateStatus``: the claim without ``reservedFor``, ``allocation`` and ``devices``."""
        ...

    async def unreserve_claim(self, pod: Pod, claim: ResourceClaim) -> None:
        """Unreserve's patch taking ``pod`` out of the claim's ``status.reservedFor``."""
        ...

    async def create_claim(self, namespace: str, body: dict[str, Any]) -> ResourceClaim:
        """PreBind's create of the claim for a pod's extended resources (``body`` has ``generateName``);
        the claim as created."""
        ...

    async def patch_pod_status(self, pod: Pod, patch: dict[str, Any]) -> None:
        """PreBind's patch of the pod's ``status.extendedResourceClaimStatus``."""
        ...

    async def delete_claim(self, claim: ResourceClaim) -> None:
        """Unreserve's removal of the claim created for a pod's extended resources (``deleteClaim``:
        its finalizer dropped, then deleted; gone already is done)."""
        ...
