"""SchedulingQueue on its own (spec section 5): activeQ order, backoff, unschedulable pool, hints,
in-flight events, flushes, gates, updates and deletes.

Cases ported from upstream ``pkg/scheduler/backend/queue/{scheduling_queue,backoff_queue}_test.go``
(v1.35.4) keep the upstream case name as their pytest id. The queue reads its injected clock: each
test's queue runs on a ``FakeClock`` that starts at ``T0`` and that the test sets to the time of the
calls that follow, never by sleeping. Helpers act at the clock's current time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.backend.queue.queueing_hints import QueueingStrategy, build_hint_map
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.config import load_config
from scheduler.features import features_at
from scheduler.framework import events as ev
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from scheduler.framework.interface import Handle, Plugin, PreEnqueuePlugin
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.plugins import names
from scheduler.plugins.queuesort.priority_sort import PrioritySort
from scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.testing import HOSTNAME, make_node, make_pod
from tests.fakes import FakeClock

PROFILE = "spread-scheduler"
T0 = 10_000.0  # a whole second, so "truncated to the second" is easy to read off
LOW, MID, HIGH = 0, 100, 1000

# Stand-ins for upstream's pvAdd / pvcAdd / pvUpdate / csiNodeUpdate: any resource a plugin registers.
SVC_ADD = ClusterEvent(EventResource.SERVICE, ActionType.ADD, "ServiceAdd")
SVC_UPDATE = ClusterEvent(EventResource.SERVICE, ActionType.UPDATE, "ServiceUpdate")
RS_ADD = ClusterEvent(EventResource.REPLICA_SET, ActionType.ADD, "ReplicaSetAdd")
STS_UPDATE = ClusterEvent(EventResource.STATEFUL_SET, ActionType.UPDATE, "StatefulSetUpdate")
UNSCHEDULED_POD_UPDATE = ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE, "UnscheduledPodUpdate")


class ScriptedPlugin:
    """A plugin whose queueing hint answers ``answer`` for every registered event and logs who asked."""

    def __init__(self, name: str, *events: ClusterEvent, answer: QueueingHint | Exception = QueueingHint.QUEUE) -> None:
        self.NAME = name
        self.events = events
        self.answer = answer
        self.asked: list[tuple[str, ClusterEvent | None]] = []

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(e, self._hint_for(e)) for e in self.events]

    def _hint_for(self, event: ClusterEvent) -> ev.HintFn:
        def hint(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
            self.asked.append((pod.name, event))
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

        return hint


class GatingPlugin(ScriptedPlugin):
    """PreEnqueue: holds every pod while ``closed`` (upstream's test ``preEnqueuePlugin``)."""

    def __init__(self, name: str, *events: ClusterEvent, answer: QueueingHint = QueueingHint.QUEUE) -> None:
        super().__init__(name, *events, answer=answer)
        self.closed = True

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("gated by test",)) if self.closed else None


def framework(*plugins: Plugin) -> Framework:
    """One profile with PrioritySort and ``plugins``; those with ``pre_enqueue`` run at PreEnqueue."""
    pre_enqueue = [p.NAME for p in plugins if isinstance(p, PreEnqueuePlugin)]
    queue_sort = PrioritySort({}, Handle())
    return Framework(
        PROFILE,
        {queue_sort.NAME: queue_sort, **{p.NAME: p for p in plugins}},
        {"queueSort": [queue_sort.NAME], "preEnqueue": pre_enqueue},
        {},
        Handle(),
    )


@pytest.fixture
def clock() -> FakeClock:
    """The queue's clock, at ``T0`` until the test sets it."""
    return FakeClock(T0)


def make_queue(
    *plugins: Plugin,
    clock: FakeClock,
    initial_backoff: float = 1.0,
    max_backoff: float = 10.0,
    max_in_unschedulable: float = 300.0,
) -> SchedulingQueue:
    """A queue over ``framework(*plugins)``."""
    frameworks = {PROFILE: framework(*plugins)}
    return SchedulingQueue(
        frameworks,
        sort_key=queue_sort_key(frameworks),
        clock=clock,
        initial_backoff=initial_backoff,
        max_backoff=max_backoff,
        max_in_unschedulable=max_in_unschedulable,
    )


def default_queue(clock: FakeClock) -> SchedulingQueue:
    """The queue of the shipped default profile (real plugins, real hints, an empty cluster snapshot)."""
    frameworks = build_frameworks(load_config(None))
    for fwk in frameworks.values():
        fwk.handle.snapshot = Cache()  # PodTopologySpread's hints read the pod's constraints through it
    return SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=clock)


def pod(name: str, priority: int = LOW, namespace: str = "ns1") -> Pod:
    return make_pod(name, namespace).priority(priority).build()


def pop(q: SchedulingQueue, expect: str | None = None) -> QueuedPodInfo:
    qpi = q.pop()
    assert qpi is not None, "queue unexpectedly empty"
    if expect is not None:
        assert qpi.pod.name == expect
    return qpi


def pop_all(q: SchedulingQueue) -> list[str]:
    out: list[str] = []
    while (qpi := q.pop()) is not None:
        out.append(qpi.pod.name)
    return out


