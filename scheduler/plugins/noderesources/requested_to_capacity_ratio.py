"""RequestedToCapacityRatio: a piecewise-linear score of utilization
(``noderesources/requested_to_capacity_ratio.go``, ``helper/shape_score.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.framework.types import MAX_NODE_SCORE
from scheduler.plugins.helper.math import go_round

__all__ = ["MAX_CUSTOM_PRIORITY_SCORE", "broken_linear", "requested_to_capacity_ratio_scorer"]

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


def requested_to_capacity_ratio_scorer(
    weights: Sequence[int], shape: Sequence[tuple[int, int]]
) -> Callable[[Sequence[int], Sequence[int]], int]:
    raw = broken_linear([(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            s = resource_score(req, alloc)
            if s > 0:  # upstream leaves zero-scoring resources out of the mean
                node_score += s * weight
                weight_sum += weight
        return go_round(node_score / weight_sum) if weight_sum else 0

    return score
