"""A score as a piecewise-linear function of utilization (upstream ``plugins/helper/shape_score.go``),
and the validation of its shape (``validateFunctionShape``): NodeResourcesFit's RequestedToCapacityRatio
and VolumeBinding's capacity scoring share both."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["MAX_CUSTOM_PRIORITY_SCORE", "MAX_UTILIZATION", "broken_linear", "int_arg", "parse_shape"]

MAX_CUSTOM_PRIORITY_SCORE = 10  # shape scores are 0..10, scaled onto 0..MaxNodeScore
MAX_UTILIZATION = 100


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero (a falling shape has negative slopes)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """``BuildBrokenLinearFunction`` over ``(utilization, score)`` points sorted by utilization."""

    def f(p: int) -> int:
        for i, (util, score) in enumerate(shape):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = shape[i - 1]
                return prev_score + _go_div((score - prev_score) * (p - prev_util), util - prev_util)
        return shape[-1][1]

    return f


def int_arg(raw: object, path: str, errors: list[str]) -> int:
    """An integer field of plugin args: absent is 0, anything else but an integer an error."""
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        errors.append(f"{path}: must be an integer, got {raw!r}")
        return 0
    return raw


def parse_shape(raw: object, path: str, errors: list[str]) -> list[tuple[int, int]]:
    """``validateFunctionShape`` of the list at ``path``: at least one point, utilizations increasing
    within 0..100, scores within 0..10. Errors are appended; the points read are returned."""
    if not isinstance(raw, list) or not raw:
        errors.append(f"{path}: Required value: at least one point must be specified")
        return []
    points = []
    for i, item in enumerate(raw):
        point: Mapping[str, Any] = item if isinstance(item, Mapping) else {}
        if not isinstance(item, Mapping):
            errors.append(f"{path}[{i}]: must be an object")
        points.append(
            (
                int_arg(point.get("utilization"), f"{path}[{i}].utilization", errors),
                int_arg(point.get("score"), f"{path}[{i}].score", errors),
            )
        )
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {points[i][0]}: values must be sorted in increasing order"
            )
            break
    for i, (util, score) in enumerate(points):
        if not 0 <= util <= MAX_UTILIZATION:
            errors.append(f"{path}[{i}].utilization: Invalid value: {util}: not in valid range [0, {MAX_UTILIZATION}]")
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{path}[{i}].score: Invalid value: {score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return points
