"""The live Scheduler against in-memory fakes: watch handlers, scheduling cycle, binding cycle, writes.

Every test is a plain function around ``asyncio.run``. Time only moves when a test moves the
``FakeClock``; bindings land when the test drains them (or releases a held ``FakeBinder``). Cases
that follow upstream ``schedule_one_test.go`` keep the upstream case name in their docstring or id.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
import weakref
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.errors import BindConflictError, PodGoneError, TransientAPIError
from scheduler.plugins import names
from scheduler.schedule_one import Attempt
from scheduler.scheduler import REPORT_GRACE, Scheduler
from scheduler.testing import HOSTNAME, ZONE, NodeBuilder, PodBuilder, make_node, make_pod
from tests.fakes import Condition, Event, FakeBinder, FakeClock, FakeRecorder
from tests.helpers import NO_CLAIMS

FOO = {"foo": "bar"}
WEB = {"app": "web"}
SPREAD = "node(s) didn't match pod topology spread constraints"


class Cluster:
    """A Scheduler on fakes plus the API objects the watch would deliver for it."""

    def __init__(self, *, seed: int = 0, hold: bool = False) -> None:
        self.clock = FakeClock()
        self.binder = FakeBinder(hold=asyncio.Event() if hold else None)
        self.recorder = FakeRecorder()
        self.sched = Scheduler(load_config(None), self.binder, self.recorder, clock=self.clock, rng=random.Random(seed))
        self.pods: dict[str, PodBuilder] = {}
        self.confirmed: set[str] = set()

    def add(self, *objs: PodBuilder | NodeBuilder) -> None:
        for obj in objs:
            if isinstance(obj, PodBuilder):
                self.pods[f"{obj.meta['namespace']}/{obj.meta['name']}"] = obj
            self.sched.on_object("ADDED", obj.dict())

    def modify(self, *objs: PodBuilder | NodeBuilder) -> None:
        for obj in objs:
            self.sched.on_object("MODIFIED", obj.dict())

    def delete(self, obj: PodBuilder | NodeBuilder) -> None:
        self.sched.on_object("DELETED", obj.dict())

    async def settle(self, *, interleave: bool = False) -> int:
        """Run scheduling cycles until nothing is ready, letting every binding finish; returns cycles run.

        ``interleave`` yields to the event loop after each cycle, so bindings land between cycles (as in
        ``run``) instead of all piling up until the drain.
        """
        cycles = 0
        while True:
            ran = 0
            while self.sched.schedule_one():
                ran += 1
                assert cycles + ran < 10_000, "the scheduling loop does not come to rest"
                if interleave:
                    await asyncio.sleep(0)
            await self.sched.drain()
            cycles += ran
            if ran == 0:
                return cycles

    def confirm(self) -> None:
        """Play back the watch event the API server sends after each successful binding."""
        for key, node in self.binder.binds:
            if key not in self.confirmed and key in self.pods:
                self.confirmed.add(key)
                self.modify(self.pods[key].node(node))

    def attempts(self, result: str) -> int:
        return self.sched.stats.attempts.get(result, 0)


# A whole test's own deadline: a cycle that never binds what a test waits for fails here in seconds,
# not at pytest's global timeout (a deliberate bug in the skew check hung three tests for 600 s).
TEST_SECONDS = 20.0


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async def bounded() -> None:
        try:
            await asyncio.wait_for(body(), TEST_SECONDS)
        except TimeoutError:
            raise AssertionError(f"the test did not finish within {TEST_SECONDS}s") from None

    asyncio.run(bounded())


# -- TV-10 / TV-25: an unmet hard spread, reported once, then requeued by the right events only ----------

TV10_MESSAGE = f"0/3 nodes are available: 3 {SPREAD}. {NO_CLAIMS}"


def tv10(c: Cluster) -> PodBuilder:
    """n1..n3 (hostname only), one foo=bar pod on each; incoming hard hostname maxSkew 1, minDomains 5."""
    for i in (1, 2, 3):
        c.add(make_node(f"n{i}"), make_pod(f"p{i}").labels(FOO).node(f"n{i}"))
    pending = make_pod("incoming").labels(FOO).spread(HOSTNAME, 1, match=FOO, minDomains=5)
    c.add(pending)
    return pending


def test_an_unmet_hard_spread_is_reported_once_and_not_again_for_the_same_message() -> None:
    async def body() -> None:
        c = Cluster()
        tv10(c)
        await c.settle()
        key = "default/incoming"
        assert c.binder.calls == []
        assert c.recorder.conditions == [Condition(key, "Unschedulable", TV10_MESSAGE)]
        assert c.recorder.events == [Event(key, "Warning", "FailedScheduling", "Scheduling", TV10_MESSAGE)]
        assert c.sched.queue.location(key) == "unschedulable"
        info = c.sched.queue.info(key)
        assert info is not None and info.rejectors == {names.POD_TOPOLOGY_SPREAD}
        assert key in c.sched.pending

        c.clock.advance(300.5)  # the 5-minute flush tries it again: same verdict, nothing new written
        assert c.sched.queue.flush_unschedulable_leftover() == 1
        await c.settle()
        assert c.attempts("unschedulable") == 2
        assert len(c.recorder.conditions) == 1 and len(c.recorder.events) == 1
        assert c.binder.calls == []

    run(body)


def tv25_a(c: Cluster) -> None:
    c.add(make_node("n4"))


def tv25_b(c: Cluster) -> None:
    c.add(make_node("nolabel").unlabel(HOSTNAME))


def tv25_c(c: Cluster) -> None:
    c.add(make_pod("other-ns", "other").labels(FOO).node("n1"))


def tv25_d(c: Cluster) -> None:
    c.delete(c.pods["default/p2"])


def tv25_e(c: Cluster) -> None:
    c.modify(make_node("n1").label("team", "x"))


def tv25_f(c: Cluster) -> None:
    c.modify(make_node("n2").taint("dedicated", "infra"))


def tv25_g(c: Cluster) -> None:
    c.add(make_pod("unrelated").label("app", "other").node("n1"))


TAINTED_MESSAGE = f"0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 {SPREAD}. {NO_CLAIMS}"


@pytest.mark.parametrize(
    ("event", "requeued", "bound_to", "new_message"),
    [
        pytest.param(tv25_a, True, "n4", None, id="tv25a-node-with-hostname-added-queue"),
        pytest.param(tv25_b, False, None, None, id="tv25b-node-without-hostname-added-skip"),
        pytest.param(tv25_c, False, None, None, id="tv25c-matching-pod-bound-in-other-namespace-skip"),
        pytest.param(tv25_d, True, "n2", None, id="tv25d-matching-pod-deleted-queue"),
        pytest.param(tv25_e, False, None, None, id="tv25e-unrelated-node-label-skip"),
        pytest.param(tv25_f, True, None, TAINTED_MESSAGE, id="tv25f-taint-on-matching-node-queue"),
        pytest.param(tv25_g, False, None, None, id="tv25g-non-matching-pod-bound-skip"),
    ],
)
def test_tv25_queueing_hints_on_the_live_scheduler(
    event: Callable[[Cluster], None], requeued: bool, bound_to: str | None, new_message: str | None
) -> None:
    async def body() -> None:
        c = Cluster()
        tv10(c)
        await c.settle()
        key = "default/incoming"
        assert c.sched.queue.location(key) == "unschedulable"
        event(c)
        assert c.sched.queue.location(key) == ("backoff" if requeued else "unschedulable")
        await c.settle()
        assert c.attempts("unschedulable") + c.attempts("scheduled") == (2 if requeued else 1)
        assert c.binder.binds == ([(key, bound_to)] if bound_to else [])
        messages = [cond.message for cond in c.recorder.conditions_for(key)]
        assert messages == [TV10_MESSAGE] + ([new_message] if new_message else [])
        if bound_to:
            assert c.recorder.events_for(key, "Scheduled")[0].note == f"Successfully assigned {key} to {bound_to}"

    run(body)


def test_tv25h_nothing_happens_then_the_flush_moves_it_strictly_after_five_minutes() -> None:
    async def body() -> None:
        c = Cluster()
        tv10(c)
        await c.settle()
        c.clock.advance(300)
        assert c.sched.queue.flush_unschedulable_leftover() == 0
        assert not c.sched.schedule_one()
        c.clock.advance(0.001)
        assert c.sched.queue.flush_unschedulable_leftover() == 1
        assert c.sched.schedule_one()
        assert c.attempts("unschedulable") == 2

    run(body)


# -- a missing zone: the node that fills it, or a deleted pod, unblocks the pod ---------------------------------


def two_zones_min_domains_three(c: Cluster) -> None:
    c.add(
        make_node("a1").zone("zone-a"),
        make_node("b1").zone("zone-b"),
        make_pod("old-a").labels(FOO).node("a1").scheduler("default-scheduler"),
        make_pod("old-b").labels(FOO).node("b1").scheduler("default-scheduler"),
        make_pod("new").labels(FOO).spread(ZONE, 1, match=FOO, minDomains=3),
    )


def test_adding_a_node_in_the_missing_zone_binds_the_pod_there_on_the_next_cycle() -> None:
    async def body() -> None:
        c = Cluster()
        two_zones_min_domains_three(c)
        await c.settle()
        assert c.recorder.conditions == [
            Condition("default/new", "Unschedulable", f"0/2 nodes are available: 2 {SPREAD}. {NO_CLAIMS}")
        ]
        c.add(make_node("nozone").label("team", "x"))  # no zone label: cannot make a new domain
        assert c.sched.queue.location("default/new") == "unschedulable"
        assert not c.sched.schedule_one()
        c.add(make_node("c1").zone("zone-c"))
        assert c.sched.schedule_one()
        await c.sched.drain()
        assert c.binder.binds == [("default/new", "c1")]

    run(body)


def test_unmet_spread_is_reported_once_then_a_new_zone_binds_it() -> None:
    async def body() -> None:
        c = Cluster()
        two_zones_min_domains_three(c)
        await c.settle(interleave=True)
        assert c.binder.binds == []
        message = f"0/2 nodes are available: 2 {SPREAD}. {NO_CLAIMS}"
        assert c.recorder.conditions == [Condition("default/new", "Unschedulable", message)]
        assert [e.reason for e in c.recorder.events_for("default/new")] == ["FailedScheduling"]
        assert c.sched.queue.location("default/new") == "unschedulable"

        c.clock.advance(400)  # the 5-minute flush retries it: same message, so nothing is written again
        c.sched.queue.flush_unschedulable_leftover()
        c.clock.advance(20)
        assert await c.settle(interleave=True) == 1
        assert len(c.recorder.conditions) == 1
        assert [e.reason for e in c.recorder.events_for("default/new")] == ["FailedScheduling"]

        c.add(make_node("c1").zone("zone-c"))  # TV-25 (a): the queueing hint says Queue
        assert c.sched.queue.location("default/new") in ("active", "backoff")
        await c.settle(interleave=True)
        assert c.binder.binds == [("default/new", "c1")]
        assert c.recorder.events[-1] == Event(
            "default/new", "Normal", "Scheduled", "Binding", "Successfully assigned default/new to c1"
        )

    run(body)


def test_deleting_a_matching_pod_requeues_and_binds() -> None:
    async def body() -> None:
        c = Cluster()
        two_zones_min_domains_three(c)
        await c.settle(interleave=True)
        c.delete(c.pods["default/old-b"])
        await c.settle(interleave=True)
        assert c.binder.binds == [("default/new", "b1")]

    run(body)


def test_irrelevant_events_leave_the_pod_parked() -> None:
    async def body() -> None:
        c = Cluster()
        two_zones_min_domains_three(c)
        await c.settle(interleave=True)
        c.add(make_node("no-zone"))  # TV-25 (b)
        c.add(make_pod("other-ns", "other").labels(FOO).node("a1"))  # (c)
        c.add(make_pod("other-app").label("app", "other").node("a1"))  # (g)
        c.modify(make_node("a1").zone("zone-a").label("team", "x"))  # (e)
        assert c.sched.queue.location("default/new") == "unschedulable"
        c.modify(make_node("b1").zone("zone-b").taint("k", "v", "PreferNoSchedule"))  # (f): any taint change
        assert c.sched.queue.location("default/new") in ("active", "backoff")

    run(body)


@pytest.mark.parametrize("how", ["deleted", "succeeded", "failed"])
def test_a_matching_pod_that_goes_away_frees_its_zone_for_the_pod(how: str) -> None:
    """Deleted, or terminal (the informer's field selector hides Succeeded/Failed pods)."""

    async def body() -> None:
        c = Cluster()
        two_zones_min_domains_three(c)
        await c.settle()
        old_a = c.pods["default/old-a"]
        if how == "deleted":
            c.delete(old_a)
        else:
            c.modify(old_a.phase(how.capitalize()))
        assert c.sched.cache.pod("default/old-a") is None
        assert c.sched.queue.location("default/new") == "backoff"
        assert c.sched.schedule_one()
        await c.sched.drain()
        assert c.binder.binds == [("default/new", "a1")]

    run(body)


# -- whose pods: ours are scheduled, others' are never touched but count ------------------------------------


def test_pods_of_another_scheduler_are_never_bound_written_or_queued() -> None:
    async def body() -> None:
        c = Cluster()
        theirs = make_pod("theirs").labels(FOO).scheduler("default-scheduler")
        c.add(make_node("n1"), theirs)
        c.modify(theirs.label("v", "2"))
        await c.settle()
        c.clock.advance(1_000)
        c.sched.queue.flush_unschedulable_leftover()
        await c.settle()
        assert c.binder.calls == []
        assert c.recorder.writes_for("default/theirs") == 0
        assert c.sched.queue.location("default/theirs") is None
        assert "default/theirs" not in c.sched.pending
        assert c.sched.stats.attempts == {}
        c.delete(theirs)
        assert c.sched.queue.location("default/theirs") is None

    run(body)


def test_pods_of_other_schedulers_are_never_written() -> None:
    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"), make_pod("theirs").scheduler("default-scheduler"), make_pod("ours"))
        await c.settle(interleave=True)
        assert c.binder.binds == [("default/ours", "n1")]
        assert c.recorder.writes_for("default/theirs") == 0
        assert c.sched.queue.location("default/theirs") is None

    run(body)


@pytest.mark.parametrize("seed", range(6))
def test_assigned_pods_of_any_scheduler_count_for_spreading(seed: int) -> None:
    async def body() -> None:
        c = Cluster(seed=seed)
        c.add(
            make_node("a1").zone("zone-a"),
            make_node("b1").zone("zone-b"),
            make_pod("theirs").labels(FOO).node("a1").scheduler("some-other-scheduler"),
            make_pod("ours").labels(FOO).spread(ZONE, 1, match=FOO),
        )
        await c.settle()
        assert c.binder.binds == [("default/ours", "b1")]

    run(body)


# -- the binding cycle ---------------------------------------------------------------------------------------


def test_bind_assumed_pod_scheduled() -> None:
    """schedule_one_test.go 'bind assumed pod scheduled': one Binding, one Scheduled event, no condition."""

    async def body() -> None:
        c = Cluster()
        c.add(make_node("node1"), make_pod("foo"))
        assert c.sched.schedule_one()
        assert c.sched.cache.is_assumed("default/foo")
        assert c.sched.cache.pod_node("default/foo") == "node1"
        await c.sched.drain()
        assert c.binder.binds == [("default/foo", "node1")]
        assert c.recorder.events == [
            Event("default/foo", "Normal", "Scheduled", "Binding", "Successfully assigned default/foo to node1")
        ]
        assert c.recorder.conditions == []
        assert c.sched.stats.bound == 1
        c.confirm()
        assert not c.sched.cache.is_assumed("default/foo")
        assert "default/foo" not in c.sched.pending
        assert not c.sched.schedule_one()

    run(body)


def test_the_assumed_pod_counts_for_the_next_decision_before_any_confirmation() -> None:
    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        c.add(make_node("a1").zone("zone-a"), make_node("b1").zone("zone-b"))
        first, second = (make_pod(f"web-{i}").labels(WEB).spread(ZONE, 1, match=WEB) for i in (0, 1))
        c.add(first)
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(1)  # the binding is in flight, nothing has been confirmed
        first_node = c.binder.calls[0][1]
        # An echo of the unassigned pod (e.g. a status write) while it is assumed starts no new attempt.
        c.modify(first.label("echo", "1"))
        assert not c.sched.schedule_one()
        c.add(second)
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(2)
        assert c.binder.binds == []
        assert {first_node, c.binder.calls[1][1]} == {"a1", "b1"}
        c.binder.hold.set()
        await c.sched.drain()
        assert sorted(c.binder.binds) == sorted(c.binder.calls)

    run(body)


def test_a_binding_in_flight_does_not_keep_its_scheduling_cycles_scores() -> None:
    """Bindings wait on the API, by thousands while the loop places a burst faster than they land:
    each kept its whole Attempt, a score row per plugin for every scored node (about 100 KiB a pod at
    2,000 nodes; the 10,000-pod load test peaked over 1 GiB). The cycle's Attempt must die with the
    cycle; the binding keeps the CycleState, the host and the counts, and still binds and unreserves."""

    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        for i in range(12):
            c.add(make_node(f"n{i}").zone(f"zone-{i % 3}"))
        seen: list[weakref.ref[Attempt]] = []
        scored: list[int] = []

        def observe(attempt: Attempt, _seconds: float) -> None:
            seen.append(weakref.ref(attempt))
            scored.append(len(attempt.scores))

        c.sched.attempt_observers.append(observe)
        for j in range(4):
            c.add(make_pod(f"web-{j}").labels(WEB).spread(ZONE, 1, match=WEB, whenUnsatisfiable="ScheduleAnyway"))
        while c.sched.schedule_one():
            pass
        await c.binder.wait_for_calls(4)  # all four in flight, none landed
        gc.collect()
        assert len(seen) == 4 and all(scored), scored  # the cycles did score nodes
        assert [ref() for ref in seen] == [None] * 4  # and nothing in flight keeps those attempts
        c.binder.hold.set()
        await c.sched.drain()
        assert sorted(c.binder.binds) == sorted(c.binder.calls) and len(c.binder.binds) == 4

    run(body)


def test_for_binding_keeps_what_the_binding_cycle_reads_and_drops_the_scores() -> None:
    """And the rejected nodes' statuses and the feasible list: a binding waiting on the API holds
    neither (only the rejecting plugins, which a failed binding requeues the pod with, and the count
    the bound line logs)."""

    async def body() -> None:
        c = Cluster()
        for i in range(3):
            c.add(make_node(f"n{i}"))
        c.add(make_node("tainted").taint("dedicated", "gpu"))
        kept: list[Attempt] = []
        c.sched.attempt_observers.append(lambda attempt, _s: kept.append(attempt))
        c.add(make_pod("p"))
        assert c.sched.schedule_one()
        await c.sched.drain()
        full = kept[0]
        slim = full.for_binding()
        assert full.scores and full.totals and full.scored_nodes and full.other_nodes
        assert (slim.scores, slim.totals, slim.scored_nodes, slim.other_nodes) == ([], {}, [], [])
        assert slim.state is full.state and slim.pod is full.pod
        assert list(full.diagnosis.node_to_status) == ["tainted"] and full.diagnosis.unschedulable_plugins
        assert slim.diagnosis.node_to_status == {} and slim.feasible_nodes == []
        assert slim.diagnosis.unschedulable_plugins == full.diagnosis.unschedulable_plugins == {"TaintToleration"}
        assert slim.diagnosis.pending_plugins == full.diagnosis.pending_plugins
        assert (slim.status, slim.host, slim.message, slim.fit_error) == (full.status, full.host, full.message, None)
        assert (slim.evaluated_nodes, slim.feasible_count, slim.hint, slim.batched) == (
            full.evaluated_nodes,
            len(full.feasible),
            full.hint,
            full.batched,
        )
        assert slim.feasible_count == 3

    run(body)


def test_an_assumed_pod_counts_before_the_watch_confirms_it() -> None:
    """Bindings land between the cycles (no hold) but the watch never confirms them."""

    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"), make_node("n2"))
        c.add(
            *[
                make_pod(f"p{i}").labels(FOO).spread(HOSTNAME, 1, match=FOO).created(f"2026-01-01T00:00:0{i}Z")
                for i in range(2)
            ],
        )
        await c.settle(interleave=True)
        assert sorted(node for _, node in c.binder.binds) == ["n1", "n2"]

    run(body)


def test_binding_failed_with_a_transient_error_is_forgotten_and_retried_after_error_backoff() -> None:
    """schedule_one_test.go 'binding failed': forget the assumed pod, requeue it to backoff, bind later."""

    async def body() -> None:
        c = Cluster()
        key = "default/foo"
        c.binder.fail(key, TransientAPIError("the server is currently unable to handle the request"))
        c.add(make_node("node1"), make_pod("foo"))
        assert c.sched.schedule_one()
        await c.sched.drain()
        assert c.binder.calls == [(key, "node1")] and c.binder.binds == []
        assert c.sched.cache.pod(key) is None and not c.sched.cache.is_assumed(key)
        assert c.sched.queue.location(key) == "error"
        info = c.sched.queue.info(key)
        assert info is not None and info.consecutive_errors_count == 1
        [condition] = c.recorder.conditions_for(key)
        assert condition.reason == "SchedulerError"
        assert "the server is currently unable to handle the request" in condition.message
        assert [e.reason for e in c.recorder.events_for(key)] == ["FailedScheduling"]
        assert c.sched.stats.bind_failures == 1

        # Error backoff 1 s, expiry truncated to T+1 and inclusive: nothing before the window after it,
        # even with nothing else to do.
        c.clock.advance(1.999)
        assert not c.sched.schedule_one()
        c.clock.advance(0.001)
        await c.settle()
        assert c.binder.binds == [(key, "node1")]
        assert len(c.binder.calls) == 2
        assert c.recorder.events_for(key, "Scheduled")[0].note == "Successfully assigned default/foo to node1"

    run(body)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(BindConflictError('pod foo is already assigned to node "node2"'), id="conflict"),
        pytest.param(PodGoneError('pods "foo" not found'), id="gone"),
    ],
)
def test_conflict_or_gone_is_forgotten_and_never_retried(error: Exception) -> None:
    async def body() -> None:
        c = Cluster()
        key = "default/foo"
        c.binder.fail(key, error)
        c.add(make_node("node1"), make_pod("foo"))
        await c.settle()
        assert c.binder.calls == [(key, "node1")] and c.binder.binds == []
        assert c.sched.cache.pod(key) is None and not c.sched.cache.is_assumed(key)
        assert c.sched.queue.location(key) is None
        assert c.recorder.conditions == []
        assert c.sched.stats.bind_failures == 1
        c.clock.advance(1_000)
        c.sched.queue.flush_unschedulable_leftover()
        await c.settle()
        assert c.binder.calls == [(key, "node1")]
        assert c.recorder.events_for(key, "Scheduled") == []
        # The loop goes on with other pods.
        c.add(make_pod("bar"))
        await c.settle()
        assert c.binder.binds == [("default/bar", "node1")]

    run(body)


