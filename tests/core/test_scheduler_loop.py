"""The live scheduler's logic with in-memory Binder/Recorder and a hand-driven clock (no API, no sleeps)."""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import Callable
from typing import Any

from scheduler.config import load_config
from scheduler.errors import BindConflictError, PodGoneError, TransientAPIError
from scheduler.scheduler import Scheduler
from scheduler.testing import make_node, make_pod
from tests.core.fakes import FakeBinder, FakeClock, FakeRecorder
from tests.core.harness import FOO, HOSTNAME, ZONE

SPREAD = "node(s) didn't match pod topology spread constraints"


def scenario(body: Callable[[Scheduler, FakeBinder, FakeRecorder, FakeClock], Any]) -> None:
    """Run ``body`` inside one event loop; it may be a coroutine function."""
    clock = FakeClock()
    binder, recorder = FakeBinder(), FakeRecorder()

    async def main() -> None:
        sched = Scheduler(load_config(None), binder, recorder, clock=clock, rng=random.Random(0))
        result = body(sched, binder, recorder, clock)
        if asyncio.iscoroutine(result):
            await result
        await sched.drain()

    asyncio.run(main())


async def settle(sched: Scheduler) -> int:
    """Schedule until the queue has nothing ready, letting binding tasks finish; returns cycles run."""
    cycles = 0
    while sched.schedule_one():
        cycles += 1
        await asyncio.sleep(0)
    await sched.drain()
    return cycles


def add(sched: Scheduler, *objs: Any) -> None:
    for obj in objs:
        sched.on_object("ADDED", obj.dict() if hasattr(obj, "dict") else obj)


def confirm(sched: Scheduler, binder: FakeBinder, pods: dict[str, Any]) -> None:
    """Play back the watch events the API server would send after each binding."""
    for key, node in binder.binds:
        name = key.split("/", 1)[1]
        if name in pods and not pods[name].spec.get("nodeName"):
            pods[name].node(node)
            sched.on_object("MODIFIED", pods[name].dict())


def two_zones_min_domains() -> tuple[list[Any], list[Any], Any]:
    nodes = [make_node("a1").zone("zone-a"), make_node("b1").zone("zone-b")]
    existing = [
        make_pod("old-a").labels(FOO).node("a1").scheduler("default-scheduler"),
        make_pod("old-b").labels(FOO).node("b1").scheduler("default-scheduler"),
    ]
    pending = make_pod("new").labels(FOO).spread(ZONE, 1, match=FOO, minDomains=3)
    return nodes, existing, pending


def test_unmet_spread_is_reported_once_then_a_new_zone_binds_it() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        nodes, existing, pending = two_zones_min_domains()
        add(sched, *nodes, *existing, pending)
        await settle(sched)
        assert binder.binds == []
        message = f"0/2 nodes are available: 2 {SPREAD}."
        assert recorder.conditions == [("default/new", "Unschedulable", message)]
        assert recorder.reasons("default/new") == ["FailedScheduling"]
        assert sched.queue.location("default/new") == "unschedulable"

        clock.advance(400)  # the 5-minute flush retries it: same message, so nothing is written again
        sched.queue.flush_unschedulable_leftover(clock())
        clock.advance(20)
        assert await settle(sched) == 1
        assert len(recorder.conditions) == 1 and recorder.reasons("default/new") == ["FailedScheduling"]

        add(sched, make_node("c1").zone("zone-c"))  # TV-25 (a): the queueing hint says Queue
        assert sched.queue.location("default/new") in ("active", "backoff")
        await settle(sched)
        assert binder.binds == [("default/new", "c1")]
        assert recorder.events[-1] == ("default/new", "Normal", "Scheduled", "Successfully assigned default/new to c1")

    scenario(body)


def test_deleting_a_matching_pod_requeues_and_binds() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        nodes, existing, pending = two_zones_min_domains()
        add(sched, *nodes, *existing, pending)
        await settle(sched)
        sched.on_object("DELETED", existing[1].dict())
        await settle(sched)
        assert binder.binds == [("default/new", "b1")]

    scenario(body)


def test_irrelevant_events_leave_the_pod_parked() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        nodes, existing, pending = two_zones_min_domains()
        add(sched, *nodes, *existing, pending)
        await settle(sched)
        add(sched, make_node("no-zone"))  # TV-25 (b)
        add(sched, make_pod("other-ns", "other").labels(FOO).node("a1"))  # (c)
        add(sched, make_pod("other-app").label("app", "other").node("a1"))  # (g)
        relabelled = nodes[0].label("team", "x")
        sched.on_object("MODIFIED", relabelled.dict())  # (e)
        assert sched.queue.location("default/new") == "unschedulable"
        tainted = nodes[1].taint("k", "v", "PreferNoSchedule")
        sched.on_object("MODIFIED", tainted.dict())  # (f): any taint change on a matching node
        assert sched.queue.location("default/new") in ("active", "backoff")

    scenario(body)


