"""activeQ: the pods ready for an attempt, in QueueSort order (upstream ``active_queue.go``).

A heap with lazy deletion: removing or re-pushing a pod leaves its old entry in the heap, and pop
skips every entry whose sequence number is no longer the pod's live one. An update is one push,
and entries with equal keys pop in the order they were pushed.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["ActiveQueue", "SortKey"]

SortKey = Callable[[Pod, float], tuple[object, ...]]
"""The QueueSort order as a heap key of (pod, queue timestamp); upstream's ``lessFn``."""


class ActiveQueue:
    """Entries are ``(order, seq, key)``; only the pod's live ``seq`` counts."""

    def __init__(self, sort_key: SortKey) -> None:
        self._sort_key = sort_key
        self._seq = itertools.count()
        self._heap: list[tuple[tuple[object, ...], int, PodKey]] = []
        self._live: dict[PodKey, int] = {}

    def push(self, qpi: QueuedPodInfo) -> None:
        """Add the pod, or move it to where its (possibly new) priority puts it."""
        seq = next(self._seq)
        self._live[qpi.key] = seq
        heapq.heappush(self._heap, (self._sort_key(qpi.pod, qpi.timestamp), seq, qpi.key))

    def delete(self, key: PodKey) -> None:
        self._live.pop(key, None)

    def pop(self) -> PodKey | None:
        while self._heap:
            _order, seq, key = heapq.heappop(self._heap)
            if self._live.get(key) == seq:
                del self._live[key]
                return key
        return None
