"""NodeVolumeLimits: a node takes no more volumes of a CSI driver than its CSINode allows.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (``CSILimits``). For each node,
the pod's new volumes (claims, generic ephemeral volumes, in-tree disks migrated to CSI) are counted
per driver, each once by ``<driver>/<handle>``, on top of the volumes the node's pods and its
VolumeAttachments already hold; a driver whose CSINode entry reports ``allocatable.count`` refuses
the node when the sum passes it. A claim not bound yet counts under its StorageClass's provisioner
with a handle of its own; one without a class (or with a missing class) is not counted.

Only VolumeAttachments of the node are read (an index of the cache): upstream lists every one of
the cluster in each Filter call. With ``VolumeLimitScaling`` (beta, on from 1.37; alpha before, and
1.36's code is 1.37's) a driver whose CSIDriver sets ``preventPodSchedulingIfMissing`` refuses a node
whose CSINode does not list it. 1.35's alpha code (without the opt-in) is not ported.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import CSINode, PersistentVolumeClaim, VolumeAttachment, not_found
from scheduler.api.volumes import Volume
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    as_objects,
    assigned_pod_resource,
)
from scheduler.framework.interface import Handle, StorageLister
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.volumes import claim_hint, claim_name_of, sign_volumes
from scheduler.plugins.nodevolumelimits import translation as tr

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "IN_TREE_MIGRATABLE", "NodeVolumeLimits"]

NAME = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
# The inline sources csi-translation-lib's plugins claim (``IsInlineMigratable``).
IN_TREE_MIGRATABLE = frozenset(tr.IN_TREE_PLUGINS)
_SKIP = Status(Code.SKIP)
_EXCEEDED = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,), NAME)


class _VolumeError(Exception):
    """A volume of the pod cannot be counted: ``not_found`` says whether the lister said NotFound
    (UnschedulableAndUnresolvable) or something else went wrong (Error)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def _counted(volume: Volume) -> bool:
    """PreFilter's test: a claim, a generic ephemeral volume or an inline-migratable disk."""
    sources = volume.sources
    return "persistentVolumeClaim" in sources or "ephemeral" in sources or bool(sources & IN_TREE_MIGRATABLE)


def _driver_on_node(storage: StorageLister, driver: str, csi_node: CSINode | None) -> bool:
    """``checkCSIDriverOnNode``: no CSIDriver object (perhaps not a CSI driver) or no opt-in means yes."""
    csi_driver = storage.csi_driver(driver)
    if csi_driver is None or not csi_driver.prevent_pod_scheduling_if_missing:
        return True
    return csi_node is not None and any(d.name == driver for d in csi_node.drivers)


