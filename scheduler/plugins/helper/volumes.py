"""What the four volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) read
of a pod alike: their common ``SignPod`` and the claims of its ``persistentVolumeClaim`` volumes."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.objects import Pod
from scheduler.framework import signers
from scheduler.framework.status import Status

__all__ = ["claim_names", "sign_volumes"]


def sign_volumes(pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
    """Upstream's ``SignPod`` of each volume plugin: the pod's volumes (batching)."""
    return [(signers.VOLUMES_SIGNER_NAME, signers.volumes_signer(pod))], None


def claim_names(pod: Pod) -> list[str]:
    """``claimName`` of each ``persistentVolumeClaim`` volume, in order (generic ephemeral ones not)."""
    return [v.claim_name for v in pod.volumes if "persistentVolumeClaim" in v.sources]
