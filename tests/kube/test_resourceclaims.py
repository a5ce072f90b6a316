"""DynamicResources' claim writes (``scheduler.kube.resourceclaims``) against a local aiohttp stub of the
ResourceClaim API that keeps resourceVersions as the API server does (a PUT of another version is a
409 Conflict): upstream's ``bindClaim`` (finalizer, then allocation and reservation; conflicts read
the claim again; a claim deleted or allocated elsewhere meanwhile fails with upstream's text), the
claim assumed in the cache before the caller hears of it, the Lease's fence, PostFilter's
deallocation and Unreserve's patch."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes.aio import client

from scheduler.api.devicefields import DeviceConfiguration, DeviceToleration
from scheduler.api.labels import Operator, Requirement, make_selector
from scheduler.api.nodeselector import NODE_NAME_FIELD, FieldRequirement, NodeSelector, NodeSelectorTerm
from scheduler.api.resourceclaim import AllocationResult, DeviceAllocationResult, ResourceClaim
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.errors import BindConflictError, NotLeadingError
from scheduler.kube import writes
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.resourceclaims import ApiClaimWriter, ClaimChangedError, allocation_json, quantity_text
from scheduler.plugins.dynamicresources.plugin.claimwrites import (
    FINALIZER,
    ClaimBinding,
    ClaimDeallocation,
    binding_for,
)
from scheduler.testing import make_pod

PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu"
POD = make_pod("p").build()
DEVICE = DeviceAllocationResult(request="gpu", driver="gpu.example.com", pool="n1", device="dev-0")
ALLOCATION = AllocationResult(
    results=(DEVICE,),
    node_selector=NodeSelector((NodeSelectorTerm(None, (FieldRequirement(NODE_NAME_FIELD, False, "n1"),)),)),
)
NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def claim_json(version: int, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default", "uid": "claim-uid", "resourceVersion": str(version)},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": status,
    }


@dataclass
class FakeClaims:
    """One ResourceClaim behind the API's paths; ``meanwhile`` runs on the stored object before the
    request it is given for is answered (another writer got there first)."""

    obj: dict[str, Any]
    requests: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    meanwhile: dict[int, Callable[[dict[str, Any]], None]] = field(default_factory=dict)

    def bump(self) -> None:
        meta = self.obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def reply(self) -> web.Response:
        shown = copy.deepcopy(self.obj)
        shown["metadata"]["managedFields"] = [{"manager": "someone"}]  # never kept nor sent back
        return web.json_response(shown)

    async def handle(self, request: web.Request) -> web.Response:
        subresource = request.path.removeprefix(PATH).strip("/")
        self.requests.append((request.method, subresource))
        change = self.meanwhile.pop(len(self.requests), None)
        if change is not None:
            change(self.obj)
            self.bump()
        if not request.path.startswith(PATH):
            return web.json_response({"reason": "NotFound", "message": "not found"}, status=404)
        if request.method == "GET":
            return self.reply()
        body = await request.json()
        self.bodies.append(body)
        if request.method == "PATCH":
            gone = {e["uid"] for e in body["status"]["reservedFor"] if e.get("$patch") == "delete"}
            reserved = self.obj["status"].get("reservedFor", [])
            self.obj["status"]["reservedFor"] = [r for r in reserved if r["uid"] not in gone]
            self.bump()
            return self.reply()
        if body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
            message = "Operation cannot be fulfilled on resourceclaims.resource.k8s.io: the object has been modified"
            return web.json_response({"reason": "Conflict", "message": message}, status=409)
        if subresource == "status":
            self.obj["status"] = body["status"]
        else:
            self.obj["metadata"]["finalizers"] = body["metadata"].get("finalizers", [])
        self.bump()
        return self.reply()


@contextlib.asynccontextmanager
async def api(
    fake: FakeClaims | FakeCreates | FakeDelete, fence: Callable[[], bool] = lambda: True
) -> AsyncIterator[writes.ApiWriter]:
    """The one writer, over its own connections, to the stub."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    server = TestServer(app)
    await server.start_server()
    api_client = client.ApiClient(client.Configuration(host=str(server.make_url("")).rstrip("/")))
    sender = writes.ApiWrites(api_client)
    try:
        yield writes.ApiWriter(sender, RateLimiter(qps=0, burst=1), fence=fence)
    finally:
        await sender.close()
        await api_client.close()  # type: ignore[no-untyped-call]
        await server.close()


