"""The scheduling queue: activeQ, backoffQ, unschedulable pods, in-flight events (``backend/queue``).

Pure apart from the clock it is given (upstream's ``WithClock``): every call that needs the time
reads it once from that clock, ``time.monotonic`` in the live loop. Tests drive a fake clock and
never sleep.

A new pod goes to activeQ (``active_queue``) unless a PreEnqueue plugin holds it among the
unschedulable pods (``unschedulable_pods``). A pod whose attempt failed with an error waits out its
backoff (``backoff_queue``) and is tried again. A pod rejected by plugins is parked among the
unschedulable pods until a cluster event arrives for which one of the plugins that rejected it
returns Queue from its queueing hint (``queueing_hints``); it then waits out what is left of its
backoff, unless that plugin only kept it pending. Events that arrive while the pod is being
scheduled are kept (``in_flight``) and replayed when its attempt fails, so no wake-up is lost.
Whatever is parked longer than ``max_in_unschedulable`` is tried again (gated pods excepted).

The queue also holds the nominator (``nominator``): pending pods nominated to a node, which Filter
counts there (``nominated_pods_for_node``, the framework's ``PodNominator``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.queue.active_queue import ActiveQueue, SortKey
from scheduler.backend.queue.backoff_queue import BackoffQueue
from scheduler.backend.queue.in_flight import InFlightPods
from scheduler.backend.queue.nominator import Nominator
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.backend.queue.queueing_hints import QueueingHints, QueueingStrategy
from scheduler.backend.queue.unschedulable_pods import UnschedulablePods
from scheduler.features import PER_CONTAINER_RULE
from scheduler.framework.events import (
    FORCE_ACTIVATE,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    pod_scheduling_properties_change,
    target_pod_update_resource,
)
from scheduler.framework.interface import NominatingInfo
from scheduler.framework.runtime import Framework

__all__ = ["SchedulingQueue"]

UNSCHEDULABLE_FLUSH_PERIOD = 30.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0


class SchedulingQueue:
    """One queue for all profiles, ordered by ``sort_key``: their shared QueueSort plugin's order."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        *,
        sort_key: SortKey,
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        on_change: Callable[[], None] | None = None,
        pod_lister: Callable[[PodKey], Pod | None] | None = None,
    ) -> None:
        self._frameworks = frameworks
        self._clock = clock
        self._nominate_gated = any(f.features.gated_pod_nominated for f in frameworks.values())
        # The profiles share one minor; with none (tests), the oldest's resource.
        self._own_update = next(
            (target_pod_update_resource(f.features) for f in frameworks.values()), EventResource.UNSCHEDULABLE_POD
        )
        # How a resize counts (one minor for every profile), for a pod's scale-down event.
        self._requests_rule = next((f.features.pod_requests_rule for f in frameworks.values()), PER_CONTAINER_RULE)
        self._hints = QueueingHints(frameworks)
        self.max_in_unschedulable = max_in_unschedulable
        self._on_change = on_change or (lambda: None)
        self._activeq = ActiveQueue(sort_key)
        self._backoffq = BackoffQueue(sort_key, initial_backoff, max_backoff)
        self._unschedulable = UnschedulablePods()
        # Every pending pod, where it is ("active" | "backoff" | "error" | "unschedulable") and its info.
        self._where: dict[PodKey, str] = {}
        self._infos: dict[PodKey, QueuedPodInfo] = {}
        self._in_flight = InFlightPods()
        self.nominator = Nominator(pod_lister)
        # Pods popped so far (``schedulingCycle``): opportunistic batching reuses a cycle's results
        # only in the very next one.
        self.scheduling_cycle = 0
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

    def _push(self, qpi: QueuedPodInfo, where: str) -> None:
        key = qpi.key
        if self._where.get(key) != where:
            self._drop_entries(key)
        self._infos[key] = qpi
        self._where[key] = where
        if where == "active":
            self._activeq.push(qpi)
        elif where in ("backoff", "error"):
            self._backoffq.push(qpi, error=where == "error")
        else:
            self._unschedulable.add(qpi)
        if where != "unschedulable":
            self._on_change()

    def _remove(self, key: PodKey) -> QueuedPodInfo | None:
        self._where.pop(key, None)
        self._drop_entries(key)
        return self._infos.pop(key, None)

    def _drop_entries(self, key: PodKey) -> None:
        """The pod leaves its sub-queue; a heap entry left behind is skipped when it surfaces."""
        self._activeq.delete(key)
        self._backoffq.delete(key)
        self._unschedulable.delete(key)

    # -- backoff ----------------------------------------------------------------------------------

    @property
    def initial_backoff(self) -> float:
        return self._backoffq.initial_backoff

    @property
    def max_backoff(self) -> float:
        return self._backoffq.max_backoff

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        return self._backoffq.backoff_duration(qpi)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return self._backoffq.backoff_expiry(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self._backoffq.is_backing_off(qpi, self._clock())

    # -- adding and updating pending pods -----------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod of ours: PreEnqueue decides activeQ or the gated (unschedulable) pool."""
        if pod.key in self._where or pod.key in self._in_flight:
            self.update(None, pod)
            return
        qpi = QueuedPodInfo(pod, self._clock())
        self._count("active", "PodAdd")
        if self._nominate_gated:
            # 1.37's addPod: the nomination is recorded whether or not the pod is gated.
            self.nominator.add_nominated_pod(pod, None)
            self._move_to_active(qpi)
        else:
            self._move_to_active(qpi, nominate=True)

    def _move_to_active(self, qpi: QueuedPodInfo, *, nominate: bool = False) -> None:
        """``nominate``: the pod arrives from its own Add or Update event, when upstream's
        ``moveToActiveQ`` nominates it; a gated pod is not (it stays out of activeQ)."""
        if self._gate(qpi):
            return
        self._push(qpi, "active")
        if nominate:
            self.nominator.add_nominated_pod(qpi.pod, None)

    def _gate(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; a pod it refuses goes to the unschedulable pool, gated (True)."""
        fwk = self._frameworks.get(qpi.pod.scheduler_name)
        gate = fwk.run_pre_enqueue_plugins(qpi.pod) if fwk is not None else None
        if gate is None:
            qpi.gating_plugin = ""
            return False
        # Added to the rejectors of its last cycle, as upstream's runPreEnqueuePlugin does: a pod
        # gated while its preemption runs is woken by the events its Filter rejectors wait for.
        qpi.gating_plugin = gate.plugin
        qpi.unschedulable_plugins.add(gate.plugin)
        self._push(qpi, "unschedulable")
        return True

    def update(self, old: Pod | None, new: Pod) -> None:
        key = new.key
        if key in self._in_flight:
            self._in_flight.update(key, new)
            if old is not None:
                for ev in pod_scheduling_properties_change(new, old, self._own_update, rule=self._requests_rule):
                    self._in_flight.record(ev, old, new)
            return
        where = self._where.get(key)
        if where is None:
            self.add(new)
            return
        qpi = self._infos[key]
        previous = qpi.pod
        qpi.pod = new
        self.nominator.update_nominated_pod(old or previous, new)
        if where in ("active", "backoff", "error"):
            self._push(qpi, where)  # re-push with the new priority; the old entry goes stale
            return
        for ev in pod_scheduling_properties_change(new, old or previous, self._own_update, rule=self._requests_rule):
            strategy = self.is_pod_worth_requeuing(qpi, ev, old or previous, new)
            if strategy is not QueueingStrategy.QUEUE_SKIP:
                self._requeue(qpi, strategy, str(ev), self._clock())
                return

    def delete(self, key: str) -> None:
        pkey = PodKey(key)
        self.nominator.forget(pkey)
        self._remove(pkey)
        if pkey in self._in_flight:
            self._in_flight.update(pkey, None)  # deleted while in flight: do not requeue

    # -- popping and finishing ----------------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None. With activeQ empty, a backing-off pod is taken early."""
        now = self._clock()
        self._move_backoff_completed(self._backoffq.pop_completed(now))
        key = self._activeq.pop()
        if key is None:
            key = self._backoffq.pop()
        if key is None:
            return None
        qpi = self._infos[key]
        self._remove(key)
        self.scheduling_cycle += 1
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        self._in_flight.add(key)
        return qpi

    def done(self, key: str) -> None:
        """The pod left its scheduling cycle (bound or handed back); forget its in-flight events."""
        self._in_flight.done(PodKey(key))

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, *, error: bool) -> None:
        """Hand a failed pod back: replay in-flight events, else park it in the unschedulable pool."""
        now = self._clock()
        key = qpi.key
        latest = self._in_flight.latest(key, qpi.pod)
        if latest is None:  # deleted while in flight
            self.done(key)
            return
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
        else:
            for ev, old, new in self._in_flight.events(key):
                strategy = max(strategy, self.is_pod_worth_requeuing(qpi, ev, old, new))
                if strategy is QueueingStrategy.QUEUE_IMMEDIATELY:
                    break
        self.done(key)
        if strategy is QueueingStrategy.QUEUE_SKIP:
            self._count("unschedulable", "ScheduleAttemptFailure")
            self._push(qpi, "unschedulable")
        else:
            self._requeue(qpi, strategy, "ScheduleAttemptFailure", now)

    def _requeue(self, qpi: QueuedPodInfo, strategy: QueueingStrategy, event: str, now: float) -> None:
        """To backoffQ if the strategy allows and the pod is still backing off at ``now`` (the public
        call's one reading of the clock), else to activeQ."""
        self._remove(qpi.key)
        if strategy is QueueingStrategy.QUEUE_AFTER_BACKOFF and self._backoffq.is_backing_off(qpi, now):
            # PreEnqueue runs on the way into backoffQ (SchedulerPopFromBackoffQ, on since 1.33): a
            # backing-off pod may be popped early, so a gated one must not wait there.
            if self._gate(qpi):
                return
            where = "backoff" if qpi.rejectors else "error"
            self._count("backoff", event)
            self._push(qpi, where)
            return
        self._count("active", event)
        self._move_to_active(qpi)

    # -- events -------------------------------------------------------------------------------

    def is_pod_worth_requeuing(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        matching: Mapping[str, Sequence[tuple[str, ClusterEventWithHint]]] | None = None,
    ) -> QueueingStrategy:
        """What the pod's rejectors' hints say to ``event`` (``queueing_hints``)."""
        return self._hints.strategy(qpi, event, old, new, matching)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        precheck: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> int:
        """Run the event past every unschedulable pod's rejectors; returns how many pods moved."""
        matching = None if event.is_wildcard else self._hints.matching(event)
        if matching is not None and not any(matching.values()):
            return 0  # no plugin of any profile registered for this event
        self._in_flight.record(event, old, new)
        now = self._clock()
        moved = 0
        for qpi in self._unschedulable.snapshot():
            if precheck is not None and not precheck(qpi):
                continue
            if qpi.gating_plugin and matching is not None:
                # An event the gating plugin did not register for never moves a gated pod.
                registered = matching.get(qpi.pod.scheduler_name, ())
                if not any(plugin == qpi.gating_plugin for plugin, _ in registered):
                    continue
            strategy = self.is_pod_worth_requeuing(qpi, event, old, new, matching)
            if strategy is QueueingStrategy.QUEUE_SKIP:
                continue
            self._requeue(qpi, strategy, str(event), now)
            moved += 1
        return moved

    def activate(self, pod: Pod) -> None:
        """Into activeQ now, through PreEnqueue (upstream's ``Activate``): a pod whose asynchronous
        preemption failed must not wait in the unschedulable pool for an event that may never come.
        A pod in its scheduling cycle gets the ForceActivate event replayed when the cycle fails."""
        key = pod.key
        where = self._where.get(key)
        if where is None:
            if key in self._in_flight:
                self._in_flight.record(FORCE_ACTIVATE, None, pod)
            return
        if where == "active":
            return
        qpi = self._infos[key]
        self._remove(key)
        self._count("active", str(FORCE_ACTIVATE))
        self._move_to_active(qpi)

    # -- periodic flushes -----------------------------------------------------------------------

    def flush_backoff_completed(self) -> None:
        self._move_backoff_completed(self._backoffq.pop_completed(self._clock()))

    def _move_backoff_completed(self, keys: Iterable[PodKey]) -> None:
        for key in keys:
            qpi = self._infos[key]
            self._remove(key)
            self._move_to_active(qpi)

    def flush_unschedulable_leftover(self) -> int:
        """Pods parked longer than ``max_in_unschedulable`` get another try (``UnschedulableTimeout``)."""
        now = self._clock()
        moved = 0
        for qpi in self._unschedulable.snapshot():
            if qpi.gating_plugin or now - qpi.timestamp <= self.max_in_unschedulable:
                continue
            self._requeue(qpi, QueueingStrategy.QUEUE_AFTER_BACKOFF, "UnschedulableTimeout", now)
            moved += 1
        return moved

    def pending_pods(self) -> Iterable[Pod]:
        return [self._infos[k].pod for k in self._where]

    # -- the nominator (the framework's PodNominator) -------------------------------------------

    def add_nominated_pod(self, pod: Pod, nominating_info: NominatingInfo | None) -> None:
        """Where a failed cycle's ``NominatingInfo`` lands (upstream's ``AddNominatedPod``)."""
        self.nominator.add_nominated_pod(pod, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """The pod was assumed: it no longer waits for room anywhere."""
        self.nominator.delete_nominated_pod_if_exists(pod)

    def has_nominated_pods(self) -> bool:
        return bool(self.nominator)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """The pods nominated to ``node_name``, as the queue holds them now; one it does not hold
        (popped: in flight, or skipped because it is being deleted) is only its name and UID, as
        upstream's ``nominatedPodToInfo`` makes it."""
        out = []
        for ref in self.nominator.nominated_pods_for_node(node_name):
            qpi = self._infos.get(ref.key)
            out.append(qpi.pod if qpi is not None else ref.bare_pod())
        return out
