"""Storage objects as the volume plugins read them (issue #18): PersistentVolume,
PersistentVolumeClaim and StorageClass (core/v1, storage/v1), CSINode, CSIDriver and
CSIStorageCapacity (storage/v1). Parsed once, leniently: a field the API server would refuse is
recorded in ``errors`` with its path, and the object still parses so a caller can say which field.
No I/O.

Only the fields upstream v1.35.4's VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits
read are kept (``raw`` holds the rest, for the writes VolumeBinding's PreBind makes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.deviceclass import DEVICE_CLASS_PREFIX, DeviceClass
from scheduler.api.fields import FieldError, as_list, as_mapping, as_str_map, opt_int, opt_str
from scheduler.api.labels import Selector, parse_label_selector
from scheduler.api.nodeselector import NodeSelector, parse_node_selector
from scheduler.api.quantity import parse_quantity

__all__ = [
    "ACCESS_MODES",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "BINDING_MODES",
    "DEVICE_CLASS_PREFIX",
    "MIGRATED_PLUGINS_ANNOTATION",
    "VOLUME_BINDING_IMMEDIATE",
    "VOLUME_BINDING_WAIT",
    "CSIDriver",
    "CSINode",
    "CSINodeDriver",
    "CSIStorageCapacity",
    "ClaimRef",
    "DeviceClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "VolumeAttachment",
    "not_found",
]

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
ACCESS_MODES = frozenset({"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"})
VOLUME_BINDING_IMMEDIATE = "Immediate"
VOLUME_BINDING_WAIT = "WaitForFirstConsumer"
BINDING_MODES = (VOLUME_BINDING_IMMEDIATE, VOLUME_BINDING_WAIT)
VOLUME_MODES = ("Filesystem", "Block")


# The GroupResource each kind's lister names in a NotFound error (``<group>.Resource("<kind>")``).
_LISTER_RESOURCES = {
    "PersistentVolume": "persistentvolume",
    "PersistentVolumeClaim": "persistentvolumeclaim",
    "StorageClass": "storageclass.storage.k8s.io",
    "CSINode": "csinode.storage.k8s.io",
    "CSIDriver": "csidriver.storage.k8s.io",
    "CSIStorageCapacity": "csistoragecapacity.storage.k8s.io",
    "VolumeAttachment": "volumeattachment.storage.k8s.io",
}


def not_found(kind: str, name: str) -> str:
    """``apierrors.NewNotFound(<resource>, name).Error()`` as a lister returns it; upstream's volume
    plugins put it in their statuses verbatim."""
    return f'{_LISTER_RESOURCES[kind]} "{name}" not found'


def _meta(
    root: Mapping[str, Any], errors: list[FieldError]
) -> tuple[str, str, str, dict[str, str], dict[str, str], bool]:
    """(name, namespace, uid, labels, annotations, being deleted) of any object."""
    meta = as_mapping(root.get("metadata"), "metadata", errors)
    name = opt_str(meta.get("name"), "metadata.name", errors) or ""
    if not name:
        errors.append(FieldError("metadata.name", "Required value"))
    return (
        name,
        opt_str(meta.get("namespace"), "metadata.namespace", errors) or "",
        opt_str(meta.get("uid"), "metadata.uid", errors) or "",
        as_str_map(meta.get("labels"), "metadata.labels", errors),
        as_str_map(meta.get("annotations"), "metadata.annotations", errors),
        meta.get("deletionTimestamp") is not None,
    )


def _storage(raw: object, path: str, errors: list[FieldError]) -> Fraction | None:
    """A ``storage`` quantity (capacity or request); None when absent."""
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except ValueError as exc:
        errors.append(FieldError(path, f"Invalid value: {raw!r}: {exc}"))
        return None


def _access_modes(raw: object, path: str, errors: list[FieldError]) -> frozenset[str]:
    modes: set[str] = set()
    for i, mode in enumerate(as_list(raw, path, errors)):
        if mode not in ACCESS_MODES:
            supported = ", ".join(f'"{m}"' for m in sorted(ACCESS_MODES))
            errors.append(FieldError(f"{path}[{i}]", f"Unsupported value: {mode!r}: supported values: {supported}"))
        else:
            modes.add(mode)
    return frozenset(modes)


def _volume_mode(raw: object, path: str, errors: list[FieldError]) -> str:
    """``volumeMode``, Filesystem when unset (the API server's default)."""
    mode = opt_str(raw, path, errors)
    if mode is None:
        return "Filesystem"
    if mode not in VOLUME_MODES:
        errors.append(FieldError(path, f'Unsupported value: "{mode}": supported values: "Block", "Filesystem"'))
    return mode


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """``spec.claimRef`` of a PersistentVolume: the claim it is bound (or pre-bound) to."""

    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    capacity: Fraction | None = None
    access_modes: frozenset[str] = frozenset()
    storage_class_name: str = ""
    volume_mode: str = "Filesystem"
    claim_ref: ClaimRef | None = None
    node_affinity: NodeSelector | None = None
    phase: str = ""
    deleting: bool = False
    csi_driver: str = ""
    csi_volume_handle: str = ""
    volume_attributes_class_name: str = ""
    # The in-tree source fields set on the PV (``gcePersistentDisk``, ``awsElasticBlockStore``, ...).
    sources: frozenset[str] = frozenset()
    resource_version: str = ""
    errors: tuple[FieldError, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def storage_class(self) -> str:
        """``GetPersistentVolumeClass``: the beta annotation first, then ``storageClassName``."""
        return self.annotations.get(BETA_STORAGE_CLASS_ANNOTATION, self.storage_class_name)

    @classmethod
    def from_dict(cls, obj: object) -> PersistentVolume:
        errors: list[FieldError] = []
        root = as_mapping(obj, "persistentVolume", errors)
        name, _ns, _uid, labels, annotations, deleting = _meta(root, errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        capacity = as_mapping(spec.get("capacity"), "spec.capacity", errors)
        ref = None
        if spec.get("claimRef") is not None:
            raw_ref = as_mapping(spec.get("claimRef"), "spec.claimRef", errors)
            ref = ClaimRef(
                opt_str(raw_ref.get("namespace"), "spec.claimRef.namespace", errors) or "",
                opt_str(raw_ref.get("name"), "spec.claimRef.name", errors) or "",
                opt_str(raw_ref.get("uid"), "spec.claimRef.uid", errors) or "",
            )
        affinity = as_mapping(spec.get("nodeAffinity"), "spec.nodeAffinity", errors)
        csi = as_mapping(spec.get("csi"), "spec.csi", errors)
        known = {
            "capacity", "accessModes", "storageClassName", "volumeMode", "claimRef", "nodeAffinity", "csi",
            "persistentVolumeReclaimPolicy", "mountOptions", "volumeAttributesClassName",
        }  # fmt: skip
        return cls(
            name=name,
            labels=labels,
            annotations=annotations,
            capacity=_storage(capacity.get("storage"), "spec.capacity.storage", errors),
            access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes", errors),
            storage_class_name=opt_str(spec.get("storageClassName"), "spec.storageClassName", errors) or "",
            volume_mode=_volume_mode(spec.get("volumeMode"), "spec.volumeMode", errors),
            claim_ref=ref,
            node_affinity=parse_node_selector(affinity.get("required"), "spec.nodeAffinity.required", errors),
            phase=opt_str(status.get("phase"), "status.phase", errors) or "",
            deleting=deleting,
            csi_driver=opt_str(csi.get("driver"), "spec.csi.driver", errors) or "",
            csi_volume_handle=opt_str(csi.get("volumeHandle"), "spec.csi.volumeHandle", errors) or "",
            volume_attributes_class_name=opt_str(
                spec.get("volumeAttributesClassName"), "spec.volumeAttributesClassName", errors
            )
            or "",
            sources=frozenset(k for k, v in spec.items() if k not in known and v is not None),
            resource_version=str(as_mapping(root.get("metadata"), "metadata", []).get("resourceVersion") or ""),
            errors=tuple(errors),
            raw=root,
        )


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    uid: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    access_modes: frozenset[str] = frozenset()
    storage_class_name: str | None = None
    volume_name: str = ""
    request: Fraction | None = None
    selector: Selector | None = None
    volume_mode: str = "Filesystem"
    phase: str = ""
    deleting: bool = False
    volume_attributes_class_name: str = ""
    # The UID of the ``ownerReferences`` entry with ``controller: true`` (a generic ephemeral
    # volume's claim names its pod there), None without one.
    controller_uid: str | None = None
    resource_version: str = ""
    errors: tuple[FieldError, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def storage_class(self) -> str:
        """``GetPersistentVolumeClaimClass``: the beta annotation first, then ``storageClassName``."""
        if BETA_STORAGE_CLASS_ANNOTATION in self.annotations:
            return self.annotations[BETA_STORAGE_CLASS_ANNOTATION]
        return self.storage_class_name or ""

    @classmethod
    def from_dict(cls, obj: object) -> PersistentVolumeClaim:
        errors: list[FieldError] = []
        root = as_mapping(obj, "persistentVolumeClaim", errors)
        name, namespace, uid, _labels, annotations, deleting = _meta(root, errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        resources = as_mapping(spec.get("resources"), "spec.resources", errors)
        requests = as_mapping(resources.get("requests"), "spec.resources.requests", errors)
        selector = None
        if spec.get("selector") is not None:
            selector = parse_label_selector(spec.get("selector"), "spec.selector", errors)
        return cls(
            namespace=namespace or "default",
            name=name,
            uid=uid,
            annotations=annotations,
            access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes", errors),
            storage_class_name=opt_str(spec.get("storageClassName"), "spec.storageClassName", errors),
            volume_name=opt_str(spec.get("volumeName"), "spec.volumeName", errors) or "",
            request=_storage(requests.get("storage"), "spec.resources.requests.storage", errors),
            selector=selector,
            volume_mode=_volume_mode(spec.get("volumeMode"), "spec.volumeMode", errors),
            phase=opt_str(status.get("phase"), "status.phase", errors) or "",
            deleting=deleting,
            controller_uid=_controller_uid(root, errors),
            volume_attributes_class_name=opt_str(
                spec.get("volumeAttributesClassName"), "spec.volumeAttributesClassName", errors
            )
            or "",
            resource_version=str(as_mapping(root.get("metadata"), "metadata", []).get("resourceVersion") or ""),
            errors=tuple(errors),
            raw=root,
        )


def _controller_uid(root: Mapping[str, Any], errors: list[FieldError]) -> str | None:
    """``metav1.GetControllerOf``: the UID of the owner reference marked ``controller: true``."""
    meta = as_mapping(root.get("metadata"), "metadata", [])
    for i, ref in enumerate(as_list(meta.get("ownerReferences"), "metadata.ownerReferences", errors)):
        owner = as_mapping(ref, f"metadata.ownerReferences[{i}]", errors)
        if owner.get("controller") is True:
            return opt_str(owner.get("uid"), f"metadata.ownerReferences[{i}].uid", errors) or ""
    return None


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str = ""
    volume_binding_mode: str = VOLUME_BINDING_IMMEDIATE
    # ``allowedTopologies``: one node selector term per entry (matchLabelExpressions), None when unset.
    allowed_topologies: tuple[Mapping[str, frozenset[str]], ...] | None = None
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> StorageClass:
        errors: list[FieldError] = []
        root = as_mapping(obj, "storageClass", errors)
        name, *_ = _meta(root, errors)
        mode = opt_str(root.get("volumeBindingMode"), "volumeBindingMode", errors) or VOLUME_BINDING_IMMEDIATE
        if mode not in BINDING_MODES:
            errors.append(
                FieldError(
                    "volumeBindingMode",
                    f'Unsupported value: "{mode}": supported values: "Immediate", "WaitForFirstConsumer"',
                )
            )
        topologies = None
        if root.get("allowedTopologies") is not None:
            terms: list[Mapping[str, frozenset[str]]] = []
            for i, term in enumerate(as_list(root.get("allowedTopologies"), "allowedTopologies", errors)):
                tpath = f"allowedTopologies[{i}].matchLabelExpressions"
                exprs = as_list(
                    as_mapping(term, f"allowedTopologies[{i}]", errors).get("matchLabelExpressions"), tpath, errors
                )
                wanted: dict[str, frozenset[str]] = {}
                for j, expr in enumerate(exprs):
                    e = as_mapping(expr, f"{tpath}[{j}]", errors)
                    key = opt_str(e.get("key"), f"{tpath}[{j}].key", errors) or ""
                    values = [v for v in as_list(e.get("values"), f"{tpath}[{j}].values", errors) if isinstance(v, str)]
                    wanted[key] = frozenset(values)
                terms.append(wanted)
            topologies = tuple(terms)
        return cls(
            name=name,
            provisioner=opt_str(root.get("provisioner"), "provisioner", errors) or "",
            volume_binding_mode=mode,
            allowed_topologies=topologies,
            errors=tuple(errors),
        )


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str = ""
    topology_keys: tuple[str, ...] = ()
    allocatable_count: int | None = None  # ``allocatable.count``: None means no limit reported


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: tuple[CSINodeDriver, ...] = ()
    # The in-tree plugins the node's kubelet migrated to CSI (the ``storage.alpha.kubernetes.io/
    # migrated-plugins`` annotation, comma-separated).
    migrated_plugins: frozenset[str] = frozenset()
    migrated_annotation: str | None = None  # the annotation as written (VolumeBinding's hint compares it)
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> CSINode:
        errors: list[FieldError] = []
        root = as_mapping(obj, "csiNode", errors)
        name, _ns, _uid, _labels, annotations, _deleting = _meta(root, errors)
        migrated = annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
        spec = as_mapping(root.get("spec"), "spec", errors)
        drivers: list[CSINodeDriver] = []
        for i, raw in enumerate(as_list(spec.get("drivers"), "spec.drivers", errors)):
            dpath = f"spec.drivers[{i}]"
            d = as_mapping(raw, dpath, errors)
            allocatable = as_mapping(d.get("allocatable"), f"{dpath}.allocatable", errors)
            keys = as_list(d.get("topologyKeys"), f"{dpath}.topologyKeys", errors)
            drivers.append(
                CSINodeDriver(
                    name=opt_str(d.get("name"), f"{dpath}.name", errors) or "",
                    node_id=opt_str(d.get("nodeID"), f"{dpath}.nodeID", errors) or "",
                    topology_keys=tuple(k for k in keys if isinstance(k, str)),
                    allocatable_count=opt_int(allocatable.get("count"), f"{dpath}.allocatable.count", errors),
                )
            )
        plugins = frozenset(migrated.split(",")) if migrated else frozenset()
        return cls(
            name=name,
            drivers=tuple(drivers),
            migrated_plugins=plugins,
            migrated_annotation=annotations.get(MIGRATED_PLUGINS_ANNOTATION),
            errors=tuple(errors),
        )


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    attach_required: bool = True  # the API server's default
    storage_capacity: bool = False
    # spec.preventPodSchedulingIfMissing: NodeVolumeLimits refuses nodes without the driver (VolumeLimitScaling).
    prevent_pod_scheduling_if_missing: bool = False
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> CSIDriver:
        errors: list[FieldError] = []
        root = as_mapping(obj, "csiDriver", errors)
        name, *_ = _meta(root, errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        return cls(
            name=name,
            attach_required=spec.get("attachRequired") is not False,
            storage_capacity=spec.get("storageCapacity") is True,
            prevent_pod_scheduling_if_missing=spec.get("preventPodSchedulingIfMissing") is True,
            errors=tuple(errors),
        )


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class_name: str
    node_topology: Selector | None = None
    capacity: Fraction | None = None
    maximum_volume_size: Fraction | None = None
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> CSIStorageCapacity:
        errors: list[FieldError] = []
        root = as_mapping(obj, "csiStorageCapacity", errors)
        name, namespace, *_ = _meta(root, errors)
        topology = None
        if root.get("nodeTopology") is not None:
            topology = parse_label_selector(root.get("nodeTopology"), "nodeTopology", errors)
        return cls(
            namespace=namespace,
            name=name,
            storage_class_name=opt_str(root.get("storageClassName"), "storageClassName", errors) or "",
            node_topology=topology,
            capacity=_storage(root.get("capacity"), "capacity", errors),
            maximum_volume_size=_storage(root.get("maximumVolumeSize"), "maximumVolumeSize", errors),
            errors=tuple(errors),
        )


@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    """A volume the attach/detach controller attached (or is attaching) to a node: NodeVolumeLimits
    counts those of a PersistentVolume against the node's limit even when no pod there uses it."""

    name: str
    attacher: str = ""
    node_name: str = ""
    persistent_volume_name: str | None = None  # ``spec.source.persistentVolumeName``
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> VolumeAttachment:
        errors: list[FieldError] = []
        root = as_mapping(obj, "volumeAttachment", errors)
        name, *_ = _meta(root, errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        source = as_mapping(spec.get("source"), "spec.source", errors)
        return cls(
            name=name,
            attacher=opt_str(spec.get("attacher"), "spec.attacher", errors) or "",
            node_name=opt_str(spec.get("nodeName"), "spec.nodeName", errors) or "",
            persistent_volume_name=opt_str(
                source.get("persistentVolumeName"), "spec.source.persistentVolumeName", errors
            ),
            errors=tuple(errors),
        )
