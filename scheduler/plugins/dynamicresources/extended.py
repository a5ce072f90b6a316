"""DynamicResources' extended resources backed by a DeviceClass (DRAExtendedResource, beta on from 1.36,
GA in 1.37), as far as this scheduler goes: which of a pod's extended resources a class backs, and a
Filter that refuses a node on which they would need devices allocated.

Upstream allocates such resources in a claim of their own, which its PreBind creates; nothing writes
that claim here yet, so a node that does not offer the resource itself (NodeResourcesFit then leaves
it out) is refused, naming the resource and the DeviceClass, where upstream would allocate devices.
A node offering the resource (a device plugin) is NodeResourcesFit's, as upstream.

(This module held the refusing stand-in of the whole plugin until ``plugin/`` replaced it in the
default profile of every minor: DynamicResourceAllocation is locked on at each, so no profile needs it.)
"""

from __future__ import annotations

from typing import Protocol

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Pod
from scheduler.api.resources import is_extended_resource_name
from scheduler.api.storage import DEVICE_CLASS_PREFIX
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = [
    "EXTENDED_CONSEQUENCE",
    "NO_CLAIMS_TO_DEALLOCATE",
    "STILL_NOT_SCHEDULABLE",
    "backed_extended_resources",
    "filter_extended_resources",
    "write_extended_state",
]

EXTENDED_STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES + "/extended"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# Upstream's last answer for a pod with claims when none was allocated before (through 1.36): the
# pod's DRA-backed extended resources count as one claim, which this cycle created and never allocated.
STILL_NOT_SCHEDULABLE = "still not schedulable"
EXTENDED_CONSEQUENCE = "spread-scheduler does not allocate devices"
UNBACKED_STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES + "/unbacked"
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


def write_extended_state(state: CycleState, pod: Pod, extended: tuple[tuple[str, str], ...]) -> None:
    """The pod's class-backed extended resources, and its extended resources no class backs, for
    ``filter_extended_resources``."""
    state.write(EXTENDED_STATE_KEY, extended)
    backed = {resource for resource, _ in extended}
    requests = pod.resources.requests.scalar
    unbacked = tuple(
        sorted(n for n, want in requests.items() if want and n not in backed and is_dra_extended_resource_name(n))
    )
    state.write(UNBACKED_STATE_KEY, unbacked)


def filter_extended_resources(state: CycleState, node_info: NodeInfo) -> Status | None:
    """A node that does not offer a DeviceClass-backed resource itself would need devices allocated:
    refused, naming the resource and the class (nothing allocates those devices yet).

    Before that, as upstream's ``filterExtendedResources``: an extended resource no class backs
    and the node does not list at all cannot fit (only reached when NodeResourcesFit ignores it).
    """
    extended = state.get(EXTENDED_STATE_KEY)
    if not isinstance(extended, tuple):
        return None
    offered = node_info.node.allocatable.scalar
    unbacked = state.get(UNBACKED_STATE_KEY)
    if isinstance(unbacked, tuple) and any(resource not in offered for resource in unbacked):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CANNOT_FIT_RESOURCE,))
    for resource, device_class in extended:
        if offered.get(resource, 0) <= 0:
            field = f'extended resource "{resource}" (DeviceClass "{device_class}")'
            return not_run.refusal(field, names.DYNAMIC_RESOURCES, EXTENDED_CONSEQUENCE)
    return None
