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

import pytest

from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.features import features_at
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


class SlowProvisioner:
    """VolumeBinding's PreBind: the PV controller never answers, so PreBind waits until cancelled."""

    def __init__(self) -> None:
        self.waiting: list[str] = []
        self.cancelled: list[str] = []

    async def bind_pod_volumes(self, pod: Pod, node_name: str, bindings: Any, provisions: Any, timeout: float) -> None:
        self.waiting.append(pod.key)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(pod.key)
            raise


class Cluster:
    def __init__(self, minor: str = "1.35") -> None:
        self.binder, self.recorder, self.api = FakeBinder(), FakeRecorder(), FakeApi()
        config = load_config(None, features_at(minor))
        self.sched = Scheduler(config, self.binder, self.recorder, clock=FakeClock(), rng=random.Random(0))
        self.api.sched = self.sched
        self.sink = AsyncPreemption(
            self.api,
            self.recorder,
            self.sched.queue,
            self.sched.cache.pod,
            self.sched.queue.activate,
            pods_in_pre_bind=self.sched.pods_in_pre_bind,
            features=config.features,
        )
        self.sched.use_preemption(self.sink, self.sink.drain)
        self.provisioner = SlowProvisioner()
        self.sched.use_volume_binder(self.provisioner)

    def add(self, *objs: Any) -> None:
        for obj in objs:
            raw = obj.dict()
            if isinstance(obj, PodBuilder):
                self.api.pods[f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"] = raw
            self.sched.on_object("ADDED", raw)

    async def settle(self, waiting: int = 0) -> None:
        """Cycles and background writes until nothing is left to do but ``waiting`` binding cycles."""
        for _ in range(1000):
            ran = self.sched.schedule_one()
            await asyncio.sleep(0)
            if not ran and not self.sink._tasks and len(self.sched.cycles._tasks) <= waiting:
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


# -- a victim whose PreBind is still running (1.36: cancelled and requeued, not deleted) ---------------


def provisioning_victim(c: Cluster) -> None:
    """n1 (1 cpu) taken by batch/db, whose WaitForFirstConsumer claim is being provisioned: its PreBind
    waits for the PV controller."""
    c.add(make_node("n1").capacity(cpu="1", memory="4Gi", pods="110"))
    for obj in (
        {
            "kind": "StorageClass",
            "metadata": {"name": "slow"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "batch", "uid": "uid-data", "resourceVersion": "5"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "slow",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ):
        c.sched.on_object("ADDED", obj)
    c.add(make_pod("db", "batch").priority(10).requests(cpu="1").pvc("data", "data"))


async def preempt_the_provisioning_victim(c: Cluster) -> None:
    provisioning_victim(c)
    await c.settle(waiting=1)
    assert c.provisioner.waiting == ["batch/db"]
    c.add(make_pod("web", "shop").priority(1000).requests(cpu="1"))
    await c.settle(waiting=1)


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_victim_in_pre_bind_is_requeued_not_deleted_and_the_preemptor_gets_the_node(minor: str) -> None:
    async def body() -> None:
        c = Cluster(minor)
        await preempt_the_provisioning_victim(c)
        # No write to the victim: its binding cycle was cancelled in memory.
        assert c.sink.attempted == []
        assert c.api.calls == []
        assert c.provisioner.cancelled == ["batch/db"]
        assert len(c.sched.pods_in_pre_bind) == 0
        assert [e.note for e in c.recorder.events_for("batch/db", "Preempted")] == [
            "Preempted by pod uid-shop-web on node n1 (in kube-scheduler memory)."
        ]
        # It failed with the preemption's cause, as an error, and is back in the queue.
        failure = c.recorder.conditions_for("batch/db")[0]
        assert (failure.reason, failure.message) == (
            "SchedulerError",
            'running PreBind plugin "VolumeBinding": preempted by DefaultPreemption',
        )
        assert "batch/db" in c.sched.pending
        assert c.sched.queue.location("batch/db") is not None
        # The preemptor binds to the node the victim left, without any deletion.
        assert c.binder.calls == [("shop/web", "n1")]

    asyncio.run(body())


def test_1_35_a_victim_in_pre_bind_is_deleted() -> None:
    async def body() -> None:
        c = Cluster("1.35")
        await preempt_the_provisioning_victim(c)
        assert c.sink.attempted == [("condition", "batch/db"), ("delete", "batch/db")]
        assert c.provisioner.cancelled == []
        assert [e.note for e in c.recorder.events_for("batch/db", "Preempted")] == [
            "Preempted by pod uid-shop-web on node n1"
        ]
        assert len(c.sched.pods_in_pre_bind) == 0  # nothing listed before 1.36: nothing to cancel

    asyncio.run(body())
