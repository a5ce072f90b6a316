"""``resource.k8s.io/v1`` DeviceClasses: the selectors and configuration a claim's request inherits
from the class it names, and the extended resource a class may back (DRAExtendedResource).

``DeviceClass.from_dict`` never raises: what the API server would refuse is kept as ``errors``
naming the field. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.devicefields import (
    DEFAULT_MINOR,
    DEVICE_CONFIG_MAX_SIZE,
    DeviceConfiguration,
    check_minor,
    parse_device_configuration,
    parse_selectors,
)
from scheduler.api.fields import FieldError, as_mapping, opt_str

__all__ = ["DEVICE_CLASS_PREFIX", "DeviceClass"]

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A DeviceClass: its CEL ``selectors`` (a device must pass all, besides the request's own), its
    ``config`` (``FromClass`` in an allocation), the extended resource it backs
    (``spec.extendedResourceName``, besides its implicit ``deviceclass.resource.kubernetes.io/<name>``)
    and its age (the newest wins a shared name)."""

    name: str
    extended_resource_name: str | None = None
    created: str = ""  # metadata.creationTimestamp (RFC 3339, UTC: compares as text)
    errors: tuple[FieldError, ...] = ()
    selectors: tuple[str, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def from_dict(cls, obj: object, *, minor: str = DEFAULT_MINOR) -> DeviceClass:
        check_minor(minor)
        errors: list[FieldError] = []
        root = as_mapping(obj, "deviceClass", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        name = opt_str(meta.get("name"), "metadata.name", errors) or ""
        if not name:
            errors.append(FieldError("metadata.name", "Required value"))
        spec = as_mapping(root.get("spec"), "spec", errors)
        return cls(
            name=name,
            extended_resource_name=opt_str(spec.get("extendedResourceName"), "spec.extendedResourceName", errors),
            created=opt_str(meta.get("creationTimestamp"), "metadata.creationTimestamp", errors) or "",
            selectors=parse_selectors(spec.get("selectors"), "spec.selectors", errors),
            config=parse_device_configuration(
                spec.get("config"), "spec.config", DEVICE_CONFIG_MAX_SIZE, errors, with_requests=False
            ),
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            resource_version=str(meta.get("resourceVersion") or ""),
            errors=tuple(errors),
        )
