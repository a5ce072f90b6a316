"""run's preemption writes (``scheduler.kube.preemption``): order, 404s, errors, the PreEnqueue gate.

A fake ``PodWriter`` logs every call in order and raises scripted errors; nothing sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.api.objects import Pod, PodKey
from scheduler.errors import PodGoneError, TransientAPIError
from scheduler.features import features_at
from scheduler.framework.pods_in_pre_bind import PodsInPreBind
from scheduler.kube.preemption import AsyncPreemption, disruption_target_condition, preempted_note
from scheduler.testing import make_pod
from tests.fakes import WAIT_SECONDS, FakeRecorder

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class FakeWriter:
    """Every call as (verb, pod key) in order; ``fail[(verb, key)]`` is raised instead."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.conditions: list[dict[str, Any]] = []
        self.fail: dict[tuple[str, str], Exception] = {}

    async def _do(self, verb: str, pod: Pod) -> None:
        await asyncio.sleep(0)  # a real request yields to the loop
        self.calls.append((verb, pod.key))
        error = self.fail.get((verb, pod.key))
        if error is not None:
            raise error

    async def add_condition(self, pod: Pod, condition: dict[str, Any]) -> None:
        self.conditions.append(condition)
        await self._do("condition", pod)

    async def clear_nominated_node_name(self, pod: Pod) -> None:
        await self._do("clear", pod)

    async def delete_pod(self, pod: Pod) -> None:
        await self._do("delete", pod)


class Nominated:
    def __init__(self, pods: Sequence[Pod] = ()) -> None:
        self.pods = list(pods)

    def has_nominated_pods(self) -> bool:
        return bool(self.pods)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return [p for p in self.pods if p.nominated_node_name == node_name]


class Harness:
    def __init__(self, nominated: Sequence[Pod] = (), minor: str = "1.35") -> None:
        self.writer = FakeWriter()
        self.recorder = FakeRecorder()
        self.assigned: dict[PodKey, Pod] = {}
        self.activated: list[str] = []
        self.in_pre_bind = PodsInPreBind()
        self.sink = AsyncPreemption(
            self.writer,
            self.recorder,
            Nominated(nominated),
            self.assigned.get,
            lambda pod: self.activated.append(pod.key),
            clock=lambda: NOW,
            pods_in_pre_bind=self.in_pre_bind,
            features=features_at(minor),
        )

    def run(self, preemptor: Pod, node: str, victims: Sequence[Pod]) -> None:
        async def go() -> None:
            assert self.sink.prepare_candidate(preemptor, node, victims) is None
            await self.sink.drain()

        asyncio.run(go())


PREEMPTOR = make_pod("web", "shop").priority(1000).build()


def victim(name: str, *, priority: int = 10) -> Pod:
    return make_pod(name, "batch").priority(priority).node("n1").set("metadata.generation", 3).build()


def test_each_victim_gets_the_condition_then_the_deletion_then_the_event() -> None:
    h = Harness()
    a, b = victim("a"), victim("b")
    h.run(PREEMPTOR, "n1", [a, b])
    # Every victim but the last concurrently, then the last one: its calls come last.
    assert h.writer.calls[-2:] == [("condition", "batch/b"), ("delete", "batch/b")]
    assert sorted(h.writer.calls) == sorted(
        [("condition", "batch/a"), ("delete", "batch/a"), ("condition", "batch/b"), ("delete", "batch/b")]
    )
    assert h.writer.calls.index(("condition", "batch/a")) < h.writer.calls.index(("delete", "batch/a"))
    note = f"Preempted by pod {PREEMPTOR.uid} on node n1"
    assert [(e.pod, e.type, e.reason, e.action, e.note) for e in h.recorder.events] == [
        ("batch/a", "Normal", "Preempted", "Preempting", note),
        ("batch/b", "Normal", "Preempted", "Preempting", note),
    ]
    assert h.activated == []


