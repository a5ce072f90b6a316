"""VolumeZone, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``. Its PreFilter looks up the
claim of every ``persistentVolumeClaim`` volume (``getPersistentVolumeClaimNameFromPod``; generic
ephemeral volumes are not read) and the zone labels of its bound volume; it skips a pod with none.
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

__all__ = ["SOURCES", "VolumeZone"]

SOURCES = frozenset({"persistentVolumeClaim"})


class VolumeZone:
    NAME = names.VOLUME_ZONE

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # spec.volumes is immutable and nothing else changes this refusal: only the periodic flush
        # retries such a pod.
        return []

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        field = not_run.volume_field(pod, SOURCES)
        if field is None:
            return None, not_run.SKIP
        return None, not_run.refusal(field, self.NAME)