def test_a_forgotten_pod_stops_counting_for_spreading() -> None:
    async def body() -> None:
        c = Cluster()
        c.binder.fail("default/web-0", PodGoneError("gone"))
        c.add(make_node("a1").zone("zone-a"), make_node("b1").zone("zone-b"))
        c.add(make_pod("web-0").labels(WEB).spread(ZONE, 1, match=WEB))
        assert c.sched.schedule_one()
        await c.sched.drain()
        first_node = c.binder.calls[0][1]
        assert c.sched.cache.pod("default/web-0") is None
        for i in (1, 2):  # the forgotten web-0 no longer counts: the next two spread over both zones
            c.add(make_pod(f"web-{i}").labels(WEB).spread(ZONE, 1, match=WEB))
            await c.settle()
        assert sorted(node for _, node in c.binder.binds) == ["a1", "b1"]
        assert first_node in {"a1", "b1"}

    run(body)


def test_a_failed_binding_requeues_the_pods_its_assumed_pod_was_blocking() -> None:
    """Forgetting the assumed pod is an AssignedPodDelete of the pod *on its node* (handleBindingCycleError)."""

    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        # zone-b exists but is tainted: a domain with 0 pods (nodeTaintsPolicy Ignore) nobody can use.
        c.add(make_node("a1").zone("zone-a"), make_node("b1").zone("zone-b").taint("dedicated", "infra"))
        c.add(make_pod("web-0").labels(WEB).spread(ZONE, 1, match=WEB))
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(1)
        c.add(make_pod("web-1").labels(WEB).spread(ZONE, 1, match=WEB))
        assert c.sched.schedule_one()  # zone-a holds the assumed web-0: 1 + 1 - 0 > 1
        assert c.sched.queue.location("default/web-1") == "unschedulable"
        c.binder.fail("default/web-0", TransientAPIError("timeout"))
        c.binder.hold.set()
        await c.sched.drain()
        assert c.sched.queue.location("default/web-0") == "error"
        assert c.sched.queue.location("default/web-1") == "backoff"
        assert c.sched.schedule_one()  # activeQ empty: web-1 is taken from backoffQ, web-0 waits its error backoff
        await c.sched.drain()
        assert c.binder.binds == [("default/web-1", "a1")]

    run(body)


