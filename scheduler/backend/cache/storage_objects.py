"""The storage objects the volume plugins look up, as upstream's informer listers hold them. No I/O.

Upstream's VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits read PersistentVolumes,
PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities from the
shared informers' listers; here the watch fills one store per kind and a lookup that finds nothing
returns None (the plugins then say what the lister's NotFound says: ``scheduler.api.storage.not_found``).
DynamicResources' objects (``resource.k8s.io/v1``) are kept with them, read as the cluster's minor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from scheduler.api.devicetaintrule import DeviceTaintRule, tainted
from scheduler.api.resourceclaim import ResourceClaim, ResourceClaimTemplate
from scheduler.api.resourceslice import ResourceSlice
from scheduler.api.storage import (
    DEVICE_CLASS_PREFIX,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    DeviceClass,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

__all__ = [
    "STORAGE_KINDS",
    "ExtendedResourceNames",
    "StorageObject",
    "StorageObjects",
    "key_of",
    "parse_storage_object",
]

StorageObject: TypeAlias = (
    PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | VolumeAttachment
    | DeviceClass
    | ResourceSlice
    | ResourceClaim
    | ResourceClaimTemplate
    | DeviceTaintRule
)

# kind -> its parser
STORAGE_KINDS: dict[str, type[StorageObject]] = {
    kind.__name__: kind
    for kind in (
        PersistentVolume,
        PersistentVolumeClaim,
        StorageClass,
        CSINode,
        CSIDriver,
        CSIStorageCapacity,
        VolumeAttachment,
        # Not storage: DynamicResources' objects (and DRAExtendedResource's lookups of classes), kept
        # with the other cluster objects.
        DeviceClass,
        ResourceSlice,
        ResourceClaim,
        ResourceClaimTemplate,
        DeviceTaintRule,
    )
}
# The kinds whose parser reads as a minor (the fields and bounds of its ``k8s.io/api``).
_READ_AS_MINOR: Mapping[str, Callable[..., StorageObject]] = {
    kind.__name__: kind.from_dict
    for kind in (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule)
}


def parse_storage_object(kind: str, obj: Mapping[str, Any], minor: str) -> StorageObject:
    """``obj``, of a kind of ``STORAGE_KINDS``, parsed once, as the cluster's ``minor`` has it."""
    read_as_minor = _READ_AS_MINOR.get(kind)
    if read_as_minor is not None:
        return read_as_minor(obj, minor=minor)
    return STORAGE_KINDS[kind].from_dict(obj)


def key_of(obj: StorageObject) -> str:
    """The lister's key: ``namespace/name``, or ``name`` for a cluster-scoped object."""
    namespace = getattr(obj, "namespace", "")
    return f"{namespace}/{obj.name}" if namespace else obj.name


