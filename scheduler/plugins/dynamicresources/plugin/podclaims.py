"""Which ResourceClaims a pod uses, as upstream resolves them (``resourceclaim.Name``, ``IsForPod``,
the plugin's ``foreachPodResourceClaim``), with upstream's texts for a claim the pod must wait for."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.volumes import PodResourceClaim

__all__ = ["ClaimNotUsableError", "claim_name", "pod_claims"]

ClaimLookup = Callable[[str, str], ResourceClaim | None]


class ClaimNotUsableError(Exception):
    """A claim of the pod is missing, going, or not the pod's: the pod waits (upstream's text)."""


def claim_name(pod: Pod, entry: PodResourceClaim) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (None: none was generated, skip it), and whether the
    claim must be checked to be owned by the pod (a generated one)."""
    if entry.resource_claim_name is not None:
        return entry.resource_claim_name, False
    if entry.resource_claim_template_name is not None:
        for status in pod.resource_claim_statuses:
            if status.name == entry.name:
                return status.resource_claim_name, True
        raise ClaimNotUsableError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimNotUsableError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.name}": none of the supported fields are set'
    )


def pod_claims(pod: Pod, lookup: ClaimLookup) -> list[ResourceClaim]:
    """The pod's claims in ``spec.resourceClaims`` order, those generated for nobody left out.

    Raises ``ClaimNotUsableError`` at the first entry that stops the pod, as upstream stops there.
    """
    claims: list[ResourceClaim] = []
    for entry in pod.resource_claims:
        name, must_check_owner = claim_name(pod, entry)
        if name is None:
            continue
        claim = lookup(pod.namespace, name)
        if claim is None:
            # The assume cache's NotFound, named as the scheduler names that cache.
            raise ClaimNotUsableError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
        if claim.deleting:
            raise ClaimNotUsableError(f'resourceclaim "{claim.name}" is being deleted')
        if must_check_owner and (claim.namespace != pod.namespace or claim.controller_uid != pod.uid):
            raise ClaimNotUsableError(
                f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        claims.append(claim)
    return claims


def is_reserved_for(pod: Pod, claim: ResourceClaim) -> bool:
    """``resourceclaim.IsReservedForPod``."""
    return any(ref.uid == pod.uid for ref in claim.reserved_for)