def test_an_update_during_a_failed_binding_is_the_version_retried() -> None:
    """Upstream's failure handler requeues the informer's latest pod, not the one the cycle started with."""

    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        key = "default/foo"
        c.binder.fail(key, TransientAPIError("timeout"))
        foo = make_pod("foo").label("v", "1").set("metadata.resourceVersion", "1")
        c.add(make_node("node1"), foo)
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(1)
        c.modify(foo.label("v", "2").set("metadata.resourceVersion", "2"))  # arrives while binding
        c.binder.hold.set()
        await c.sched.drain()
        c.clock.advance(2)
        await c.settle()
        assert c.binder.binds == [(key, "node1")]
        assert c.binder.bound_pods[-1].labels["v"] == "2"
        assumed = c.sched.cache.pod(key)
        assert assumed is not None and assumed.labels["v"] == "2"  # what other pods' spreading sees

    run(body)


def test_an_assumed_pod_that_starts_terminating_frees_its_place_at_once() -> None:
    """1.35 ``handleAssumedPodDeletion``: forget the assumed pod and send AssignedPodDelete, mid-binding."""

    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        # zone-b exists but is tainted: a domain with 0 pods (nodeTaintsPolicy Ignore) nobody can use.
        c.add(make_node("a1").zone("zone-a"), make_node("b1").zone("zone-b").taint("dedicated", "infra"))
        web0, web1 = (make_pod(f"web-{i}").labels(WEB).spread(ZONE, 1, match=WEB) for i in (0, 1))
        c.add(web0)
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(1)
        c.add(web1)
        assert c.sched.schedule_one()  # zone-a already holds the assumed web-0: 1 + 1 - 0 > 1
        assert c.sched.queue.location("default/web-1") == "unschedulable"
        c.modify(web0.terminating())
        assert c.sched.cache.pod("default/web-0") is None
        assert c.sched.queue.location("default/web-1") == "backoff"
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(2)
        assert c.binder.calls == [("default/web-0", "a1"), ("default/web-1", "a1")]
        c.binder.fail("default/web-0", BindConflictError("pod is being deleted"))
        c.binder.hold.set()
        await c.sched.drain()
        assert c.binder.binds == [("default/web-1", "a1")]

    run(body)