def fail(q: SchedulingQueue, qpi: QueuedPodInfo, *plugins: str, pending: Sequence[str] = ()) -> None:
    """The scheduler's failure path: rejectors from the Diagnosis, then AddUnschedulableIfNotPresent."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    q.add_unschedulable_if_not_present(qpi, error=not (plugins or pending))


def key(name: str, namespace: str = "ns1") -> str:
    return f"{namespace}/{name}"


# -- activeQ order (5.1) ---------------------------------------------------------------------------


def test_priority_queue_add(clock: FakeClock) -> None:
    """TestPriorityQueue_Add: higher priority first, whatever the arrival order."""
    q = make_queue(clock=clock)
    q.add(pod("mpp", (LOW + HIGH) // 2, "ns2"))
    clock.now = T0 + 1
    q.add(pod("up", LOW))
    clock.now = T0 + 2
    q.add(pod("hpp", HIGH))
    clock.now = T0 + 3
    assert pop_all(q) == ["hpp", "mpp", "up"]


def test_active_queue_orders_by_priority_then_arrival(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("low").priority(1).build())
    clock.now = T0 + 1
    q.add(make_pod("high").priority(9).build())
    clock.now = T0 + 2
    q.add(make_pod("low2").priority(1).build())
    clock.now = T0 + 3
    popped = [q.pop() for _ in range(3)]
    assert [p.pod.name for p in popped if p] == ["high", "low", "low2"]
    assert q.pop() is None


def test_a_retried_pod_goes_behind_pods_that_waited_longer(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("a").build())
    clock.now = T0 + 1
    q.add(make_pod("b").build())
    clock.now = T0 + 2
    a = q.pop()
    assert a is not None and a.pod.name == "a"
    clock.now = T0 + 3
    q.add_unschedulable_if_not_present(a, error=True)  # no rejectors: back after backoff
    clock.now = T0 + 10
    b = q.pop()
    assert b is not None and b.pod.name == "b"


def test_equal_priority_pods_pop_in_timestamp_order(clock: FakeClock) -> None:
    """TestPodTimestamp 'add two pod to activeQ and sort them by the timestamp'."""
    q = make_queue(clock=clock)
    clock.now = T0 + 1
    q.add(pod("test-pod-2", namespace="ns2"))
    clock.now = T0
    q.add(pod("test-pod-1"))
    clock.now = T0 + 0.5
    q.add(pod("test-pod-3"))
    clock.now = T0 + 2
    assert pop_all(q) == ["test-pod-1", "test-pod-3", "test-pod-2"]


def test_recently_tried_pods_go_back(clock: FakeClock) -> None:
    """TestRecentlyTriedPodsGoBack: a retried pod is behind every equal-priority pod that waited longer."""
    q = make_queue(clock=clock)
    for i in range(5):
        q.add(pod(f"test-pod-{i}", HIGH))
    clock.now = T0 + 0.001
    p1 = pop(q, "test-pod-0")
    fail(q, p1, "plugin")
    assert q.location(key("test-pod-0")) == "unschedulable"
    clock.now = T0 + 0.001 + q.max_backoff
    q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)
    assert q.location(key("test-pod-0")) == "active"
    assert pop_all(q) == ["test-pod-1", "test-pod-2", "test-pod-3", "test-pod-4", "test-pod-0"]


def test_pod_failed_scheduling_multiple_times_does_not_block_newer_pod(clock: FakeClock) -> None:
    """TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod."""
    q = make_queue(clock=clock)
    q.add(pod("test-pod-unscheduled", HIGH))
    unscheduled = pop(q, "test-pod-unscheduled")
    fail(q, unscheduled, "plugin")
    clock.now = T0 + q.initial_backoff + 1
    q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)
    unscheduled = pop(q, "test-pod-unscheduled")
    q.add(pod("test-newer-pod", HIGH))  # created while the old one is being tried again
    fail(q, unscheduled, "plugin")
    clock.advance(2 * q.initial_backoff + 1)
    q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)
    assert pop_all(q) == ["test-newer-pod", "test-pod-unscheduled"]


def test_high_priority_backoff(clock: FakeClock) -> None:
    """TestHighPriorityBackoff: an unschedulable high-priority pod backs off instead of blocking the queue."""
    q = make_queue(clock=clock)
    q.add(pod("test-midpod", MID))
    q.add(pod("test-highpod", HIGH))
    high = pop(q, "test-highpod")
    fail(q, high, "fooPlugin")
    q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)
    assert q.location(key("test-highpod")) == "backoff"
    pop(q, "test-midpod")


def test_high_priority_flush_unschedulable_pods_leftover(clock: FakeClock) -> None:
    """TestHighPriorityFlushUnschedulablePodsLeftover: after the flush, priority decides again."""
    q = make_queue(ScriptedPlugin("fakePlugin", ev.NODE_ADD), clock=clock)
    q.add(pod("test-highpod", HIGH))
    high = pop(q, "test-highpod")
    q.add(pod("test-midpod", MID))
    mid = pop(q, "test-midpod")
    fail(q, high, "fakePlugin")
    fail(q, mid, "fakePlugin")
    clock.now = T0 + q.max_in_unschedulable + 1
    assert q.flush_unschedulable_leftover() == 2
    assert pop_all(q) == ["test-highpod", "test-midpod"]


def test_pods_moved_from_the_unschedulable_pool_keep_their_timestamp_order(clock: FakeClock) -> None:
    """TestPodTimestamp 'add two pod to unschedulablePods then move them to activeQ and sort them by the timestamp'."""
    q = make_queue(clock=clock)
    q.add(pod("test-pod-1"))
    q.add(pod("test-pod-2", namespace="ns2"))
    first, second = pop(q, "test-pod-1"), pop(q, "test-pod-2")
    clock.now = T0 + 1
    fail(q, second, "plugin")  # pod 2 fails later than pod 1, but is handed back first
    clock.now = T0
    fail(q, first, "plugin")
    clock.now = T0 + 5
    q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)
    assert pop_all(q) == ["test-pod-1", "test-pod-2"]


# -- backoff durations and expiry (5.2, TV-24) ------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "seconds"),
    [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (7, 10.0), (100, 10.0)],
    ids=str,
)
def test_backoff_doubles_from_one_second_to_ten_by_either_counter(count: int, seconds: float, clock: FakeClock) -> None:
    """Errors count first: with one rejection on record, ``count`` errors still decide (none: the rejection)."""
    q = make_queue(clock=clock)
    by_unschedulable = QueuedPodInfo(pod("p"), T0, unschedulable_count=count)
    by_errors = QueuedPodInfo(pod("p"), T0, consecutive_errors_count=count)
    errored_after_a_rejection = QueuedPodInfo(pod("p"), T0, unschedulable_count=1, consecutive_errors_count=count)
    assert q.backoff_duration(by_unschedulable) == seconds
    assert q.backoff_duration(by_errors) == seconds
    assert q.backoff_duration(errored_after_a_rejection) == (seconds if count else 1.0)


@pytest.mark.parametrize(
    ("initial", "maximum", "unschedulable", "errors", "want"),
    [
        pytest.param(1.0, 32.0, 0, 0, 0.0, id="no backoff"),
        pytest.param(1.0, 32.0, 16, 0, 32.0, id="backoff by UnschedulableCount"),
        pytest.param(1.0, 32.0, 5, 16, 32.0, id="backoff is calculated with ConsecutiveErrorsCount"),
        pytest.param(1.0, 32.0, 5, 1, 1.0, id="consecutive errors win over a larger UnschedulableCount"),
        pytest.param(0.0, 0.0, 16, 0, 0.0, id="zero maxBackoffDuration means no backoff"),
        pytest.param(3.0, 1000.0, 5, 0, 48.0, id="normal"),
        pytest.param(1.0, 32.0, 16, 0, 32.0, id="hitting max backoff duration"),
        pytest.param(1.0, float(2**31 - 1), 32, 0, float(2**31 - 1), id="overflow_32bit"),
        pytest.param(1.0, float(2**63 - 1), 64, 0, float(2**63 - 1), id="overflow_64bit"),
    ],
)
def test_backoff_queue_calculate_backoff_duration(
    initial: float, maximum: float, unschedulable: int, errors: int, want: float, clock: FakeClock
) -> None:
    """TestBackoffQueue_getBackoffTime + TestBackoffQueue_calculateBackoffDuration."""
    q = make_queue(clock=clock, initial_backoff=initial, max_backoff=maximum)
    qpi = QueuedPodInfo(pod("p"), T0, unschedulable_count=unschedulable, consecutive_errors_count=errors)
    assert q.backoff_duration(qpi) == want
    assert q.is_backing_off(qpi) is (want > 0)


def test_backoff_expiry_is_truncated_to_the_whole_second(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    qpi = QueuedPodInfo(pod("p"), T0 + 0.7, unschedulable_count=1)  # T0+0.7 + 1 s = T0+1.7 -> T0+1
    assert q.backoff_expiry(qpi) == T0 + 1
    qpi = QueuedPodInfo(pod("p"), T0 + 0.7, unschedulable_count=2)  # + 2 s = T0+2.7 -> T0+2
    assert q.backoff_expiry(qpi) == T0 + 2


@pytest.mark.parametrize(
    ("now", "backing_off"),
    [
        pytest.param(T0 + 0.7, True, id="just-failed"),
        pytest.param(T0 + 1.0, True, id="expiry-equals-current-second-window"),
        pytest.param(T0 + 1.9, True, id="inclusive-expiry-window"),
        pytest.param(T0 + 1.999, True, id="still-inside-the-expiry-window"),
        pytest.param(T0 + 2.0, False, id="next-window"),
        pytest.param(T0 + 30.0, False, id="long-after"),
    ],
)
def test_backing_off_while_expiry_is_not_before_the_current_second(
    now: float, backing_off: bool, clock: FakeClock
) -> None:
    q = make_queue(clock=clock)
    qpi = QueuedPodInfo(pod("p"), T0 + 0.7, unschedulable_count=1)
    clock.now = now
    assert q.is_backing_off(qpi) is backing_off


@pytest.mark.parametrize("step", range(7), ids=lambda i: f"step {i}")
def test_back_off_flow(step: int, clock: FakeClock) -> None:
    """TestBackOffFlow: 1, 2, 4, 8, 10, 10, 10 s, the pod leaves backoffQ only once that has passed."""
    want = [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    q = make_queue(clock=clock)
    clock.now = T0 + 0.25  # off the second boundary on purpose
    q.add(pod("test-pod", namespace="test-ns"))
    for i in range(step + 1):
        timestamp = clock.now
        qpi = pop(q, "test-pod")
        assert qpi.attempts == i + 1
        fail(q, qpi, "unsched-plugin")
        q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None)  # an event happens
        assert q.location(key("test-pod", "test-ns")) == "backoff"
        assert q.backoff_duration(qpi) == want[i]
        assert q.backoff_expiry(qpi) == math.floor(timestamp + want[i])
        clock.advance(1.0)  # an early flush: still backing off
        q.flush_backoff_completed()
        assert q.location(key("test-pod", "test-ns")) == "backoff"
        clock.advance(want[i])  # the whole backoff has passed since
        q.flush_backoff_completed()
        assert q.location(key("test-pod", "test-ns")) == "active"


# -- backoffQ / error backoffQ mechanics ------------------------------------------------------------


def to_backoff(q: SchedulingQueue, name: str, *plugins: str, priority: int = LOW) -> None:
    """Put a pod in backoffQ (rejected by ``plugins`` + an in-flight Node/Add) or errorBackoffQ (none),
    failed at the clock's time."""
    q.add(pod(name, priority))
    qpi = pop(q, name)
    if plugins:
        q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n").build())
    fail(q, qpi, *plugins)
    assert q.location(key(name)) == ("backoff" if plugins else "error")


