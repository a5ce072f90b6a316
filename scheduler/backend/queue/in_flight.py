"""The pods in a scheduling cycle, and the cluster events seen meanwhile (upstream ``inFlightPods`` and
``inFlightEvents`` in ``scheduling_queue.go``).

An event that arrives while a pod is being scheduled cannot wake it: the pod is in no sub-queue. So
the events are kept, and replayed past the pod's rejectors if its attempt fails; then no wake-up is
lost. Each pod remembers where the log stood at its pop; the log keeps what the oldest pod needs.
"""

from __future__ import annotations

from scheduler.api.objects import Pod, PodKey
from scheduler.framework.events import ClusterEvent

__all__ = ["InFlightPods", "RecordedEvent"]

RecordedEvent = tuple[ClusterEvent, object | None, object | None]  # (event, old, new)


class InFlightPods:
    def __init__(self) -> None:
        self._start: dict[PodKey, int] = {}  # key -> index of the first event recorded after its pop
        self._updates: dict[PodKey, Pod | None] = {}  # the latest version seen in flight; None: deleted
        self._events: list[RecordedEvent] = []
        self._base = 0  # the index of self._events[0]

    def __contains__(self, key: object) -> bool:
        return key in self._start

    def add(self, key: PodKey) -> None:
        """The pod was popped: events from now on concern it."""
        self._start[key] = self._base + len(self._events)

    def record(self, event: ClusterEvent, old: object | None, new: object | None) -> None:
        """Kept only while some pod is in flight: no one else would replay it."""
        if self._start:
            self._events.append((event, old, new))

    def update(self, key: PodKey, pod: Pod | None) -> None:
        """The pod changed (None: it was deleted) while in flight; its failure hands back this version."""
        self._updates[key] = pod

    def latest(self, key: PodKey, pod: Pod) -> Pod | None:
        """The pod's latest version: ``pod`` unless it changed in flight; None if it was deleted meanwhile."""
        return self._updates.get(key, pod)

    def events(self, key: PodKey) -> list[RecordedEvent]:
        """The events recorded since the pod's pop (none if it is not in flight)."""
        start = self._start.get(key)
        if start is None:
            return []
        return self._events[max(0, start - self._base) :]

    def done(self, key: PodKey) -> None:
        """The pod left its cycle: drop the events no pod in flight still needs."""
        self._start.pop(key, None)
        self._updates.pop(key, None)
        if not self._start:
            self._base += len(self._events)
            self._events.clear()
            return
        oldest = min(self._start.values())
        drop = oldest - self._base
        if drop > 0:
            del self._events[:drop]
            self._base = oldest
