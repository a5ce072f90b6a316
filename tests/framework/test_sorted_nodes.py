"""SortedScoredNodes pops as Go's container/heap does: the expected orders below were printed by Go 1.26
running the same operations on upstream's ``nodeScoreHeap`` Less (a throwaway program, not kept)."""

from __future__ import annotations

from scheduler.api.objects import NodeName
from scheduler.framework.sorted_nodes import ScoredNode, SortedScoredNodes


def node(name: str, total: int, randomizer: int) -> ScoredNode:
    return ScoredNode(NodeName(name), total, randomizer)


def drain(heap: SortedScoredNodes) -> list[str]:
    return [heap.pop().name for _ in range(len(heap))]


def test_equal_keys_pop_by_position_not_in_order() -> None:
    """A sorted list or Python's heapq would give a, b, c, d, e."""
    heap = SortedScoredNodes(node(n, 5, 0) for n in "abcde")
    assert drain(heap) == ["a", "e", "d", "c", "b"]


def test_a_popped_layout_heaped_again_with_a_fresh_entry() -> None:
    """1.37's rescore: the layout left by popping the host, one total changed, the rescored node
    appended with tie-breaker 0, heaped again."""
    heap = SortedScoredNodes(
        [node("n1", 9, 6), node("n2", 7, 5), node("n3", 7, 4), node("n4", 5, 3), node("n5", 5, 2), node("n6", 3, 1)]
    )
    assert heap.pop().name == "n1"
    layout = heap.unordered()
    layout[4].total = 7
    again = SortedScoredNodes([*layout, node("n1", 7, 0)])
    assert again.names() == ["n2", "n5", "n3", "n6", "n4", "n1"]
    assert drain(again) == ["n2", "n3", "n5", "n1", "n4", "n6"]
