"""What the four volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) read
of a pod alike: their common ``SignPod``, the claims its volumes use, and the queueing hint they
share for a claim that appears or changes."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.objects import Pod
from scheduler.api.storage import PersistentVolumeClaim
from scheduler.api.volumes import Volume
from scheduler.framework import signers
from scheduler.framework.events import QueueingHint, as_objects
from scheduler.framework.status import Status

__all__ = ["claim_hint", "claim_name_of", "claim_names", "sign_volumes"]


def sign_volumes(pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
    """Upstream's ``SignPod`` of each volume plugin: the pod's volumes (batching)."""
    return [(signers.VOLUMES_SIGNER_NAME, signers.volumes_signer(pod))], None


def claim_names(pod: Pod) -> list[str]:
    """``claimName`` of each ``persistentVolumeClaim`` volume, in order (generic ephemeral ones not)."""
    return [v.claim_name for v in pod.volumes if "persistentVolumeClaim" in v.sources]


def claim_name_of(pod: Pod, volume: Volume) -> str | None:
    """The claim a volume uses: its ``claimName``, ``<pod>-<volume>`` for a generic ephemeral one
    (``ephemeral.VolumeClaimName``), None for other sources."""
    if "persistentVolumeClaim" in volume.sources:
        return volume.claim_name
    if "ephemeral" in volume.sources:
        return f"{pod.name}-{volume.name}"
    return None


def claim_hint(
    pod: Pod,
    old: object | None,
    new: object | None,
    *,
    ephemeral: bool,
    no_claim: QueueingHint = QueueingHint.QUEUE,
) -> QueueingHint:
    """Queue when the claim added or updated is one the pod uses, in its namespace (``ephemeral``:
    generic ephemeral volumes' claims count too, as NodeVolumeLimits' and VolumeBinding's hints).
    ``no_claim``: the answer when the event carries no new claim (upstream's hints would dereference
    nil there; an Add or Update always carries one)."""
    objs = as_objects(PersistentVolumeClaim, old, new)
    if objs is None:
        return QueueingHint.QUEUE
    claim = objs[1]
    if claim is None:
        return no_claim
    if claim.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    used = {claim_name_of(pod, v) for v in pod.volumes} if ephemeral else set(claim_names(pod))
    return QueueingHint.QUEUE if claim.name in used else QueueingHint.QUEUE_SKIP
