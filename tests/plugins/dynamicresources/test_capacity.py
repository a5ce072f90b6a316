"""Consumable capacity's arithmetic against upstream's own cases
(``internal/incubating/consumable_capacity_test.go`` of v0.36.3 and v0.37.2, names kept): what a
share consumes under a request policy, when it violates the policy, when thousandths are used, and
that a request the int64 arithmetic cannot hold aborts (v0.37) whatever the other capacities say."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.api.quantity import parse_quantity
from scheduler.api.resourceslice import CapacityRequestPolicy, CapacityRequestPolicyRange, Device
from scheduler.plugins.dynamicresources.structured.capacity import (
    CapacityError,
    consumed_by,
    consumed_for,
    fits,
    safe_milli,
    use_milli,
    violates_policy,
)

Q = parse_quantity
ONE, TWO, THREE, ZERO = Fraction(1), Fraction(2), Fraction(3), Fraction(0)
MAX_INT64 = Fraction(2**63 - 1)
POINT_ONE, POINT_TWO, POINT_TWO_FIVE, POINT_THREE, POINT_FOUR = (Q(f"{m}m") for m in (100, 200, 250, 300, 400))
TOO_BIG_FOR_MILLI = Q("9224372036854776E3")


def _range(low: Fraction, high: Fraction | None = None, step: Fraction | None = None) -> CapacityRequestPolicyRange:
    return CapacityRequestPolicyRange(low, high, step)


def test_consumed_for_request() -> None:
    """``get-consumed-capacity-from-request``: requested, default, else the whole value."""
    device = Device(
        driver="driver-a",
        name="device-1",
        capacity={"capacity-0": TWO, "capacity-1": TWO, "dummy": ONE},
        request_policies={
            "capacity-0": CapacityRequestPolicy(default=TWO, valid_range=_range(ONE)),
            "capacity-1": CapacityRequestPolicy(default=ONE, valid_range=_range(ONE)),
        },
    )
    assert consumed_for({"capacity-0": ONE, "dummy": ONE}, device) == dict.fromkeys(device.capacity, ONE)


_FRACTIONAL = CapacityRequestPolicy(default=POINT_TWO, valid_range=_range(POINT_TWO, ONE, POINT_ONE))

VIOLATES = {
    "no constraint": (ONE, None, False, False),
    "less than maximum": (ONE, CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, TWO)), False, False),
    "more than maximum": (TWO, CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, ONE)), False, True),
    "in set": (ONE, CapacityRequestPolicy(default=ONE, valid_values=(ONE,)), False, False),
    "not in set": (TWO, CapacityRequestPolicy(default=ONE, valid_values=(ONE,)), False, True),
    "fractional step aligned (0.3 = min+1*step)": (POINT_THREE, _FRACTIONAL, True, False),
    "fractional step not aligned (0.25 is not a multiple of 0.1 from 0.2)": (POINT_TWO_FIVE, _FRACTIONAL, True, True),
    "requested value overflows milli representation": (
        TOO_BIG_FOR_MILLI,
        CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, None, ONE)),
        True,
        True,
    ),
}


@pytest.mark.parametrize("name", VIOLATES)
def test_violates_policy(name: str) -> None:
    consumed, policy, fractional, want = VIOLATES[name]
    assert violates_policy(consumed, policy, fractional) is want


_ERR = CapacityError
CALCULATE: dict[str, tuple[Fraction | None, Fraction, CapacityRequestPolicy, bool, Fraction | type[CapacityError]]] = {
    "empty": (None, ONE, CapacityRequestPolicy(), False, ONE),
    "request-above-maxint64-is-rejected": (
        Q("18446744073709551619"),
        Q("18446744073709551619"),
        CapacityRequestPolicy(default=ZERO, valid_range=_range(ZERO, None, THREE)),
        False,
        _ERR,
    ),
    "rounded-value-above-maxint64-is-rejected": (
        MAX_INT64,
        MAX_INT64 + 1,
        CapacityRequestPolicy(default=ZERO, valid_range=_range(ZERO, None, TWO)),
        False,
        _ERR,
    ),
    "max-safe-boundary-rounds-to-maxint64": (
        MAX_INT64 - 1,
        MAX_INT64,
        CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, None, TWO)),
        False,
        MAX_INT64,
    ),
    "min in range": (None, TWO, CapacityRequestPolicy(default=ONE, valid_range=_range(ONE)), False, ONE),
    "default in set": (None, TWO, CapacityRequestPolicy(default=ONE, valid_values=(ONE,)), False, ONE),
    "more than min in range": (TWO, TWO, CapacityRequestPolicy(default=ONE, valid_range=_range(ONE)), False, TWO),
    "less than min in range": (ONE, TWO, CapacityRequestPolicy(default=ONE, valid_range=_range(TWO)), False, TWO),
    "with step (round up)": (
        TWO,
        THREE,
        CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, None, TWO)),
        False,
        THREE,
    ),
    "with step (no remaining)": (
        TWO,
        TWO,
        CapacityRequestPolicy(default=ONE, valid_range=_range(ONE, None, ONE)),
        False,
        TWO,
    ),
    "fractional step round up (0.25 to 0.3)": (POINT_TWO_FIVE, ONE, _FRACTIONAL, True, POINT_THREE),
    "fractional step already aligned (0.4 = min+2*step)": (POINT_FOUR, ONE, _FRACTIONAL, True, POINT_FOUR),
    "valid value in set": (TWO, THREE, CapacityRequestPolicy(default=ONE, valid_values=(ONE, TWO, THREE)), False, TWO),
    "set (round up)": (TWO, THREE, CapacityRequestPolicy(default=ONE, valid_values=(ONE, THREE)), False, THREE),
    "larger than set": (THREE, THREE, CapacityRequestPolicy(default=ONE, valid_values=(ONE, TWO)), False, THREE),
    "fractional-step-request-not-milli-representable-is-rejected": (
        TOO_BIG_FOR_MILLI,
        TOO_BIG_FOR_MILLI,
        CapacityRequestPolicy(default=ONE, valid_range=_range(POINT_ONE, None, POINT_ONE)),
        True,
        _ERR,
    ),
    "fractional-step-rounded-value-passes-milli-range-is-rejected": (
        Fraction(2**63 - 2, 1000),
        Fraction(2**63 - 1, 1000),
        CapacityRequestPolicy(default=POINT_ONE, valid_range=_range(POINT_ONE, None, POINT_ONE)),
        True,
        _ERR,
    ),
}


@pytest.mark.parametrize("name", CALCULATE)
def test_consumed_by(name: str) -> None:
    """v0.37 (``strict``) as upstream's cases say; v0.36 the same where v0.37 does not abort (the
    fractional cases aside: v0.36 has no fractional ranges)."""
    requested, capacity, policy, fractional, want = CALCULATE[name]
    if want is _ERR:
        with pytest.raises(CapacityError, match="capacity request cannot be represented"):
            consumed_by(requested, capacity, policy, fractional=fractional, strict=True)
        return
    assert consumed_by(requested, capacity, policy, fractional=fractional, strict=True) == want
    if not fractional:
        assert consumed_by(requested, capacity, policy, strict=False) == want


@pytest.mark.parametrize(
    ("q", "want"), [(ONE, 1000), (POINT_ONE, 100), (TOO_BIG_FOR_MILLI, None)], ids=["whole", "milli", "too large"]
)
def test_safe_milli(q: Fraction, want: int | None) -> None:
    assert safe_milli(q) == want


USE_MILLI = {
    "fractional disabled": (_range(POINT_TWO, ONE, POINT_ONE), False, False),
    "all fractional, fits in milli": (_range(POINT_TWO, ONE, POINT_ONE), True, True),
    "all integer, fits in milli (no hasFractional gate any more)": (_range(ONE, THREE, ONE), True, True),
    "min overflows milli, falls back to integer": (_range(TOO_BIG_FOR_MILLI, None, ONE), True, False),
    "step too small (sub-milli)": (_range(ONE, None, ZERO), True, False),
}


@pytest.mark.parametrize("name", USE_MILLI)
def test_use_milli(name: str) -> None:
    rng, fractional, want = USE_MILLI[name]
    assert use_milli(rng, fractional) is want


def test_fits_fatal_beats_soft() -> None:
    """``cmp-request-over-capacity-fatal-beats-soft``: one capacity over-filled (skip the device),
    another not representable (abort): v0.37 aborts, whichever capacity comes first."""
    for names in (("capacity-0", "capacity-1"), ("capacity-1", "capacity-0")):
        values = {"capacity-0": ONE, "capacity-1": MAX_INT64 + 1}
        device = Device(
            driver="driver-a",
            name="device-1",
            capacity={n: values[n] for n in names},
            request_policies={"capacity-1": CapacityRequestPolicy(valid_range=_range(ZERO, None, TWO))},
        )
        with pytest.raises(CapacityError, match=r'^capacity "capacity-1": capacity request cannot be represented'):
            fits({"capacity-0": TWO, "capacity-1": MAX_INT64}, device, {}, {}, strict=True)
        assert not fits({"capacity-0": TWO, "capacity-1": MAX_INT64}, device, {}, {}, strict=False)


def test_fits_beside_other_shares() -> None:
    """A share fits beside allocated and allocating ones up to the capacity's value; a request for a
    capacity the device lacks does not fit (an error in v0.36 that every caller skips)."""
    device = Device(
        driver="driver-a", name="device-1", capacity={"capacity-0": Fraction(4)}, allow_multiple_allocations=True
    )
    assert fits({"capacity-0": TWO}, device, {"capacity-0": ONE}, {"capacity-0": ONE})
    assert not fits({"capacity-0": TWO}, device, {"capacity-0": TWO}, {"capacity-0": ONE})
    assert not fits({"other": ONE}, device, {}, {})


def test_fits_capacity_not_asked_for() -> None:
    """A capacity no request names is taken whole (or as its policy's default): it fits only while
    no other share holds any of it, allocated or allocating; v0.37 aborts on a negative value."""
    device = Device(
        driver="driver-a",
        name="device-1",
        capacity={"whole": Fraction(4), "shared": Fraction(4)},
        request_policies={"shared": CapacityRequestPolicy(default=ONE)},
        allow_multiple_allocations=True,
    )
    assert fits({}, device, {}, {})
    assert fits({}, device, {"shared": THREE}, {})
    assert not fits({}, device, {"shared": THREE}, {"shared": ONE})
    assert not fits({}, device, {"whole": ONE}, {})
    assert not fits({}, device, {}, {"whole": ONE})
    assert consumed_for({}, device) == {"whole": Fraction(4), "shared": ONE}
    negative = Device(driver="driver-a", name="device-2", capacity={"c": Fraction(-1)})
    with pytest.raises(CapacityError, match=r'^capacity "c": capacity value is negative$'):
        fits({}, negative, {}, {}, strict=True)
    assert fits({}, negative, {}, {})