POD_INFOS = {  # name -> (seconds from "now" it failed, rejector plugins)
    "pod0": (-2.0, ("plugin",)),
    "pod1": (1.0, ("plugin",)),
    "pod2": (-2.0, ()),
    "pod3": (1.0, ()),
}


@pytest.mark.parametrize(
    ("in_backoff", "want_moved"),
    [
        pytest.param([], [], id="Both queues empty, no pods moved to activeQ"),
        pytest.param(["pod0", "pod1"], ["pod0"], id="Pods only in backoffQ, some pods moved to activeQ"),
        pytest.param(["pod2", "pod3"], ["pod2"], id="Pods only in errorBackoffQ, some pods moved to activeQ"),
        pytest.param(
            ["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"], id="Pods in both queues, some pods moved to activeQ"
        ),
        pytest.param(["pod0", "pod2"], ["pod0", "pod2"], id="Pods in both queues, all pods moved to activeQ"),
        pytest.param(["pod1", "pod3"], [], id="Pods in both queues, no pods moved to activeQ"),
    ],
)
def test_backoff_queue_pop_all_backoff_completed(
    in_backoff: list[str], want_moved: list[str], clock: FakeClock
) -> None:
    """TestBackoffQueue_popAllBackoffCompleted."""
    q = make_queue(ScriptedPlugin("plugin", ev.NODE_ADD), clock=clock)
    now = T0
    # Latest failure first, so setting one up never flushes one set up before.
    for name in sorted(in_backoff, key=lambda n: -POD_INFOS[n][0]):
        offset, plugins = POD_INFOS[name]
        clock.now = now + offset
        to_backoff(q, name, *plugins)
    clock.now = now
    q.flush_backoff_completed()
    assert sorted(n for n in in_backoff if q.location(key(n)) == "active") == want_moved
    stay = [n for n in in_backoff if n not in want_moved]
    assert all(q.location(key(n)) in ("backoff", "error") for n in stay)


def test_backoff_queue_ordering(clock: FakeClock) -> None:
    """TestBackoffQueueOrdering 'Pods with the same window are ordered by priority if PopFromBackoffQ is enabled'.

    Observed through Pop with activeQ empty, which takes backoffQ's head before it expires.
    """
    q = make_queue(ScriptedPlugin("plugin", ev.NODE_ADD), clock=clock)
    now = T0
    setups = [  # (name, priority, failed at) -- latest failure first
        ("pod0", 1, now),
        ("pod1", 1, now - 1),
        ("pod2", 2, now - 2 + 0.001),
        ("pod3", 1, now - 2),
        ("pod4", 2, now - 2),
        ("pod5", 1, now - 3),
    ]
    for name, prio, failed in setups:
        clock.now = failed
        to_backoff(q, name, "plugin", priority=prio)
    # Expiries: pod5 now-2 | pod4, pod2, pod3 now-1 (priority, then timestamp) | pod1 now | pod0 now+1
    clock.now = now - 10
    assert pop_all(q) == ["pod5", "pod4", "pod2", "pod3", "pod1", "pod0"]


def test_priority_queue_pop(clock: FakeClock) -> None:
    """TestPriorityQueue_Pop 'Pop pods from both activeQ and backoffQ when PopFromBackoffQ is enabled'.

    activeQ first; then, with activeQ empty, backoffQ even though still backing off; never errorBackoffQ
    nor the unschedulable pool.
    """
    q = make_queue(ScriptedPlugin("plugin", ev.NODE_ADD), clock=clock)
    to_backoff(q, "hpp", "plugin", priority=HIGH)
    to_backoff(q, "hpp2", priority=HIGH)  # error backoff
    q.add(pod("up"))
    fail(q, pop(q, "up"), "plugin")
    q.add(pod("mpp", MID))
    assert pop_all(q) == ["mpp", "hpp"]
    assert q.location(key("hpp2")) == "error"
    assert q.location(key("up")) == "unschedulable"
    clock.now = T0 + 1.999
    assert pop_all(q) == []  # the error backoff expires at T0+1: still backing off in that second
    clock.now = T0 + 2
    assert pop_all(q) == ["hpp2"]


def test_error_backoff_pod_is_never_popped_early_even_with_nothing_else_to_do(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    q.add(pod("errored"))
    clock.now = T0 + 0.5
    for attempt, backoff in enumerate([1, 2, 4, 8, 10, 10], start=1):
        qpi = pop(q, "errored")
        fail(q, qpi)  # an Error: no rejector plugins
        assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (attempt, 0)
        expiry = math.floor(clock.now + backoff)
        clock.now = expiry + 0.999
        assert q.pop() is None, f"popped before its {backoff}s error backoff ended"
        assert q.location(key("errored")) == "error"
        clock.now = expiry + 1


def test_error_backoff_pods_are_not_popped_early_but_rejected_ones_are(clock: FakeClock) -> None:
    frameworks = build_frameworks(load_config(None))  # no snapshot: PodTopologySpread's hint queues
    q = SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=clock)
    q.add(make_pod("err").build())
    q.add(make_pod("rej").build())
    err, rej = q.pop(), q.pop()
    assert err is not None and rej is not None
    q.add_unschedulable_if_not_present(err, error=True)
    assert q.location("default/err") == "error"
    rej.unschedulable_plugins = {"PodTopologySpread"}
    q.add_unschedulable_if_not_present(rej, error=False)
    assert q.location("default/rej") == "unschedulable"
    moved = q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n").build())
    assert moved == 1 and q.location("default/rej") == "backoff"
    popped = q.pop()  # activeQ empty: the backing-off rejected pod is taken early, the errored one is not
    assert popped is not None and popped.pod.name == "rej"
    assert q.pop() is None
    clock.now = T0 + 2
    again = q.pop()
    assert again is not None and again.pod.name == "err"


