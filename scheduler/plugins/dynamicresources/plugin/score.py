"""DynamicResources' Score: which ``firstAvailable`` subrequest each claim got (upstream's
``computeScore``), the earlier one the better."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.resourceclaim import FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE, AllocationResult, ResourceClaim
from scheduler.framework.status import Status, StatusError

__all__ = ["claims_score"]


def claims_score(
    claims: Sequence[ResourceClaim], node_results: Sequence[AllocationResult], *, allocated_claims_read: bool
) -> int:
    """Per claim, ``8 - i`` for the subrequest ``i`` its results name.

    ``node_results`` are the node's results for the claims to allocate, in order. Until 1.36 upstream
    indexed them by each claim's position among *all* the pod's claims (an allocated claim included),
    an Error once the index passes the last; from 1.36 an allocated claim scores its own allocation.
    Raises ``StatusError`` with upstream's text.
    """
    score = 0
    unallocated = 0
    for i, claim in enumerate(claims):
        if allocated_claims_read:
            if claim.allocation is not None:
                allocation = claim.allocation
            else:
                if unallocated >= len(node_results):
                    raise StatusError(
                        Status.as_error(
                            f"number of allocations {len(node_results)} is smaller than number of claims "
                            "needing allocation"
                        )
                    )
                unallocated += 1
                if not _has_subrequests(claim):
                    continue  # nothing to score: its result is not read (not built)
                allocation = node_results[unallocated - 1]
        else:
            if i >= len(node_results):
                raise StatusError(
                    Status.as_error(f"number of allocations {len(node_results)} is smaller than number of claims")
                )
            if not _has_subrequests(claim):
                continue
            allocation = node_results[i]
        chosen = {r.request for r in allocation.results if r.request.count("/") == 1}
        for request in claim.devices.requests:
            if request.exactly is not None:
                continue
            for j, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - j
    return score


def _has_subrequests(claim: ResourceClaim) -> bool:
    return any(request.first_available for request in claim.devices.requests)
