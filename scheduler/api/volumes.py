"""What scheduling reads of a pod's ``spec.volumes`` and ``spec.resourceClaims`` (+ their status).

Only which source each volume uses, and the names that tie a pod to its claims: the plugins that
read these fields decide from them whether they act on the pod at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_str

__all__ = [
    "PodResourceClaim",
    "ResourceClaimStatus",
    "Volume",
    "parse_resource_claim_statuses",
    "parse_resource_claims",
    "parse_volumes",
]


@dataclass(frozen=True, slots=True)
class Volume:
    """One ``spec.volumes[i]``. ``sources`` are the volume-source fields set on it (``"emptyDir"``,
    ``"persistentVolumeClaim"``, ...): the API server allows exactly one, a file may hold more."""

    name: str
    sources: frozenset[str]
    claim_name: str = ""  # persistentVolumeClaim.claimName

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
        out.append(Volume(name, sources, claim_name))
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
