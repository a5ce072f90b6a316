"""DynamicResources' extended resources backed by a DeviceClass (DRAExtendedResource, beta on from 1.36,
GA in 1.37): which of a pod's extended resources a class backs. The plugin allocates the devices behind
them in a claim of its own (``plugin/extendedclaim.py``); a node offering the resource itself (a device
plugin) is NodeResourcesFit's, as upstream.
"""

from __future__ import annotations

from typing import Protocol

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Pod
from scheduler.api.resources import is_extended_resource_name
from scheduler.api.storage import DEVICE_CLASS_PREFIX

__all__ = [
    "CANNOT_FIT_RESOURCE",
    "NO_CLAIMS_TO_DEALLOCATE",
    "backed_extended_resources",
    "is_dra_extended_resource_name",
]

NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
CANNOT_FIT_RESOURCE = "cannot fit resource"  # upstream's filterExtendedResources


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name, or a class's implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


class _DeviceClassesByResource(Protocol):
    def device_class_for(self, resource: str) -> DeviceClass | None: ...


def backed_extended_resources(pod: Pod, storage: _DeviceClassesByResource) -> tuple[tuple[str, str], ...]:
    """(resource, DeviceClass) of each extended resource ``pod`` requests that a class backs."""
    out: list[tuple[str, str]] = []
    for name in sorted(pod.resources.requests.scalar):
        device_class = storage.device_class_for(name) if pod.resources.requests.scalar[name] else None
        if device_class is not None:
            out.append((name, device_class.name))
    return tuple(out)
