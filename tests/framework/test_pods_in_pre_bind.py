"""The pods in PreBind (upstream's ``pods_in_prebind_map_test.go`` cases) and PreBind cancelled through them."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.pods_in_pre_bind import PodsInPreBind
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.testing import make_pod

UID = "uid-pod"


def test_add_remove_and_get() -> None:
    pods = PodsInPreBind()
    pods.add(UID, lambda: None)
    assert pods.get(UID) is not None
    pods.remove(UID)
    assert pods.get(UID) is None


def test_cancel_pod_cancels_once_and_answers_true_again() -> None:
    cancels: list[int] = []
    entry = PodsInPreBind().add(UID, lambda: cancels.append(1))
    assert entry.cancel_pod("test cancel")
    assert entry.cancel_pod("test cancel")
    assert cancels == [1]
    assert entry.cause == "test cancel"


def test_a_prebound_pod_cannot_be_cancelled() -> None:
    cancels: list[int] = []
    entry = PodsInPreBind().add(UID, lambda: cancels.append(1))
    assert entry.mark_prebound()
    assert not entry.cancel_pod("test cancel")
    assert cancels == []


def test_a_cancelled_pod_cannot_be_marked_prebound() -> None:
    entry = PodsInPreBind().add(UID, lambda: None)
    entry.cancel_pod("test cancel")
    assert not entry.mark_prebound()


def test_leaving_pre_bind_is_announced() -> None:
    pods = PodsInPreBind()
    entry = pods.add(UID, lambda: None)
    assert not entry.left.is_set()
    pods.remove(UID)
    assert entry.left.is_set()


class Waiting:
    """A PreBind plugin with work that waits until cancelled (VolumeBinding waiting for provisioning)."""

    NAME = "Waiting"

    def __init__(self, *, work: bool = True) -> None:
        self.work = work
        self.started = asyncio.Event()

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None if self.work else Status(Code.SKIP)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.started.set()
        await asyncio.Event().wait()
        return None


def framework(*plugins: Waiting) -> Framework:
    return Framework("p", {p.NAME: p for p in plugins}, {"preBind": [p.NAME for p in plugins]}, {}, Handle())


@pytest.mark.parametrize(("work", "want"), [(True, Code.SUCCESS), (False, Code.SKIP)])
def test_pre_flights_say_whether_pre_bind_has_work(work: bool, want: Code) -> None:
    pod = make_pod("p").build()
    assert framework(Waiting(work=work)).run_pre_bind_pre_flights(CycleState(), pod, "n1").code is want
    assert framework().run_pre_bind_pre_flights(CycleState(), pod, "n1").code is Code.SKIP


def test_a_cancelled_pre_bind_fails_with_the_cause() -> None:
    """The running plugin's wait is cancelled; its failure names the plugin and the preemption."""
    plugin = Waiting()
    pod = make_pod("p").build()

    async def go() -> tuple[Status | None, int]:
        task = asyncio.current_task()
        assert task is not None
        entry = PodsInPreBind().add(pod.uid, task.cancel)

        async def preempt() -> None:
            await plugin.started.wait()
            entry.cancel_pod("preempted by DefaultPreemption")

        preemption = asyncio.create_task(preempt())
        status = await framework(plugin).run_pre_bind_plugins(CycleState(), pod, "n1", entry)
        await preemption
        return status, task.cancelling()

    status, cancelling = asyncio.run(go())
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running PreBind plugin "Waiting": preempted by DefaultPreemption'
    assert cancelling == 0  # the binding cycle goes on to fail the pod


def test_a_cancellation_from_elsewhere_is_not_swallowed() -> None:
    """A stop cancels the binding cycle: that is no preemption, and it propagates."""
    plugin = Waiting()
    pod = make_pod("p").build()

    async def go() -> None:
        entry = PodsInPreBind().add(pod.uid, lambda: None)
        binding = asyncio.create_task(framework(plugin).run_pre_bind_plugins(CycleState(), pod, "n1", entry))
        await plugin.started.wait()
        binding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await binding

    asyncio.run(go())
