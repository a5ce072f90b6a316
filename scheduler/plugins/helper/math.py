"""Go's arithmetic where it differs from Python's, for scores that must match upstream to the unit."""

from __future__ import annotations

import math

__all__ = ["go_round"]


def go_round(x: float) -> int:
    """Go's ``math.Round`` (half away from zero); Python's ``round`` rounds half to even."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)