# -- pods that disappear or are being deleted ---------------------------------------------------------------


def test_a_pod_deleted_while_pending_is_dropped() -> None:
    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"))
        queued = make_pod("queued")
        c.add(queued)
        c.delete(queued)  # deleted while in activeQ
        assert not c.sched.schedule_one()

        parked = make_pod("parked").labels(FOO).spread(ZONE, 1, match=FOO)  # n1 has no zone label
        c.add(parked)
        await c.settle()
        assert c.sched.queue.location("default/parked") == "unschedulable"
        c.delete(parked)  # deleted while in the unschedulable pool
        assert c.sched.queue.location("default/parked") is None
        c.add(make_node("z1").zone("zone-a"))
        c.clock.advance(1_000)
        assert c.sched.queue.flush_unschedulable_leftover() == 0
        await c.settle()
        assert c.binder.calls == []
        assert "default/queued" not in c.sched.pending and "default/parked" not in c.sched.pending
        assert c.recorder.writes_for("default/queued") == 0

    run(body)


def test_a_pending_pod_that_turns_terminal_is_dropped() -> None:
    async def body() -> None:
        c = Cluster()
        done = make_pod("done").labels(FOO).spread(ZONE, 1, match=FOO)
        c.add(make_node("n1"), done)  # n1 has no zone label: it parks
        await c.settle()
        assert c.sched.queue.location("default/done") == "unschedulable"
        c.modify(done.phase("Failed"))
        assert c.sched.queue.location("default/done") is None
        assert "default/done" not in c.sched.pending
        c.add(make_node("z1").zone("zone-a"))
        c.clock.advance(1_000)
        c.sched.queue.flush_unschedulable_leftover()
        await c.settle()
        assert c.binder.calls == []

    run(body)


