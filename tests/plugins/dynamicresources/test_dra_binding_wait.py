"""DynamicResources' PreBind waiting for binding conditions (DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus, on from 1.36): upstream's PreBind after the claims are written, its
``isPodReadyForBinding`` polls, its errors, Event and metrics; the plugin's ``DynamicResourcesArgs``;
and, through the whole scheduler, a pod that binds once the driver meets the conditions, and a wait
that a stop ends at once."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.api.resourceclaim import AllocatedDeviceStatus, ResourceClaim
from scheduler.config import load_config
from scheduler.features import features_at
from scheduler.framework.interface import Handle
from scheduler.framework.status import Status
from scheduler.plugins import names
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.scheduler import Scheduler
from scheduler.simulate import Simulation
from scheduler.simulate.writers import MemoryClaimWriter
from scheduler.testing import make_node, make_pod, node_resource_slice
from tests.fakes import FakeBinder, FakeClock, FakeRecorder
from tests.plugins.dynamicresources.test_dra_plugin import (
    CLAIM,
    CLASS,
    DRIVER,
    NODE,
    NS,
    Lister,
    allocated,
    claim,
    cycle,
    pod,
    worker_slice,
)

WAITING = "waiting for binding conditions for device on node worker"


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting_claim(
    condition: str | None = None, failed: str = "False", *, allocated_at: float | None = None, message: str = ""
) -> dict[str, Any]:
    """The pod's claim, allocated and reserved, its device with a binding condition ``condition`` and a
    failure condition ``failed`` (``condition`` None: the driver has reported no status yet)."""
    out = allocated(claim(), reserved=True)
    out["status"]["allocation"]["allocationTimestamp"] = _stamp(time.time() if allocated_at is None else allocated_at)
    out["status"]["allocation"]["devices"]["results"][0].update(
        {"bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}
    )
    if condition is not None:
        conditions = [
            {"type": "attached", "status": condition, "reason": "Attach", "message": ""},
            {"type": "failed", "status": failed, "reason": "AttachFailed", "message": message},
        ]
        out["status"]["devices"] = [{"driver": DRIVER, "pool": NODE, "device": "instance-1", "conditions": conditions}]
    return out


class Reads(Lister):
    """The cache as the wait reads it: ``claims`` one after the other, the last one from then on."""

    def __init__(self, *claims: dict[str, Any]) -> None:
        super().__init__([claims[0]], [CLASS], [worker_slice()])
        self.queue = [ResourceClaim.from_dict(c) for c in claims]
        self.reads = 0

    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        self.reads += 1
        return self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]


class Events:
    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str, str, str]] = []

    def eventf(self, p: Any, event_type: str, reason: str, action: str, note: str) -> None:
        self.posted.append((p.key, event_type, reason, action, note))


class Metrics:
    def __init__(self) -> None:
        self.waits: list[tuple[str, str]] = []
        self.allocations: list[tuple[str, str]] = []

    def observe_wait(self, driver: str, status: str, seconds: float) -> None:
        self.waits.append((driver, status))

    def count_allocation(self, driver: str, status: str) -> None:
        self.allocations.append((driver, status))


def _plugin(
    minor: str, lister: Lister, *, timeout: float = 600.0
) -> tuple[StructuredDynamicResources, Events, Metrics]:
    handle = Handle()
    events, metrics = Events(), Metrics()
    handle.events = events
    pl = StructuredDynamicResources({}, handle, features_at(minor), lister=lister)
    pl.poll_interval = 0.001
    pl.binding_timeout = timeout
    pl.binding_metrics = metrics
    return pl, events, metrics


def _pre_bind(pl: StructuredDynamicResources, during: Callable[[], None] | None = None) -> Status | None:
    """The cycle up to Reserve, then PreBind (``during``: called once the wait has begun)."""
    state, status = cycle(pl, pod())
    assert status is None
    assert pl.reserve(state, pod(), NODE) is None

    async def body() -> Status | None:
        task = asyncio.ensure_future(pl.pre_bind(state, pod(), NODE))
        if during is not None:
            await asyncio.sleep(0.01)
            during()
        return await asyncio.wait_for(task, 5)

    return asyncio.run(body())


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_ready_after_some_polls(minor: str) -> None:
    """Not ready at the first two reads (no status, then the condition False): PreBind waits, with
    the Event, and succeeds at the third; the wait and the device are counted as a success."""
    lister = Reads(waiting_claim(), waiting_claim(), waiting_claim("False"), waiting_claim("True"))
    pl, events, metrics = _plugin(minor, lister)
    assert _pre_bind(pl) is None
    assert lister.reads == 4  # PreFilter's read, then one per poll
    assert events.posted == [(f"{NS}/my-pod", "Normal", "BindingConditionsPending", "Scheduling", WAITING)]
    assert metrics.waits == [(DRIVER, "success")] and metrics.allocations == [(DRIVER, "success")]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_failure_condition_fails_prebind(minor: str) -> None:
    lister = Reads(waiting_claim(), waiting_claim("False", "True", message='no "link"'))
    pl, _, metrics = _plugin(minor, lister)
    want = f'device binding failed: claim={CLAIM}, reason=AttachFailed, message="no \\"link\\""'
    assert _pre_bind(pl) == Status.as_error(want)
    assert metrics.waits == [(DRIVER, "failure")] and metrics.allocations == [(DRIVER, "failure")]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_prebind_fail_with_binding_timeout(minor: str) -> None:
    """``prebind-fail-with-binding-timeout``: allocated just under ``bindingTimeout`` ago, so Filter
    still takes it; not ready, it times out while PreBind polls (``isPodReadyForBinding``)."""
    raw = waiting_claim("False", allocated_at=time.time() - 600 + 1.5)
    pl, _, metrics = _plugin(minor, Lister([raw], [CLASS], [worker_slice()]))
    pl.poll_interval = 0.05
    assert _pre_bind(pl) == Status.as_error(f"device binding timeout: claim={CLAIM}")
    assert metrics.waits == [(DRIVER, "timeout")] and metrics.allocations == [(DRIVER, "timeout")]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_the_wait_times_out(minor: str) -> None:
    """Never ready: the poll's own deadline, ``bindingTimeout`` after the wait began (the claim's
    own timestamp, a minute ahead, keeps ``isClaimTimeout`` out of it)."""
    pl, _, metrics = _plugin(minor, Reads(waiting_claim("False", allocated_at=time.time() + 60)), timeout=0.05)
    assert _pre_bind(pl) == Status.as_error("device binding timeout: context deadline exceeded")
    assert metrics.waits == [(DRIVER, "timeout")] and metrics.allocations == [(DRIVER, "timeout")]


def test_gates_off_no_wait() -> None:
    """1.35: DRADeviceBindingConditions is alpha, off; PreBind binds at once, no Event."""
    lister = Reads(waiting_claim("False"))
    pl, events, metrics = _plugin("1.35", lister)
    assert _pre_bind(pl) is None
    assert lister.reads == 1 and events.posted == [] and metrics.waits == []


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_no_binding_conditions_no_wait(minor: str) -> None:
    lister = Reads(allocated(claim(), reserved=True))
    pl, events, _ = _plugin(minor, lister)
    assert _pre_bind(pl) is None
    assert lister.reads == 1 and events.posted == []


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_the_scheduler_stopping_ends_the_wait(minor: str) -> None:
    """Upstream's cancelled context: the wait ends with ``context canceled``, counted as an error."""
    pl, _, metrics = _plugin(minor, Reads(waiting_claim("False")))
    pl.poll_interval = 5.0
    started = time.monotonic()
    assert _pre_bind(pl, pl.handle.stopping.set) == Status.as_error("context canceled")
    assert time.monotonic() - started < 1
    assert metrics.waits == [(DRIVER, "error")]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_cancelled_binding_cycle_cancels_the_wait(minor: str) -> None:
    """A preemption cancels the binding cycle's task: the cancellation goes through, counted as an error."""
    pl, _, metrics = _plugin(minor, Reads(waiting_claim("False")))
    state, _ = cycle(pl, pod())
    pl.reserve(state, pod(), NODE)

    async def body() -> None:
        task = asyncio.ensure_future(pl.pre_bind(state, pod(), NODE))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(body())
    assert metrics.waits == [(DRIVER, "error")]


