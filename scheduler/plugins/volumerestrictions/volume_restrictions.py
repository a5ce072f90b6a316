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

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = ["SOURCES", "VolumeRestrictions"]

# needsRestrictionsCheck's four disk types, then the claims readWriteOncePodPVCsForPod looks up.
SOURCES = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi", "persistentVolumeClaim"})


class VolumeRestrictions:
    NAME = names.VOLUME_RESTRICTIONS

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # spec.volumes is immutable (upstream ignores pod updates for the same reason) and nothing
        # else changes this refusal: only the periodic flush retries such a pod.
        return []

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        field = not_run.volume_field(pod, SOURCES)
        if field is None:
            return None, not_run.SKIP
        return None, not_run.refusal(field, self.NAME)
