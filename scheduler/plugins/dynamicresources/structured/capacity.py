"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacities one allocation
takes, and whether it still fits beside what its other shares hold (upstream's
``internal/incubating/consumable_capacity.go``, v0.36.3 and v0.37.2).

A capacity no request names takes the policy's default, else the whole value; a requested one is
rounded up to the policy's range (from its minimum, in steps) or to its next valid value. With
``fractional`` (v0.37's DRAConsumableCapacityFractionalRange) a range whose bounds and step are
exact in thousandths is computed in thousandths, else in whole units each rounded up, as Go's
``Value()`` reads them. ``strict`` (v0.37) raises ``CapacityError`` for a request the int64
arithmetic cannot hold, or a negative result, where v0.36 computes on. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from scheduler.api.quantity import milli_value, value
from scheduler.api.resourceslice import CapacityRequestPolicy, CapacityRequestPolicyRange, Device

__all__ = [
    "CapacityError",
    "Consumed",
    "consumed_by",
    "consumed_for",
    "fits",
    "safe_milli",
    "use_milli",
    "violates_policy",
]

Consumed = dict[str, Fraction]  # capacity name -> quantity

_INT64_MAX = 2**63 - 1
_NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


class CapacityError(ValueError):
    """A capacity request the allocator aborts on (v0.37): not representable, or negative."""


def _text(q: Fraction) -> str:
    """``Quantity.String()`` for the values an error names: whole numbers, else thousandths."""
    if q.denominator == 1:
        return str(q.numerator)
    milli = q * 1000
    return f"{milli.numerator}m" if milli.denominator == 1 else str(float(q))


def safe_milli(q: Fraction) -> int | None:
    """``safeMilliValue``: thousandths of ``q`` when that is exact and within int64, else None."""
    milli = q * 1000
    if milli.denominator != 1 or abs(milli.numerator) > _INT64_MAX:
        return None
    return milli.numerator


def use_milli(rng: CapacityRequestPolicyRange, fractional: bool) -> bool:
    """``useMilli``: with fractional ranges on, a range whose bounds are exact in thousandths and
    whose step is at least one thousandth is computed in thousandths."""
    if not fractional:
        return False
    for q in (rng.min, rng.max, rng.step):
        if q is not None and safe_milli(q) is None:
            return False
    return rng.step is None or (safe_milli(rng.step) or 0) >= 1


def _round_up_range(requested: Fraction, rng: CapacityRequestPolicyRange, fractional: bool, strict: bool) -> Fraction:
    if requested < rng.min:
        return rng.min
    if rng.step is None:
        return requested
    if use_milli(rng, fractional):
        req = safe_milli(requested)
        if req is None:
            raise CapacityError(f"{_NOT_REPRESENTABLE}: request {_text(requested)} is not a representable milli value")
        step, low = milli_value(rng.step), milli_value(rng.min)
        n = -(-(req - low) // step)
        if n > (_INT64_MAX - low) // step:
            raise CapacityError(
                f"{_NOT_REPRESENTABLE}: rounding request {_text(requested)} up to the next step passes the "
                "milli-value range"
            )
        return Fraction(low + step * n, 1000)
    if strict and requested > _INT64_MAX:
        raise CapacityError(f"{_NOT_REPRESENTABLE}: request {_text(requested)} exceeds MaxInt64")
    req, step, low = math.ceil(requested), value(rng.step), value(rng.min)
    added = req - low
    n = abs(added) // step * (1 if added >= 0 else -1)  # Go's division truncates towards zero
    if added - n * step != 0:
        n += 1
    if strict and low >= 0 and n > (_INT64_MAX - low) // step:
        raise CapacityError(
            f"{_NOT_REPRESENTABLE}: rounding request {_text(requested)} up to the next step passes MaxInt64"
        )
    return Fraction(low + step * n)


def consumed_by(
    requested: Fraction | None,
    capacity: Fraction,
    policy: CapacityRequestPolicy | None,
    *,
    fractional: bool = False,
    strict: bool = False,
) -> Fraction:
    """``calculateConsumedCapacity``: what one allocation asking ``requested`` takes of a capacity."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else capacity
    if policy is None:
        return requested
    if policy.valid_range is not None:
        return _round_up_range(requested, policy.valid_range, fractional, strict)
    for valid in policy.valid_values:
        if requested <= valid:
            return valid
    return requested


def violates_policy(consumed: Fraction, policy: CapacityRequestPolicy | None, fractional: bool = False) -> bool:
    """``violatesPolicy``: the default always passes; else within the range's maximum and on one of
    its steps from the minimum, or one of the valid values."""
    if policy is None or (policy.default is not None and consumed == policy.default):
        return False
    rng = policy.valid_range
    if rng is not None:
        if rng.max is not None and consumed > rng.max:
            return True
        if rng.step is None:
            return False
        if use_milli(rng, fractional):
            req = safe_milli(consumed)
            if req is None:
                return True
            return (req - milli_value(rng.min)) % milli_value(rng.step) != 0
        return (value(consumed) - value(rng.min)) % value(rng.step) != 0
    return bool(policy.valid_values) and consumed not in policy.valid_values


def _all_consumed(
    requests: Mapping[str, Fraction], device: Device, fractional: bool, strict: bool
) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    policies = device.request_policies
    for name, cap in device.capacity.items():
        policy = policies.get(name)
        requested = requests.get(name) if requests else None
        if requested is None:  # ``consumed_by``'s first case, inline: most capacities are not asked for
            amount = policy.default if policy is not None and policy.default is not None else cap
        else:
            try:
                amount = consumed_by(requested, cap, policy, fractional=fractional, strict=strict)
            except CapacityError as err:
                raise CapacityError(f'capacity "{name}": {err}') from None
        if strict and amount.numerator < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        out[name] = amount
    return out


def consumed_for(
    requests: Mapping[str, Fraction], device: Device, *, fractional: bool = False, strict: bool = False
) -> Consumed:
    """``GetConsumedCapacityFromRequest``: what one share takes of each of the device's capacities."""
    return _all_consumed(requests, device, fractional, strict)


def taken_whole(device: Device, strict: bool) -> bool:
    """``fits``' answer for a request asking none of the device's capacities while no share holds
    any: each capacity is then consumed whole (no policy picks another amount), which fits unless a
    capacity is negative (left to ``_all_consumed`` to refuse, ``strict``)."""
    return not device.request_policies and (not strict or all(cap.numerator >= 0 for cap in device.capacity.values()))


def fits(
    requests: Mapping[str, Fraction],
    device: Device,
    in_use: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    *,
    fractional: bool = False,
    strict: bool = False,
) -> bool:
    """``CmpRequestOverCapacity``: whether a share asking ``requests`` fits each capacity of the
    device beside what allocated shares (``in_use``) and this call's (``allocating``) hold, within
    the capacities' policies. A request for a capacity the device lacks does not fit (v0.36 returns
    an error there, which every caller treats as not fitting). Raises ``CapacityError`` (``strict``)
    for a request that cannot be computed, whatever the other capacities say."""
    capacity = device.capacity
    if not requests and not in_use and not allocating and taken_whole(device, strict):
        return True
    if requests and any(name not in capacity for name in requests):
        return False
    consumed = _all_consumed(requests, device, fractional, strict)
    policies = device.request_policies
    for name, cap in capacity.items():
        amount = consumed[name]
        policy = policies.get(name)
        if policy is not None and violates_policy(amount, policy, fractional):
            return False
        # Only the shares there are are added (exact sums: the order does not matter); a capacity
        # nothing else holds, taken whole, fits without comparing.
        held, adding = in_use.get(name), allocating.get(name)
        total = amount if held is None else held + amount
        if adding is not None:
            total += adding
        if total is not cap and total > cap:
            return False
    return True