# ---- DynamicResourcesArgs: SetDefaults_DynamicResourcesArgs and ValidateDynamicResourcesArgs.

ARGS = [
    pytest.param("1.36", {}, (10.0, 600.0), id="defaults"),
    pytest.param("1.35", {}, (10.0, 600.0), id="defaults-1.35"),
    pytest.param("1.36", {"bindingTimeout": "30s", "filterTimeout": "0s"}, (0.0, 30.0), id="set"),
    pytest.param(
        "1.36",
        {"bindingTimeout": "500ms"},
        'bindingTimeout: Invalid value: "500ms": must be at least 1 second',
        id="binding-timeout-too-short",
    ),
    pytest.param(
        "1.37",
        {"filterTimeout": "-1m30s"},
        'filterTimeout: Invalid value: "-1m30s": must be zero or positive',
        id="negative-filter-timeout",
    ),
    pytest.param(
        "1.35",
        {"bindingTimeout": "5m"},
        "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
        "feature gate is disabled",
        id="binding-timeout-forbidden",
    ),
    pytest.param(
        "1.36",
        {"filterTimeout": "-1s", "bindingTimeout": "0s"},
        '[filterTimeout: Invalid value: "-1s": must be zero or positive, '
        'bindingTimeout: Invalid value: "0s": must be at least 1 second]',
        id="both",
    ),
    pytest.param(
        "1.36", {"bindingTimeout": "ten"}, 'bindingTimeout: time: invalid duration "ten"', id="not-a-duration"
    ),
]


