"""Whether an allocated claim's devices are ready for the pod to bind (DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus, on from 1.36): upstream's ``isClaimReadyForBinding`` and
``isClaimTimeout``. Filter takes a claim that failed or timed out as not available on the node, so
that PostFilter deallocates it and other devices get tried."""

from __future__ import annotations

from scheduler.api.resourceclaim import AllocatedDeviceStatus, DeviceAllocationResult, ResourceClaim

__all__ = ["BINDING_TIMEOUT_SECONDS", "BindingFailedError", "binding_timed_out", "ready_for_binding"]

BINDING_TIMEOUT_SECONDS = 600.0  # DynamicResourcesArgs.bindingTimeout's default


class BindingFailedError(Exception):
    """A binding failure condition is true: ``claim C binding failed: reason=R, message="M"``."""


def _status_of(claim: ResourceClaim, result: DeviceAllocationResult) -> AllocatedDeviceStatus | None:
    for status in claim.device_statuses:
        if (status.driver, status.pool, status.device) == (result.driver, result.pool, result.device):
            return status
    return None


def ready_for_binding(claim: ResourceClaim) -> bool:
    """Every binding condition true and no failure condition true (no conditions: ready).

    Raises ``BindingFailedError`` when a failure condition is true.
    """
    if claim.allocation is None:
        return False
    for result in claim.allocation.results:
        if not result.binding_conditions:
            continue
        status = _status_of(claim, result)
        if status is None:
            return False
        for condition in result.binding_failure_conditions:
            if status.conditions.get(condition):
                # Our parsed status keeps each condition's truth, not its reason and message.
                raise BindingFailedError(f"claim {claim.name} binding failed: condition {condition}")
        if not all(status.conditions.get(condition) for condition in result.binding_conditions):
            return False
    return True


def binding_timed_out(claim: ResourceClaim, now: float, timeout: float = BINDING_TIMEOUT_SECONDS) -> bool:
    """The allocation is older than ``timeout`` and some device has binding conditions."""
    if claim.allocation is None:
        return False
    allocated_at = claim.allocation.allocated_at
    if allocated_at is None:
        return False
    has_conditions = any(result.binding_conditions for result in claim.allocation.results)
    return has_conditions and allocated_at + timeout < now
