"""Whether an allocated claim's devices are ready for the pod to bind (DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus, on from 1.36): upstream's ``isClaimReadyForBinding``, ``isClaimTimeout``,
``isPodReadyForBinding`` and ``hasBindingConditions``, and the per-device summary its PreBind logs and
counts (``listBindingConditionsStatus``, ``formatBCStatusOneLine``). Filter takes a claim that failed
or timed out as not available on the node, so that PostFilter deallocates it and other devices get
tried; PreBind waits until every claim of the pod is ready."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler.api.resourceclaim import AllocatedDeviceStatus, DeviceAllocationResult, ResourceClaim

__all__ = [
    "BINDING_TIMEOUT_SECONDS",
    "ERR_DEVICE_BINDING_FAILED",
    "ERR_DEVICE_BINDING_TIMEOUT",
    "STATUS_ERROR",
    "STATUS_FAILED",
    "STATUS_SUCCESS",
    "STATUS_TIMEOUT",
    "BindingConditionsStatus",
    "BindingFailedError",
    "BindingTimeoutError",
    "binding_conditions_status",
    "binding_timed_out",
    "format_status_one_line",
    "has_binding_conditions",
    "pod_ready_for_binding",
    "ready_for_binding",
    "statuses_for",
]

BINDING_TIMEOUT_SECONDS = 600.0  # DynamicResourcesBindingTimeoutDefault
ERR_DEVICE_BINDING_TIMEOUT = "device binding timeout"  # ErrDeviceBindingTimeout
ERR_DEVICE_BINDING_FAILED = "device binding failed"  # ErrDeviceBindingFailed

# The ``status`` label of the binding-conditions metrics (metrics.BindingConditionsStatus*).
STATUS_SUCCESS = "success"
STATUS_FAILED = "failure"
STATUS_TIMEOUT = "timeout"
STATUS_ERROR = "error"


class BindingFailedError(Exception):
    """A binding failure condition is true: ``device binding failed: claim=C, reason=R, message="M"``."""


class BindingTimeoutError(Exception):
    """A claim not ready ``bindingTimeout`` after its allocation: ``device binding timeout: claim=C``."""


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
                reason, message = status.reasons.get(condition, ("", ""))
                raise BindingFailedError(
                    f"{ERR_DEVICE_BINDING_FAILED}: claim={claim.name}, reason={reason}, message={_go_quote(message)}"
                )
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


def has_binding_conditions(claims: Iterable[ResourceClaim]) -> bool:
    """Some allocated device of the claims has binding conditions: PreBind has to wait."""
    return any(
        result.binding_conditions
        for claim in claims
        if claim.allocation is not None
        for result in claim.allocation.results
    )


def pod_ready_for_binding(
    claims: list[ResourceClaim],
    read: Callable[[str, str], ResourceClaim | None],
    now: float,
    timeout: float,
) -> bool:
    """``isPodReadyForBinding``: each claim read again (``read``, the cache) and put in place in
    ``claims``; True once all are ready. Raises ``BindingFailedError``, ``BindingTimeoutError`` (a
    claim not ready ``timeout`` after its allocation) or ``LookupError`` (the claim is gone)."""
    for index, held in enumerate(claims):
        claim = read(held.namespace, held.name)
        if claim is None:
            raise LookupError(f'could not find ResourceClaim "{held.namespace}/{held.name}"')
        claims[index] = claim
        if not ready_for_binding(claim):
            if binding_timed_out(claim, now, timeout):
                raise BindingTimeoutError(f"{ERR_DEVICE_BINDING_TIMEOUT}: claim={claim.name}")
            return False
    return True


@dataclass(frozen=True, slots=True)
class BindingConditionsStatus:
    """One allocated device with binding conditions: those not yet true, the failure ones that are."""

    driver: str
    pool: str
    device: str
    pending: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def binding_conditions_status(claim: ResourceClaim) -> list[BindingConditionsStatus]:
    """``listBindingConditionsStatus``: each allocated device of ``claim`` that has binding conditions
    (no status yet: all of them pending)."""
    if claim.allocation is None:
        return []
    out = []
    for result in claim.allocation.results:
        if not result.binding_conditions:
            continue
        status = _status_of(claim, result)
        truth = status.conditions if status is not None else {}
        out.append(
            BindingConditionsStatus(
                result.driver,
                result.pool,
                result.device,
                pending=tuple(c for c in result.binding_conditions if not truth.get(c)),
                failed=tuple(c for c in result.binding_failure_conditions if truth.get(c)),
            )
        )
    return out


def statuses_for(claims: Sequence[ResourceClaim], outcome: str) -> list[BindingConditionsStatus]:
    """``getBindingConditionsStatusForStatus``: the devices worth naming for ``outcome`` (success: the
    ready ones; failure: those with a failure condition true, without their pending list; timeout or
    error: those still pending and not failed)."""
    out = []
    for claim in claims:
        for status in binding_conditions_status(claim):
            if outcome == STATUS_SUCCESS:
                if not status.failed and not status.pending:
                    out.append(status)
            elif outcome == STATUS_FAILED:
                if status.failed:
                    out.append(BindingConditionsStatus(status.driver, status.pool, status.device, failed=status.failed))
            elif status.pending and not status.failed:
                out.append(status)
    return out


def format_status_one_line(statuses: Sequence[BindingConditionsStatus]) -> str:
    """``formatBCStatusOneLine``: ``<driver=D, pool=P> dev failed=[a] pending=[b,c]; ...``."""
    parts = []
    for status in statuses:
        part = f"<driver={status.driver}, pool={status.pool}> {status.device}"
        if status.failed:
            part += f" failed=[{','.join(status.failed)}]"
        if status.pending:
            part += f" pending=[{','.join(status.pending)}]"
        parts.append(part)
    return "; ".join(parts)


def _go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``) of a condition's message."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