class NodeVolumeLimits:
    """PreFilter, Filter and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features
        self.volume_limit_scaling = features.enabled("VolumeLimitScaling")
        # Handles of claims not bound yet: ``<prefix>-<namespace>/<claim>``, a prefix no real handle has.
        self._prefix = uuid.uuid4().hex

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        return sign_volumes(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), self.is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(
                ClusterEvent(assigned_pod_resource(self.features), ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.is_schedulable_after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    # -- queueing hints --------------------------------------------------------------------------

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(Pod, old, new)
        if objs is None or objs[0] is None:
            return QueueingHint.QUEUE
        deleted = objs[0]
        if not deleted.volumes or (not deleted.node_name and not deleted.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if any(_counted(v) for v in deleted.volumes) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_added(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        return claim_hint(pod, old, new, ephemeral=True)

    def is_schedulable_after_volume_attachment_deleted(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        objs = as_objects(VolumeAttachment, old, new)
        if objs is None or objs[0] is None:
            return QueueingHint.QUEUE
        deleted = objs[0]
        for volume in pod.volumes:
            if "persistentVolumeClaim" in volume.sources:
                return QueueingHint.QUEUE
            source = next(iter(volume.sources & IN_TREE_MIGRATABLE), None)
            if source is None:
                continue
            try:
                tr.translate_inline(source, _fields(volume, source))
            except tr.TranslationError:
                return QueueingHint.QUEUE  # upstream: Queue with the conversion error
            if tr.IN_TREE_PLUGINS[source][1] == deleted.attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(CSINode, old, new)
        if objs is None or objs[0] is None or objs[1] is None:
            return QueueingHint.QUEUE
        before = {d.name: d.allocatable_count or 0 for d in objs[0].drivers}
        for driver in objs[1].drivers:
            if (driver.allocatable_count or 0) > before.get(driver.name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter and Filter ---------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return (None, None) if any(_counted(v) for v in pod.volumes) else (None, _SKIP)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        storage = self.handle.current().storage
        csi_node = storage.csi_node(node_info.name)
        new: dict[str, str] = {}
        try:
            self._attachable(storage, pod, csi_node, new_pod=True, out=new)
        except _VolumeError as e:
            if e.not_found:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(e),))
            return Status.as_error(str(e))
        if not new:
            return None
        if self.volume_limit_scaling:
            for driver in new.values():
                if not _driver_on_node(storage, driver, csi_node):
                    return Status(Code.UNSCHEDULABLE, (f"{driver} CSI driver is not installed on the node",))
        drivers = csi_node.drivers if csi_node is not None else ()
        limits = {d.name: d.allocatable_count for d in drivers if d.allocatable_count is not None}
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for existing in node_info.pods.values():
                self._attachable(storage, existing, csi_node, new_pod=False, out=attached)
        except _VolumeError as e:
            return Status.as_error(str(e))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self._attachments(storage, node_info.name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return _EXCEEDED
        return None

    def _attachments(self, storage: StorageLister, node_name: str) -> dict[str, str]:
        """``getNodeVolumeAttachmentInfo``: the node's attachments of CSI PersistentVolumes."""
        out: dict[str, str] = {}
        for attachment in storage.volume_attachments_on(node_name):
            if not attachment.attacher or attachment.persistent_volume_name is None:
                continue
            pv = storage.persistent_volume(attachment.persistent_volume_name)
            if pv is None or not pv.csi_driver:
                continue
            out[f"{attachment.attacher}/{pv.csi_volume_handle}"] = attachment.attacher
        return out

    def _attachable(
        self, storage: StorageLister, pod: Pod, csi_node: CSINode | None, *, new_pod: bool, out: dict[str, str]
    ) -> None:
        """``filterAttachableVolumes``: ``<driver>/<handle>`` -> driver for each countable volume."""
        for volume in pod.volumes:
            claim_name = claim_name_of(pod, volume)
            if claim_name is None:
                self._inline(volume, csi_node, out)
                continue
            if not claim_name:
                raise _VolumeError("PersistentVolumeClaim had no name")
            claim = storage.persistent_volume_claim(pod.namespace, claim_name)
            if claim is None:
                if new_pod:
                    message = not_found("PersistentVolumeClaim", claim_name)
                    raise _VolumeError(f"looking up PVC {pod.namespace}/{claim_name}: {message}", not_found=True)
                continue
            if "ephemeral" in volume.sources and claim.controller_uid != pod.uid:
                raise _VolumeError(
                    f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
                    "(pod is not owner)"
                )
            driver, handle = self._driver_info(storage, csi_node, claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver

    @staticmethod
    def _inline(volume: Volume, csi_node: CSINode | None, out: dict[str, str]) -> None:
        """``checkAttachableInlineVolume``: an in-tree disk counts under its CSI driver once migrated."""
        source = next(iter(volume.sources & IN_TREE_MIGRATABLE), None)
        if source is None:
            return
        plugin = tr.IN_TREE_PLUGINS[source][0]
        if not tr.migration_on(csi_node, plugin):
            return
        try:
            driver, handle = tr.translate_inline(source, _fields(volume, source))
        except tr.TranslationError as e:
            raise _VolumeError(f"converting volume({volume.name}) from inline to csi: {e}") from e
        out[f"{driver}/{handle}"] = driver

    def _driver_info(
        self, storage: StorageLister, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """``getCSIDriverInfo``: the bound PV's CSI driver and handle (translated from an in-tree
        source once migrated), or the class's for a claim not bound yet or bound to a missing PV."""
        pv = storage.persistent_volume(claim.volume_name) if claim.volume_name else None
        if pv is None:
            return self._driver_info_from_class(storage, csi_node, claim)
        if pv.csi_driver:
            return pv.csi_driver, pv.csi_volume_handle
        plugin = tr.pv_plugin(pv)
        if plugin is None or not tr.migration_on(csi_node, plugin):
            return "", ""
        try:
            return tr.translate_pv(pv)
        except tr.TranslationError:
            return "", ""

    def _driver_info_from_class(
        self, storage: StorageLister, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: a claim not bound yet counts once under its class's provisioner."""
        class_name = claim.storage_class
        storage_class = storage.storage_class(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        handle = f"{self._prefix}-{claim.namespace}/{claim.name}"
        provisioner = storage_class.provisioner
        if tr.is_migratable_plugin(provisioner):
            if not tr.migration_on(csi_node, provisioner):
                return "", ""
            return tr.csi_driver_of(provisioner) or "", handle
        return provisioner, handle


def _fields(volume: Volume, source: str) -> Mapping[str, Any]:
    fields = volume.spec.get(source)
    return fields if isinstance(fields, Mapping) else {}
