"""VolumeBinding, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``. Its PreFilter acts on
a pod with a PersistentVolumeClaim or a generic ephemeral volume (``podHasPVCs``: the ephemeral
volume's claim is ``<pod>-<volume>``) and skips every other pod. Its Score is off by default
(``StorageCapacityScoring`` is alpha in 1.35), so the stand-in has none.
"""

from __future__ import annotations

from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = ["SOURCES", "VolumeBinding"]

SOURCES = frozenset({"persistentVolumeClaim", "ephemeral"})


class VolumeBinding(not_run.VolumeStandIn):
    NAME = names.VOLUME_BINDING
    SOURCES = SOURCES
