"""Upstream's ``SortedScoredNodes`` (``pkg/scheduler/framework/sorted_nodes.go``): scored nodes in a
max-heap on (total score, tie-breaker), laid out and popped as Go's ``container/heap`` does.

The layout matters where keys tie. Go's heap then pops by position, and 1.37's batching heaps again
the layout it kept (``UnorderedList`` plus the rescored node, tie-breaker 0), so which of several
equal nodes comes next depends on where the earlier pops left them. Keeping the same layout from the
same starting order gives the same turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api.objects import NodeName

__all__ = ["ScoredNode", "SortedScoredNodes"]


@dataclass(slots=True)
class ScoredNode:
    """A node's total score and upstream's ``Randomizer`` (the larger wins a tie)."""

    name: NodeName
    total: int
    randomizer: int


def _less(a: ScoredNode, b: ScoredNode) -> bool:
    """``nodeScoreHeap.Less``: ``a`` pops before ``b``."""
    return a.total > b.total or (a.total == b.total and a.randomizer > b.randomizer)


class SortedScoredNodes:
    """``NewSortedScoredNodes``: the nodes heaped in the order given (``heap.Init``)."""

    __slots__ = ("_heap",)

    def __init__(self, nodes: Iterable[ScoredNode]) -> None:
        self._heap = list(nodes)
        n = len(self._heap)
        for i in range(n // 2 - 1, -1, -1):
            self._down(i, n)

    def __len__(self) -> int:
        return len(self._heap)

    def pop(self) -> ScoredNode:
        """``heap.Pop``: the last element swapped to the root and sifted down, the old root removed."""
        h = self._heap
        n = len(h) - 1
        h[0], h[n] = h[n], h[0]
        self._down(0, n)
        return h.pop()

    def unordered(self) -> list[ScoredNode]:
        """``UnorderedList``: the heap's own layout, copied."""
        return list(self._heap)

    def names(self) -> list[NodeName]:
        """The layout's node names (tests, logs)."""
        return [node.name for node in self._heap]

    def _down(self, i: int, n: int) -> None:
        h = self._heap
        while True:
            j = 2 * i + 1
            if j >= n:
                return
            if j + 1 < n and _less(h[j + 1], h[j]):
                j += 1
            if not _less(h[j], h[i]):
                return
            h[i], h[j] = h[j], h[i]
            i = j
