"""MostAllocated: favour the fullest nodes, to bin-pack (``noderesources/most_allocated.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.framework.types import MAX_NODE_SCORE

__all__ = ["most_requested_score", "most_resource_scorer"]


def most_requested_score(requested: int, capacity: int) -> int:
    """``requested * 100 / capacity``, with requests above capacity counted as capacity."""
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def most_resource_scorer(weights: Sequence[int]) -> Callable[[Sequence[int], Sequence[int]], int]:
    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += most_requested_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return score