def test_a_pod_deleted_while_its_binding_is_in_flight_is_not_retried() -> None:
    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        deleted: set[str] = set()

        def api(pod: Pod, node: str) -> None:
            if pod.key in deleted:
                raise PodGoneError(f'pods "{pod.name}" not found')

        c.binder.api = api
        gone = make_pod("gone")
        c.add(make_node("n1"), gone)
        assert c.sched.schedule_one()
        await c.binder.wait_for_calls(1)
        deleted.add("default/gone")
        c.delete(gone)
        assert c.sched.cache.pod("default/gone") is None
        c.binder.hold.set()
        await c.sched.drain()
        c.clock.advance(1_000)
        c.sched.queue.flush_unschedulable_leftover()
        await c.settle()
        assert c.binder.calls == [("default/gone", "n1")] and c.binder.binds == []
        assert c.sched.queue.location("default/gone") is None
        assert c.recorder.events_for("default/gone", "Scheduled") == []

    run(body)


def test_requests_of_assumed_pods_count_at_once_and_terminal_pods_not_at_all() -> None:
    """Issue #8 accounting: no watch confirmation between the decisions, yet no overcommit."""

    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1").capacity(cpu="4", memory="8Gi", pods="110"))
        c.add(make_node("n2").capacity(cpu="4", memory="8Gi", pods="110"))
        # A finished 3-CPU pod on n1 and one of another scheduler's pods on n2 bound elsewhere: the
        # first does not count (terminal), the second does (any scheduler's bound pod counts).
        c.add(make_pod("done").requests(cpu="3").node("n1").phase("Succeeded"))
        c.add(make_pod("theirs").requests(cpu="1").scheduler("default-scheduler").node("n2"))
        for name in ("a", "b", "c"):
            c.add(make_pod(name).requests(cpu="3"))
        await c.settle()
        assert sorted(node for _, node in c.binder.binds) == ["n1", "n2"]  # one 3-CPU pod fits each node
        (refused,) = {"default/a", "default/b", "default/c"} - {key for key, _ in c.binder.binds}
        (condition,) = c.recorder.conditions_for(refused)
        assert condition.message == f"0/2 nodes are available: 2 Insufficient cpu. {NO_CLAIMS}"

    run(body)


