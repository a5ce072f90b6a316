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
from scheduler.testing import make_node, make_pod, node_resource_slice
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
    return node_resource_slice(f"{node}-gpus", DRIVER, node, *devices)


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


def test_a_nodes_pools_are_gathered_once_for_every_pod_while_the_slices_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pod's allocator reads a node's pools as the pod before found them (they are made of the
    node and the slices alone): three pods, each node gathered once; the devices still go one each."""
    from scheduler.plugins.dynamicresources.structured import allocator, pools  # noqa: PLC0415 - patched here

    gathered: list[str] = []
    original = pools.gather_pools

    def counting(slices: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        gathered.append(node.name)
        return original(slices, node, *args, **kwargs)

    monkeypatch.setattr(pools, "gather_pools", counting)
    monkeypatch.setattr(allocator, "gather_pools", counting, raising=False)  # where it was called from before
    two = [{"name": "gpu-0"}, {"name": "gpu-1"}]
    objects = [node("n1"), node("n2"), device_class(), node_slice("n1", *two), node_slice("n2", *two)]
    objects += [claim(f"c{i}") for i in range(3)]
    objects += [make_pod(f"p{i}").resource_claim("gpu", claim=f"c{i}").dict() for i in range(3)]
    attempts = simulate("1.37", objects).run()
    assert all(a.host is not None for a in attempts)
    assert sorted(gathered) == ["n1", "n2"]


def test_a_classs_selectors_are_asked_of_a_device_once_for_every_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """The class's answer for a device is kept with the slices: the next pod's Filter does not ask it
    again (the pods still get one device each)."""
    from scheduler.plugins.dynamicresources import cel  # noqa: PLC0415 - patched here

    asked: list[str] = []
    original = cel.Compiled.device_matches

    def counting(self: cel.Compiled, device: Any) -> cel.Result:
        asked.append(device.name)
        return original(self, device)

    monkeypatch.setattr(cel.Compiled, "device_matches", counting)
    objects = [node("n1"), node("n2"), device_class()]
    objects += [node_slice("n1", {"name": "a-0"}), node_slice("n2", {"name": "b-0"}, {"name": "b-1"})]
    objects += [claim(f"c{i}") for i in range(3)]
    objects += [make_pod(f"p{i}").resource_claim("gpu", claim=f"c{i}").dict() for i in range(3)]
    attempts = simulate("1.37", objects).run()
    assert sorted(str(a.host) for a in attempts) == ["n1", "n2", "n2"]
    assert sorted(asked) == ["a-0", "b-0", "b-1"]


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
    """Its claim is allocated; on a node that does not offer its extended resource itself the devices
    behind it are allocated too, in a claim of their own (DRAExtendedResource, on from 1.36)."""
    objects = [
        node("plain"),
        device_class(),
        device_class("fpga", extended_resource="example.com/fpga"),
        node_slice("plain", {"name": "gpu-0"}, {"name": "gpu-1"}),
        claim("c0"),
        make_pod("p0").resource_claim("gpu", claim="c0").requests(**{"example.com/fpga": "1"}).dict(),
    ]
    sim = simulate(minor, objects)
    (attempt,) = sim.run()
    assert attempt.host == "plain", attempt.message
    created = sim.cache.storage.resource_claim("default", "p0-extended-resources-00001")
    assert created is not None and created.allocation is not None
    user = sim.cache.storage.resource_claim("default", "c0")
    assert user is not None and user.allocation is not None
    devices = {r.device for c in (created, user) if c.allocation for r in c.allocation.results}
    assert devices == {"gpu-0", "gpu-1"}  # never the same device twice
    # The JSON lists the created claim's devices after the pod's own claims' (the oracle's order).
    listed = [(e["claim"], e["device"]) for e in attempt_to_json(attempt, sim.cache)["claims"]]
    assert [c for c, _ in listed] == ["default/c0", "default/p0-extended-resources-00001"]


def _extended_only(minor: str, *, count: str = "1", devices: int = 2) -> Simulation:
    objects = [
        node("plain"),
        node("plugin", **{"example.com/fpga": "1"}),
        device_class("fpga", extended_resource="example.com/fpga"),
        node_slice("plain", *({"name": f"gpu-{i}"} for i in range(devices))),
    ]
    pod = make_pod("p0").requests(**{"example.com/fpga": count})
    return simulate(minor, [*objects, pod.dict()])


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_class_backed_extended_resource_alone_is_allocated_devices(minor: str) -> None:
    """A pod without ``resourceClaims``: where the node's device plugin has too few, the devices of the
    class are allocated in a claim created for the pod (upstream's ``generateName``), owned by it,
    reserved for it, named in the requests its containers map to."""
    sim = _extended_only(minor, count="2")
    (attempt,) = sim.run()
    assert attempt.host == "plain", attempt.message
    data = attempt_to_json(attempt, sim.cache)
    assert data["nodes"]["plugin"]["filter"]["reason"] == "Insufficient example.com/fpga"
    created = sim.cache.storage.resource_claim("default", "p0-extended-resources-00001")
    assert created is not None and created.allocation is not None
    assert created.controller_uid == "uid-default-p0"
    assert created.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert sorted(r.device for r in created.allocation.results) == ["gpu-0", "gpu-1"]
    assert {r.request for r in created.allocation.results} == {"container-0-request-0"}
    assert [c.name for c in created.reserved_for] == ["p0"]
    # Listed with the pod's devices, as the oracle lists the claim its status names.
    assert [(e["claim"], e["request"]) for e in data["claims"]] == [
        ("default/p0-extended-resources-00001", "container-0-request-0")
    ] * 2


class _PatchRefused(MemoryClaimWriter):
    """The dry run's writer whose patch of the pod's status is refused, after the claim was created."""

    def __init__(self, sched: Scheduler) -> None:
        super().__init__(sched.handlers)
        self.deleted: list[str] = []

    async def patch_pod_status(self, pod: Any, patch: dict[str, Any]) -> None:
        raise RuntimeError(f'pods "{pod.name}" is forbidden')

    async def delete_claim(self, claim: ResourceClaim) -> None:
        self.deleted.append(claim.name)
        await super().delete_claim(claim)


def test_a_failed_prebind_deletes_the_claim_it_created_for_extended_resources() -> None:
    """Upstream's Unreserve deletes the created claim (else the next cycle finds it and cannot schedule
    the pod: "cannot schedule extended resource claim"), and no in-flight allocation is left."""

    async def body() -> tuple[Scheduler, _PatchRefused, list[str]]:
        recorder = FakeRecorder()
        config = load_config(None, features=features_at("1.37"))
        sched = Scheduler(config, FakeBinder(), recorder, clock=FakeClock(), rng=random.Random(0))
        writer = _PatchRefused(sched)
        sched.use_claim_writer(writer)
        _add(sched, [node("n1"), device_class("fpga", extended_resource="example.com/fpga"), node_slice("n1")])
        _add(sched, [make_pod("p0").requests(**{"example.com/fpga": "1"}).dict()])
        assert sched.schedule_one()
        await sched.drain()
        return sched, writer, [e.note for e in recorder.events_for("default/p0", "FailedScheduling")]

    sched, writer, failures = asyncio.run(body())
    assert failures == ['running PreBind plugin "DynamicResources": pods "p0" is forbidden']
    assert writer.deleted == ["p0-extended-resources-00001"]
    assert list(sched.cache.storage.resource_claims()) == []
    plugin = sched.frameworks["spread-scheduler"].plugins[DRA]
    assert list(plugin.in_flight.claims()) == []  # type: ignore[attr-defined]


def test_the_devices_stay_in_flight_until_the_created_claims_allocation_is_written() -> None:
    """Between PreBind's create (a claim without allocation) and its allocation's write, the next
    cycle must still see the devices taken: the in-memory claim's in-flight entry holds them."""
    seen: list[list[str]] = []

    class _Watching(MemoryClaimWriter):
        async def bind_claim(self, pod: Any, binding: ClaimBinding) -> ResourceClaim:
            seen.append([r.device for c in plugin.in_flight.claims() if c.allocation for r in c.allocation.results])
            return await super().bind_claim(pod, binding)

    async def body() -> None:
        config = load_config(None, features=features_at("1.37"))
        sched = Scheduler(config, FakeBinder(), FakeRecorder(), clock=FakeClock(), rng=random.Random(0))
        nonlocal plugin
        plugin = sched.frameworks["spread-scheduler"].plugins[DRA]
        sched.use_claim_writer(_Watching(sched.handlers))
        _add(sched, [node("n1"), device_class("fpga", extended_resource="example.com/fpga"), node_slice("n1")])
        _add(sched, [make_pod("p0").requests(**{"example.com/fpga": "1"}).dict()])
        assert sched.schedule_one()
        await sched.drain()

    plugin: Any = None
    asyncio.run(body())
    assert seen == [["gpu-0"]]
    assert list(plugin.in_flight.claims()) == []


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_too_few_devices_for_a_class_backed_extended_resource(minor: str) -> None:
    """Three devices asked, two published, the device plugin's one: no node fits."""
    (attempt,) = _extended_only(minor, count="3").run()
    assert attempt.host is None


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