class StorageObjects:
    """One store per kind, keyed like a lister (``namespace/name`` for namespaced kinds)."""

    __slots__ = (
        "_assumed",
        "_attachments",
        "_by_kind",
        "_extended",
        "_slices",
        "_slices_off_node",
        "_slices_on",
        "_versions",
    )

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[str, StorageObject]] = {kind: {} for kind in STORAGE_KINDS}
        self._versions: dict[tuple[str, str], str] = {}  # (kind, key) -> metadata.resourceVersion
        # node name -> its VolumeAttachments by name: NodeVolumeLimits reads one node's per Filter
        # call, which must not cost a walk over every attachment of the cluster (upstream lists all).
        self._attachments: dict[str, dict[str, VolumeAttachment]] = {}
        # ResourceSlices by ``spec.nodeName`` (a node's own devices, read per Filter call), and by name
        # those without one (``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``: every node's
        # allocation checks them). Both hold the slices with the DeviceTaintRules' taints applied (the
        # tracker's ``ListPatchedResourceSlices``); the store of the kind keeps them as published.
        self._slices_on: dict[str, dict[str, ResourceSlice]] = {}
        self._slices_off_node: dict[str, ResourceSlice] = {}
        # Every slice, listed once until a slice changes: the allocator keeps each node's pools while
        # it is given the same sequence (``NodePools``).
        self._slices: tuple[ResourceSlice, ...] | None = None
        # The assume caches (``volumebinding/assume_cache.go``, and DynamicResources' for claims):
        # (kind, key) -> the version assumed (a PV bound to a claim, a claim with its selected node, a
        # ResourceClaim as PreBind's write returned it) and the resourceVersion it was made from;
        # lookups see it until the watch brings that version or newer.
        self._assumed: dict[tuple[str, str], tuple[StorageObject, str]] = {}
        # Extended resource name -> the DeviceClass backing it, kept as upstream's cache keeps it.
        self._extended = ExtendedResourceNames()

    def assume(self, obj: PersistentVolume | PersistentVolumeClaim | ResourceClaim, made_from: str) -> None:
        """Let lookups see ``obj`` before the watch does (``AssumeCache.Assume``)."""
        self._assumed[type(obj).__name__, key_of(obj)] = (obj, made_from)

    def assume_written(self, claim: ResourceClaim) -> str | None:
        """``AssumeClaimAfterAPICall``: ``claim`` as the API returned it from a write, seen by every
        lookup (and every allocator's list of taken devices) until the watch brings that version.
        Why not, as upstream refuses it (then nothing is assumed): the claim is not held (deleted
        meanwhile) or the watch already brought a newer version; None when assumed."""
        key = key_of(claim)
        held = self._versions.get(("ResourceClaim", key))
        if key not in self._by_kind["ResourceClaim"] or held is None:
            return f'could not find ResourceClaim "{key}"'
        if _older(claim.resource_version, held):  # upstream's words
            return f'ResourceClaim "{key}" is out of sync (stored: {held}, assume: {claim.resource_version})'
        self.assume(claim, claim.resource_version)
        return None

    def restore(self, obj: PersistentVolume | PersistentVolumeClaim | ResourceClaim) -> None:
        """Drop an assumed version: lookups see the watch's again (``AssumeCache.Restore``)."""
        self._assumed.pop((type(obj).__name__, key_of(obj)), None)

    def api_object(self, kind: str, key: str) -> StorageObject | None:
        """The watch's version, whatever is assumed (``GetAPIObj``)."""
        return self._by_kind[kind].get(key)

    def upsert(self, obj: StorageObject, resource_version: str = "") -> StorageObject | None:
        """Store ``obj``; the object it replaces (None: it is new)."""
        kind, key = type(obj).__name__, key_of(obj)
        store = self._by_kind[kind]
        old = store.get(key)
        store[key] = obj
        self._versions[kind, key] = resource_version
        assumed = self._assumed.get((kind, key))
        if assumed is not None and not _older(resource_version, assumed[1]):
            del self._assumed[kind, key]  # the watch caught up with (or passed) what was assumed
        self._index(old, obj)
        if isinstance(obj, DeviceClass):
            self._extended.update(obj, old if isinstance(old, DeviceClass) else None)
        elif isinstance(obj, DeviceTaintRule):
            self._retaint()
        return old

    def remove(self, obj: StorageObject) -> StorageObject | None:
        kind, key = type(obj).__name__, key_of(obj)
        self._versions.pop((kind, key), None)
        self._assumed.pop((kind, key), None)
        old = self._by_kind[kind].pop(key, None)
        self._index(old, None)
        if isinstance(obj, DeviceClass):
            self._extended.remove(obj)
        elif isinstance(obj, DeviceTaintRule):
            self._retaint()
        return old

    def _index(self, old: StorageObject | None, new: StorageObject | None) -> None:
        """The per-node indexes: ``old`` (the object held) leaves them, ``new`` (its successor) enters."""
        if isinstance(old, VolumeAttachment):
            _drop(self._attachments, old.node_name, old.name)
        if isinstance(new, VolumeAttachment):
            self._attachments.setdefault(new.node_name, {})[new.name] = new
        if isinstance(old, ResourceSlice) or isinstance(new, ResourceSlice):
            self._slices = None
        if isinstance(old, ResourceSlice):
            if old.node_name is None:
                self._slices_off_node.pop(old.name, None)
            else:
                _drop(self._slices_on, old.node_name, old.name)
        if isinstance(new, ResourceSlice):
            rules = self._by_kind["DeviceTaintRule"]
            if rules:
                new = tainted(new, (r for r in rules.values() if isinstance(r, DeviceTaintRule)))
            if new.node_name is None:
                self._slices_off_node[new.name] = new
            else:
                self._slices_on.setdefault(new.node_name, {})[new.name] = new

    def _retaint(self) -> None:
        """A rule came, changed or went: every slice indexed again with the rules now held (rules are
        few and rarely change; a slice no rule selects is indexed as published, the same object)."""
        for obj in self._by_kind["ResourceSlice"].values():
            self._index(obj, obj)

    def volume_attachments_on(self, node_name: str) -> Iterable[VolumeAttachment]:
        """The VolumeAttachments whose ``spec.nodeName`` is ``node_name``."""
        return self._attachments.get(node_name, {}).values()

    def resource_slices_on(self, node_name: str) -> Iterable[ResourceSlice]:
        """The ResourceSlices whose ``spec.nodeName`` is ``node_name``."""
        return self._slices_on.get(node_name, {}).values()

    def resource_slices(self) -> Sequence[ResourceSlice]:
        """Every ResourceSlice (the allocator's ``ResourceSlices().List``): node-local ones first; the
        same sequence until a slice is added, changed or removed."""
        if self._slices is None:
            on_nodes = (s for on in self._slices_on.values() for s in on.values())
            self._slices = (*on_nodes, *self._slices_off_node.values())
        return self._slices

    def resource_slices_off_node(self) -> Iterable[ResourceSlice]:
        """The ResourceSlices without a ``spec.nodeName``: whether a node reaches their devices is
        their ``nodeSelector``'s, ``allNodes``' or each device's to say."""
        return self._slices_off_node.values()

    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        obj = self.get("ResourceClaim", f"{namespace}/{name}")
        return obj if isinstance(obj, ResourceClaim) else None

    def resource_claims(self) -> Iterable[ResourceClaim]:
        """Every ResourceClaim held, an assumed version in place of the watch's (the devices already
        allocated are theirs, and those of a claim PreBind wrote before the watch brought it)."""
        claims = self._by_kind["ResourceClaim"]
        if not self._assumed:
            return (c for c in claims.values() if isinstance(c, ResourceClaim))
        return (c for key in claims if isinstance(c := self.get("ResourceClaim", key), ResourceClaim))

    def resource_claim_template(self, namespace: str, name: str) -> ResourceClaimTemplate | None:
        obj = self.get("ResourceClaimTemplate", f"{namespace}/{name}")
        return obj if isinstance(obj, ResourceClaimTemplate) else None

    def device_class(self, name: str) -> DeviceClass | None:
        obj = self.get("DeviceClass", name)
        return obj if isinstance(obj, DeviceClass) else None

    def resource_version(self, kind: str, key: str) -> str | None:
        """The resourceVersion ``upsert`` was given for the object held (None: none is held)."""
        return self._versions.get((kind, key))

    def get(self, kind: str, key: str) -> StorageObject | None:
        assumed = self._assumed.get((kind, key))
        return assumed[0] if assumed is not None else self._by_kind[kind].get(key)

    def persistent_volume_claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        obj = self.get("PersistentVolumeClaim", f"{namespace}/{name}")
        return obj if isinstance(obj, PersistentVolumeClaim) else None

    def persistent_volume(self, name: str) -> PersistentVolume | None:
        obj = self.get("PersistentVolume", name)
        return obj if isinstance(obj, PersistentVolume) else None

    def storage_class(self, name: str) -> StorageClass | None:
        obj = self._by_kind["StorageClass"].get(name)
        return obj if isinstance(obj, StorageClass) else None

    def csi_node(self, name: str) -> CSINode | None:
        obj = self._by_kind["CSINode"].get(name)
        return obj if isinstance(obj, CSINode) else None

    def csi_driver(self, name: str) -> CSIDriver | None:
        obj = self._by_kind["CSIDriver"].get(name)
        return obj if isinstance(obj, CSIDriver) else None

    def persistent_volumes(self) -> Iterable[PersistentVolume]:
        for key in self._by_kind["PersistentVolume"]:
            pv = self.persistent_volume(key)
            if pv is not None:
                yield pv

    def device_class_for(self, resource: str) -> DeviceClass | None:
        """The DeviceClass backing extended resource ``resource`` (``ExtendedResourceNames``)."""
        return self._extended.get(resource)

    def csi_storage_capacities(self) -> Iterable[CSIStorageCapacity]:
        return (c for c in self._by_kind["CSIStorageCapacity"].values() if isinstance(c, CSIStorageCapacity))