def test_a_node_deleted_before_the_binding_is_never_bound_to() -> None:
    """The API server accepts a Binding to a missing node; we decide again instead (deliberate difference)."""

    async def body() -> None:
        c = Cluster()
        n1 = make_node("n1")
        c.add(n1, make_pod("p"))
        assert c.sched.schedule_one()  # decided for n1; the binding task has not run yet
        c.delete(n1)
        await c.sched.drain()
        assert c.binder.calls == [] and c.sched.cache.pod("default/p") is None
        assert c.sched.queue.location("default/p") is not None, "back in the queue, not lost"
        c.add(make_node("n2"))
        c.clock.advance(20)  # past the error backoff
        await c.settle()
        assert c.binder.binds == [("default/p", "n2")]

    run(body)


def test_deleting_pod() -> None:
    """schedule_one_test.go 'deleting pod': popped, skipped with an event, never bound nor requeued."""

    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"), make_pod("foo").terminating())
        await c.settle()
        assert c.binder.calls == []
        assert c.recorder.events == [
            Event("default/foo", "Warning", "FailedScheduling", "Scheduling", "skip schedule deleting pod: default/foo")
        ]
        assert c.recorder.conditions == []
        assert c.sched.queue.location("default/foo") is None
        c.clock.advance(1_000)
        c.sched.queue.flush_unschedulable_leftover()
        assert not c.sched.schedule_one()

    run(body)


def test_deleted_pending_pod_is_dropped_and_terminating_one_skipped() -> None:
    """Both before any node exists: the deleted one leaves no trace, the deleting one gets the skip event."""

    async def body() -> None:
        c = Cluster()
        gone = make_pod("gone")
        c.add(gone, make_pod("dying").terminating())
        c.delete(gone)
        c.add(make_node("n1"))
        await c.settle(interleave=True)
        assert c.binder.binds == []
        assert c.recorder.events == [
            Event(
                "default/dying",
                "Warning",
                "FailedScheduling",
                "Scheduling",
                "skip schedule deleting pod: default/dying",
            )
        ]

    run(body)


def test_an_invalid_pod_is_explained_and_does_not_stop_the_others() -> None:
    async def body() -> None:
        c = Cluster()
        c.add(
            make_node("n1").zone("a"),
            make_pod("bad").spread(ZONE, 1, when="Sometimes", match=FOO),
            make_pod("good"),
        )
        await c.settle(interleave=True)
        assert c.binder.binds == [("default/good", "n1")]
        (condition,) = c.recorder.conditions
        assert condition.pod == "default/bad" and condition.reason == "Unschedulable"
        assert "spec.topologySpreadConstraints[0].whenUnsatisfiable" in condition.message

    run(body)


def test_an_invalid_pod_gets_a_condition_naming_the_field_and_others_still_bind() -> None:
    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"), make_pod("bad").spread(ZONE, 0, match=FOO), make_pod("good-0"), make_pod("good-1"))
        await c.settle()
        assert sorted(c.binder.binds) == [("default/good-0", "n1"), ("default/good-1", "n1")]
        [condition] = c.recorder.conditions_for("default/bad")
        assert condition.reason == "Unschedulable"
        assert condition.message.startswith("invalid pod: ")
        assert "spec.topologySpreadConstraints[0].maxSkew" in condition.message
        assert [e.note for e in c.recorder.events_for("default/bad")] == [condition.message]
        assert c.sched.queue.location("default/bad") == "unschedulable"
        c.add(make_node("n2"))  # no node can fix the spec
        assert c.sched.queue.location("default/bad") == "unschedulable"

    run(body)


# -- volume and lifecycle -------------------------------------------------------------------------------------


def test_two_hundred_pods_created_at_once_bind_exactly_once_with_the_zone_spread_holding() -> None:
    async def body() -> None:
        c = Cluster()
        for zone in ("zone-a", "zone-b", "zone-c"):
            c.add(make_node(f"{zone}-1").zone(zone), make_node(f"{zone}-2").zone(zone))
        c.add(*(make_pod(f"web-{i}").labels(WEB).spread(ZONE, 1, match=WEB) for i in range(200)))
        await c.settle()
        keys = [key for key, _ in c.binder.calls]
        assert len(keys) == 200 and len(set(keys)) == 200
        assert c.binder.binds == c.binder.calls
        per_zone = Counter(node.rsplit("-", 1)[0] for _, node in c.binder.binds)
        assert sorted(per_zone.values()) == [66, 67, 67]
        assert len(c.recorder.events) == 200 and c.recorder.conditions == []
        c.confirm()
        for key in keys:  # a resync of every pod after confirmation changes nothing
            c.modify(c.pods[key])
        assert not c.sched.schedule_one()
        assert c.sched.cache.pod_count == 200
        assert not any(c.sched.cache.is_assumed(k) for k in keys)
        assert len(c.binder.calls) == 200

    run(body)


def test_two_hundred_pods_bind_exactly_once_and_the_spread_holds() -> None:
    """The same in a shuffled creation order, bindings landing between cycles, then confirmed."""

    async def body() -> None:
        c = Cluster()
        c.add(*[make_node(f"{z}{i}").zone(z) for z in ("a", "b", "c") for i in range(2)])
        pods = [make_pod(f"p{i:03d}").labels(FOO).spread(ZONE, 1, match=FOO) for i in range(200)]
        random.Random(3).shuffle(pods)
        c.add(*pods)
        await c.settle(interleave=True)
        c.confirm()
        await c.settle(interleave=True)
        assert len(c.binder.binds) == 200 and len({key for key, _ in c.binder.binds}) == 200
        per_zone = Counter(node[0] for _, node in c.binder.binds)
        assert max(per_zone.values()) - min(per_zone.values()) <= 1

    run(body)


