"""NodeVolumeLimits, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (``CSILimits``). Its PreFilter
acts on a pod with a PersistentVolumeClaim, a generic ephemeral volume, or an in-tree volume that CSI
migration can translate (``translator.IsInlineMigratable``: csi-translation-lib v0.35.4 knows
gcePersistentDisk, awsElasticBlockStore, cinder, azureDisk, azureFile, vsphereVolume and
portworxVolume), and skips every other pod. Inline ``csi`` volumes are not counted (only in-tree
types are inline-migratable), so they do not make it act.
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

__all__ = ["IN_TREE_MIGRATABLE", "SOURCES", "NodeVolumeLimits"]

# The inline sources each in-tree plugin of csi-translation-lib claims (CanSupportInline).
IN_TREE_MIGRATABLE = frozenset(
    {
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "cinder",
        "azureDisk",
        "azureFile",
        "vsphereVolume",
        "portworxVolume",
    }
)
SOURCES = IN_TREE_MIGRATABLE | {"persistentVolumeClaim", "ephemeral"}


class NodeVolumeLimits:
    NAME = names.NODE_VOLUME_LIMITS

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