def test_the_condition_is_upstreams() -> None:
    assert disruption_target_condition(PREEMPTOR, victim("a"), NOW) == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "spread-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
        "observedGeneration": 3,
    }
    assert preempted_note(PREEMPTOR, "n1") == "Preempted by pod uid-shop-web on node n1"


def test_a_victim_that_has_the_condition_already_is_only_deleted() -> None:
    h = Harness()
    marked = (
        make_pod("a", "batch")
        .node("n1")
        .set(
            "status.conditions",
            [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "spread-scheduler: preempting to accommodate a higher priority pod",
                }
            ],
        )
    )
    h.run(PREEMPTOR, "n1", [marked.build()])
    assert h.writer.calls == [("delete", "batch/a")]


@pytest.mark.parametrize(
    "verb", [pytest.param("condition", id="gone-at-the-patch"), pytest.param("delete", id="gone-at-the-delete")]
)
def test_a_victim_already_gone_is_fine(verb: str) -> None:
    """404: nothing more for that victim (no Event), the others go on, the preemptor is not activated."""
    h = Harness()
    h.writer.fail[(verb, "batch/a")] = PodGoneError("404")
    h.run(PREEMPTOR, "n1", [victim("a"), victim("b")])
    assert ("delete", "batch/b") in h.writer.calls
    if verb == "condition":
        assert ("delete", "batch/a") not in h.writer.calls
    assert [e.pod for e in h.recorder.events] == ["batch/b"]
    assert h.activated == []


def test_an_error_on_a_victim_stops_the_preemption_and_activates_the_preemptor() -> None:
    """The last victim is not touched once another one failed (upstream's cancelled context)."""
    h = Harness()
    h.writer.fail[("condition", "batch/a")] = TransientAPIError("500")
    h.run(PREEMPTOR, "n1", [victim("a"), victim("b"), victim("c")])
    assert ("delete", "batch/a") not in h.writer.calls
    assert not any(key == "batch/c" for _, key in h.writer.calls)
    assert h.activated == ["shop/web"]
    assert not h.sink.is_pod_running_preemption(PREEMPTOR)


def test_an_error_on_the_last_victim_activates_the_preemptor() -> None:
    h = Harness()
    h.writer.fail[("delete", "batch/a")] = RuntimeError("403 Forbidden")
    h.run(PREEMPTOR, "n1", [victim("a")])
    assert h.recorder.events == []
    assert h.activated == ["shop/web"]


def test_terminating_victims_get_no_second_deletion() -> None:
    h = Harness()
    gone = make_pod("a", "batch").node("n1").terminating().build()
    h.run(PREEMPTOR, "n1", [gone])
    assert h.writer.calls == []
    assert not h.sink.is_pod_running_preemption(PREEMPTOR)


def test_only_lower_priority_nominations_on_the_node_are_cleared_first() -> None:
    lower = make_pod("low").priority(5).set("status.nominatedNodeName", "n1").build()
    equal = make_pod("same").priority(1000).set("status.nominatedNodeName", "n1").build()
    elsewhere = make_pod("far").priority(5).set("status.nominatedNodeName", "n2").build()
    h = Harness([lower, equal, elsewhere])
    h.run(PREEMPTOR, "n1", [victim("a")])
    assert h.writer.calls[0] == ("clear", "default/low")
    assert [c for c in h.writer.calls if c[0] == "clear"] == [("clear", "default/low")]


def test_a_failed_clearing_goes_on_but_activates_the_preemptor() -> None:
    lower = make_pod("low").priority(5).set("status.nominatedNodeName", "n1").build()
    h = Harness([lower])
    h.writer.fail[("clear", "default/low")] = TransientAPIError("500")
    h.run(PREEMPTOR, "n1", [victim("a")])
    assert ("delete", "batch/a") in h.writer.calls
    assert h.activated == ["shop/web"]