# -- issue #17: pods that need a plugin we do not run are refused, visibly and once; issue #49: a pod
# whose claim is not generated yet waits in DynamicResources' PreEnqueue --------------------------------

PVC_MESSAGE = '0/2 nodes are available: persistentvolumeclaim "data-0" not found.'  # VolumeRestrictions' (ported)
# Then VolumeBinding's: the claim names no StorageClass, so it is bound at once or never by us.
NEXT_MESSAGE = "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def test_pvc_pods_are_refused_once_and_claim_pods_held_while_a_plain_pod_binds() -> None:
    """The PVC pod: one PodScheduled=False and one FailedScheduling, no Binding; the 5-minute flush
    retries it with the same verdict and writes nothing new. The pod whose claim is not generated yet:
    DynamicResources' PreEnqueue holds it back, unattempted and unwritten, as upstream's (the flush
    leaves a gated pod where it is). An unrelated update of either pod changes nothing."""

    async def body() -> None:
        c = Cluster()
        pvc = make_pod("pvc").pvc("data", "data-0")
        claim = make_pod("claim").resource_claim("gpu", template="gpu-template")
        c.add(make_node("n1"), make_node("n2"), pvc, claim, make_pod("plain"))
        await c.settle()
        assert [key for key, _ in c.binder.calls] == ["default/plain"]
        key = "default/pvc"
        assert c.recorder.conditions_for(key) == [Condition(key, "Unschedulable", PVC_MESSAGE)]
        assert c.recorder.events_for(key) == [Event(key, "Warning", "FailedScheduling", "Scheduling", PVC_MESSAGE)]
        info = c.sched.queue.info(key)
        assert info is not None and info.rejectors == {names.VOLUME_RESTRICTIONS}
        held = c.sched.queue.info("default/claim")
        assert held is not None and held.gating_plugin == names.DYNAMIC_RESOURCES and held.attempts == 0
        assert c.recorder.conditions_for("default/claim") == c.recorder.events_for("default/claim") == []

        c.modify(pvc.label("touched", "yes"), claim.label("touched", "yes"))  # no registered event matches
        assert c.sched.queue.location("default/pvc") == c.sched.queue.location("default/claim") == "unschedulable"

        c.clock.advance(300.5)
        assert c.sched.queue.flush_unschedulable_leftover() == 1
        await c.settle()
        assert c.attempts("unschedulable") == 2
        assert c.recorder.writes_for("default/pvc") == 2
        assert c.recorder.writes_for("default/claim") == 0
        assert [key for key, _ in c.binder.calls] == ["default/plain"]

    run(body)


def test_the_missing_claim_created_requeues_the_pod_and_other_claims_do_not() -> None:
    """VolumeRestrictions' hint on PersistentVolumeClaim Add: the pod's own claim (same namespace)
    moves it to retry at once, where it meets the next refusal; another claim leaves it waiting."""

    def pvc(name: str, namespace: str = "default") -> dict[str, object]:
        meta = {"name": name, "namespace": namespace, "resourceVersion": "1"}
        return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": {"accessModes": ["ReadWriteOnce"]}}

    async def body() -> None:
        c = Cluster()
        c.add(make_node("n1"), make_node("n2"), make_pod("pvc").pvc("data", "data-0"))
        await c.settle()
        assert c.recorder.conditions_for("default/pvc") == [Condition("default/pvc", "Unschedulable", PVC_MESSAGE)]
        c.sched.on_object("ADDED", pvc("data-1"))
        c.sched.on_object("ADDED", pvc("data-0", namespace="other"))
        assert c.sched.queue.location("default/pvc") == "unschedulable"
        c.sched.on_object("ADDED", pvc("data-0"))
        c.sched.on_object("MODIFIED", pvc("data-0"))  # the same version again: nothing happens
        assert c.sched.queue.location("default/pvc") in ("active", "backoff")
        c.clock.advance(11)
        await c.settle()
        assert c.recorder.conditions_for("default/pvc")[-1] == Condition("default/pvc", "Unschedulable", NEXT_MESSAGE)
        assert c.binder.calls == []

    run(body)


def test_a_claim_the_controller_chose_not_to_generate_lifts_the_refusal() -> None:
    """The pod's own status update (UpdatePodGeneratedResourceClaim) requeues it and it binds."""

    async def body() -> None:
        c = Cluster()
        claim = make_pod("claim").resource_claim("gpu", template="gpu-template")
        c.add(make_node("n1"), claim)
        await c.settle()
        assert c.sched.queue.location("default/claim") == "unschedulable"
        c.modify(claim.resource_claim_status("gpu", None))
        assert c.sched.queue.location("default/claim") in ("active", "backoff")
        c.clock.advance(11)
        await c.settle()
        assert c.binder.binds == [("default/claim", "n1")]

    run(body)


async def _run_until_bound(c: Cluster, pods: int) -> asyncio.Task[None]:
    """Run the loop on one node with ``pods`` pods until all are bound, then ask it to stop."""
    c.add(make_node("n1"), *[make_pod(f"p{i}") for i in range(pods)])
    stop = asyncio.Event()
    runner = asyncio.create_task(c.sched.run(stop))
    while len(c.binder.binds) < pods:
        await asyncio.sleep(0)
    stop.set()
    return runner


def test_run_stops_when_asked_and_drains_bindings() -> None:
    async def body() -> None:
        c = Cluster()
        runner = await _run_until_bound(c, 5)
        await asyncio.wait_for(runner, timeout=5)
        assert runner.done() and len(c.binder.binds) == 5

    run(body)