def test_a_rejection_resets_the_consecutive_error_count(clock: FakeClock) -> None:
    q = make_queue(ScriptedPlugin("plugin", ev.NODE_ADD), clock=clock)
    q.add(pod("p"))
    qpi = pop(q, "p")
    fail(q, qpi)
    clock.now = T0 + 2
    qpi = pop(q, "p")
    fail(q, qpi)
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (2, 0)
    clock.now = T0 + 5
    qpi = pop(q, "p")
    fail(q, qpi, "plugin")
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (0, 1)
    assert q.backoff_duration(qpi) == 1.0
    assert q.location(key("p")) == "unschedulable"


# -- in-flight events (5.5), ported from Test_InFlightPods --------------------------------------------


@dataclass(frozen=True)
class Pop:
    name: str


@dataclass(frozen=True)
class Happen:
    event: ClusterEvent


@dataclass(frozen=True)
class Fail:
    name: str
    plugins: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()


Action = Pop | Happen | Fail


def play(q: SchedulingQueue, names: Sequence[str], actions: Sequence[Action]) -> None:
    for name in names:
        q.add(pod(name))
    popped: dict[str, QueuedPodInfo] = {}
    for action in actions:
        if isinstance(action, Pop):
            popped[action.name] = pop(q, action.name)
        elif isinstance(action, Happen):
            q.move_all_to_active_or_backoff(action.event, None, None)
        else:
            fail(q, popped.pop(action.name), *action.plugins, pending=action.pending)


def foo(name: str, *events: ClusterEvent, answer: QueueingHint | Exception = QueueingHint.QUEUE) -> ScriptedPlugin:
    return ScriptedPlugin(name, *events, answer=answer)


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ALL_FOO_EVENTS = (SVC_ADD, ev.NODE_ADD, RS_ADD, STS_UPDATE, ev.ASSIGNED_POD_ADD)

IN_FLIGHT_CASES = [
    pytest.param(
        [foo("fooPlugin1", *ALL_FOO_EVENTS)],
        ["targetpod", "targetpod2"],
        [Happen(RS_ADD), Pop("targetpod"), Happen(SVC_ADD), Pop("targetpod2"), Happen(ev.NODE_ADD), Fail("targetpod")],
        {"targetpod": "error", "targetpod2": "in-flight"},
        id="Pod, registered in inFlightPods, is enqueued back to backoffQ",
    ),
    pytest.param(
        [foo("fooPlugin1", *ALL_FOO_EVENTS)],
        ["targetpod", "targetpod2"],
        [
            Happen(RS_ADD),
            Pop("targetpod"),
            Happen(SVC_ADD),
            Pop("targetpod2"),
            Happen(ev.NODE_ADD),
            Fail("targetpod"),
            Happen(STS_UPDATE),
            Fail("targetpod2"),
        ],
        {"targetpod": "error", "targetpod2": "error"},
        id="All Pods registered in inFlightPods are enqueued back to activeQ",
    ),
    pytest.param(
        [foo("fooPlugin1", *ALL_FOO_EVENTS), foo("nodeAddOnly", ev.NODE_ADD)],
        ["targetpod", "targetpod2", "targetpod3"],
        [
            Happen(RS_ADD),
            Pop("targetpod"),
            Happen(SVC_ADD),
            Pop("targetpod2"),
            Happen(ev.NODE_ADD),
            Pop("targetpod3"),
            Happen(ev.ASSIGNED_POD_ADD),
            Fail("targetpod2"),
            # Extension: the two pods still in flight are judged on the events since their own pop.
            Fail("targetpod3", ("nodeAddOnly",)),  # Node/Add came before its pop
            Fail("targetpod", ("nodeAddOnly",)),  # Node/Add came after its pop
        ],
        {"targetpod": "backoff", "targetpod2": "error", "targetpod3": "unschedulable"},
        id="One intermediate Pod registered in inFlightPods is enqueued back to activeQ",
    ),
    pytest.param(
        [foo("fooPlugin1", ev.ASSIGNED_POD_ADD, answer=SKIP)],
        ["targetpod"],
        [
            Happen(ev.UNSCHEDULABLE_TIMEOUT),
            Pop("targetpod"),
            Happen(ev.ASSIGNED_POD_ADD),
            Fail("targetpod", ("fooPlugin1",)),
        ],
        {"targetpod": "unschedulable"},
        id="events before popping Pod are ignored when Pod is enqueued back to queue",
    ),
    pytest.param(
        [foo("fooPlugin1", ev.ASSIGNED_POD_ADD)],
        ["targetpod"],
        [Pop("targetpod"), Happen(ev.ASSIGNED_POD_ADD), Fail("targetpod")],
        {"targetpod": "error"},
        id="pod is enqueued to backoff if no failed plugin",
    ),
    pytest.param(
        [foo("fooPlugin1", ev.ASSIGNED_POD_ADD)],
        ["targetpod"],
        [Pop("targetpod"), Happen(ev.NODE_ADD), Fail("targetpod", ("fooPlugin1",))],
        {"targetpod": "unschedulable"},
        id="pod is enqueued to unschedulable pod pool if no events that can make the pod schedulable",
    ),
    pytest.param(
        [foo("fooPlugin1", ev.ASSIGNED_POD_ADD, answer=SKIP)],
        ["targetpod"],
        [Pop("targetpod"), Happen(ev.ASSIGNED_POD_ADD), Fail("targetpod", ("fooPlugin1",))],
        {"targetpod": "unschedulable"},
        id="pod is enqueued to unschedulable pod pool because the failed plugin has a hint fn but it returns Skip",
    ),
    pytest.param(
        [
            foo("fooPlugin3", ev.ASSIGNED_POD_ADD, answer=SKIP),
            foo("fooPlugin2", ev.ASSIGNED_POD_ADD),
            foo("fooPlugin1", ev.ASSIGNED_POD_ADD),
        ],
        ["targetpod"],
        [
            Pop("targetpod"),
            Happen(ev.ASSIGNED_POD_ADD),
            Fail("targetpod", ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",)),
        ],
        {"targetpod": "active"},
        id="pod is enqueued to activeQ because the Pending plugins has a hint fn and it returns Queue",
    ),
    pytest.param(
        [foo("fooPlugin2", ev.ASSIGNED_POD_ADD, answer=SKIP), foo("fooPlugin1", ev.ASSIGNED_POD_ADD)],
        ["targetpod"],
        [Pop("targetpod"), Happen(ev.ASSIGNED_POD_ADD), Fail("targetpod", ("fooPlugin1", "fooPlugin2"))],
        {"targetpod": "backoff"},
        id="pod is enqueued to backoffQ because the failed plugin has a hint fn and it returns Queue",
    ),
    pytest.param(
        [
            foo("fooPlugin3", ev.ASSIGNED_POD_ADD, answer=SKIP),
            foo("fooPlugin2", ev.ASSIGNED_POD_ADD),
            foo("fooPlugin1", ev.ASSIGNED_POD_ADD),
        ],
        ["targetpod", "targetpod2"],
        [
            Pop("targetpod"),
            Happen(ev.NODE_ADD),
            Pop("targetpod2"),
            Happen(ev.ASSIGNED_POD_ADD),
            Fail("targetpod"),
            Fail("targetpod2", ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",)),
        ],
        {"targetpod": "error", "targetpod2": "active"},
        id="pod is enqueued to activeQ because the pending plugin has a hint fn and it returns Queue "
        "for a concurrent event that was received while some other pod was in flight",
    ),
]


@pytest.mark.parametrize(("plugins", "names", "actions", "want"), IN_FLIGHT_CASES)
def test_in_flight_pods(
    plugins: list[ScriptedPlugin], names: list[str], actions: list[Action], want: dict[str, str], clock: FakeClock
) -> None:
    """Test_InFlightPods: events seen while a pod is in flight decide where it goes when it fails."""
    q = make_queue(*plugins, clock=clock)
    play(q, names, actions)
    assert {name: q.location(key(name)) for name in names} == want


def test_popped_pod_must_have_empty_unschedulable_plugins_and_pending_plugins(clock: FakeClock) -> None:
    """Test_InFlightPods 'popped pod must have empty UnschedulablePlugins and PendingPlugins' + TestPop."""
    q = make_queue(foo("fooPlugin1", SVC_ADD), clock=clock)
    q.add(pod("targetpod"))
    qpi = pop(q, "targetpod")
    fail(q, qpi, "fooPlugin2", pending=("fooPlugin1",))
    assert q.location(key("targetpod")) == "unschedulable"
    q.move_all_to_active_or_backoff(SVC_ADD, None, None)
    assert q.location(key("targetpod")) == "active"  # Queue from a Pending plugin skips the backoff
    qpi = pop(q, "targetpod")
    assert qpi.unschedulable_plugins == set() and qpi.pending_plugins == set()
    assert qpi.attempts == 2
    fail(q, qpi)  # failed with an error this time: no rejectors -> error backoff
    assert q.location(key("targetpod")) == "error"


def test_in_flight_event_replay_closes_the_race_with_the_real_plugins(clock: FakeClock) -> None:
    """A node that arrives while the pod is being rejected requeues it (TV-25 replayed in flight)."""
    q = default_queue(clock)
    pending = make_pod("p").label("foo", "bar").spread(HOSTNAME, 1, match={"foo": "bar"}).build()
    q.add(pending)
    qpi = pop(q, "p")
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n4").build())
    fail(q, qpi, names.POD_TOPOLOGY_SPREAD)
    assert q.location("default/p") == "backoff"
    # Without the event (or with one the hint skips) it is parked.
    q.add(make_pod("p2").label("foo", "bar").spread(HOSTNAME, 1, match={"foo": "bar"}).build())
    qpi2 = pop(q, "p2")
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("nolabel").unlabel(HOSTNAME).build())
    fail(q, qpi2, names.POD_TOPOLOGY_SPREAD)
    assert q.location("default/p2") == "unschedulable"


def test_events_during_the_attempt_are_replayed_when_it_fails(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("p").build())
    qpi = q.pop()
    assert qpi is not None
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("fresh").build())  # while in flight
    fail(q, qpi, "TaintToleration")
    assert q.location("default/p") in ("active", "backoff")