def cached(obj: dict[str, Any]) -> StorageObjects:
    """The cache holding ``obj`` as the watch brought it."""
    storage = StorageObjects()
    storage.upsert(ResourceClaim.from_dict(copy.deepcopy(obj)), obj["metadata"]["resourceVersion"])
    return storage


def binding(allocation: AllocationResult | None = ALLOCATION, **changes: Any) -> ClaimBinding:
    """PreBind's write for the stub's claim and ``POD``, as the plugin makes it."""
    made = binding_for(POD, ResourceClaim.from_dict(claim_json(10)), allocation, binding_conditions=False)
    return dataclasses.replace(made, **changes)


def run(
    fake: FakeClaims,
    storage: StorageObjects,
    call: Callable[[ApiClaimWriter], Awaitable[Any]],
    fence: Callable[[], bool] = lambda: True,
) -> Any:
    async def body() -> Any:
        async with api(fake, fence) as writer:
            return await call(ApiClaimWriter(writer, storage, "1.37", clock=lambda: NOW, sleep=_no_wait))

    return asyncio.run(body())


async def _no_wait(_seconds: float) -> None:
    return None


RESERVED = {"resource": "pods", "name": "p", "uid": "uid-default-p"}


def test_the_finalizer_goes_first_then_the_allocation_and_the_reservation_and_the_cache_holds_them() -> None:
    """An Update adds the finalizer, an UpdateStatus the allocation and the reservation; the claim
    returned is the API's and the cache shows it at once (the watch has brought nothing)."""
    fake = FakeClaims(claim_json(10))
    storage = cached(fake.obj)
    written = run(fake, storage, lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == [("PUT", ""), ("PUT", "status")]
    assert fake.obj["metadata"]["finalizers"] == [FINALIZER]
    assert fake.obj["status"] == {"allocation": allocation_json(ALLOCATION), "reservedFor": [RESERVED]}
    assert all("managedFields" not in b["metadata"] for b in fake.bodies)
    assert written.resource_version == "12" and written.allocation == ALLOCATION
    held = storage.resource_claim("default", "gpu")
    assert held is written
    assert list(storage.resource_claims()) == [written]  # every allocator's list of allocated claims


def test_an_allocated_claim_only_gets_the_reservation() -> None:
    fake = FakeClaims(claim_json(10, allocation=allocation_json(ALLOCATION)))
    fake.obj["metadata"]["finalizers"] = [FINALIZER]
    written = run(fake, cached(fake.obj), lambda w: w.bind_claim(POD, binding(None)))
    assert fake.requests == [("PUT", "status")]
    assert fake.obj["status"]["reservedFor"] == [RESERVED]
    assert written.reserved_for[0].uid == "uid-default-p"


def test_a_conflict_reads_the_claim_again_and_tries_again() -> None:
    """Someone annotated the claim after the watch brought it: the first Update gets 409, the claim is
    read again and the writes go on from that version."""
    fake = FakeClaims(claim_json(10))
    storage = cached(fake.obj)
    fake.meanwhile[1] = lambda obj: obj["metadata"].setdefault("annotations", {}).update(touched="yes")
    written = run(fake, storage, lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == [("PUT", ""), ("GET", ""), ("PUT", ""), ("PUT", "status")]
    assert fake.obj["metadata"]["annotations"] == {"touched": "yes"}  # the other writer's change kept
    assert written.allocation == ALLOCATION and storage.resource_claim("default", "gpu") is written


@pytest.mark.parametrize(
    ("cached_finalizers", "api_finalizers", "want"),
    [
        # The cache's copy has the finalizer, which was removed before PreBind: the status write of
        # that copy conflicts, and the claim read again gets the finalizer first.
        pytest.param(
            [FINALIZER],
            [],
            [("PUT", "status"), ("GET", ""), ("PUT", ""), ("PUT", "status")],
            id="with-resources-finalizer-gets-removed",
        ),
        # The finalizer was added before PreBind: the Update adding it conflicts, the claim read
        # again needs only its status written.
        pytest.param(
            [], [FINALIZER], [("PUT", ""), ("GET", ""), ("PUT", "status")], id="with-resources-finalizer-gets-added"
        ),
    ],
)
def test_a_finalizer_changed_before_pre_bind(
    cached_finalizers: list[str], api_finalizers: list[str], want: list[tuple[str, str]]
) -> None:
    """Upstream's ``with-resources-finalizer-gets-*`` cases against an API that keeps versions."""
    fake = FakeClaims(claim_json(10))
    fake.obj["metadata"]["finalizers"] = cached_finalizers
    storage = cached(fake.obj)
    fake.obj["metadata"]["finalizers"] = api_finalizers
    fake.bump()
    written = run(fake, storage, lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == want
    assert fake.obj["metadata"]["finalizers"] == [FINALIZER]
    assert fake.obj["status"] == {"allocation": allocation_json(ALLOCATION), "reservedFor": [RESERVED]}
    assert storage.resource_claim("default", "gpu") is written


def test_a_claim_deleted_meanwhile_fails_with_upstreams_text_and_nothing_is_assumed() -> None:
    fake = FakeClaims(claim_json(10))
    storage = cached(fake.obj)
    fake.meanwhile[1] = lambda obj: obj["metadata"].update(deletionTimestamp="2027-01-15T07:59:00Z")
    with pytest.raises(ClaimChangedError, match=r"^claim default/gpu got deleted in the meantime$"):
        run(fake, storage, lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == [("PUT", ""), ("GET", "")]
    held = storage.resource_claim("default", "gpu")
    assert held is not None and held.allocation is None


def test_a_claim_allocated_elsewhere_meanwhile_fails_with_upstreams_text() -> None:
    fake = FakeClaims(claim_json(10))
    storage = cached(fake.obj)
    other = AllocationResult(results=(DeviceAllocationResult("gpu", "gpu.example.com", "n2", "dev-9"),))
    fake.meanwhile[1] = lambda obj: obj["status"].update(allocation=allocation_json(other))
    with pytest.raises(ClaimChangedError, match=r"^claim default/gpu got allocated elsewhere in the meantime$"):
        run(fake, storage, lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == [("PUT", ""), ("GET", "")]
    assert "finalizers" not in fake.obj["metadata"]


def test_conflicts_five_times_give_up_with_the_last_conflict() -> None:
    """client-go's DefaultRetry: five tries, then the conflict is the error."""
    fake = FakeClaims(claim_json(10))
    for i in range(1, 20):
        fake.meanwhile[i] = lambda obj: None
    with pytest.raises(BindConflictError, match=r"^add finalizer to claim default/gpu: HTTP 409 Conflict: "):
        run(fake, cached(fake.obj), lambda w: w.bind_claim(POD, binding()))
    assert [m for m, _ in fake.requests] == ["PUT", "GET", "PUT", "GET", "PUT", "GET", "PUT", "GET", "PUT"]


def test_without_the_lease_nothing_is_sent_and_nothing_assumed() -> None:
    fake = FakeClaims(claim_json(10))
    storage = cached(fake.obj)
    with pytest.raises(NotLeadingError):
        run(fake, storage, lambda w: w.bind_claim(POD, binding()), fence=lambda: False)
    assert fake.requests == []
    held = storage.resource_claim("default", "gpu")
    assert held is not None and held.allocation is None


def test_binding_conditions_stamp_the_allocation() -> None:
    fake = FakeClaims(claim_json(10))
    run(fake, cached(fake.obj), lambda w: w.bind_claim(POD, binding(stamp_allocation=True, binding_conditions=True)))
    assert fake.obj["status"]["allocation"]["allocationTimestamp"] == "2027-01-15T08:00:00Z"


def test_binding_conditions_refuse_a_claim_deallocated_meanwhile() -> None:
    fake = FakeClaims(claim_json(10, allocation=allocation_json(ALLOCATION)))
    fake.obj["metadata"]["finalizers"] = [FINALIZER]
    fake.meanwhile[1] = lambda obj: obj.update(status={})
    with pytest.raises(ClaimChangedError, match=r"^claim default/gpu got deallocated elsewhere in the meantime$"):
        run(fake, cached(fake.obj), lambda w: w.bind_claim(POD, binding(None, binding_conditions=True)))


def test_a_claim_the_cache_does_not_hold_is_read_first() -> None:
    fake = FakeClaims(claim_json(10))
    run(fake, StorageObjects(), lambda w: w.bind_claim(POD, binding()))
    assert fake.requests == [("GET", ""), ("PUT", ""), ("PUT", "status")]


def test_postfilter_deallocation_clears_allocation_reservation_and_devices() -> None:
    fake = FakeClaims(claim_json(10, allocation=allocation_json(ALLOCATION), reservedFor=[RESERVED], devices=[{}]))
    run(fake, cached(fake.obj), lambda w: w.deallocate_claim(ClaimDeallocation("default", "gpu", "claim-uid")))
    assert fake.requests == [("PUT", "status")]
    assert fake.obj["status"] == {}


def test_unreserve_patches_the_pod_out_of_reserved_for() -> None:
    fake = FakeClaims(claim_json(10, allocation=allocation_json(ALLOCATION), reservedFor=[RESERVED]))
    claim = ResourceClaim.from_dict(copy.deepcopy(fake.obj))
    run(fake, cached(fake.obj), lambda w: w.unreserve_claim(POD, claim))
    assert fake.requests == [("PATCH", "status")]
    assert fake.bodies == [
        {"metadata": {"uid": "claim-uid"}, "status": {"reservedFor": [{"$patch": "delete", "uid": "uid-default-p"}]}}
    ]
    assert fake.obj["status"]["reservedFor"] == []


def test_an_allocation_reads_back_as_written() -> None:
    """Every field the allocator sets survives the trip through JSON (the parser is the API's view)."""
    allocation = AllocationResult(
        results=(
            DeviceAllocationResult(
                "gpu",
                "gpu.example.com",
                "pool-a",
                "dev-1",
                admin_access=True,
                tolerations=(DeviceToleration(key="k", operator="Exists", effect="NoSchedule", toleration_seconds=30),),
                binding_conditions=("attached",),
                binding_failure_conditions=("failed",),
                share_id="0f1e2d3c",
                consumed_capacity={"memory": Fraction(3, 2), "cores": Fraction(4)},
            ),
        ),
        config=(DeviceConfiguration("gpu.example.com", {"mode": "fast"}, ("gpu",), "FromClaim"),),
        node_selector=NodeSelector(
            (
                NodeSelectorTerm(
                    make_selector([Requirement("zone", Operator.IN, frozenset({"b", "a"}))]),
                    (FieldRequirement(NODE_NAME_FIELD, False, "n1"),),
                ),
            )
        ),
        allocation_timestamp="2027-01-15T08:00:00Z",
    )
    obj = claim_json(1, allocation=json.loads(json.dumps(allocation_json(allocation))))
    parsed = ResourceClaim.from_dict(obj)
    assert parsed.errors == ()
    assert parsed.allocation == allocation


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(Fraction(4), "4", id="whole"),
        pytest.param(Fraction(3, 2), "1.5", id="decimal"),
        pytest.param(Fraction(-1, 1000), "-0.001", id="negative-milli"),
        pytest.param(Fraction(1, 3), "333333334n", id="rounded-up-to-nano"),
    ],
)
def test_quantity_text(value: Fraction, text: str) -> None:
    assert quantity_text(value) == text


@dataclass
class FakeCreates:
    """The ResourceClaim collection and the pods' status subresource: a create gets a generated name."""

    requests: list[tuple[str, str, str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((request.method, request.path, request.content_type, body))
        if request.method == "POST":
            meta = {**body["metadata"], "name": body["metadata"]["generateName"] + "x7k2p", "uid": "new-uid"}
            return web.json_response({**body, "metadata": {**meta, "resourceVersion": "5"}}, status=201)
        return web.json_response({"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}})


def _run_creates(
    fake: FakeCreates | FakeDelete,
    storage: StorageObjects,
    call: Callable[[ApiClaimWriter], Awaitable[Any]],
    sleep: Callable[[float], Awaitable[None]] = _no_wait,
) -> Any:
    async def body() -> Any:
        async with api(fake) as writer:
            return await call(ApiClaimWriter(writer, storage, "1.37", clock=lambda: NOW, sleep=sleep))

    return asyncio.run(body())


def test_the_extended_resources_claim_is_created_and_assumed_and_the_pod_status_patched() -> None:
    """PreBind's create (POST to the collection, ``generateName``) and the pod's
    ``status.extendedResourceClaimStatus`` (a strategic-merge PATCH of the status subresource)."""
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": "default", "generateName": "p-extended-resources-"},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    patch = {"status": {"extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-x7k2p"}}}
    fake, storage = FakeCreates(), StorageObjects()

    async def both(w: ApiClaimWriter) -> ResourceClaim:
        created = await w.create_claim("default", body)
        await w.patch_pod_status(POD, patch)
        return created

    slept: list[float] = []

    async def watch_brings_it(seconds: float) -> None:
        """The watch brings the created claim during the first wait."""
        slept.append(seconds)
        if fake.requests and storage.resource_claim("default", "p-extended-resources-x7k2p") is None:
            _, _, _, sent = fake.requests[0]
            meta = {**sent["metadata"], "name": "p-extended-resources-x7k2p", "uid": "new-uid"}
            storage.upsert(ResourceClaim.from_dict({**sent, "metadata": meta}), "5")

    created = _run_creates(fake, storage, both, watch_brings_it)
    assert slept == [1.0]  # upstream's poll: the claim assumed once the watch has it
    assert [(m, p, t) for m, p, t, _ in fake.requests] == [
        ("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", "application/json"),
        ("PATCH", "/api/v1/namespaces/default/pods/p/status", "application/strategic-merge-patch+json"),
    ]
    assert fake.requests[0][3] == body and fake.requests[1][3] == patch
    assert created.name == "p-extended-resources-x7k2p" and created.uid == "new-uid"
    assert storage.resource_claim("default", "p-extended-resources-x7k2p") is created


@dataclass
class FakeDelete:
    """One claim created for a pod's extended resources; ``gone`` answers every request with 404."""

    obj: dict[str, Any]
    gone: bool = False
    requests: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path))
        if self.gone:
            return web.json_response({"reason": "NotFound", "message": "not found"}, status=404)
        if request.method == "PUT":
            self.bodies.append(await request.json())
        return web.json_response(self.obj)


def test_unreserve_deletes_the_created_claim_its_finalizer_dropped_first() -> None:
    obj = claim_json(10, allocation=allocation_json(ALLOCATION))
    obj["metadata"]["finalizers"] = [FINALIZER, "other.example.com/keep"]
    fake = FakeDelete(obj)
    _run_creates(fake, cached(obj), lambda w: w.delete_claim(ResourceClaim.from_dict(copy.deepcopy(obj))))
    assert fake.requests == [("PUT", PATH), ("DELETE", PATH)]
    assert fake.bodies[0]["metadata"]["finalizers"] == ["other.example.com/keep"]


def test_deleting_a_claim_already_gone_is_done() -> None:
    fake = FakeDelete(claim_json(10), gone=True)
    _run_creates(fake, StorageObjects(), lambda w: w.delete_claim(ResourceClaim.from_dict(claim_json(10))))
    assert fake.requests == [("GET", PATH)]