class _Recording(MemoryClaimWriter):
    """simulate's writer that also records PostFilter's and Unreserve's writes; ``refuse`` makes them fail."""

    def __init__(self, sched: Scheduler, *, refuse: bool = False) -> None:
        super().__init__(sched.handlers)
        self.refuse = refuse
        self.deallocated: list[ClaimDeallocation] = []
        self.unreserved: list[tuple[str, str]] = []

    async def deallocate_claim(self, deallocation: ClaimDeallocation) -> None:
        self.deallocated.append(deallocation)
        if self.refuse:
            raise RuntimeError(f'Operation cannot be fulfilled on resourceclaims "{deallocation.name}": conflict')
        await super().deallocate_claim(deallocation)

    async def unreserve_claim(self, pod: Any, claim: ResourceClaim) -> None:
        self.unreserved.append((pod.key, claim.key))
        if self.refuse:
            raise RuntimeError(f'Operation cannot be fulfilled on resourceclaims "{claim.name}": conflict')
        await super().unreserve_claim(pod, claim)


def _allocated_on(claim_obj: dict[str, Any], node_name: str) -> dict[str, Any]:
    """``claim_obj`` allocated a device of ``node_name``'s slice, reserved for nobody."""
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]
    }
    result = {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": "gpu-0"}
    return {**claim_obj, "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}}


@pytest.mark.parametrize("refuse", [False, True], ids=["written", "refused"])
def test_postfilter_deallocation_is_written_through_the_claim_writer(refuse: bool) -> None:
    """A claim allocated on a node that is gone and reserved for nobody: PostFilter deallocates it
    (upstream's UpdateStatus), so the pod fits on the next try once the watch brings the claim back
    free. A refused write is logged and leaves the claim as it was; the scheduler goes on."""

    async def body() -> tuple[_Recording, ResourceClaim | None, list[str]]:
        sched, _, recorder = _scheduler()
        writer = _Recording(sched, refuse=refuse)
        sched.use_claim_writer(writer)
        _add(sched, [node("n2"), device_class(), node_slice("n2"), _allocated_on(claim("c0"), "gone")])
        _add(sched, [make_pod("p0").resource_claim("gpu", claim="c0").dict()])
        assert sched.schedule_one()
        await sched.drain()
        notes = [e.note for e in recorder.events_for("default/p0", "FailedScheduling")]
        return writer, sched.cache.storage.resource_claim("default", "c0"), notes

    writer, held, notes = asyncio.run(body())
    assert writer.deallocated == [ClaimDeallocation("default", "c0", "uid-claim-c0")]
    assert held is not None and (held.allocation is None) is not refuse
    assert notes == [
        "0/1 nodes are available: 1 resourceclaim not available on the node. deallocation of ResourceClaim completed"
    ]


@pytest.mark.parametrize("refuse", [False, True], ids=["written", "refused"])
def test_unreserve_patch_is_written_before_the_pod_is_retried(refuse: bool) -> None:
    """PreBind reserved the claim for the pod, then its binding failed: Unreserve's patch takes the pod
    out of ``reservedFor`` before the pod goes back to the queue (upstream writes inside Unreserve).
    A refused patch is logged; the binding's failure is reported all the same."""

    async def body() -> tuple[_Recording, ResourceClaim | None, list[str], bool]:
        sched, binder, recorder = _scheduler()
        writer = _Recording(sched, refuse=refuse)
        sched.use_claim_writer(writer)
        binder.fail("default/p0", RuntimeError("connection reset"))
        _add(sched, [node("n1"), device_class(), node_slice("n1"), claim("c0")])
        _add(sched, [make_pod("p0").resource_claim("gpu", claim="c0").dict()])
        requeued: list[bool] = []
        queue_add = sched.queue.add_unschedulable_if_not_present

        def add(*args: Any, **kwargs: Any) -> None:  # when the pod goes back: was the patch sent yet?
            requeued.append(bool(writer.unreserved))
            queue_add(*args, **kwargs)

        sched.queue.add_unschedulable_if_not_present = add  # type: ignore[method-assign]
        assert sched.schedule_one()
        await sched.drain()
        notes = [e.note for e in recorder.events_for("default/p0", "FailedScheduling")]
        return writer, sched.cache.storage.resource_claim("default", "c0"), notes, requeued == [True]

    writer, held, notes, patched_first = asyncio.run(body())
    assert writer.unreserved == [("default/p0", "default/c0")]
    assert patched_first
    assert held is not None and held.allocation is not None
    assert [ref.uid for ref in held.reserved_for] == (["uid-default-p0"] if refuse else [])
    assert notes == ["binding rejected: connection reset"]


def _scored_fpga_config(minor: str) -> Any:
    """Both resource scorers on ``example.com/fpga`` alone (with cpu for the balance)."""
    fit = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "example.com/fpga", "weight": 1}]}}
    balanced = {"resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/fpga", "weight": 1}]}
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "spread-scheduler",
                    "pluginConfig": [
                        {"name": names.NODE_RESOURCES_FIT, "args": fit},
                        {"name": names.NODE_RESOURCES_BALANCED_ALLOCATION, "args": balanced},
                    ],
                }
            ],
        },
        features=features_at(minor),
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_a_class_backed_extended_resource_is_scored_in_devices(minor: str) -> None:
    """Upstream's resource scorers read a backed resource the node offers none of from the devices
    the class selects on it (4 here) and those a claim holds (1, plus the pod's 1): LeastAllocated
    (4 - 2) * 100 / 4 = 50 (without the devices the resource is not scored: 0)."""
    held = claim("c0")
    result = {"request": "gpu", "driver": DRIVER, "pool": "plain", "device": "gpu-0"}
    held["status"] = {"allocation": {"devices": {"results": [result]}}}
    objects = [
        node("plain"),
        node("plugin", **{"example.com/fpga": "4"}),  # a device plugin's: scored as ever, (4 - 1) * 100 / 4
        device_class("fpga", extended_resource="example.com/fpga"),
        node_slice("plain", *({"name": f"gpu-{i}"} for i in range(4))),
        held,
        make_pod("p0").requests(cpu="2", **{"example.com/fpga": "1"}).dict(),
    ]
    sim = Simulation(_scored_fpga_config(minor), seed=0)
    sim.add_objects(objects)
    (attempt,) = sim.run()
    nodes = attempt_to_json(attempt, sim.cache)["nodes"]
    assert nodes["plugin"]["scores"][names.NODE_RESOURCES_FIT]["raw"] == 75
    scores = nodes["plain"]["scores"]
    assert scores[names.NODE_RESOURCES_FIT]["raw"] == 50
    # The change in balance (1.36+): cpu 2/4 and fpga 2/4 with the pod (100), 0/4 and 1/4 without
    # (std 1/8: 87), so 50 + (50 + 100 - 87) // 2.
    assert scores[names.NODE_RESOURCES_BALANCED_ALLOCATION]["raw"] == 81


