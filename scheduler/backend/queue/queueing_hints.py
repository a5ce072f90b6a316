"""Which parked pods a cluster event may wake: the plugins' queueing hints (upstream's
``buildQueueingHintMap`` and ``isPodWorthRequeuing``).

Only the plugins that rejected a pod are asked about an event, and only through the hints they
registered for it: an event no rejector cares about leaves the pod parked, so a busy cluster does
not retry every pending pod on every change.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from scheduler.api.objects import Pod
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    match_cluster_events,
)
from scheduler.framework.runtime import Framework

__all__ = ["HintMap", "QueueingHints", "QueueingStrategy", "build_hint_map"]


class QueueingStrategy(enum.IntEnum):
    QUEUE_SKIP = 0
    QUEUE_AFTER_BACKOFF = 1
    QUEUE_IMMEDIATELY = 2


# (plugin name, registered event with its hint)
Registration = tuple[str, ClusterEventWithHint]
# profile -> every registration
HintMap = dict[str, list[Registration]]


def build_hint_map(frameworks: Mapping[str, Framework]) -> HintMap:
    """Per profile, every (plugin, event, hint) registration, with upstream's #109437 work-around
    until 1.37 (``node_taint_fallback_removed``).

    A plugin that registers ``Node/Add`` but not ``Node/UpdateNodeTaint`` is also registered for
    ``Node/UpdateNodeTaint`` with an always-Queue hint (an uncordon is reported as a taint update).
    """
    out: HintMap = {}
    for profile, fwk in frameworks.items():
        regs: list[tuple[str, ClusterEventWithHint]] = []
        fallback = not fwk.features.node_taint_fallback_removed
        for plugin, events in fwk.enqueue_extensions().items():
            node_add = any(e.event.resource is EventResource.NODE and e.event.action & ActionType.ADD for e in events)
            node_taint = any(
                e.event.resource is EventResource.NODE and e.event.action & ActionType.UPDATE_NODE_TAINT for e in events
            )
            regs.extend((plugin, e) for e in events)
            if fallback and node_add and not node_taint:
                regs.append(
                    (plugin, ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)))
                )
        out[profile] = regs
    return out


class QueueingHints:
    """The hint map of every profile, asked one event and one pod at a time."""

    def __init__(self, frameworks: Mapping[str, Framework]) -> None:
        self._hints = build_hint_map(frameworks)
        self._matching: dict[tuple[EventResource, ActionType], Mapping[str, Sequence[Registration]]] = {}

    def matching(self, event: ClusterEvent) -> Mapping[str, Sequence[Registration]]:
        """Per profile, the (plugin, registration) pairs whose event matches ``event``, in hint-map order.

        Kept per resource and action (all a match reads; the registrations never change): every
        watch event asks, and matching it against each of the profile's 40-odd registrations was a
        fifth of the cost of handling a pod's event.
        """
        key = (event.resource, event.action)
        found = self._matching.get(key)
        if found is None:
            found = {
                profile: tuple((plugin, reg) for plugin, reg in regs if match_cluster_events(reg.event, event))
                for profile, regs in self._hints.items()
            }
            self._matching[key] = found
        return found

    def strategy(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        matching: Mapping[str, Sequence[Registration]] | None = None,
    ) -> QueueingStrategy:
        """``matching``: the registrations per profile that match ``event``, when the caller has them."""
        rejectors = qpi.rejectors
        if not rejectors:
            return QueueingStrategy.QUEUE_AFTER_BACKOFF
        if event.is_wildcard:
            if isinstance(new, Pod) and new.uid != qpi.pod.uid:
                return QueueingStrategy.QUEUE_SKIP
            return QueueingStrategy.QUEUE_AFTER_BACKOFF
        if matching is None:
            matching = self.matching(event)
        strategy = QueueingStrategy.QUEUE_SKIP
        for plugin, registration in matching.get(qpi.pod.scheduler_name, ()):
            if plugin not in rejectors:
                continue
            try:
                hint = registration.hint(qpi.pod, old, new)
            except Exception:  # a failing hint must not strand the pod: upstream treats it as Queue
                hint = QueueingHint.QUEUE
            if hint is QueueingHint.QUEUE_SKIP:
                continue
            if plugin in qpi.pending_plugins:
                return QueueingStrategy.QUEUE_IMMEDIATELY
            strategy = QueueingStrategy.QUEUE_AFTER_BACKOFF
        return strategy
