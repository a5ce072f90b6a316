"""VolumeZone, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``. Its PreFilter looks up the
claim of every ``persistentVolumeClaim`` volume (``getPersistentVolumeClaimNameFromPod``; generic
ephemeral volumes are not read) and the zone labels of its bound volume; it skips a pod with none.
"""

from __future__ import annotations

from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = ["SOURCES", "VolumeZone"]

SOURCES = frozenset({"persistentVolumeClaim"})


class VolumeZone(not_run.VolumeStandIn):
    NAME = names.VOLUME_ZONE
    SOURCES = SOURCES