def test_pods_of_other_schedulers_are_never_written() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        add(sched, make_node("n1"), make_pod("theirs").scheduler("default-scheduler"), make_pod("ours"))
        await settle(sched)
        assert binder.binds == [("default/ours", "n1")]
        assert all(key != "default/theirs" for key, *_ in recorder.events + recorder.conditions)
        assert sched.queue.location("default/theirs") is None

    scenario(body)


def test_an_assumed_pod_counts_before_the_watch_confirms_it() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        add(sched, make_node("n1"), make_node("n2"))
        add(
            sched,
            *[
                make_pod(f"p{i}").labels(FOO).spread(HOSTNAME, 1, match=FOO).created(f"2026-01-01T00:00:0{i}Z")
                for i in range(2)
            ],
        )
        await settle(sched)
        assert sorted(node for _, node in binder.binds) == ["n1", "n2"]

    scenario(body)


def test_transient_bind_failure_is_retried_with_backoff() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        binder.fail_next["default/p"] = [TransientAPIError("HTTP 503")]
        add(sched, make_node("n1"), make_pod("p"))
        await settle(sched)
        assert binder.binds == []
        assert sched.cache.pod("default/p") is None  # the assumed pod was forgotten
        assert recorder.conditions[-1][1] == "SchedulerError"
        qpi = sched.queue.info("default/p")
        assert qpi is not None and qpi.consecutive_errors_count == 1
        clock.advance(2)
        await settle(sched)
        assert binder.binds == [("default/p", "n1")]

    scenario(body)


def test_conflict_or_gone_is_never_retried() -> None:
    for error in (BindConflictError("HTTP 409"), PodGoneError("HTTP 404")):

        async def body(
            sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock, error: Exception = error
        ) -> None:
            binder.fail_next["default/p"] = [error]
            add(sched, make_node("n1"), make_pod("p"))
            await settle(sched)
            assert binder.binds == [] and sched.cache.pod("default/p") is None
            assert sched.queue.location("default/p") is None
            assert recorder.conditions == []
            assert sched.stats.bind_failures == 1

        scenario(body)


def test_deleted_pending_pod_is_dropped_and_terminating_one_skipped() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        gone = make_pod("gone")
        add(sched, gone, make_pod("dying").terminating())
        sched.on_object("DELETED", gone.dict())
        add(sched, make_node("n1"))
        await settle(sched)
        assert binder.binds == []
        assert recorder.events == [
            ("default/dying", "Warning", "FailedScheduling", "skip schedule deleting pod: default/dying")
        ]

    scenario(body)


def test_an_invalid_pod_is_explained_and_does_not_stop_the_others() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        add(
            sched,
            make_node("n1").zone("a"),
            make_pod("bad").spread(ZONE, 1, when="Sometimes", match=FOO),
            make_pod("good"),
        )
        await settle(sched)
        assert binder.binds == [("default/good", "n1")]
        ((key, reason, message),) = recorder.conditions
        assert key == "default/bad" and reason == "Unschedulable"
        assert "spec.topologySpreadConstraints[0].whenUnsatisfiable" in message

    scenario(body)


def test_two_hundred_pods_bind_exactly_once_and_the_spread_holds() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        nodes = [make_node(f"{z}{i}").zone(z) for z in ("a", "b", "c") for i in range(2)]
        add(sched, *nodes)
        pods = {f"p{i:03d}": make_pod(f"p{i:03d}").labels(FOO).spread(ZONE, 1, match=FOO) for i in range(200)}
        order = list(pods.values())
        random.Random(3).shuffle(order)
        add(sched, *order)
        await settle(sched)
        confirm(sched, binder, pods)
        await settle(sched)
        assert len(binder.binds) == 200 and len({key for key, _ in binder.binds}) == 200
        per_zone = collections.Counter(node[0] for _, node in binder.binds)
        assert max(per_zone.values()) - min(per_zone.values()) <= 1

    scenario(body)


def test_run_stops_when_asked_and_drains_bindings() -> None:
    async def body(sched: Scheduler, binder: FakeBinder, recorder: FakeRecorder, clock: FakeClock) -> None:
        add(sched, make_node("n1"), *[make_pod(f"p{i}") for i in range(5)])
        stop = asyncio.Event()
        runner = asyncio.create_task(sched.run(stop))
        while len(binder.binds) < 5:
            await asyncio.sleep(0)
        stop.set()
        await asyncio.wait_for(runner, timeout=5)
        assert runner.done() and len(binder.binds) == 5

    scenario(body)
