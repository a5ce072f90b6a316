"""DynamicResources in the default profile of every minor (issue #49): upstream's extension points and
weight, a pod's claims allocated in its own cycle and written in its PreBind, one device never given
to two pods (the claims in flight are shared by the profiles), the allocated state that includes the
capacity shares already consume, no binding without a claim writer, and a pod asking for both a claim
and an extended resource a DeviceClass backs.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from scheduler.api.resourceclaim import ResourceClaim
from scheduler.config import load_config, parse_config
from scheduler.features import features_at
from scheduler.plugins import names
from scheduler.plugins.dynamicresources.plugin.claimwrites import ClaimBinding, ClaimDeallocation
from scheduler.plugins.dynamicresources.plugin.plugin import NO_CLAIM_WRITER
from scheduler.profile import build_frameworks
from scheduler.scheduler import Scheduler
from scheduler.simulate import Simulation
from scheduler.simulate.json_output import attempt_to_json
from scheduler.simulate.table import render_table
from scheduler.simulate.writers import MemoryClaimWriter
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder

MINORS = ("1.35", "1.36", "1.37")
DRIVER, CLASS = "gpu.example.com", "gpu"
DRA = names.DYNAMIC_RESOURCES
# Upstream's DynamicResources implements these (``var _ fwk.XPlugin = &DynamicResources{}`` at v1.35.4,
# v1.36.3 and v1.37.2; 1.37's PodGroupPostFilter has no counterpart here), and no other.
DRA_POINTS = {"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"}


def device_class(name: str = CLASS, extended_resource: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended_resource is not None:
        spec["extendedResourceName"] = extended_resource
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def node_slice(node: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": list(devices) or [{"name": "gpu-0"}],
        },
    }


def claim(name: str, *, owner: str | None = None, request: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-claim-{name}", "resourceVersion": "1"}
    if owner is not None:  # generated from the pod's template by kube-controller-manager
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-default-{owner}", "controller": True}
        ]
    exactly = {"deviceClassName": CLASS, **(request or {})}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def node(name: str, **extended: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu="4", memory="8Gi", pods="10", **extended).dict()


def simulate(minor: str, objects: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(load_config(None, features=features_at(minor)), seed=0)
    sim.add_objects(objects)
    return sim


@pytest.mark.parametrize("minor", MINORS)
def test_the_default_profile_runs_it_at_upstreams_points(minor: str) -> None:
    """applyDynamicResources: right before DefaultPreemption, weight 2, at every point it implements."""
    (fwk,) = build_frameworks(load_config(None, features=features_at(minor))).values()
    assert {point for point, plugins in fwk.points.items() if DRA in plugins} == DRA_POINTS
    assert fwk.weights[DRA] == 2
    assert fwk.points["postFilter"] == [DRA, names.DEFAULT_PREEMPTION]
    assert fwk.points["reserve"][-1] == fwk.points["preBind"][-1] == DRA  # after VolumeBinding, as upstream


@pytest.mark.parametrize("minor", MINORS)
def test_a_template_pods_claim_is_allocated_in_its_cycle_and_written_in_its_prebind(minor: str) -> None:
    """The claim kube-controller-manager generated for the pod (named in its status, owned by it) gets a
    device of the chosen node's slice, a finalizer and the pod in ``reservedFor``."""
    pod = make_pod("p").resource_claim("gpu", template="gpu-template").resource_claim_status("gpu", "p-gpu")
    sim = simulate(minor, [node("n1"), device_class(), node_slice("n1"), claim("p-gpu", owner="p"), pod.dict()])
    (attempt,) = sim.run()
    assert attempt.host == "n1", attempt.message
    written = sim.cache.storage.resource_claim("default", "p-gpu")
    assert written is not None and written.allocation is not None
    assert [(r.request, r.driver, r.pool, r.device) for r in written.allocation.results] == [
        ("gpu", DRIVER, "n1", "gpu-0")
    ]
    assert [ref.uid for ref in written.reserved_for] == ["uid-default-p"]
    assert "resource.kubernetes.io/delete-protection" in written.finalizers
    assert attempt_to_json(attempt, sim.cache)["claims"] == [
        {
            "claim": "default/p-gpu",
            "request": "gpu",
            "driver": DRIVER,
            "pool": "n1",
            "device": "gpu-0",
            "slice": "n1-gpus",
        }
    ]
    assert render_table([attempt], sim.cache).splitlines()[:2] == [
        "pod default/p: -> n1",
        f"  claim default/p-gpu: request gpu -> device gpu-0 (slice n1-gpus, pool n1, driver {DRIVER})",
    ]


