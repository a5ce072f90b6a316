"""RequestedToCapacityRatio: a piecewise-linear score of utilization
(``noderesources/requested_to_capacity_ratio.go``, ``helper/shape_score.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.framework.types import MAX_NODE_SCORE
from scheduler.plugins.helper.math import go_round
from scheduler.plugins.helper.shape_score import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, broken_linear

__all__ = ["MAX_CUSTOM_PRIORITY_SCORE", "broken_linear", "requested_to_capacity_ratio_scorer"]


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