def test_run_exits_after_stop_with_in_flight_bindings_drained() -> None:
    async def body() -> None:
        c = Cluster(hold=True)
        assert c.binder.hold is not None
        drain_started = asyncio.Event()
        drain = c.sched.drain

        async def traced_drain(report_grace: float | None = None) -> None:
            drain_started.set()
            await drain(report_grace)

        c.sched.drain = traced_drain  # type: ignore[method-assign]
        stop = asyncio.Event()
        task = asyncio.create_task(c.sched.run(stop))
        run_still_going: list[bool] = []
        c.sched.bound_observers.append(lambda qpi, now: run_still_going.append(not task.done()))
        c.add(make_node("n1"), *(make_pod(f"p{i}") for i in range(3)))
        await c.binder.wait_for_calls(3)
        assert c.binder.binds == []
        stop.set()
        draining = asyncio.ensure_future(drain_started.wait())
        done, _ = await asyncio.wait({task, draining}, return_when=asyncio.FIRST_COMPLETED)
        assert draining in done and not task.done()  # stopped scheduling, waiting for the bindings
        assert not c.sched.schedule_one()
        c.binder.hold.set()
        await asyncio.wait_for(task, timeout=10)  # a guard against hanging, not a synchronisation
        assert run_still_going == [True, True, True]  # run() had not returned when each binding landed
        assert len(c.binder.binds) == 3
        assert len([e for e in c.recorder.events if e.reason == "Scheduled"]) == 3

    run(body)


def test_run_returns_promptly_when_stopped_idle() -> None:
    async def body() -> None:
        c = Cluster()
        stop = asyncio.Event()
        task = asyncio.create_task(c.sched.run(stop))
        c.add(make_node("n1"), make_pod("p"))
        await c.binder.wait_for_calls(1)
        stop.set()
        await asyncio.wait_for(task, timeout=10)
        assert c.binder.binds == [("default/p", "n1")]

    run(body)


# -- property: whatever order events arrive in, a pod is bound at most once ------------------------------------

OPS = st.lists(
    st.tuples(
        # Repeats weight the draw: scheduling steps and pod updates are what races with bindings.
        st.sampled_from(
            ["node", "pod", "pod", "step", "step", "step", "drain", "deliver", "relabel", "relabel", "delete", "tick"]
        ),
        st.integers(0, 2),
    ),
    max_size=25,
)


class FakeApi:
    """The API server's view of the pods: binding sets nodeName; the watch delivers it only when asked."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.objs: dict[str, dict[str, Any]] = {}
        self.deleted: set[str] = set()

    def bind(self, pod: Pod, node: str) -> None:
        obj = self.objs[pod.key]
        if pod.key in self.deleted:
            raise PodGoneError("not found")
        if obj["spec"].get("nodeName"):
            raise BindConflictError("already assigned")  # a second Binding: the property fails on the count
        obj["spec"]["nodeName"] = node
        self.bump(obj)

    @staticmethod
    def bump(obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def live(self, i: int) -> str | None:
        key = f"default/p{i}"
        return key if key in self.objs and key not in self.deleted else None


async def apply(c: Cluster, api: FakeApi, op: str, i: int) -> None:
    key = api.live(i)
    if op == "node":
        if c.sched.cache.get(f"n{i}") is None:
            c.add(make_node(f"n{i}").zone(f"zone-{i % 2}"))
    elif op == "pod":
        if f"default/p{i}" not in api.objs:
            obj = make_pod(f"p{i}").labels(WEB).spread(ZONE, 1, when="ScheduleAnyway", match=WEB).dict()
            obj["metadata"]["resourceVersion"] = "1"
            api.objs[f"default/p{i}"] = obj
            c.sched.on_object("ADDED", obj)
    elif op == "step":
        c.sched.schedule_one()
    elif op == "drain":
        await c.sched.drain()
    elif op == "tick":
        c.clock.advance(1 + 5 * i)
    elif key is not None and op == "deliver":
        c.sched.on_object("MODIFIED", api.objs[key])
    elif key is not None and op == "relabel":
        api.objs[key]["metadata"]["labels"]["v"] = api.objs[key]["metadata"]["resourceVersion"]
        api.bump(api.objs[key])
        c.sched.on_object("MODIFIED", api.objs[key])
    elif key is not None and op == "delete":
        api.deleted.add(key)
        c.sched.on_object("DELETED", api.objs[key])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
@example(ops=[("node", 0), ("pod", 0), ("step", 0), ("relabel", 0), ("step", 0)])  # an update while assumed
@example(ops=[("node", 0), ("pod", 0), ("step", 0), ("drain", 0), ("relabel", 0), ("step", 0)])  # bound, unconfirmed
@example(ops=[("pod", 0), ("step", 0), ("node", 0), ("tick", 1), ("step", 0), ("delete", 0), ("drain", 0)])
def test_a_pod_is_bound_at_most_once_whatever_the_event_order(ops: list[tuple[str, int]]) -> None:
    async def body() -> None:
        c = Cluster()
        api = FakeApi(c)
        c.binder.api = api.bind
        for op, i in ops:
            await apply(c, api, op, i)
            assert max(Counter(k for k, _ in c.binder.calls).values(), default=0) <= 1
        await apply(c, api, "node", 0)
        c.clock.advance(11)  # past any backoff (e.g. "no nodes available" is an error: error backoff)
        for _ in range(3):  # let everything settle, with the watch catching up in between
            await c.settle()
            for key in list(api.objs):
                if key not in api.deleted:
                    c.sched.on_object("MODIFIED", api.objs[key])
        calls = Counter(k for k, _ in c.binder.calls)
        alive = {k for k in api.objs if k not in api.deleted}
        assert max(calls.values(), default=0) <= 1
        assert alive <= {k for k, _ in c.binder.binds}  # every surviving pod got bound ...
        assert all(calls[k] == 1 for k in alive)  # ... by exactly one Binder call
        if not api.deleted:
            assert len(c.binder.calls) == len(api.objs)
        assert not c.sched.schedule_one()

    run(body)


def test_a_stop_drops_reports_stuck_behind_the_event_limiter_but_not_bindings() -> None:
    """Thousands of Events can wait behind the event rate limiter: a SIGTERM must not wait for them
    (a stop ends within the termination grace period), while every binding in flight still lands."""

    async def body() -> None:
        c = Cluster()
        never = asyncio.Event()

        async def stuck_event(*_args: object, **_kwargs: object) -> None:
            await never.wait()

        c.recorder.event = stuck_event  # type: ignore[method-assign]
        runner = await _run_until_bound(c, 3)
        started = time.monotonic()
        await asyncio.wait_for(runner, timeout=REPORT_GRACE + 3)
        assert REPORT_GRACE <= time.monotonic() - started < REPORT_GRACE + 2
        assert len(c.binder.binds) == 3

    run(body)
