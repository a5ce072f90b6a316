"""Preemption through the live Scheduler (``run``'s wiring) on fakes: the nomination written with the
failure, the victims evicted by ``AsyncPreemption``, the preemptor gated meanwhile and bound to its
nominated node once they are gone (upstream's flow with SchedulerAsyncPreemption).

The fake API marks a deleted victim terminating (deletionTimestamp, as the API server does for a
bound pod with a grace period); the test plays the kubelet and removes it when it wants.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.kube.preemption import AsyncPreemption
from scheduler.scheduler import Scheduler
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder


class FakeApi:
    """The PodWriter: applies each write to the scheduler's watch, as the API server would."""

    def __init__(self) -> None:
        self.sched: Scheduler | None = None
        self.calls: list[tuple[str, str]] = []
        self.pods: dict[str, dict[str, Any]] = {}

    def _watch(self, event: str, obj: dict[str, Any]) -> None:
        assert self.sched is not None
        self.sched.on_object(event, obj)

    async def add_condition(self, pod: Pod, condition: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        self.calls.append(("condition", pod.key))
        obj = self.pods[pod.key]
        obj.setdefault("status", {}).setdefault("conditions", []).append(condition)
        self._watch("MODIFIED", obj)

    async def clear_nominated_node_name(self, pod: Pod) -> None:
        self.calls.append(("clear", pod.key))

    async def delete_pod(self, pod: Pod) -> None:
        await asyncio.sleep(0)
        self.calls.append(("delete", pod.key))
        obj = self.pods[pod.key]
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        self._watch("MODIFIED", obj)

    def kubelet_removes(self, key: str) -> None:
        self._watch("DELETED", self.pods.pop(key))


class Cluster:
    def __init__(self) -> None:
        self.binder, self.recorder, self.api = FakeBinder(), FakeRecorder(), FakeApi()
        self.sched = Scheduler(load_config(None), self.binder, self.recorder, clock=FakeClock(), rng=random.Random(0))
        self.api.sched = self.sched
        self.sink = AsyncPreemption(
            self.api, self.recorder, self.sched.queue, self.sched.cache.pod, self.sched.queue.activate
        )
        self.sched.use_preemption(self.sink, self.sink.drain)

    def add(self, *objs: Any) -> None:
        for obj in objs:
            raw = obj.dict()
            if isinstance(obj, PodBuilder):
                self.api.pods[f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"] = raw
            self.sched.on_object("ADDED", raw)

    async def settle(self) -> None:
        """Cycles and background writes until nothing is left to do."""
        for _ in range(1000):
            ran = self.sched.schedule_one()
            await asyncio.sleep(0)
            if not ran and not self.sink._tasks and not self.sched.cycles._tasks:
                return
        raise AssertionError("the loop does not come to rest")


def full_cluster(c: Cluster) -> None:
    """n1 and n2 (2 cpu each), each full with two 1-cpu pods of priority 10; n1's started later."""
    for node, started in (("n1", "2026-01-01T00:00:10Z"), ("n2", "2026-01-01T00:00:00Z")):
        c.add(make_node(node).capacity(cpu="2", memory="4Gi", pods="110"))
        for i in range(2):
            c.add(
                make_pod(f"{node}-low-{i}", "batch")
                .priority(10)
                .requests(cpu="1")
                .node(node)
                .set("status.startTime", started)
            )


def test_the_preemptor_is_nominated_evicts_one_victim_and_binds_there_once_it_is_gone() -> None:
    async def body() -> None:
        c = Cluster()
        full_cluster(c)
        c.add(make_pod("web", "shop").priority(1000).requests(cpu="1"))
        await c.settle()
        # One victim is enough; of the two nodes, the one whose victims started last (n1).
        nominated = [cond for cond in c.recorder.conditions if cond.pod == "shop/web"]
        assert [cond.nominated for cond in nominated] == ["n1"]
        assert [call for call in c.api.calls if call[0] == "delete"] == [("delete", "batch/n1-low-1")]
        assert c.api.calls == [("condition", "batch/n1-low-1"), ("delete", "batch/n1-low-1")]
        assert [(e.pod, e.reason) for e in c.recorder.events if e.reason == "Preempted"] == [
            ("batch/n1-low-1", "Preempted")
        ]
        # The victim is terminating, not gone: the pod waits (its nominated node is still full).
        assert c.binder.calls == []
        assert c.sched.queue.nominator.nominated_node("shop/web") == "n1"

        c.api.kubelet_removes("batch/n1-low-1")
        await c.settle()
        assert c.binder.calls == [("shop/web", "n1")]
        assert [call for call in c.api.calls if call[0] == "delete"] == [("delete", "batch/n1-low-1")]

    asyncio.run(body())


def test_a_pod_that_may_not_preempt_deletes_nothing() -> None:
    async def body() -> None:
        c = Cluster()
        full_cluster(c)
        c.add(make_pod("web", "shop").priority(1000).requests(cpu="1").set("spec.preemptionPolicy", "Never"))
        await c.settle()
        assert c.api.calls == []
        assert [cond.nominated for cond in c.recorder.conditions] == [None]

    asyncio.run(body())


def test_the_preemptor_is_gated_while_its_victims_are_being_evicted() -> None:
    """Between the decision and the last victim's deletion, an event that would requeue the pod
    leaves it gated by DefaultPreemption (upstream's PreEnqueue with async preemption)."""

    async def body() -> None:
        c = Cluster()
        full_cluster(c)
        c.add(make_pod("web", "shop").priority(1000).requests(cpu="1"))
        assert c.sched.schedule_one()  # the cycle decides; the writes have not started
        assert c.sink.is_pod_running_preemption(c.sched.pending["shop/web"])
        c.add(make_node("n3").capacity(cpu="1", memory="1Gi", pods="110"))  # NodeAdd: NodeResourcesFit says Queue
        info = c.sched.queue.info("shop/web")
        assert info is not None and info.gating_plugin == "DefaultPreemption"
        assert c.sched.queue.location("shop/web") == "unschedulable"
        await c.settle()
        # The preemption is over, but only a Pod/Delete event (DefaultPreemption's) moves a gated pod:
        # the victim is terminating, not gone, so the pod waits, as upstream's would.
        assert not c.sink.is_pod_running_preemption(c.sched.pending["shop/web"])
        assert c.binder.calls == []
        c.api.kubelet_removes("batch/n1-low-1")
        await c.settle()
        assert c.binder.calls == [("shop/web", "n1")]  # its nominated node is tried first

    asyncio.run(body())