def test_the_preemptor_runs_preemption_until_its_last_victim_is_terminating() -> None:
    """Upstream's IsPodRunningPreemption: waiting on the others, then on the last victim's deletion."""
    h = Harness()
    a, b = victim("a"), victim("b")
    h.assigned[b.key] = b
    seen: list[bool] = []

    async def go() -> None:
        h.sink.prepare_candidate(PREEMPTOR, "n1", [a, b])
        seen.append(h.sink.is_pod_running_preemption(PREEMPTOR))  # nothing sent yet
        async with asyncio.timeout(WAIT_SECONDS):  # a condition never written fails in seconds
            while ("condition", "batch/b") not in h.writer.calls:
                await asyncio.sleep(0)
        seen.append(h.sink.is_pod_running_preemption(PREEMPTOR))  # b still there, not terminating...
        h.assigned[b.key] = make_pod("b", "batch").node("n1").terminating().build()
        seen.append(h.sink.is_pod_running_preemption(PREEMPTOR))  # ...now it is
        await h.sink.drain()
        seen.append(h.sink.is_pod_running_preemption(PREEMPTOR))

    asyncio.run(go())
    assert seen == [True, True, False, False]
    assert not h.sink.is_pod_running_preemption(make_pod("other").build())


# -- victims still in PreBind (1.36: cancelled in memory, not deleted) --------------------------------


def in_pre_bind(h: Harness, pod: Pod, cancels: list[str]) -> None:
    """``pod``'s binding cycle is in PreBind; cancelling it records the pod and leaves PreBind soon after."""

    def cancel() -> None:
        cancels.append(pod.key)
        asyncio.get_running_loop().call_soon(h.in_pre_bind.remove, pod.uid)

    h.in_pre_bind.add(pod.uid, cancel)


@pytest.mark.parametrize(("minor", "activated"), [("1.36", []), ("1.37", ["shop/web"])])
def test_a_victim_in_pre_bind_is_cancelled_not_deleted(minor: str, activated: list[str]) -> None:
    """1.36: no condition, no deletion, the Event says so; 1.37: the preemptor is activated too, as
    no deletion event will wake it."""
    h = Harness(minor=minor)
    a, b = victim("a"), victim("b")
    cancels: list[str] = []
    in_pre_bind(h, b, cancels)
    h.run(PREEMPTOR, "n1", [a, b])
    assert cancels == ["batch/b"]
    assert h.sink.attempted == [("condition", "batch/a"), ("delete", "batch/a")]
    assert sorted((e.pod, e.note) for e in h.recorder.events) == [
        ("batch/a", f"Preempted by pod {PREEMPTOR.uid} on node n1"),
        ("batch/b", f"Preempted by pod {PREEMPTOR.uid} on node n1 (in kube-scheduler memory)."),
    ]
    assert h.activated == activated


def test_only_the_last_victim_in_pre_bind_activates_the_preemptor() -> None:
    """A victim deleted last wakes the preemptor by its deletion: no activation, even at 1.37."""
    h = Harness(minor="1.37")
    a, b = victim("a"), victim("b")
    cancels: list[str] = []
    in_pre_bind(h, a, cancels)
    h.run(PREEMPTOR, "n1", [a, b])
    assert cancels == ["batch/a"]
    assert h.sink.attempted == [("condition", "batch/b"), ("delete", "batch/b")]
    assert h.activated == []


def test_a_victim_whose_pre_bind_finished_is_deleted() -> None:
    """Past PreBind (marked prebound) a pod cannot be cancelled any more: the deletion goes out."""
    h = Harness(minor="1.36")
    a = victim("a")
    cancels: list[str] = []
    in_pre_bind(h, a, cancels)
    entry = h.in_pre_bind.get(a.uid)
    assert entry is not None and entry.mark_prebound()
    h.run(PREEMPTOR, "n1", [a])
    assert cancels == []
    assert h.sink.attempted == [("condition", "batch/a"), ("delete", "batch/a")]
    assert [e.note for e in h.recorder.events] == [f"Preempted by pod {PREEMPTOR.uid} on node n1"]