def test_without_in_flight_events_the_pod_is_parked(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("p").build())
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi, "TaintToleration")
    assert q.location("default/p") == "unschedulable"


def test_an_in_flight_pod_deleted_before_it_fails_is_not_requeued(clock: FakeClock) -> None:
    q = make_queue(foo("fooPlugin1", ev.NODE_ADD), clock=clock)
    q.add(pod("gone"))
    qpi = pop(q, "gone")
    q.delete(key("gone"))
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None)
    fail(q, qpi, "fooPlugin1")
    assert q.location(key("gone")) is None
    assert len(q) == 0
    clock.now = T0 + 100
    assert q.pop() is None


# -- queueing hints on cluster events (5.4) --------------------------------------------------------------


def parked(q: SchedulingQueue, name: str, *plugins: str, pending: Sequence[str] = ()) -> QueuedPodInfo:
    """Add, pop and fail a pod so that it sits in the unschedulable pool with ``plugins`` as rejectors."""
    q.add(pod(name))
    qpi = pop(q, name)
    fail(q, qpi, *plugins, pending=pending)
    assert q.location(key(name)) == "unschedulable"
    return qpi


def test_only_the_rejecting_plugins_are_asked(clock: FakeClock) -> None:
    skipper = foo("skipper", ev.NODE_ADD, answer=SKIP)
    queuer = foo("queuer", ev.NODE_ADD)
    bystander = foo("bystander", ev.NODE_ADD)
    q = make_queue(skipper, queuer, bystander, clock=clock)
    parked(q, "by-skipper", "skipper")
    parked(q, "by-both", "skipper", "queuer")
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 1
    assert q.location(key("by-skipper")) == "unschedulable"  # QueueSkip keeps it
    assert q.location(key("by-both")) == "backoff"  # one Queue is enough
    assert sorted(name for name, _ in skipper.asked) == ["by-both", "by-skipper"]
    assert [name for name, _ in queuer.asked] == ["by-both"]
    assert bystander.asked == []  # never a rejector: never asked


def test_only_the_rejecting_plugins_hints_are_asked(clock: FakeClock) -> None:
    """The same with the default profile's real hints."""
    q = default_queue(clock)
    q.add(make_pod("p").labels({"foo": "bar"}).build())
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi, "TaintToleration")
    # A pod add event only PodTopologySpread registers for: TaintToleration is not asked, nothing moves.
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, make_pod("x").node("n").build())
    assert q.location("default/p") == "unschedulable"
    # An untainted node appearing: TaintToleration's hint says Queue.
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n").build())
    assert q.location("default/p") in ("active", "backoff")


def test_a_failing_hint_counts_as_queue(clock: FakeClock) -> None:
    q = make_queue(foo("broken", ev.NODE_ADD, answer=RuntimeError("hint blew up")), clock=clock)
    parked(q, "p", "broken")
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 1
    assert q.location(key("p")) == "backoff"


def test_an_event_nobody_registered_moves_nothing(clock: FakeClock) -> None:
    plugin = foo("labels", ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL))
    q = make_queue(plugin, clock=clock)
    parked(q, "p", "labels")
    assert q.move_all_to_active_or_backoff(SVC_ADD, None, None) == 0
    # A generic Pod update is numerically wider than UpdatePodLabel: it never matches that registration.
    generic = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE, "PodUpdate")
    assert q.move_all_to_active_or_backoff(generic, None, None) == 0
    assert plugin.asked == []
    # A Pod registration matches the AssignedPod flavour of the same action.
    label = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL, "PodLabelChange")
    assert q.move_all_to_active_or_backoff(label, None, None) == 1
    assert plugin.asked == [("p", plugin.events[0])]


def test_a_wildcard_event_moves_every_pod_without_asking(clock: FakeClock) -> None:
    plugin = foo("skipper", ev.NODE_ADD, answer=SKIP)
    q = make_queue(plugin, clock=clock)
    parked(q, "a", "skipper")
    parked(q, "b", "skipper")
    clock.now = T0 + 5
    assert q.move_all_to_active_or_backoff(ev.UNSCHEDULABLE_TIMEOUT, None, None) == 2
    assert plugin.asked == []
    assert q.location(key("a")) == q.location(key("b")) == "active"


