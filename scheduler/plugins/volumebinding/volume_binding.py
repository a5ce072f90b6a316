"""VolumeBinding, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``. Its PreFilter acts on
a pod with a PersistentVolumeClaim or a generic ephemeral volume (``podHasPVCs``: the ephemeral
volume's claim is ``<pod>-<volume>``) and skips every other pod. Its Score is off by default
(``StorageCapacityScoring`` is alpha in 1.35), so the stand-in has none.
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

__all__ = ["SOURCES", "VolumeBinding"]

SOURCES = frozenset({"persistentVolumeClaim", "ephemeral"})


class VolumeBinding:
    NAME = names.VOLUME_BINDING

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        # VolumeBindingArgs (bindTimeoutSeconds, shape) are accepted and unused.
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