@pytest.mark.parametrize("minor", MINORS)
def test_two_pods_never_get_one_device(minor: str) -> None:
    """One device in the cluster: the first pod gets it, the second fits no node, with upstream's text."""
    objects = [node("n1"), node("n2"), device_class(), node_slice("n1"), claim("c0"), claim("c1")]
    objects += [make_pod(f"p{i}").resource_claim("gpu", claim=f"c{i}").dict() for i in range(2)]
    first, second = simulate(minor, objects).run()
    assert first.host == "n1"
    assert second.host is None
    assert second.message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")


def _scheduler(doc: dict[str, Any] | None = None) -> tuple[Scheduler, FakeBinder, FakeRecorder]:
    binder, recorder = FakeBinder(), FakeRecorder()
    config = load_config(None) if doc is None else parse_config(doc)
    return Scheduler(config, binder, recorder, clock=FakeClock(), rng=random.Random(0)), binder, recorder


def _add(sched: Scheduler, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        sched.on_object("ADDED", obj)


def test_a_device_in_flight_is_taken_for_the_next_cycle_of_any_profile() -> None:
    """Two profiles, the second pod's cycle running while the first pod's PreBind has not written yet:
    the device is in flight (Reserve), so the second pod fits nowhere; once written, it stays taken."""
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "spread-scheduler"}, {"schedulerName": "other"}],
    }

    async def body() -> None:
        sched, binder, _ = _scheduler(doc)
        writer = MemoryClaimWriter(sched.handlers)
        sched.use_claim_writer(writer)
        second = make_pod("p1").resource_claim("gpu", claim="c1").set("spec.schedulerName", "other")
        _add(sched, [node("n1"), device_class(), node_slice("n1"), claim("c0"), claim("c1")])
        _add(sched, [make_pod("p0").resource_claim("gpu", claim="c0").dict(), second.dict()])
        results = []
        sched.attempt_observers.append(lambda attempt, _seconds: results.append(attempt))
        assert sched.schedule_one() and sched.schedule_one()  # no await between: p0's PreBind waits
        await sched.drain()
        assert [(a.pod.name, a.host) for a in results] == [("p0", "n1"), ("p1", None)]
        assert results[1].message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")
        assert [key for key, _ in binder.binds] == ["default/p0"]
        assert [b.name for b in writer.by_pod["default/p0"]] == ["c0"]

    asyncio.run(body())


def _failed_binding(writer: Any | None) -> tuple[Scheduler, FakeBinder, list[str]]:
    """One pod with a claim to write on one node with one device; the messages of its failures."""

    async def body() -> tuple[Scheduler, FakeBinder, list[str]]:
        sched, binder, recorder = _scheduler()
        if writer is not None:
            sched.use_claim_writer(writer)
        _add(sched, [node("n1"), device_class(), node_slice("n1"), claim("c0")])
        _add(sched, [make_pod("p0").resource_claim("gpu", claim="c0").dict()])
        assert sched.schedule_one()
        await sched.drain()
        return sched, binder, [e.note for e in recorder.events_for("default/p0", "FailedScheduling")]

    return asyncio.run(body())


def test_without_a_claim_writer_a_pod_with_claims_to_write_is_not_bound() -> None:
    """PreBind fails with the reason (an Error: the pod is retried) and Unreserve frees the device."""
    sched, binder, failures = _failed_binding(None)
    assert binder.binds == []
    assert failures == [f'running PreBind plugin "DynamicResources": resource claim default/c0: {NO_CLAIM_WRITER}']
    held = sched.cache.storage.resource_claim("default", "c0")
    assert held is not None and held.allocation is None
    plugin = sched.frameworks["spread-scheduler"].plugins[DRA]
    assert list(plugin.in_flight.claims()) == []  # type: ignore[attr-defined]


