"""In-tree volume sources as the CSI volumes they migrated to (``k8s.io/csi-translation-lib`` v0.35.4).

NodeVolumeLimits counts a node's volumes per CSI driver, each volume once by ``<driver>/<handle>``;
an in-tree disk (inline in a pod, or the source of a PersistentVolume) counts under its CSI driver
when the node's CSINode says the kubelet migrated that plugin. Only the driver names and volume
handles are kept here: the counting compares nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from scheduler.api.storage import CSINode, PersistentVolume

__all__ = [
    "IN_TREE_PLUGINS",
    "TranslationError",
    "csi_driver_of",
    "inline_plugin",
    "is_migratable_plugin",
    "migration_on",
    "pv_plugin",
    "translate_inline",
    "translate_pv",
]

# volume source field -> (in-tree plugin name, CSI driver name)
IN_TREE_PLUGINS: dict[str, tuple[str, str]] = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "azureFile": ("kubernetes.io/azure-file", "file.csi.azure.com"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
_DRIVERS = dict(IN_TREE_PLUGINS.values())
# ``isCSIMigrationOn``: these plugins' migration is complete (GA) in 1.35: on for any node with a
# CSINode. Portworx's counts where the CSINode's annotation lists it (its gate is GA and locked on);
# azureFile's and vsphereVolume's never do.
_MIGRATED_EVERYWHERE = frozenset(
    {"kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/cinder"}
)
_PORTWORX = "kubernetes.io/portworx-volume"
_UNSPECIFIED = "UNSPECIFIED"
_EBS_VOLUME = re.compile(r"^vol-[^/]*$")
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_ZONE = "topology.kubernetes.io/zone"


class TranslationError(ValueError):
    """A source csi-translation-lib cannot translate (its error text)."""


def inline_plugin(sources: frozenset[str]) -> str | None:
    """``GetInTreePluginNameFromSpec(nil, vol)``: the in-tree plugin of an inline-migratable volume."""
    for source in sources:
        if source in IN_TREE_PLUGINS:
            return IN_TREE_PLUGINS[source][0]
    return None


def pv_plugin(pv: PersistentVolume) -> str | None:
    """``GetInTreePluginNameFromSpec(pv, nil)``: None when the PV's source is not migratable."""
    return inline_plugin(pv.sources)


def csi_driver_of(plugin: str) -> str | None:
    """``GetCSINameFromInTreeName``."""
    return _DRIVERS.get(plugin)


def is_migratable_plugin(name: str) -> bool:
    """``IsMigratableIntreePluginByName`` (a StorageClass provisioner)."""
    return name in _DRIVERS


def migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: never without a CSINode; always for the four plugins whose migration is
    complete; for Portworx where the CSINode's ``migrated-plugins`` annotation lists it."""
    if csi_node is None or not plugin:
        return False
    if plugin in _MIGRATED_EVERYWHERE:
        return True
    return plugin == _PORTWORX and plugin in csi_node.migrated_plugins


def _ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-...`` or a bare ID."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    url = urlparse(kubernetes_id)
    volume = url.path.strip("/")
    if not _EBS_VOLUME.match(volume):
        raise TranslationError(
            f"failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume ({kubernetes_id})"
        )
    return volume


def _str(spec: Mapping[str, Any], field: str) -> str:
    value = spec.get(field)
    return value if isinstance(value, str) else ""


def _azure_disk_handle(spec: Mapping[str, Any]) -> str:
    kind = spec.get("kind")
    if isinstance(kind, str) and kind.lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")
    return _str(spec, "diskURI")


def translate_inline(source: str, spec: Mapping[str, Any]) -> tuple[str, str]:
    """``TranslateInTreeInlineVolumeToCSI``: (CSI driver, volume handle) of an inline in-tree volume."""
    driver = IN_TREE_PLUGINS[source][1]
    if source == "awsElasticBlockStore":
        return driver, _ebs_volume_id(_str(spec, "volumeID"))
    if source == "gcePersistentDisk":
        return driver, f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{_str(spec, 'pdName')}"
    if source == "azureDisk":
        return driver, _azure_disk_handle(spec)
    if source in ("cinder", "portworxVolume"):
        return driver, _str(spec, "volumeID")
    # azureFile and vsphereVolume: their migration is never honoured (``isCSIMigrationOn``), so no
    # handle of theirs is ever counted; the driver name is all a caller compares.
    return driver, ""


def _gce_pv_handle(pv: PersistentVolume, pd_name: str) -> str:
    zones_label = pv.labels.get(_BETA_ZONE) or pv.labels.get(_ZONE, "")
    zones = zones_label.split("__")
    if len(zones) == 1 and zones[0]:
        return f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
    if len(zones) > 1:
        regions = set()
        for zone in zones:
            parts = zone.split("-")
            if len(parts) != 3:
                raise TranslationError(
                    f"failed to get region from zones: zone in unexpected format, "
                    f"expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
                )
            regions.add("-".join(parts[:2]))
        if len(regions) != 1:
            raise TranslationError("failed to get region from zones: multiple or no regions gotten from zones")
        return f"projects/{_UNSPECIFIED}/regions/{regions.pop()}/disks/{pd_name}"
    return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{pd_name}"


def translate_pv(pv: PersistentVolume) -> tuple[str, str]:
    """``TranslateInTreePVToCSI``: (CSI driver, volume handle) of an in-tree PersistentVolume."""
    spec = pv.raw.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    for source, (_plugin, driver) in IN_TREE_PLUGINS.items():
        fields = spec.get(source)
        if source not in pv.sources or not isinstance(fields, Mapping):
            continue
        if source == "gcePersistentDisk":
            return driver, _gce_pv_handle(pv, _str(fields, "pdName"))
        return translate_inline(source, fields)
    raise TranslationError(f"could not find in-tree plugin translation logic for {pv.name}")