@pytest.mark.parametrize(("minor", "args", "want"), ARGS)
def test_args(minor: str, args: dict[str, Any], want: tuple[float, float] | str) -> None:
    """As the plugin's ``New`` takes them: refused naming the field, else the timeouts in force."""
    if isinstance(want, str):
        with pytest.raises(ValueError, match=re.escape(want)) as info:
            StructuredDynamicResources(args, Handle(), features_at(minor))
        assert str(info.value) == want
        return
    pl = StructuredDynamicResources(args, Handle(), features_at(minor))
    assert (pl.filter_timeout, pl.binding_timeout) == want


def test_the_binding_timeout_reaches_filter() -> None:
    """Filter takes a claim allocated longer than ``bindingTimeout`` ago (not 600 s) as timed out."""
    raw = waiting_claim("False", allocated_at=time.time() - 120)
    pl = StructuredDynamicResources(
        {"bindingTimeout": "1m"}, Handle(), features_at("1.36"), lister=Lister([raw], [CLASS], [worker_slice()])
    )
    _, status = cycle(pl, pod())
    assert status is not None and status.message() == "resourceclaim not available on the node"


# ---- through the scheduler.

GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}
GPU_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c0", "namespace": "default", "uid": "uid-c0", "resourceVersion": "1"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
}


def _objects() -> list[dict[str, Any]]:
    device = {"name": "gpu-0", "bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}
    return [
        make_node("n1").capacity(cpu="4", memory="8Gi", pods="10").dict(),
        GPU_CLASS,
        node_resource_slice("n1-gpus", "gpu.example.com", "n1", device),
        GPU_CLAIM,
        make_pod("p0").resource_claim("gpu", claim="c0").dict(),
    ]


def _scheduler(minor: str) -> tuple[Scheduler, FakeBinder, FakeRecorder]:
    binder, recorder = FakeBinder(), FakeRecorder()
    sched = Scheduler(
        load_config(None, features=features_at(minor)), binder, recorder, clock=FakeClock(), rng=random.Random(0)
    )
    sched.use_claim_writer(MemoryClaimWriter(sched.handlers))
    for obj in _objects():
        sched.on_object("ADDED", obj)
    return sched, binder, recorder


def _plugin_of(sched: Scheduler) -> StructuredDynamicResources:
    plugin = sched.frameworks["spread-scheduler"].plugins[names.DYNAMIC_RESOURCES]
    assert isinstance(plugin, StructuredDynamicResources)
    return plugin


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_the_pod_binds_once_the_driver_meets_the_conditions(minor: str) -> None:
    """The claim is written (allocated, reserved), the pod stays unbound while the device's condition
    is unset; once the claim's status says it is attached, the pod is bound."""

    async def body() -> None:
        sched, binder, recorder = _scheduler(minor)
        _plugin_of(sched).poll_interval = 0.01
        assert sched.schedule_one()
        await asyncio.sleep(0.05)
        held = sched.cache.storage.resource_claim("default", "c0")
        assert held is not None and held.allocation is not None and [r.uid for r in held.reserved_for]
        assert binder.binds == []
        assert [e.note for e in recorder.events_for("default/p0", "BindingConditionsPending")] == [
            "waiting for binding conditions for device on node n1"
        ]
        status = AllocatedDeviceStatus("gpu.example.com", "n1", "gpu-0", conditions={"attached": True})
        attached = dataclasses.replace(held, device_statuses=(status,), resource_version="99")
        sched.cache.storage.upsert(attached, "99")
        await asyncio.wait_for(sched.drain(), 5)
        assert [key for key, _ in binder.binds] == ["default/p0"]

    asyncio.run(body())


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_stop_ends_the_wait_at_once(minor: str) -> None:
    """The scheduler stops while the pod waits (5 s polls, 600 s timeout): ``run`` returns at once,
    the pod unbound, its binding failed with ``context canceled``."""

    async def body() -> None:
        sched, binder, recorder = _scheduler(minor)
        assert sched.schedule_one()
        await asyncio.sleep(0.05)
        stop = asyncio.Event()
        stop.set()
        started = time.monotonic()
        await asyncio.wait_for(sched.run(stop), 3)
        assert time.monotonic() - started < 2
        assert binder.binds == []
        assert [e.note for e in recorder.events_for("default/p0", "FailedScheduling")] == [
            'running PreBind plugin "DynamicResources": context canceled'
        ]

    asyncio.run(body())


def test_a_dry_run_does_not_wait() -> None:
    """``simulate``: no driver will meet the conditions; the pod is shown where it would bind."""
    sim = Simulation(load_config(None, features=features_at("1.36")), seed=0)
    sim.add_objects(_objects())
    (attempt,) = sim.run()
    assert attempt.host == "n1", attempt.message