@pytest.mark.parametrize(
    ("plugins", "pending", "answer", "wait", "want"),
    [
        pytest.param((), ("foo",), QUEUE, 0.0, "active", id="Queue queues pod to activeQ"),
        pytest.param(("foo",), (), QUEUE, 0.0, "backoff", id="Queue queues pod to backoffQ if Pod is backing off"),
        pytest.param(("foo",), (), QUEUE, 2.0, "active", id="Queue queues pod to activeQ if Pod is not backing off"),
        pytest.param(("foo",), (), SKIP, 0.0, "unschedulable", id="Skip queues pod to unschedulablePods"),
    ],
)
def test_priority_queue_move_all_to_active_or_backoff_queue_with_queueing_hint(
    plugins: tuple[str, ...], pending: tuple[str, ...], answer: QueueingHint, wait: float, want: str, clock: FakeClock
) -> None:
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint (``wait`` = initial backoff + 1 s)."""
    q = make_queue(foo("foo", ev.NODE_ADD, answer=answer), clock=clock)
    parked(q, "pod1", *plugins, pending=pending)
    clock.now = T0 + wait
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None)
    assert q.location(key("pod1")) == want


def test_hint_function_is_not_called_when_pod_is_gated_by_the_plugin_that_isnt_interested_in_the_event(
    clock: FakeClock,
) -> None:
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint, gated case."""
    loud = foo("foo", ev.NODE_ADD, answer=RuntimeError("must not be asked"))
    q = make_queue(SchedulingGates({}, Handle()), loud, clock=clock)
    q.add(make_pod("pod1", "ns1").gate("g").build())
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 0
    assert loud.asked == []
    assert q.location(key("pod1")) == "unschedulable"


def test_hint_of_the_gating_plugin_is_asked_and_preenqueue_decides_again(clock: FakeClock) -> None:
    """Adapted from the case 'QueueHintFunction is called when Pod is gated by the plugin that is
    interested in the event' (never failed, so no backoff: it goes to activeQ)."""
    gate = GatingPlugin("foo", ev.NODE_ADD)
    q = make_queue(gate, clock=clock)
    q.add(pod("pod1"))
    info = q.info(key("pod1"))
    assert info is not None and info.gating_plugin == "foo" and info.rejectors == {"foo"}
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None)  # hint says Queue, gate still closed
    assert [name for name, _ in gate.asked] == ["pod1"]
    assert q.location(key("pod1")) == "unschedulable"
    gate.closed = False
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None)
    assert q.location(key("pod1")) == "active"
    assert pop(q, "pod1").gating_plugin == ""


# -- the NodeAffinity Node/UpdateNodeTaint always-Queue work-around (#109437, spec 2.6) -----------------

NODE_TAINT = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaintChange")
NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabelChange")


def taint_registrations(plugin: str, hint_map: dict[str, list[tuple[str, ClusterEventWithHint]]]) -> int:
    return sum(
        1
        for name, reg in hint_map[PROFILE]
        if name == plugin
        and reg.event.resource is EventResource.NODE
        and reg.event.action & ActionType.UPDATE_NODE_TAINT
    )


def test_default_profile_registers_update_node_taint_for_node_affinity_and_node_name() -> None:
    hint_map = build_hint_map(build_frameworks(load_config(None)))
    affinity = make_pod("p").required_terms({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]})
    elsewhere, old = make_node("n1").label("zone", "z1").build(), make_node("n1").build()
    for plugin in (names.NODE_AFFINITY, names.NODE_NAME):
        added = [
            reg
            for name, reg in hint_map[PROFILE]
            if name == plugin and reg.event == ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
        ]
        assert len(added) == 1, plugin
        # The default hint: Queue whatever the node, even one the pod can never use.
        assert added[0].hint(affinity.build(), old, elsewhere) is QueueingHint.QUEUE
    for plugin in (names.TAINT_TOLERATION, names.POD_TOPOLOGY_SPREAD, names.NODE_UNSCHEDULABLE):
        assert taint_registrations(plugin, hint_map) == 1, plugin  # their own, nothing added
    assert taint_registrations(names.SCHEDULING_GATES, hint_map) == 0


def test_node_affinity_also_answers_taint_updates_always_queue_109437() -> None:
    regs = build_hint_map(build_frameworks(load_config(None)))[PROFILE]
    taint_regs = [r for plugin, r in regs if plugin == "NodeAffinity" and r.event.action & ActionType.UPDATE_NODE_TAINT]
    assert len(taint_regs) == 1
    assert taint_regs[0].hint(make_pod("p").build(), None, None) is QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("events", "added"),
    [
        pytest.param((ev.NODE_ADD,), True, id="node-add-only-gets-taint"),
        pytest.param(
            (ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),), True, id="add-and-label"
        ),
        pytest.param((ev.NODE_ADD, NODE_TAINT), False, id="already-registers-taint"),
        pytest.param((ClusterEvent(EventResource.NODE, ActionType.ALL),), False, id="node-all"),
        pytest.param((NODE_LABEL,), False, id="no-node-add"),
        pytest.param((ClusterEvent(EventResource.POD, ActionType.ADD),), False, id="pod-add-is-not-node-add"),
    ],
)
def test_build_hint_map_work_around(events: tuple[ClusterEvent, ...], added: bool) -> None:
    plugin = foo("plug", *events)
    hint_map = build_hint_map({PROFILE: framework(plugin)})
    regs = [reg.event for name, reg in hint_map[PROFILE] if name == "plug"]
    assert regs[: len(events)] == list(events)
    assert regs[len(events) :] == ([ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)] if added else [])


def test_node_affinity_rejected_pod_is_requeued_by_any_taint_change(clock: FakeClock) -> None:
    q = default_queue(clock)
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]}
    q.add(make_pod("p").required_terms(term).build())
    fail(q, pop(q, "p"), names.NODE_AFFINITY)
    old, new = make_node("n1").label("zone", "z1").build(), make_node("n1").label("zone", "z1").label("x", "y").build()
    assert q.move_all_to_active_or_backoff(NODE_LABEL, old, new) == 0  # the real hint: still no match
    tainted = make_node("n1").label("zone", "z1").taint("k", "v").build()
    assert q.move_all_to_active_or_backoff(NODE_TAINT, old, tainted) == 1  # always Queue
    assert q.location("default/p") == "backoff"


# -- the unschedulable pool flush (5.3) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "max_in_unschedulable",
    [
        pytest.param(300.0, id="New priority queue by the default value of podMaxInUnschedulablePodsDuration"),
        pytest.param(30.0, id="New priority queue by user-defined value of podMaxInUnschedulablePodsDuration"),
    ],
)
def test_priority_queue_init_pod_max_in_unschedulable_pods_duration(
    max_in_unschedulable: float, clock: FakeClock
) -> None:
    """TestPriorityQueue_initPodMaxInUnschedulablePodsDuration, plus the strict '>' at the boundary."""
    q = make_queue(foo("plugin", ev.NODE_ADD), clock=clock, max_in_unschedulable=max_in_unschedulable)
    clock.now = T0 - 1
    parked(q, "test-pod-1", "plugin")
    clock.now = T0 - 2
    parked(q, "test-pod-2", "plugin")
    clock.now = T0 - 2 + max_in_unschedulable
    assert q.flush_unschedulable_leftover() == 0  # exactly the limit: stays
    clock.now = T0 - 1 + max_in_unschedulable
    assert q.flush_unschedulable_leftover() == 1  # pod 2 is 1 s over
    assert q.location(key("test-pod-1")) == "unschedulable"
    clock.now = T0 - 1 + max_in_unschedulable + 0.001
    assert q.flush_unschedulable_leftover() == 1
    clock.now = T0 + max_in_unschedulable
    assert pop_all(q) == ["test-pod-2", "test-pod-1"]


def test_five_minute_flush_is_strictly_greater_and_skips_gated_pods(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("p").build())
    q.add(make_pod("gated").gate("wait").build())
    assert q.location("default/gated") == "unschedulable"
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi, "TaintToleration")
    clock.now = T0 + 300
    assert q.flush_unschedulable_leftover() == 0
    clock.now = T0 + 300.5
    assert q.flush_unschedulable_leftover() == 1
    assert q.location("default/gated") == "unschedulable"


