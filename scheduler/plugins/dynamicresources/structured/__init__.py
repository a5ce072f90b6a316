"""DRA's structured allocation: which devices a node's ResourceSlices give a pod's ResourceClaims,
as upstream's ``k8s.io/dynamic-resource-allocation/structured`` decides (docs/dra-allocator.md)."""

from scheduler.plugins.dynamicresources.structured.allocator import Allocation, Allocator
from scheduler.plugins.dynamicresources.structured.errors import AllocationError, FailedOnNodeError
from scheduler.plugins.dynamicresources.structured.features import Features, implementation_for
from scheduler.plugins.dynamicresources.structured.results import DeviceID

__all__ = [
    "Allocation",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "FailedOnNodeError",
    "Features",
    "implementation_for",
]
