"""The binding cycle's nomination (NominatedNodeNameForExpectation, beta and on at 1.35-1.37): a pod
whose PreBind has work gets ``status.nominatedNodeName`` = its node before PreBind runs, so that
cluster autoscalers and Karpenter see it taken (upstream ``bindingCycle``, schedule_one.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.features import SUPPORTED, features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.testing import make_pod
from tests.fakes import FakeRecorder
from tests.test_preemption_loop import Cluster, provisioning_victim


class NominationSeen:
    """VolumeBinding's PreBind: notes the nominations written by the time it runs, then returns."""

    def __init__(self, recorder: FakeRecorder) -> None:
        self.recorder = recorder
        self.seen: list[list[tuple[str, str]]] = []

    async def bind_pod_volumes(self, pod: Pod, node_name: str, bindings: Any, provisions: Any, timeout: float) -> None:
        self.seen.append(list(self.recorder.nominations))


@pytest.mark.parametrize("minor", SUPPORTED)
def test_a_pod_whose_pre_bind_has_work_is_nominated_to_its_node_before_pre_bind(minor: str) -> None:
    async def body() -> None:
        c = Cluster(minor)
        pre_bind = NominationSeen(c.recorder)
        c.sched.use_volume_binder(pre_bind)
        provisioning_victim(c)  # batch/db: a WaitForFirstConsumer claim to provision on n1
        await c.settle()
        assert pre_bind.seen == [[("batch/db", "n1")]]
        assert c.binder.calls == [("batch/db", "n1")]
        assert c.recorder.conditions == []  # the nomination alone, no PodScheduled condition

    asyncio.run(body())


def test_a_pod_whose_pre_bind_has_no_work_is_not_nominated() -> None:
    """Bound at once anyway: upstream writes nothing ahead of the Binding."""

    async def body() -> None:
        c = Cluster()
        provisioning_victim(c)
        c.sched.on_object("DELETED", c.api.pods.pop("batch/db"))
        c.add(make_pod("web", "shop").requests(cpu="1"))
        await c.settle()
        assert c.binder.calls == [("shop/web", "n1")]
        assert c.recorder.nominations == []

    asyncio.run(body())


def test_a_pod_already_nominated_there_is_not_written_again() -> None:
    """updatePod patches only when the pod, as the cycle saw it, names another node."""

    async def body() -> None:
        c = Cluster()
        pre_bind = NominationSeen(c.recorder)
        c.sched.use_volume_binder(pre_bind)
        provisioning_victim(c)
        obj = c.api.pods["batch/db"]
        obj["status"] = {"nominatedNodeName": "n1"}
        obj["metadata"]["resourceVersion"] = "9"
        c.sched.on_object("MODIFIED", obj)
        await c.settle()
        assert pre_bind.seen == [[]]
        assert c.binder.calls == [("batch/db", "n1")]

    asyncio.run(body())


class FailingRecorder(FakeRecorder):
    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        await super().set_nominated_node_name(pod, node_name)
        raise RuntimeError("the API server is away")


def test_a_failed_nomination_is_logged_and_the_binding_goes_on() -> None:
    """Upstream: "not critical enough to stop binding cycles here"."""

    async def body() -> None:
        c = Cluster()
        recorder = FailingRecorder()
        c.sched.cycles.recorder = recorder
        c.sched.use_volume_binder(NominationSeen(recorder))
        provisioning_victim(c)
        await c.settle()
        assert recorder.nominations == [("batch/db", "n1")]
        assert c.binder.calls == [("batch/db", "n1")]

    asyncio.run(body())


class BrokenPreFlight:
    """A PreBind plugin whose pre-flight fails."""

    NAME = "Broken"

    def __init__(self) -> None:
        self.ran = False

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return Status.as_error("no claim cache")

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.ran = True
        return None


@pytest.mark.parametrize("minor", SUPPORTED)
def test_a_failed_pre_flight_fails_the_binding_before_pre_bind_and_nominates_nothing(minor: str) -> None:
    """Upstream returns the pre-flight's Error from the binding cycle (from 1.35, with the gate)."""
    plugin = BrokenPreFlight()
    fwk = Framework("p", {plugin.NAME: plugin}, {"preBind": [plugin.NAME]}, {}, Handle(), features=features_at(minor))
    c = Cluster(minor)
    pod = make_pod("web", "shop").build()
    status = asyncio.run(c.sched.cycles._pre_bind(fwk, CycleState(), pod, "n1"))
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running PreBindPreFlight "Broken": no claim cache'
    assert not plugin.ran
    assert c.recorder.nominations == []