def test_flush_sends_a_still_backing_off_pod_to_backoff_and_leaves_gated_pods(clock: FakeClock) -> None:
    q = make_queue(foo("plugin", ev.NODE_ADD), SchedulingGates({}, Handle()), clock=clock, max_in_unschedulable=0.5)
    parked(q, "waiting", "plugin")
    clock.now = T0 - 10_000
    q.add(make_pod("gated", "ns1").gate("g").build())
    clock.now = T0 + 0.6
    assert q.flush_unschedulable_leftover() == 1
    assert q.location(key("waiting")) == "backoff"  # expiry T0+1 is not before the current second
    assert q.location(key("gated")) == "unschedulable"
    assert q.pending_counts()["gated"] == 1


# -- SchedulingGates: gated, then released by the gate-removal update ----------------------------------------


def test_scheduling_gates_hold_the_pod_until_the_last_gate_is_removed(clock: FakeClock) -> None:
    q = default_queue(clock)
    two = make_pod("p").gate("g1").gate("g2")
    q.add(two.build())
    info = q.info("default/p")
    assert info is not None and info.gating_plugin == names.SCHEDULING_GATES
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    clock.now = T0 + 1_000
    assert q.pop() is None
    assert q.flush_unschedulable_leftover() == 0  # the flush never releases a gated pod

    one = make_pod("p").gate("g2")
    clock.now = T0 + 1
    q.update(two.build(), one.build())  # a gate left: a generic update, not "gates eliminated"
    assert q.location("default/p") == "unschedulable"

    none = make_pod("p").build()
    clock.now = T0 + 2
    q.update(one.build(), none)
    assert q.location("default/p") == "active"
    popped = pop(q, "p")
    assert popped.pod is none and popped.gating_plugin == ""


def test_removing_the_last_gate_releases_the_pod(clock: FakeClock) -> None:
    q = default_queue(clock)
    gated = make_pod("p").gate("wait")
    old = gated.build()
    q.add(old)
    gated.spec.pop("schedulingGates")
    q.update(old, gated.build())
    assert q.location("default/p") == "active"


def test_queued_pod_info_gated_set_upon_creation_and_unset_upon_update(clock: FakeClock) -> None:
    """Test_queuedPodInfo_gatedSetUponCreationAndUnsetUponUpdate."""
    q = default_queue(clock)
    gated = make_pod("test-pod").gate("g").build()
    q.add(gated)
    info = q.info("default/test-pod")
    assert info is not None and info.gating_plugin == names.SCHEDULING_GATES
    q.update(gated, make_pod("test-pod").build())
    info = q.info("default/test-pod")
    assert info is not None and info.gating_plugin == ""


# -- updates of pending pods (5.6), ported from TestPriorityQueue_Update -----------------------------------


def annotated(name: str, value: str, priority: int = MID) -> Pod:
    return make_pod(name, "ns2").priority(priority).set("metadata.annotations", {"foo": value}).build()


