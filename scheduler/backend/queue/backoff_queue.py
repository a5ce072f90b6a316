"""backoffQ and errorBackoffQ: pods waiting out their backoff (upstream ``backoff_queue.go``).

Rejected pods wait in backoffQ, pods that failed with an error in errorBackoffQ. Both are heaps by
expiry, then QueueSort order, with activeQ's lazy deletion. Expiries are truncated to the whole
second (``SchedulerPopFromBackoffQ``, on since 1.33), so within one second priority decides; with
activeQ empty, backoffQ's head may be tried early, errorBackoffQ's never. The caller passes the time.
"""

from __future__ import annotations

import heapq
import itertools
import math

from scheduler.api.objects import PodKey
from scheduler.backend.queue.active_queue import SortKey
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["BackoffQueue"]

_Entry = tuple[float, tuple[object, ...], int, PodKey]  # (expiry, order, seq, key)


class BackoffQueue:
    def __init__(self, sort_key: SortKey, initial_backoff: float, max_backoff: float) -> None:
        self._sort_key = sort_key
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._seq = itertools.count()
        self._backoff: list[_Entry] = []
        self._error_backoff: list[_Entry] = []
        self._live: dict[PodKey, int] = {}

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """1 s doubling to 10 s by consecutive errors, else by unschedulable attempts (1.34+)."""
        count = qpi.consecutive_errors_count or qpi.unschedulable_count
        if count == 0 or self.max_backoff == 0:
            return 0.0
        return float(min(self.initial_backoff * (2 ** (count - 1)), self.max_backoff))

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """Truncated to the whole second (``SchedulerPopFromBackoffQ``, on since 1.33)."""
        return float(math.floor(qpi.timestamp + self.backoff_duration(qpi)))

    def is_backing_off(self, qpi: QueuedPodInfo, now: float) -> bool:
        """Still backing off while the expiry is not before the current one-second window."""
        if self.backoff_duration(qpi) == 0:
            return False
        return self.backoff_expiry(qpi) >= math.floor(now)

    def push(self, qpi: QueuedPodInfo, *, error: bool) -> None:
        seq = next(self._seq)
        self._live[qpi.key] = seq
        entry = (self.backoff_expiry(qpi), self._sort_key(qpi.pod, qpi.timestamp), seq, qpi.key)
        heapq.heappush(self._error_backoff if error else self._backoff, entry)

    def delete(self, key: PodKey) -> None:
        self._live.pop(key, None)

    def pop(self) -> PodKey | None:
        """backoffQ's head, expired or not (errorBackoffQ is never popped early)."""
        while self._backoff:
            _expiry, _order, seq, key = heapq.heappop(self._backoff)
            if self._live.get(key) == seq:
                del self._live[key]
                return key
        return None

    def pop_completed(self, now: float) -> list[PodKey]:
        """Every pod whose expiry is before the current second: backoffQ's in order, then errorBackoffQ's."""
        done: list[PodKey] = []
        for heap in (self._backoff, self._error_backoff):
            while heap:
                expiry, _order, seq, key = heap[0]
                if self._live.get(key) != seq:
                    heapq.heappop(heap)
                    continue
                if expiry >= math.floor(now):
                    break
                heapq.heappop(heap)
                del self._live[key]
                done.append(key)
        return done
