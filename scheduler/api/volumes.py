"""What scheduling reads of a pod's ``spec.volumes`` and ``spec.resourceClaims`` (+ their status).

Only which source each volume uses, and the names that tie a pod to its claims: the plugins that
read these fields decide from them whether they act on the pod at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_str

__all__ = [
    "SPEC_READ_SOURCES",
    "Disk",
    "PodResourceClaim",
    "ResourceClaimStatus",
    "Volume",
    "parse_resource_claim_statuses",
    "parse_resource_claims",
    "parse_volumes",
]


@dataclass(frozen=True, slots=True)
class Disk:
    """A disk an in-tree volume attaches, as VolumeRestrictions compares two (``isVolumeConflict``)."""

    source: str  # gcePersistentDisk, awsElasticBlockStore, iscsi or rbd
    id: tuple[str, ...]  # (pdName,), (volumeID,), (iqn,) or (pool, image)
    read_only: bool = False
    monitors: frozenset[str] = frozenset()  # rbd's cephMonitors

    def conflicts(self, other: Disk) -> bool:
        """The same disk, both users not read-only: an EBS volume conflicts even read-only, an RBD
        image only where the two name a monitor in common."""
        if self.source != other.source or self.id != other.id:
            return False
        if self.source == "awsElasticBlockStore":
            return True
        if self.source == "rbd" and not self.monitors & other.monitors:
            return False
        return not (self.read_only and other.read_only)


# source -> the fields that name its disk (rbd's pool defaults to "rbd", as the API server sets it).
_DISK_IDS: dict[str, tuple[tuple[str, str], ...]] = {
    "gcePersistentDisk": (("pdName", ""),),
    "awsElasticBlockStore": (("volumeID", ""),),
    "iscsi": (("iqn", ""),),
    "rbd": (("pool", "rbd"), ("image", "")),
}


def _disks(obj: Mapping[str, Any], path: str, errors: list[FieldError]) -> tuple[Disk, ...]:
    out: list[Disk] = []
    for source, fields in _DISK_IDS.items():
        if obj.get(source) is None:
            continue
        spec = as_mapping(obj.get(source), f"{path}.{source}", errors)
        ids = tuple(opt_str(spec.get(f), f"{path}.{source}.{f}", errors) or default for f, default in fields)
        monitors = as_list(spec.get("monitors"), f"{path}.{source}.monitors", errors) if source == "rbd" else ()
        out.append(
            Disk(source, ids, spec.get("readOnly") is True, frozenset(m for m in monitors if isinstance(m, str)))
        )
    return tuple(out)


# The sources whose fields a plugin reads beyond the source's name: NodeVolumeLimits translates the
# in-tree disks that migrate to CSI, VolumeBinding reads an inline csi volume's driver. Any other
# volume (a projected token, a configMap, an emptyDir: most of a running pod's) is kept without its
# spec, which was most of what a cached pod held besides its API object.
SPEC_READ_SOURCES = frozenset(
    {
        "csi",
        "awsElasticBlockStore",
        "gcePersistentDisk",
        "cinder",
        "azureDisk",
        "azureFile",
        "vsphereVolume",
        "portworxVolume",
    }
)


@dataclass(frozen=True, slots=True)
class Volume:
    """One ``spec.volumes[i]``. ``sources`` are the volume-source fields set on it (``"emptyDir"``,
    ``"persistentVolumeClaim"``, ...): the API server allows exactly one, a file may hold more."""

    name: str
    sources: frozenset[str]
    claim_name: str = ""  # persistentVolumeClaim.claimName
    disks: tuple[Disk, ...] = ()  # the gcePersistentDisk/awsElasticBlockStore/iscsi/rbd it attaches
    # The volume as written, for a source whose fields are read (``SPEC_READ_SOURCES``); else empty.
    spec: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # ``image.reference`` of an image volume (ImageLocality counts it from 1.36); None: not one.
    image: str | None = None

    def uses(self, source: str) -> bool:
        return source in self.sources


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One ``spec.resourceClaims[i]``: a claim by name, or a template the claim is generated from."""

    name: str
    resource_claim_name: str | None
    resource_claim_template_name: str | None


@dataclass(frozen=True, slots=True)
class ResourceClaimStatus:
    """One ``status.resourceClaimStatuses[i]``: the claim generated for a template (None: none was)."""

    name: str
    resource_claim_name: str | None


def parse_volumes(raw: object, path: str, errors: list[FieldError]) -> tuple[Volume, ...]:
    out: list[Volume] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        name = opt_str(obj.get("name"), f"{ipath}.name", errors) or ""
        # A source set to null is not set (Go's nil pointer).
        sources = frozenset(k for k, v in obj.items() if k != "name" and v is not None)
        claim = as_mapping(obj.get("persistentVolumeClaim"), f"{ipath}.persistentVolumeClaim", errors)
        claim_name = opt_str(claim.get("claimName"), f"{ipath}.persistentVolumeClaim.claimName", errors) or ""
        spec = obj if sources & SPEC_READ_SOURCES else {}
        image = None
        if obj.get("image") is not None:
            source = as_mapping(obj["image"], f"{ipath}.image", errors)
            image = opt_str(source.get("reference"), f"{ipath}.image.reference", errors) or ""
        out.append(Volume(name, sources, claim_name, _disks(obj, ipath, errors), spec, image))
    return tuple(out)


def parse_resource_claims(raw: object, path: str, errors: list[FieldError]) -> tuple[PodResourceClaim, ...]:
    out: list[PodResourceClaim] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        out.append(
            PodResourceClaim(
                name=opt_str(obj.get("name"), f"{ipath}.name", errors) or "",
                resource_claim_name=opt_str(obj.get("resourceClaimName"), f"{ipath}.resourceClaimName", errors),
                resource_claim_template_name=opt_str(
                    obj.get("resourceClaimTemplateName"), f"{ipath}.resourceClaimTemplateName", errors
                ),
            )
        )
    return tuple(out)


def parse_resource_claim_statuses(raw: object, path: str, errors: list[FieldError]) -> tuple[ResourceClaimStatus, ...]:
    out: list[ResourceClaimStatus] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        out.append(
            ResourceClaimStatus(
                name=opt_str(obj.get("name"), f"{ipath}.name", errors) or "",
                resource_claim_name=opt_str(obj.get("resourceClaimName"), f"{ipath}.resourceClaimName", errors),
            )
        )
    return tuple(out)
