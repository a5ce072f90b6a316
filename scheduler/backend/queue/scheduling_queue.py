"""The scheduling queue: activeQ, backoffQ, unschedulable pods, in-flight events (``backend/queue``).

Pure and clock-driven: the caller passes ``now`` (seconds) into every method that needs time, so
tests run without sleeping and the live loop passes ``time.monotonic()``.

A pod rejected by plugins waits in ``unschedulable`` until a cluster event arrives for which one of
the plugins that rejected it returns Queue from its queueing hint; events that arrive while the pod
is being scheduled are kept and replayed when its attempt fails, so no wake-up is lost.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import Pod, PodKey
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    match_cluster_events,
    pod_scheduling_properties_change,
)
from scheduler.framework.runtime import Framework

__all__ = ["QueuedPodInfo", "QueueingStrategy", "SchedulingQueue", "build_hint_map"]

UNSCHEDULABLE_FLUSH_PERIOD = 30.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0


class QueueingStrategy(enum.IntEnum):
    QUEUE_SKIP = 0
    QUEUE_AFTER_BACKOFF = 1
    QUEUE_IMMEDIATELY = 2


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pod: Pod
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""

    @property
    def key(self) -> PodKey:
        return self.pod.key

    @property
    def rejectors(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins


# plugin name -> registered events with hints, per profile
HintMap = dict[str, list[tuple[str, ClusterEventWithHint]]]


def build_hint_map(frameworks: Mapping[str, Framework]) -> dict[str, list[tuple[str, ClusterEventWithHint]]]:
    """Per profile, every (plugin, event, hint) registration, with upstream's #109437 work-around.

    A plugin that registers ``Node/Add`` but not ``Node/UpdateNodeTaint`` is also registered for
    ``Node/UpdateNodeTaint`` with an always-Queue hint (an uncordon is reported as a taint update).
    """
    out: dict[str, list[tuple[str, ClusterEventWithHint]]] = {}
    for profile, fwk in frameworks.items():
        regs: list[tuple[str, ClusterEventWithHint]] = []
        for plugin, events in fwk.enqueue_extensions().items():
            node_add = any(e.event.resource is EventResource.NODE and e.event.action & ActionType.ADD for e in events)
            node_taint = any(
                e.event.resource is EventResource.NODE and e.event.action & ActionType.UPDATE_NODE_TAINT for e in events
            )
            regs.extend((plugin, e) for e in events)
            if node_add and not node_taint:
                regs.append(
                    (plugin, ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)))
                )
        out[profile] = regs
    return out


class SchedulingQueue:
    """One queue for all profiles, ordered by ``sort_key``: their shared QueueSort plugin's order."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        *,
        sort_key: Callable[[Pod, float], tuple[object, ...]],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._frameworks = frameworks
        self._sort_key = sort_key
        self._hints = build_hint_map(frameworks)
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._on_change = on_change or (lambda: None)
        self._seq = itertools.count()
        self._active: list[tuple[tuple[object, ...], int, PodKey]] = []
        self._backoff: list[tuple[float, tuple[object, ...], int, PodKey]] = []
        self._error_backoff: list[tuple[float, tuple[object, ...], int, PodKey]] = []
        self._where: dict[PodKey, str] = {}  # "active" | "backoff" | "error" | "unschedulable"
        # The unschedulable pods in the order they were parked: every cluster event walks them, so it
        # must not walk the whole queue (10,000 pending pods) to find them.
        self._unschedulable: dict[PodKey, None] = {}
        self._infos: dict[PodKey, QueuedPodInfo] = {}
        self._entry_seq: dict[PodKey, int] = {}
        self._in_flight: dict[PodKey, int] = {}  # key -> index of the first event recorded after its pop
        self._in_flight_updates: dict[PodKey, Pod | None] = {}
        self._events: list[tuple[ClusterEvent, object | None, object | None]] = []
        self._events_base = 0
        self.incoming: dict[tuple[str, str], int] = {}  # (queue, event label) -> count, for metrics

    # -- bookkeeping ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._where)

    def pending_counts(self) -> dict[str, int]:
        counts = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
        for key, where in self._where.items():
            if where == "unschedulable" and self._infos[key].gating_plugin:
                counts["gated"] += 1
            else:
                counts["backoff" if where == "error" else where] += 1
        return counts

    def location(self, key: str) -> str | None:
        if key in self._in_flight:
            return "in-flight"
        return self._where.get(PodKey(key))

    def info(self, key: str) -> QueuedPodInfo | None:
        return self._infos.get(PodKey(key))

    def _count(self, queue: str, event: str) -> None:
        self.incoming[(queue, event)] = self.incoming.get((queue, event), 0) + 1

    def _push(self, qpi: QueuedPodInfo, where: str, now: float) -> None:
        key = qpi.key
        seq = next(self._seq)
        self._entry_seq[key] = seq
        self._infos[key] = qpi
        self._where[key] = where
        if where == "unschedulable":
            self._unschedulable[key] = None
        else:
            self._unschedulable.pop(key, None)
        order = self._sort_key(qpi.pod, qpi.timestamp)
        if where == "active":
            heapq.heappush(self._active, (order, seq, key))
        elif where in ("backoff", "error"):
            expiry = self.backoff_expiry(qpi)
            heap = self._backoff if where == "backoff" else self._error_backoff
            heapq.heappush(heap, (expiry, order, seq, key))
        if where != "unschedulable":
            self._on_change()

    def _remove(self, key: PodKey) -> QueuedPodInfo | None:
        """Lazy deletion: heap entries whose sequence number no longer matches are skipped."""
        self._where.pop(key, None)
        self._unschedulable.pop(key, None)
        self._entry_seq.pop(key, None)
        return self._infos.pop(key, None)

    # -- backoff ----------------------------------------------------------------------------------

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

    # -- adding and updating pending pods -----------------------------------------------------

    def add(self, pod: Pod, now: float) -> None:
        """A new pending pod of ours: PreEnqueue decides activeQ or the gated (unschedulable) pool."""
        if pod.key in self._where or pod.key in self._in_flight:
            self.update(None, pod, now)
            return
        qpi = QueuedPodInfo(pod, now)
        self._count("active", "PodAdd")
        self._move_to_active(qpi, now, event="PodAdd")

    def _move_to_active(self, qpi: QueuedPodInfo, now: float, event: str) -> None:
        fwk = self._frameworks.get(qpi.pod.scheduler_name)
        gate = fwk.run_pre_enqueue_plugins(qpi.pod) if fwk is not None else None
        if gate is not None:
            qpi.gating_plugin = gate.plugin
            qpi.unschedulable_plugins = {gate.plugin}
            self._push(qpi, "unschedulable", now)
            return
        qpi.gating_plugin = ""
        self._push(qpi, "active", now)

    def update(self, old: Pod | None, new: Pod, now: float) -> None:
        key = new.key
        if key in self._in_flight:
            self._in_flight_updates[key] = new
            if old is not None:
                for ev in pod_scheduling_properties_change(new, old, EventResource.UNSCHEDULABLE_POD):
                    self._events.append((ev, old, new))
            return
        where = self._where.get(key)
        if where is None:
            self.add(new, now)
            return
        qpi = self._infos[key]
        previous = qpi.pod
        qpi.pod = new
        if where in ("active", "backoff", "error"):
            self._push(qpi, where, now)  # re-push with the new priority; the old entry goes stale
            return
        for ev in pod_scheduling_properties_change(new, old or previous, EventResource.UNSCHEDULABLE_POD):
            strategy = self.is_pod_worth_requeuing(qpi, ev, old or previous, new)
            if strategy is not QueueingStrategy.QUEUE_SKIP:
                self._requeue(qpi, strategy, now, str(ev))
                return

    def delete(self, key: str) -> None:
        pkey = PodKey(key)
        self._remove(pkey)
        if pkey in self._in_flight:
            self._in_flight_updates[pkey] = None  # deleted while in flight: do not requeue

    # -- popping and finishing ----------------------------------------------------------------

    def _pop_heap(self, heap: list[tuple[object, ...]]) -> QueuedPodInfo | None:
        while heap:
            entry = heapq.heappop(heap)
            key = entry[-1]
            seq = entry[-2]
            if not isinstance(key, str) or self._entry_seq.get(PodKey(key)) != seq:
                continue
            return self._infos.get(PodKey(key))
        return None

    def pop(self, now: float) -> QueuedPodInfo | None:
        """The next pod to schedule, or None. With activeQ empty, a backing-off pod is taken early."""
        self.flush_backoff_completed(now)
        qpi = self._pop_heap(self._active)  # type: ignore[arg-type]
        if qpi is None:
            qpi = self._pop_heap(self._backoff)  # type: ignore[arg-type]
        if qpi is None:
            return None
        self._remove(qpi.key)
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        self._in_flight[qpi.key] = self._events_base + len(self._events)
        return qpi

    def done(self, key: str) -> None:
        """The pod left its scheduling cycle (bound or handed back); forget its in-flight events."""
        self._in_flight.pop(PodKey(key), None)
        self._in_flight_updates.pop(PodKey(key), None)
        self._prune_events()

    def _prune_events(self) -> None:
        if not self._in_flight:
            self._events_base += len(self._events)
            self._events.clear()
            return
        oldest = min(self._in_flight.values())
        drop = oldest - self._events_base
        if drop > 0:
            del self._events[:drop]
            self._events_base = oldest

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, now: float, *, error: bool) -> None:
        """Hand a failed pod back: replay in-flight events, else park it in the unschedulable pool."""
        key = qpi.key
        latest = self._in_flight_updates.get(key, qpi.pod)
        start = self._in_flight.get(key)
        if key in self._in_flight_updates and latest is None:
            self.done(key)
            return
        if latest is not None:
            qpi.pod = latest
        if key in self._where:
            self.done(key)
            return
        if error:
            qpi.consecutive_errors_count += 1
        else:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0
        qpi.timestamp = now
        strategy = QueueingStrategy.QUEUE_SKIP
        if not qpi.rejectors:
            strategy = QueueingStrategy.QUEUE_AFTER_BACKOFF
        elif start is not None:
            for ev, old, new in self._events[max(0, start - self._events_base) :]:
                strategy = max(strategy, self.is_pod_worth_requeuing(qpi, ev, old, new))
                if strategy is QueueingStrategy.QUEUE_IMMEDIATELY:
                    break
        self.done(key)
        if strategy is QueueingStrategy.QUEUE_SKIP:
            self._count("unschedulable", "ScheduleAttemptFailure")
            self._push(qpi, "unschedulable", now)
        else:
            self._requeue(qpi, strategy, now, "ScheduleAttemptFailure")

    def _requeue(self, qpi: QueuedPodInfo, strategy: QueueingStrategy, now: float, event: str) -> None:
        self._remove(qpi.key)
        if strategy is QueueingStrategy.QUEUE_AFTER_BACKOFF and self.is_backing_off(qpi, now):
            where = "backoff" if qpi.rejectors else "error"
            self._count("backoff", event)
            self._push(qpi, where, now)
            return
        self._count("active", event)
        self._move_to_active(qpi, now, event)

    # -- events -------------------------------------------------------------------------------

    def is_pod_worth_requeuing(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        matching: Mapping[str, Sequence[tuple[str, ClusterEventWithHint]]] | None = None,
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
            matching = self._matching(event)
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

    def _matching(self, event: ClusterEvent) -> dict[str, list[tuple[str, ClusterEventWithHint]]]:
        """Per profile, the (plugin, registration) pairs whose event matches ``event``, in hint-map order."""
        return {
            profile: [(plugin, reg) for plugin, reg in regs if match_cluster_events(reg.event, event)]
            for profile, regs in self._hints.items()
        }

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        now: float,
        precheck: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> int:
        """Run the event past every unschedulable pod's rejectors; returns how many pods moved."""
        matching = None if event.is_wildcard else self._matching(event)
        if matching is not None and not any(matching.values()):
            return 0  # no plugin of any profile registered for this event
        if self._in_flight:
            self._events.append((event, old, new))
        moved = 0
        for key in list(self._unschedulable):
            qpi = self._infos[key]
            if precheck is not None and not precheck(qpi):
                continue
            strategy = self.is_pod_worth_requeuing(qpi, event, old, new, matching)
            if strategy is QueueingStrategy.QUEUE_SKIP:
                continue
            self._requeue(qpi, strategy, now, str(event))
            moved += 1
        return moved

    # -- periodic flushes -----------------------------------------------------------------------

    def flush_backoff_completed(self, now: float) -> None:
        for heap in (self._backoff, self._error_backoff):
            while heap:
                expiry, _order, seq, key = heap[0]
                if self._entry_seq.get(key) != seq:
                    heapq.heappop(heap)
                    continue
                if expiry >= math.floor(now):
                    break
                heapq.heappop(heap)
                qpi = self._infos[key]
                self._remove(key)
                self._move_to_active(qpi, now, "BackoffComplete")

    def flush_unschedulable_leftover(self, now: float) -> int:
        """Pods parked longer than ``max_in_unschedulable`` get another try (``UnschedulableTimeout``)."""
        moved = 0
        for key in list(self._unschedulable):
            qpi = self._infos[key]
            if qpi.gating_plugin or now - qpi.timestamp <= self.max_in_unschedulable:
                continue
            self._requeue(qpi, QueueingStrategy.QUEUE_AFTER_BACKOFF, now, "UnschedulableTimeout")
            moved += 1
        return moved

    def pending_pods(self) -> Iterable[Pod]:
        return [self._infos[k].pod for k in self._where]
