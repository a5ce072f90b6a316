"""Kubernetes resource quantities (``apimachinery/pkg/api/resource``), exact.

A quantity is parsed into a ``Fraction`` so that sums of container requests are exact, and only the
total is rounded, as upstream adds ``Quantity`` values before asking for ``MilliValue()``/``Value()``
(both round up).
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = ["QUANTITY_FORMAT_ERROR", "QUANTITY_SUFFIX_ERROR", "milli_value", "parse_quantity", "value"]

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

# ``ErrSuffix``: the string splits into number and suffix, but the suffix is none Go knows ("1K", "1m3").
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"

_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_SUFFIX_SHAPE = re.compile(r"[eEinumkKMGTP]*[-+]?[0-9]*")  # what parseQuantityString accepts as a suffix
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_INT64_MAX = 2**63 - 1


def parse_quantity(raw: object) -> Fraction:
    """The exact value of a quantity string (a YAML number is read as its decimal spelling).

    Raises ``ValueError`` with the API server's message for anything it would refuse.
    """
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(QUANTITY_FORMAT_ERROR)
    text = raw if isinstance(raw, str) else repr(raw)
    return _parse_short(text) if len(text) <= _REMEMBERED_LENGTH else _parse(text)


# A cluster spells few quantities ("32", "32Gi", "110" on every node of a pool), and parsing one
# is Fraction arithmetic: the last ones parsed are remembered (Fractions are immutable), a bounded
# number of short strings, so that hostile input costs no memory (errors are not remembered).
_REMEMBERED = 1024
_REMEMBERED_LENGTH = 64


def _parse(text: str) -> Fraction:
    match = _NUMBER.fullmatch(text)
    if match is None or not text:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    sign, whole, frac, suffix = match.groups()
    if not whole and not frac:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    number = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if suffix in _BINARY:
        scale: Fraction = Fraction(_BINARY[suffix])
    elif suffix in _DECIMAL:
        scale = _DECIMAL[suffix]
    else:
        exp = _EXPONENT.fullmatch(suffix)
        if exp is None:
            raise ValueError(QUANTITY_SUFFIX_ERROR if _SUFFIX_SHAPE.fullmatch(suffix) else QUANTITY_FORMAT_ERROR)
        power = int(exp.group(1))
        if abs(power) > 64:  # far outside int64; Go refuses these as well
            raise ValueError(QUANTITY_FORMAT_ERROR)
        scale = Fraction(10) ** power
    out = number * scale
    return -out if sign == "-" else out


_parse_short = functools.lru_cache(maxsize=_REMEMBERED)(_parse)


def _clamp(n: int) -> int:
    return max(-_INT64_MAX - 1, min(_INT64_MAX, n))


def value(q: Fraction) -> int:
    """``Quantity.Value()``: rounded up to an integer (int64-clamped)."""
    return _clamp(math.ceil(q))


def milli_value(q: Fraction) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up (int64-clamped)."""
    return _clamp(math.ceil(q * 1000))
