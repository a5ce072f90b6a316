"""LeastAllocated: favour nodes with the most room left (``noderesources/least_allocated.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.framework.types import MAX_NODE_SCORE

__all__ = ["least_requested_score", "least_resource_scorer"]


def least_requested_score(requested: int, capacity: int) -> int:
    """``(capacity - requested) * 100 / capacity``; 0 once a node is full (or over-full)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_scorer(weights: Sequence[int]) -> Callable[[Sequence[int], Sequence[int]], int]:
    """The weighted mean of the per-resource scores; resources the node does not offer are left out."""

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += least_requested_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return score
