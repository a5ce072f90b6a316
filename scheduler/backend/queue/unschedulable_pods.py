"""The unschedulable pods: parked after a failed attempt, or held by a PreEnqueue plugin
(upstream ``unschedulable_pods.go``).

Kept apart, in the order they were parked, because every cluster event walks them: an event must
not walk the whole queue (10,000 pending pods) to find the few it may wake.
"""

from __future__ import annotations

from scheduler.api.objects import PodKey
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["UnschedulablePods"]


class UnschedulablePods:
    def __init__(self) -> None:
        self._pods: dict[PodKey, QueuedPodInfo] = {}

    def add(self, qpi: QueuedPodInfo) -> None:
        """Park the pod; one parked already keeps its place."""
        self._pods[qpi.key] = qpi

    def delete(self, key: PodKey) -> None:
        self._pods.pop(key, None)

    def snapshot(self) -> list[QueuedPodInfo]:
        """The parked pods in order, as a list: the caller may move them out while it walks it."""
        return list(self._pods.values())