def test_update_pod_that_didnt_exist_in_the_queue(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    new = annotated("mpp", "test")
    q.update(annotated("mpp", ""), new)
    assert q.location("ns2/mpp") == "active"
    assert pop(q).pod is new


def test_when_updating_a_pod_that_is_already_in_active_q_the_pod_should_remain_in_active_q(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    q.add(pod("a"))
    clock.now = T0 + 1
    q.add(pod("b"))
    newer = make_pod("b", "ns1").priority(HIGH).build()
    clock.now = T0 + 2
    q.update(pod("b"), newer)
    assert q.location(key("b")) == "active" and len(q) == 2
    first = pop(q, "b")  # replaced in place: the new priority counts, no duplicate entry
    assert first.pod is newer and first.timestamp == T0 + 1
    assert pop_all(q) == ["a"]


def test_update_in_active_queue_replaces_and_delete_removes(clock: FakeClock) -> None:
    q = default_queue(clock)
    old = make_pod("p").priority(1).build()
    q.add(old)
    q.add(make_pod("q").priority(5).build())
    q.update(old, make_pod("p").priority(10).build())
    first = q.pop()
    assert first is not None and first.pod.name == "p" and first.pod.priority == 10
    q.delete("default/q")
    assert q.pop() is None and len(q) == 0


def test_updating_a_pod_in_backoff_queue_that_is_still_backing_off_updates_it_there(clock: FakeClock) -> None:
    """TestPriorityQueue_Update 'When updating a pod that is in backoff queue and is still backing off,
    it will be updated in backoff queue'."""
    q = make_queue(clock=clock)
    to_backoff(q, "mpp")
    new = make_pod("mpp", "ns1").label("x", "y").build()
    q.update(pod("mpp"), new)
    assert q.location(key("mpp")) == "error"
    info = q.info(key("mpp"))
    assert info is not None and info.pod is new
    clock.now = T0 + 2
    assert pop_all(q) == ["mpp"]


UPDATE_PLUGINS = (foo("queuePlugin", UNSCHEDULED_POD_UPDATE), foo("skipPlugin", UNSCHEDULED_POD_UPDATE, answer=SKIP))


@pytest.mark.parametrize(
    ("rejector", "wait", "want"),
    [
        pytest.param(
            "queuePlugin",
            0.0,
            "backoff",
            id="when updating a pod which is in unschedulable queue and is backing off, "
            "it will be moved to backoff queue",
        ),
        pytest.param(
            "queuePlugin",
            10.0,
            "active",
            id="when updating a pod which is in unschedulable queue and is not backing off, "
            "it will be moved to active queue",
        ),
        pytest.param(
            "skipPlugin",
            0.0,
            "unschedulable",
            id="when updating a pod which is in unschedulable pods but the plugin returns skip, "
            "it will remain in unschedulablePods",
        ),
    ],
)
def test_priority_queue_update_unschedulable(rejector: str, wait: float, want: str, clock: FakeClock) -> None:
    q = make_queue(*UPDATE_PLUGINS, clock=clock)
    q.add(annotated("mpp", "val2"))
    fail(q, pop(q, "mpp"), rejector)
    new = annotated("mpp", "test1")
    clock.now = T0 + wait
    q.update(annotated("mpp", "val2"), new)
    assert q.location("ns2/mpp") == want
    info = q.info("ns2/mpp")
    assert info is not None and info.pod is new


def test_when_updating_a_pod_which_is_in_flight_pods_the_pod_will_not_be_added_to_any_queue(clock: FakeClock) -> None:
    q = make_queue(*UPDATE_PLUGINS, clock=clock)
    q.add(annotated("mpp", "val2"))
    pop(q, "mpp")
    q.update(annotated("mpp", "val2"), annotated("mpp", "bar"))
    assert q.location("ns2/mpp") == "in-flight"
    assert len(q) == 0


def test_priority_queue_update_when_inflight(clock: FakeClock) -> None:
    """TestPriorityQueue_UpdateWhenInflight: an update during the attempt requeues the updated pod."""
    q = make_queue(foo("fakePlugin", UNSCHEDULED_POD_UPDATE), clock=clock)
    test_pod = make_pod("test-pod", "test-ns").build()
    q.add(test_pod)
    qpi = pop(q, "test-pod")
    updated = make_pod("test-pod", "test-ns").toleration("foo", effect="NoSchedule").build()
    q.update(test_pod, updated)
    fail(q, qpi, "fakePlugin")
    assert q.location("test-ns/test-pod") == "backoff"
    info = q.info("test-ns/test-pod")
    assert info is not None and info.pod is updated


# -- delete, len and pending_counts ------------------------------------------------------------------------


def test_priority_queue_delete_removes_the_pod_from_every_place(clock: FakeClock) -> None:
    q = make_queue(foo("plugin", ev.NODE_ADD), SchedulingGates({}, Handle()), clock=clock)
    to_backoff(q, "in-backoff", "plugin")
    to_backoff(q, "in-error-backoff")
    parked(q, "in-unschedulable", "plugin")
    q.add(make_pod("in-gated", "ns1").gate("g").build())
    q.add(pod("in-active"))
    places = ("in-backoff", "in-error-backoff", "in-unschedulable", "in-gated", "in-active")
    where = {n: q.location(key(n)) for n in places}
    assert where == {
        "in-backoff": "backoff",
        "in-error-backoff": "error",
        "in-unschedulable": "unschedulable",
        "in-gated": "unschedulable",
        "in-active": "active",
    }
    assert q.pending_counts() == {"active": 1, "backoff": 2, "unschedulable": 1, "gated": 1}
    assert len(q) == 5
    for n in where:
        q.delete(key(n))
        assert q.location(key(n)) is None
    assert len(q) == 0
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    clock.now = T0 + 10_000
    assert q.flush_unschedulable_leftover() == 0
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 0
    assert q.pop() is None


def test_pending_counts(clock: FakeClock) -> None:
    q = default_queue(clock)
    q.add(make_pod("a").build())
    q.add(make_pod("g").gate("x").build())
    q.add(make_pod("u").build())
    u = q.pop()
    assert u is not None
    fail(q, u, "TaintToleration")
    assert q.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 1, "gated": 1}


def test_pending_counts_leave_in_flight_pods_out(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    q.add(pod("a"))
    q.add(pod("b"))
    pop(q, "a")
    assert q.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert len(q) == 1
    assert [p.name for p in q.pending_pods()] == ["b"]


def test_re_adding_a_queued_pod_updates_it_instead_of_duplicating_it(clock: FakeClock) -> None:
    q = make_queue(clock=clock)
    first, second = pod("a"), make_pod("a", "ns1").label("v", "2").build()
    q.add(first)
    clock.now = T0 + 1
    q.add(second)
    assert len(q) == 1
    assert pop(q).pod is second
    assert q.pop() is None


def test_queueing_strategy_order() -> None:
    """The replay keeps the best result: immediately > after backoff > skip."""
    assert QueueingStrategy.QUEUE_IMMEDIATELY > QueueingStrategy.QUEUE_AFTER_BACKOFF > QueueingStrategy.QUEUE_SKIP


# -- a pod gated after a failed cycle (DefaultPreemption's PreEnqueue while its victims go) ----------

POD_DELETE = ClusterEvent(EventResource.POD, ActionType.DELETE, "PodDelete")


def gated_after_failing(clock: FakeClock) -> tuple[SchedulingQueue, GatingPlugin, ScriptedPlugin]:
    """ "fit" rejected the pod; on its way back to activeQ the "wait" gate (Pod/Delete, Skip) holds it."""
    gate = GatingPlugin("wait", POD_DELETE, answer=SKIP)
    gate.closed = False
    fit = foo("fit", ev.NODE_ADD, ev.ASSIGNED_POD_DELETE)
    q = make_queue(gate, fit, clock=clock)
    parked(q, "pod1", "fit")
    gate.closed = True
    clock.now += 20  # past its backoff
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 1
    return q, gate, fit


def test_a_gated_pod_keeps_the_rejectors_of_its_cycle(clock: FakeClock) -> None:
    """upstream's runPreEnqueuePlugin inserts the gate into UnschedulablePlugins, it does not replace them."""
    q, _gate, _fit = gated_after_failing(clock)
    info = q.info(key("pod1"))
    assert info is not None and info.gating_plugin == "wait" and info.rejectors == {"fit", "wait"}
    assert q.location(key("pod1")) == "unschedulable"


def test_only_the_gating_plugins_events_move_a_gated_pod(clock: FakeClock) -> None:
    """movePodsToActiveOrBackoffQueue skips a gated pod for an event its gate did not register; for
    one it did, every rejector's hint is asked (the gate's Skip does not hold it back)."""
    q, gate, fit = gated_after_failing(clock)
    fit.asked.clear()
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 0
    assert fit.asked == []
    gate.closed = False
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, None, None) == 1
    assert [name for name, _ in gate.asked] == ["pod1"] and [name for name, _ in fit.asked] == ["pod1"]
    assert q.location(key("pod1")) == "active"


def test_preenqueue_runs_on_the_way_into_backoff(clock: FakeClock) -> None:
    """SchedulerPopFromBackoffQ: a backing-off pod may be popped early, so the gate is asked first."""
    gate = GatingPlugin("wait", POD_DELETE)
    gate.closed = False
    q = make_queue(gate, foo("fit", ev.NODE_ADD), clock=clock)
    parked(q, "pod1", "fit")
    gate.closed = True
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, None) == 1  # still backing off
    assert q.location(key("pod1")) == "unschedulable"
    assert q.pop() is None


def test_activate_moves_a_parked_pod_through_preenqueue(clock: FakeClock) -> None:
    """upstream's Activate: the pod goes to activeQ now (an async preemption failed for it)."""
    q = make_queue(foo("fit", ev.NODE_ADD), clock=clock)
    qpi = parked(q, "pod1", "fit")
    q.activate(qpi.pod)
    assert q.location(key("pod1")) == "active"
    q.activate(qpi.pod)  # already active: nothing changes
    assert pop_all(q) == ["pod1"]


def test_activate_during_the_cycle_requeues_the_pod_when_it_fails(clock: FakeClock) -> None:
    """A pod in flight gets the ForceActivate event replayed: its failure does not park it."""
    q = make_queue(foo("fit", ev.NODE_ADD), clock=clock)
    q.add(pod("pod1"))
    qpi = pop(q, "pod1")
    q.activate(qpi.pod)
    fail(q, qpi, "fit")
    assert q.location(key("pod1")) in ("active", "backoff")


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_add_nominated_gated_pod(minor: str) -> None:
    """TestPriorityQueue_AddNominatedGatedPod (v1.37.2 scheduling_queue_test.go): from 1.37 ``addPod``
    records the nomination of a pod a PreEnqueue plugin holds back; before, only a pod that entered
    activeQ was recorded (v1.36.3 moveToActiveQ)."""
    frameworks = build_frameworks(load_config(None, features=features_at(minor)))
    q = SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=FakeClock(T0))
    gated = make_pod("pod-gated", "ns1").gate("g").set("status.nominatedNodeName", "node1").build()
    q.add(gated)
    assert q.location(gated.key) == "unschedulable"
    nominated = [f"{r.namespace}/{r.name}" for r in q.nominator.nominated_pods_for_node("node1")]
    assert nominated == (["ns1/pod-gated"] if minor == "1.37" else [])


@pytest.mark.parametrize("minor", ["1.35", "1.37"])
def test_update_non_existent_gated_pod_adding_a_nomination(minor: str) -> None:
    """TestPriorityQueue_Update, "Update non-existent gated highPriorityPodInfo and add a
    nominatedNodeName to it" (v1.37.2): the update of a pod in no queue adds it, gated, nominated."""
    frameworks = build_frameworks(load_config(None, features=features_at(minor)))
    q = SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=FakeClock(T0))
    old = make_pod("hpp", "ns1").priority(HIGH).gate("g").build()
    new = make_pod("hpp", "ns1").priority(HIGH).gate("g").set("status.nominatedNodeName", "node1").build()
    q.update(old, new)
    assert q.location(new.key) == "unschedulable"
    added = bool(q.nominator.nominated_pods_for_node("node1"))
    assert added == (minor == "1.37")