class ExtendedResourceNames:
    """Which DeviceClass backs each extended resource name, kept event by event as upstream's
    ``ExtendedResourceCache`` (dynamic-resource-allocation ``deviceclass/extendedresourcecache``) keeps
    it, order-dependence included: a class naming a resource that a newer class (on equal age, a
    lower name) already holds changes nothing, not even its implicit
    ``deviceclass.resource.kubernetes.io/<class>``; a class deleted or renamed away drops its names
    whoever holds them, and the class it had beaten does not take the name back."""

    __slots__ = ("_classes",)

    def __init__(self) -> None:
        self._classes: dict[str, DeviceClass] = {}

    def get(self, resource: str) -> DeviceClass | None:
        return self._classes.get(resource)

    def update(self, new: DeviceClass, old: DeviceClass | None) -> None:
        """A class added (``old`` None) or changed: ``updateResourceName2class``."""
        if new.extended_resource_name is not None:
            holder = self._classes.get(new.extended_resource_name)
            if holder is not None and (
                new.created < holder.created or (new.created == holder.created and new.name >= holder.name)
            ):
                return
        if old is not None:
            self.remove(old)
        if new.extended_resource_name is not None:
            self._classes[new.extended_resource_name] = new
        self._classes[DEVICE_CLASS_PREFIX + new.name] = new

    def remove(self, gone: DeviceClass) -> None:
        """``removeResourceName2class``: the class's implicit and explicit names, whoever holds them."""
        self._classes.pop(DEVICE_CLASS_PREFIX + gone.name, None)
        if gone.extended_resource_name is not None:
            self._classes.pop(gone.extended_resource_name, None)


def _drop(index: dict[str, dict[str, Any]], node_name: str, name: str) -> None:
    """``name`` out of ``node_name``'s entry of a per-node index, and the entry out once empty."""
    on_node = index.get(node_name)
    if on_node is not None:
        on_node.pop(name, None)
        if not on_node:
            del index[node_name]


def _older(version: str, than: str) -> bool:
    """Strictly older, for etcd's integer resourceVersions (other spellings: never older)."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)