@pytest.mark.parametrize("minor", MINORS)
def test_a_pod_naming_one_claim_twice_fails_prebind_as_upstream(minor: str) -> None:
    """Two ``spec.resourceClaims`` entries, one claim: upstream's PreBind writes the first entry's
    allocation, and the second entry's write (from the cycle's copy: a conflict, the claim read again)
    finds it allocated; the next attempt reserves it for the first entry and the API server refuses the
    second entry's duplicate reservation. Never bound (e2e/test_dra_claim_twice.py, beside kube-scheduler)."""

    async def body() -> None:
        binder, recorder, clock = FakeBinder(), FakeRecorder(), FakeClock()
        config = load_config(None, features=features_at(minor))
        sched = Scheduler(config, binder, recorder, clock=clock, rng=random.Random(0))
        sched.use_claim_writer(MemoryClaimWriter(sched.handlers))
        _add(sched, [node("n1"), device_class(), node_slice("n1", {"name": "gpu-0"}, {"name": "gpu-1"}), claim("c0")])
        _add(sched, [make_pod("p0").resource_claim("a", claim="c0").resource_claim("b", claim="c0").dict()])
        for _ in range(3):
            clock.advance(20)
            sched.queue.flush_backoff_completed()
            assert sched.schedule_one()
            await sched.drain()
        assert binder.binds == []
        notes = [e.note for e in recorder.events_for("default/p0", "FailedScheduling")]
        prefix = 'running PreBind plugin "DynamicResources": '
        # The API server's text: 1.37's declarative validation shows the whole entry.
        value = '{"resource":"pods","name":"p0","uid":"uid-default-p0"}' if minor == "1.37" else '"uid-default-p0"'
        assert notes == [
            f"{prefix}claim default/c0 got allocated elsewhere in the meantime",
            f"{prefix}add reservation to claim default/c0: ResourceClaim.resource.k8s.io "
            f'"c0" is invalid: status.reservedFor[1]: Duplicate value: {value}',
        ]
        held = sched.cache.storage.resource_claim("default", "c0")
        assert held is not None and held.allocation is not None and held.reserved_for == ()

    asyncio.run(body())
