"""Bad DRA input (issue #49's goal): a DeviceClass selector that does not compile, one that fails at
run time, one over the CEL cost limit, a ResourceSlice naming a node that does not exist, and devices
already allocated by someone else. Each is told in the pod's FailedScheduling Event and PodScheduled
condition with upstream's text (the allocator's ``class X: selector #i: CEL ... error`` inside
the framework's ``running "DynamicResources" filter plugin``; a ghost node's devices are simply on no
node), no device goes to two claims, and the next pod is bound as if nothing had happened.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.features import features_at
from scheduler.scheduler import Scheduler
from scheduler.simulate.writers import MemoryClaimWriter
from scheduler.testing import make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder
from tests.plugins.dynamicresources.test_dra_profile import DRIVER, MINORS, claim, device_class, node, node_slice

FILTER = 'running "DynamicResources" filter plugin: '
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def _ten_million_steps() -> str:
    """Upstream's ``expensive`` case: seven nested loops of ten, 10^7 steps, over the 10^6 cost limit."""
    expression = "true"
    for var in ("z5", "z4", "z3", "z2", "z", "y", "x"):
        expression = f"{TEN}.all({var}, {expression})"
    return expression


def bad_class(expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "bad"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def bad_claim(name: str = "c-bad") -> dict[str, Any]:
    return claim(name, request={"deviceClassName": "bad"})


def allocated(name: str, node_name: str, device: str) -> dict[str, Any]:
    """A claim another scheduler (or a driver's controller) allocated and reserved: its devices are taken."""
    obj = claim(name)
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]
    result = {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": device}
    obj["status"] = {
        "allocation": {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": terms}},
        "reservedFor": [{"resource": "pods", "name": "theirs", "uid": "uid-theirs"}],
    }
    return obj


def run(
    minor: str, objects: list[dict[str, Any]], pods: list[str]
) -> tuple[Scheduler, FakeBinder, FakeRecorder, MemoryClaimWriter]:
    """Each pod (named by its claim) scheduled once, in order, its binding cycle finished before the next."""

    async def body() -> tuple[Scheduler, FakeBinder, FakeRecorder, MemoryClaimWriter]:
        binder, recorder = FakeBinder(), FakeRecorder()
        sched = Scheduler(
            load_config(None, features=features_at(minor)), binder, recorder, clock=FakeClock(), rng=random.Random(0)
        )
        writer = MemoryClaimWriter(sched.handlers)
        sched.use_claim_writer(writer)
        for obj in objects:
            sched.on_object("ADDED", obj)
        for name in pods:
            sched.on_object("ADDED", make_pod(f"p-{name}").resource_claim("gpu", claim=name).dict())
            assert sched.schedule_one()
            await sched.drain()
        return sched, binder, recorder, writer

    return asyncio.run(body())


def _devices(sched: Scheduler) -> list[tuple[str, str]]:
    """Every device some claim holds, once per claim holding it."""
    return [
        (r.pool, r.device)
        for c in sched.cache.storage.resource_claims()
        if c.allocation is not None
        for r in c.allocation.results
    ]


def _cel_text(minor: str, error: str) -> str:
    """Where 1.37 (v0.37) names the device the selector failed on."""
    on = " on device gpu.example.com/n1/gpu-0" if minor == "1.37" else ""
    return f"{FILTER}class bad: selector #0{on}: CEL runtime error: {error}"


CASES = {
    "does-not-compile": (
        'device.driver == "gpu.example.com" &&',
        lambda minor: (
            f"{FILTER}class bad: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:38: "
            "Syntax error: mismatched input '<EOF>'"
        ),
    ),
    "fails-at-run-time": (
        'device.attributes["gpu.example.com"].model == "a100"',
        lambda minor: _cel_text(minor, "no such key: model"),
    ),
    "over-the-cost-limit": (
        _ten_million_steps(),
        lambda minor: _cel_text(minor, "operation cancelled: actual cost limit exceeded"),
    ),
}


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_class_selector_is_an_error_naming_class_and_selector_and_others_keep_scheduling(
    minor: str, case: str
) -> None:
    """An Error (retried with backoff, upstream's ``SchedulerError``), not Unschedulable: the class,
    not the cluster, is wrong. Nothing is allocated for the pod; the next pod gets its device."""
    expression, text = CASES[case]
    objects = [
        node("n1"),
        device_class(),
        bad_class(expression),
        node_slice("n1", {"name": "gpu-0"}, {"name": "gpu-1"}),
    ]
    sched, binder, recorder, writer = run(minor, [*objects, bad_claim(), claim("c-good")], ["c-bad", "c-good"])
    (event,) = recorder.events_for("default/p-c-bad", "FailedScheduling")
    assert event.note.startswith(text(minor)), event.note
    (condition,) = recorder.conditions_for("default/p-c-bad")
    assert (condition.reason, condition.message) == ("SchedulerError", event.note)
    assert [key for key, _ in binder.binds] == ["default/p-c-good"]
    assert list(writer.by_pod) == ["default/p-c-good"]
    assert _devices(sched) == [("n1", "gpu-0")]


@pytest.mark.parametrize("minor", MINORS)
def test_a_slice_naming_a_node_that_does_not_exist_offers_nothing(minor: str) -> None:
    """The ghost node's devices are on no node: the pod is bound where a real device is, and with
    only the ghost's devices left, it fits nowhere with upstream's text (no error: the slice is valid)."""
    objects = [node("n1"), device_class(), node_slice("ghost", {"name": "gpu-0"}), node_slice("n1")]
    sched, binder, recorder, _ = run(minor, [*objects, claim("c0"), claim("c1")], ["c0", "c1"])
    assert [(key, host) for key, host in binder.binds] == [("default/p-c0", "n1")]
    (event,) = recorder.events_for("default/p-c1", "FailedScheduling")
    assert event.note.startswith("0/1 nodes are available: 1 cannot allocate all claims."), event.note
    assert _devices(sched) == [("n1", "gpu-0")]


@pytest.mark.parametrize("minor", MINORS)
def test_devices_allocated_by_someone_else_are_never_allocated_again(minor: str) -> None:
    """Another scheduler wrote ``status.allocation`` for n1's gpu-0 (the device we would pick first):
    our pod gets gpu-1, the next one fits nowhere, and each device is held by one claim."""
    objects = [node("n1"), device_class(), node_slice("n1", {"name": "gpu-0"}, {"name": "gpu-1"})]
    objects += [allocated("theirs", "n1", "gpu-0"), claim("c0"), claim("c1")]
    sched, binder, recorder, _ = run(minor, objects, ["c0", "c1"])
    assert [key for key, _ in binder.binds] == ["default/p-c0"]
    ours = sched.cache.storage.resource_claim("default", "c0")
    assert ours is not None and ours.allocation is not None
    assert [r.device for r in ours.allocation.results] == ["gpu-1"]
    (event,) = recorder.events_for("default/p-c1", "FailedScheduling")
    assert event.note.startswith("0/1 nodes are available: 1 cannot allocate all claims."), event.note
    assert sorted(_devices(sched)) == [("n1", "gpu-0"), ("n1", "gpu-1")]
