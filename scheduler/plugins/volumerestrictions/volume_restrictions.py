"""VolumeRestrictions, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``. Its PreFilter
acts on a pod with a volume that can conflict with the same disk on a node (``needsRestrictionsCheck``:
gcePersistentDisk, awsElasticBlockStore, rbd, iscsi) and looks up every PersistentVolumeClaim
(``readWriteOncePodPVCsForPod``): a missing claim refuses the pod, a ReadWriteOncePod one already in
use makes Filter refuse. Whether a claim exists or is ReadWriteOncePod is not in the pod, and this
scheduler does not watch claims, so every pod with a ``persistentVolumeClaim`` volume is refused.
Generic ephemeral volumes are not looked at (only ``volume.PersistentVolumeClaim``).
"""

from __future__ import annotations

from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = ["SOURCES", "VolumeRestrictions"]

# needsRestrictionsCheck's four disk types, then the claims readWriteOncePodPVCsForPod looks up.
SOURCES = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi", "persistentVolumeClaim"})


class VolumeRestrictions(not_run.VolumeStandIn):
    NAME = names.VOLUME_RESTRICTIONS
    SOURCES = SOURCES