class _Refusing:
    """A ClaimWriter whose API answers with an error."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def bind_claim(self, pod: Any, binding: ClaimBinding) -> ResourceClaim:
        self.asked.append(binding.name)
        raise RuntimeError(f'Operation cannot be fulfilled on resourceclaims "{binding.name}": conflict')


def test_a_failed_claim_write_fails_the_binding_with_its_reason() -> None:
    writer = _Refusing()
    _, binder, failures = _failed_binding(writer)
    assert binder.binds == [] and writer.asked == ["c0"]
    assert failures == [
        'running PreBind plugin "DynamicResources": Operation cannot be fulfilled on resourceclaims "c0": conflict'
    ]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_capacity_a_share_consumes_is_not_free_and_the_rest_is(minor: str) -> None:
    """DRAConsumableCapacity (beta on from 1.36): a device that allows many allocations, 10Gi of which
    an allocated claim's share consumes 8Gi: a 4Gi request fits no node, a 2Gi one fits beside it."""
    device = {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "10Gi"}}}
    held = claim("held", request={"capacity": {"requests": {"memory": "8Gi"}}})
    held["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": DRIVER,
                        "pool": "n1",
                        "device": "gpu-0",
                        "shareID": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                        "consumedCapacity": {"memory": "8Gi"},
                    }
                ]
            }
        }
    }
    big = claim("big", request={"capacity": {"requests": {"memory": "4Gi"}}})
    small = claim("small", request={"capacity": {"requests": {"memory": "2Gi"}}})
    objects = [node("n1"), device_class(), node_slice("n1", device), held, big, small]
    objects += [make_pod(p).resource_claim("gpu", claim=p).dict() for p in ("big", "small")]
    first, second = simulate(minor, objects).run()
    assert (first.pod.name, first.host) == ("big", None)
    assert (second.pod.name, second.host) == ("small", "n1"), second.message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_pod_with_a_claim_and_a_class_backed_extended_resource(minor: str) -> None:
    """Its claim is allocated; its extended resource keeps to a node that offers it itself (nothing
    allocates the devices behind it yet: the other node is refused naming the resource and class)."""
    objects = [
        node("plain"),
        node("plugin", **{"example.com/fpga": "1"}),
        device_class(),
        device_class("fpga", extended_resource="example.com/fpga"),
        node_slice("plain"),
        {**node_slice("plugin"), "metadata": {"name": "plugin-gpus"}},
        claim("c0"),
        make_pod("p0").resource_claim("gpu", claim="c0").requests(**{"example.com/fpga": "1"}).dict(),
    ]
    sim = simulate(minor, objects)
    (attempt,) = sim.run()
    assert attempt.host == "plugin", attempt.message
    data = attempt_to_json(attempt, sim.cache)
    assert data["nodes"]["plain"]["filter"]["reason"] == (
        'extended resource "example.com/fpga" (DeviceClass "fpga") needs the DynamicResources plugin: '
        "spread-scheduler does not allocate devices"
    )
    assert [c["device"] for c in data["claims"]] == ["gpu-0"] and data["claims"][0]["pool"] == "plugin"


def test_the_memory_writer_deallocates_and_unreserves_in_the_cache() -> None:
    """simulate's ClaimWriter: PostFilter's deallocation and Unreserve's patch, applied at once."""
    pod = make_pod("p0").resource_claim("gpu", claim="c0")
    sim = simulate("1.36", [node("n1"), device_class(), node_slice("n1"), claim("c0"), pod.dict()])
    (attempt,) = sim.run()
    assert attempt.host == "n1"
    storage = sim.cache.storage
    written = storage.resource_claim("default", "c0")
    assert written is not None and written.reserved_for

    async def undo() -> None:
        await sim.claim_writer.unreserve_claim(pod.build(), written)
        held = storage.resource_claim("default", "c0")
        assert held is not None and held.allocation is not None and held.reserved_for == ()
        await sim.claim_writer.deallocate_claim(ClaimDeallocation("default", "c0", written.uid))

    asyncio.run(undo())
    gone = storage.resource_claim("default", "c0")
    assert gone is not None and gone.allocation is None and gone.resource_version == "4"
