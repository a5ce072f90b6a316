"""NodeVolumeLimits, as a refusing stand-in until the plugin is ported (issue #18).

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (``CSILimits``). Its PreFilter
acts on a pod with a PersistentVolumeClaim, a generic ephemeral volume, or an in-tree volume that CSI
migration can translate (``translator.IsInlineMigratable``: csi-translation-lib v0.35.4 knows
gcePersistentDisk, awsElasticBlockStore, cinder, azureDisk, azureFile, vsphereVolume and
portworxVolume), and skips every other pod. Inline ``csi`` volumes are not counted (only in-tree
types are inline-migratable), so they do not make it act.
"""

from __future__ import annotations

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


class NodeVolumeLimits(not_run.VolumeStandIn):
    NAME = names.NODE_VOLUME_LIMITS
    SOURCES = SOURCES
