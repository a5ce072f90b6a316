"""The informer: synced after every kind's first list, a re-list that replaces, resumed watches, backoff.

The reflector's contract, driven by a scripted engine; then kopf's own list and watch (the engine
the scheduler runs) against a stub API server: pages, the pods' field selector, a watch resumed from
its version, 410 Gone, a 401 that logs in again, and failures reported as they happen.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import json
import random
from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any

import pytest
import structlog
from aiohttp import web
from kubernetes.aio import client

from scheduler import logs
from scheduler.api.resourceslice import ResourceSlice
from scheduler.config import load_config, parse_config
from scheduler.features import SUPPORTED, features_at
from scheduler.kube import app
from scheduler.kube.client.informer import Informer
from scheduler.kube.client.watch import (
    DEVICE_CLASSES,
    NOT_TERMINAL,
    PAGE_SIZE,
    WATCHED,
    Engine,
    Kind,
    KopfEngine,
    watch_session,
    watched,
)
from scheduler.scheduler import Scheduler
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder

NODES = next(kind for kind in WATCHED if kind.kind == "Node")
PODS = next(kind for kind in WATCHED if kind.kind == "Pod")
NAMESPACES = next(kind for kind in WATCHED if kind.kind == "Namespace")
# resource.k8s.io/v1, as kube-apiserver serves it: plural -> (kind, namespaced).
DRA = {
    "deviceclasses": ("DeviceClass", False),
    "resourceslices": ("ResourceSlice", False),
    "resourceclaims": ("ResourceClaim", True),
    "resourceclaimtemplates": ("ResourceClaimTemplate", True),
    "devicetaintrules": ("DeviceTaintRule", False),
}


def _scheduler() -> Scheduler:
    return Scheduler(load_config(None), FakeBinder(), FakeRecorder(), clock=FakeClock(), rng=random.Random(0))


def _obj(builder: Any, version: int) -> dict[str, Any]:
    obj: dict[str, Any] = builder.dict()
    obj["metadata"]["resourceVersion"] = str(version)
    obj.pop("kind", None)  # list items come without kind
    return obj


def _namespace(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version), "labels": {"team": name}}}


class _Forever:
    """A watch that stays open with nothing to say (until the test ends)."""


class ScriptedEngine(Engine):
    """Lists and watches answered from per-kind scripts; every watch's ``since`` is recorded."""

    def __init__(self) -> None:
        self.lists: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self.watches: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self.since: dict[str, list[str]] = collections.defaultdict(list)
        self.gate: dict[str, asyncio.Event] = {}

    async def list(self, kind: Kind) -> AsyncIterator[tuple[Collection[Mapping[str, Any]], str]]:
        if kind.plural in self.gate:
            await self.gate[kind.plural].wait()
        script = self.lists[kind.plural]
        answer = script.popleft() if script else ([], "1")
        if isinstance(answer, Exception):
            raise answer
        items, version = answer
        for start in range(0, max(len(items), 1), 2):  # pages of two
            yield items[start : start + 2], version

    async def watch(self, kind: Kind, since: str) -> AsyncIterator[Mapping[str, Any]]:
        self.since[kind.plural].append(since)
        script = self.watches[kind.plural]
        answer = script.popleft() if script else _Forever()
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, _Forever):
            await asyncio.Event().wait()
        for event in answer:
            yield event
        await asyncio.sleep(0)


async def _running(informer: Informer, until: Any, timeout: float = 5.0) -> None:
    """Run the informer until ``until()`` holds (polled), then stop it."""
    task = asyncio.create_task(informer.run())
    try:
        async with asyncio.timeout(timeout):
            while not until():
                if task.done():
                    task.result()
                await asyncio.sleep(0.001)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_synced_only_once_every_kind_has_been_listed() -> None:
    sched, engine = _scheduler(), ScriptedEngine()
    engine.lists["nodes"].append(([_obj(make_node("n1"), 5)], "5"))
    engine.gate["pods"] = asyncio.Event()
    engine.lists["pods"].append(([_obj(make_pod("p").node("n1"), 6)], "6"))
    informer = Informer(engine, sched.handlers, kinds=(NODES, PODS))

    async def main() -> None:
        task = asyncio.create_task(informer.run())
        await asyncio.sleep(0.05)
        assert not informer.has_synced and informer.unsynced() == ["Pod"]
        assert [info.name for info in sched.cache.node_infos()] == ["n1"]  # delivered as it came
        engine.gate["pods"].set()
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert sched.cache.pod("default/p") is not None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # Each watch starts at its own list's version.
    assert engine.since == {"nodes": ["5"], "pods": ["6"]}


def test_a_watch_that_ends_resumes_from_the_last_version_it_saw_bookmarks_included() -> None:
    sched, engine = _scheduler(), ScriptedEngine()
    engine.lists["nodes"].append(([_obj(make_node("n1"), 5)], "5"))
    engine.watches["nodes"].append([{"type": "ADDED", "object": _obj(make_node("n2"), 7)}])
    engine.watches["nodes"].append([{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}])
    informer = Informer(engine, sched.handlers, kinds=(NODES,))
    asyncio.run(_running(informer, lambda: len(engine.since["nodes"]) == 3))
    assert engine.since["nodes"] == ["5", "7", "9"]
    assert sorted(info.name for info in sched.cache.node_infos()) == ["n1", "n2"]
    assert len(engine.lists["nodes"]) == 0  # one list only: nothing was gone


def test_a_relist_after_410_gone_turns_what_the_list_lacks_into_deletions() -> None:
    """The watch gap: a pod, a node and a namespace were deleted while no watch saw it."""
    sched, engine = _scheduler(), ScriptedEngine()
    n1, n2 = _obj(make_node("n1"), 1), _obj(make_node("n2"), 2)
    kept, gone = _obj(make_pod("kept").node("n1"), 3), _obj(make_pod("gone").node("n2"), 4)
    engine.lists["nodes"].extend([([n1, n2], "10"), ([n1], "20")])
    engine.lists["pods"].extend([([kept, gone], "10"), ([kept], "20")])
    engine.lists["namespaces"].extend([([_namespace("a", 1), _namespace("b", 2)], "10"), ([_namespace("a", 1)], "20")])
    gone_410 = [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}]
    for plural in ("nodes", "pods", "namespaces"):
        engine.watches[plural].append(gone_410)
    informer = Informer(engine, sched.handlers, kinds=(NODES, PODS, NAMESPACES))
    asyncio.run(_running(informer, lambda: all(len(engine.since[p]) == 2 for p in ("nodes", "pods", "namespaces"))))
    assert [info.name for info in sched.cache.node_infos()] == ["n1"]
    assert sched.cache.pod("default/gone") is None and sched.cache.pod("default/kept") is not None
    assert sched.cache.namespace_labels("b") is None and sched.cache.namespace_labels("a") == {"team": "a"}
    assert engine.since["pods"] == ["10", "20"]  # the new watch starts at the new list


def test_failures_back_off_as_the_reflector_does_and_never_give_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A list refused twice, a watch error, and a watch that closes at once: each waits, jittered,
    800 ms doubling, as failures follow each other within 2 minutes (the very short watch is
    client-go's too: no busy loop on a server that hangs up)."""
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float, *args: object) -> None:
        if seconds >= 0.5:  # the informer's, not the test's own polling
            slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    sched, engine = _scheduler(), ScriptedEngine()
    engine.lists["nodes"].extend(
        [ConnectionError("Cannot connect to host 127.0.0.1:1"), ConnectionError("refused"), ([], "5")]
    )
    engine.watches["nodes"].extend(
        [[{"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "etcd away"}}], []]
    )
    informer = Informer(engine, sched.handlers, kinds=(NODES,), rng=random.Random(1))
    logs.configure("text", 0)
    try:
        asyncio.run(_running(informer, lambda: len(engine.since["nodes"]) == 3))
    finally:
        structlog.reset_defaults()
    assert len(slept) == 4, slept
    for delay, base in zip(slept, (0.8, 1.6, 3.2, 6.4), strict=True):
        assert base <= delay < 2 * base, slept
    assert engine.since["nodes"] == ["5", "5", "5"]  # the watch failed: resumed, not re-listed
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all('"Failed to watch"' in line and 'type="*v1.Node"' in line for line in lines), lines
    assert 'err="failed to list *v1.Node: Cannot connect to host 127.0.0.1:1"' in lines[0]
    assert 'err="watch error: etcd away"' in lines[2] and "attempt=3" in lines[2]


def test_objects_reach_the_cache_with_their_kind_and_without_managed_fields() -> None:
    seen: list[tuple[str | None, Mapping[str, Any]]] = []

    class Sink:
        def on_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
            seen.append((event_type, obj))

        def reconcile(self, kind: str, listed: Mapping[str, str], list_version: str) -> int:
            return 0

    engine = ScriptedEngine()
    node = _obj(make_node("n1"), 5)
    node["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    engine.lists["nodes"].append(([node], "5"))
    informer = Informer(engine, Sink(), kinds=(NODES,))
    asyncio.run(_running(informer, lambda: bool(seen)))
    (event_type, obj), *_ = seen
    assert event_type is None and obj["kind"] == "Node" and "managedFields" not in obj["metadata"]
    assert "managedFields" in node["metadata"]  # the engine's object is not changed under it


def test_the_collector_is_paused_while_any_list_is_delivered_and_resumed_after() -> None:
    """Two kinds listed at once (the second ends first), then a list that fails half-way: the
    collector is off for every object delivered, and on again once no list is in flight; what the
    first sync built is frozen, not walked by the next collection."""
    enabled_at: dict[str, list[bool]] = collections.defaultdict(list)

    class Sink:
        def on_object(self, _event_type: str | None, obj: Mapping[str, Any]) -> None:
            enabled_at[str(obj["kind"])].append(gc.isenabled())

        def reconcile(self, kind: str, listed: Mapping[str, str], list_version: str) -> int:
            return 0

    engine = ScriptedEngine()
    engine.gate["nodes"] = asyncio.Event()
    engine.lists["nodes"].append(([_obj(make_node(f"n{i}"), 5) for i in range(5)], "5"))
    engine.lists["namespaces"].append(([_namespace("a", 6)], "6"))
    informer = Informer(engine, Sink(), kinds=(NODES, NAMESPACES))

    async def main() -> None:
        task = asyncio.create_task(informer.run())
        while not enabled_at["Namespace"]:
            await asyncio.sleep(0.001)
        assert gc.get_freeze_count() == 0  # one kind listed: nothing frozen yet
        engine.gate["nodes"].set()
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.unfreeze()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    gc.unfreeze()
    assert gc.isenabled()
    asyncio.run(main())
    assert enabled_at == {"Namespace": [False], "Node": [False] * 5}
    assert gc.isenabled()

    class Failing(ScriptedEngine):
        async def list(self, kind: Kind) -> AsyncIterator[tuple[Collection[Mapping[str, Any]], str]]:
            yield [_obj(make_node("n9"), 9)], "9"
            raise ConnectionError("the list broke off")

    broken = Informer(Failing(), Sink(), kinds=(NODES,), rng=random.Random(0))
    asyncio.run(_running(broken, lambda: len(enabled_at["Node"]) == 6))
    assert enabled_at["Node"][-1] is False and gc.isenabled()
    assert gc.get_freeze_count() == 0  # a list that failed did not complete a sync


def test_wait_for_sync_ends_on_stop_and_on_a_dead_informer() -> None:
    async def main() -> tuple[bool, bool, bool]:
        engine = ScriptedEngine()
        engine.gate["nodes"] = asyncio.Event()
        informer = Informer(engine, _scheduler().handlers, kinds=(NODES,))
        watching = asyncio.create_task(informer.run())
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stop.set)
        stopped = await asyncio.wait_for(app._wait_for_sync(informer, watching, stop), 5)
        engine.gate["nodes"].set()
        synced = await asyncio.wait_for(app._wait_for_sync(informer, watching, asyncio.Event()), 5)
        watching.cancel()

        async def dies() -> None:
            raise RuntimeError("bug")

        dead = asyncio.create_task(dies())
        fresh = Informer(ScriptedEngine(), _scheduler().handlers, kinds=(NODES,))
        died = await asyncio.wait_for(app._wait_for_sync(fresh, dead, asyncio.Event()), 5)
        return stopped, synced, died

    assert asyncio.run(main()) == (False, True, False)


# --- kopf's list and watch (the engine the scheduler runs) against a stub API server ----------------


class StubApiServer:
    """Nodes and pods with pagination, watches from a version, 410 for an old one, 401 and 500 on cue."""

    def __init__(self) -> None:
        self.requests: list[web.Request] = []
        self.nodes = [_obj(make_node(f"n{i}"), 10 + i) for i in range(PAGE_SIZE + 3)]
        self.pods = [_obj(make_pod("p").node("n0"), 20)]
        self.version = 100
        self.refuse_next: list[int] = []  # statuses to answer the next requests with
        self.tokens_seen: list[str] = []
        # resource.k8s.io/v1: each plural's listed objects, and the one its watch then adds.
        self.dra_listed: dict[str, list[dict[str, Any]]] = {plural: [] for plural in DRA}
        self.dra_added: dict[str, dict[str, Any]] = {}

    def app(self) -> web.Application:
        application = web.Application()
        application.router.add_get("/api/v1/nodes", self.nodes_handler)
        application.router.add_get("/api/v1/pods", self.pods_handler)
        for plural in DRA:
            application.router.add_get(f"/apis/resource.k8s.io/v1/{plural}", self.dra_handler)
        return application

    async def dra_handler(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        plural = request.path.rsplit("/", 1)[-1]
        kind = DRA[plural][0]
        if request.query.get("watch") != "true":
            meta = {"resourceVersion": str(self.version)}
            return web.json_response({"kind": f"{kind}List", "metadata": meta, "items": self.dra_listed[plural]})
        response = web.StreamResponse()
        await response.prepare(request)
        added = self.dra_added.get(plural)
        if added is not None:
            event = {"type": "ADDED", "object": {**added, "kind": kind}}
            await response.write(json.dumps(event).encode() + b"\n")
        await asyncio.sleep(30)
        return response

    def _refusal(self, request: web.Request) -> web.Response | None:
        self.requests.append(request)
        self.tokens_seen.append(request.headers.get("Authorization", ""))
        if self.refuse_next:
            status = self.refuse_next.pop(0)
            body = {"kind": "Status", "code": status, "message": f"stub says {status}"}
            return web.json_response(body, status=status)
        return None

    async def nodes_handler(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        if request.query.get("watch") == "true":
            return await self._watch(request)
        start = int(request.query.get("continue") or 0)
        limit = int(request.query["limit"])
        page = self.nodes[start : start + limit]
        more = start + limit < len(self.nodes)
        meta = {"resourceVersion": str(self.version), "continue": str(start + limit) if more else ""}
        return web.json_response({"kind": "NodeList", "metadata": meta, "items": page})

    async def pods_handler(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        if request.query.get("watch") == "true":
            await asyncio.sleep(30)
            return web.Response(status=200)
        return web.json_response(
            {"kind": "PodList", "metadata": {"resourceVersion": str(self.version)}, "items": self.pods}
        )

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        since = int(request.query["resourceVersion"])
        response = web.StreamResponse()
        await response.prepare(request)
        if since < self.version:  # compacted away: 410 as the API server sends it, inside a 200
            event = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
            await response.write(json.dumps(event).encode() + b"\n")
            return response
        added = _obj(make_node("late"), self.version + 1)
        added["kind"] = "Node"
        await response.write(json.dumps({"type": "ADDED", "object": added}).encode() + b"\n")
        await asyncio.sleep(30)
        return response


@contextlib.asynccontextmanager
async def served(stub: StubApiServer) -> AsyncIterator[client.ApiClient]:
    """The stub on a free local port, and a kubernetes.aio client of it that sends ``Bearer token-1``."""
    # A watch the stub holds open would keep cleanup() waiting out the whole default shutdown timeout.
    server = web.AppRunner(stub.app(), shutdown_timeout=0.1)
    await server.setup()
    site = web.TCPSite(server, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    configuration.api_key = {"authorization": "Bearer token-1"}
    api = client.ApiClient(configuration)
    try:
        yield api
    finally:
        await api.close()  # type: ignore[no-untyped-call]
        await server.cleanup()


def test_kopf_lists_in_pages_watches_from_the_list_and_filters_terminal_pods() -> None:
    stub, sched = StubApiServer(), _scheduler()
    failures: list[None] = []

    async def main() -> None:
        async with served(stub) as api, KopfEngine(watch_session(api, lambda: failures.append(None))) as engine:
            informer = Informer(engine, sched.handlers, kinds=(NODES, PODS))
            await _running(informer, lambda: sched.cache.get("late") is not None)

    asyncio.run(main())
    node_lists = [r for r in stub.requests if r.path == "/api/v1/nodes" and "watch" not in r.query]
    assert [r.query["limit"] for r in node_lists] == ["500", "500"]  # two pages: 503 nodes
    assert node_lists[1].query["continue"] == "500"
    pod_requests = [r for r in stub.requests if r.path == "/api/v1/pods"]
    assert pod_requests and all(r.query["fieldSelector"] == NOT_TERMINAL for r in pod_requests)
    watch = next(r for r in stub.requests if r.path == "/api/v1/nodes" and r.query.get("watch") == "true")
    assert watch.query["resourceVersion"] == "100" and watch.query["allowWatchBookmarks"] == "true"
    assert len(sched.cache.node_infos()) == PAGE_SIZE + 4 and sched.cache.pod("default/p") is not None
    assert set(stub.tokens_seen) == {"Bearer token-1"} and not failures


def test_a_401_logs_in_again_with_a_fresh_token_and_a_500_is_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    stub, sched = StubApiServer(), _scheduler()
    stub.refuse_next = [500, 401]  # the first node list fails, its retry is refused
    failures: list[None] = []
    logins: list[str] = []

    async def quick_sleep(seconds: float, *args: object) -> None:
        await real_sleep(0)

    real_sleep = asyncio.sleep
    monkeypatch.setattr("scheduler.kube.client.informer.asyncio.sleep", quick_sleep)

    async def main() -> None:
        async with served(stub) as api:
            login = watch_session(api, lambda: failures.append(None))

            async def counting_login() -> Any:
                logins.append("login")
                if len(logins) > 1:  # the credential stack would have renewed the token by now
                    api.configuration.api_key = {"authorization": "Bearer token-2"}
                return await login()

            async with KopfEngine(counting_login) as engine:
                informer = Informer(engine, sched.handlers, kinds=(NODES,))
                await _running(informer, lambda: sched.cache.get("late") is not None)

    asyncio.run(main())
    assert len(failures) == 1  # the 500, reported by the session itself
    assert len(logins) == 2  # the 401 emptied kopf's vault: a second login
    assert stub.tokens_seen[:2] == ["Bearer token-1", "Bearer token-1"] and stub.tokens_seen[-1] == "Bearer token-2"
    assert len(sched.cache.node_infos()) == PAGE_SIZE + 4


def test_device_classes_are_watched_into_the_cache_at_every_minor() -> None:
    """DynamicResourceAllocation is GA at every minor we decide as: ``run`` watches DeviceClasses,
    which say which extended resources DynamicResources takes over (DRAExtendedResource)."""
    for minor in SUPPORTED:
        assert DEVICE_CLASSES in watched(features_at(minor))
    sched, engine = _scheduler(), ScriptedEngine()
    plain = {"metadata": {"name": "gpu", "resourceVersion": "3", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    engine.lists["deviceclasses"].append(([plain], "3"))
    backing = {**plain, "metadata": {**plain["metadata"], "resourceVersion": "4"}}
    engine.watches["deviceclasses"].append(
        [
            {
                "type": "MODIFIED",
                "object": {**backing, "kind": "DeviceClass", "spec": {"extendedResourceName": "example.com/gpu"}},
            }
        ]
    )
    informer = Informer(engine, sched.handlers, kinds=(DEVICE_CLASSES,))
    asyncio.run(_running(informer, lambda: sched.cache.storage.device_class_for("example.com/gpu") is not None))
    assert sched.cache.storage.device_class_for("deviceclass.resource.kubernetes.io/gpu") is not None


def _dra(name: str, version: int, namespace: str | None = None, **body: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(version)}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"metadata": meta, **body}


def _slice(name: str, version: int, node: str, capacity: str = "80Gi") -> dict[str, Any]:
    device = {"name": "gpu-0", "attributes": {"cores": {"ints": [0, 1]}}, "capacity": {"memory": {"value": capacity}}}
    pool = {"name": name, "generation": 1, "resourceSliceCount": 1}
    return _dra(name, version, spec={"driver": "gpu.example.com", "pool": pool, "nodeName": node, "devices": [device]})


def _claim_spec() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}


@pytest.mark.parametrize("minor", SUPPORTED)
def test_dra_objects_are_listed_and_watched_into_the_cache_at_every_minor(minor: str) -> None:
    """DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates from
    ``/apis/resource.k8s.io/v1`` (served by default since 1.34), read as the minor decided as: a
    malformed slice is kept with a warning naming its field, one without a name is dropped, and the
    other objects (and the watches after them) are unaffected. DeviceTaintRules only where
    DRADeviceTaintRules is on (1.37), their taint on the devices they select."""
    features = features_at(minor)
    rules = minor == "1.37"
    kinds = tuple(kind for kind in watched(features) if kind.group == "resource.k8s.io")
    assert {k.plural: (k.kind, k.namespaced, k.version) for k in kinds} == {
        plural: (*kind, "v1") for plural, kind in DRA.items() if rules or plural != "devicetaintrules"
    }
    stub = StubApiServer()
    bad = _slice("bad", 30, "n0", capacity="lots")
    nameless = {"metadata": {"resourceVersion": "31"}, "spec": {}}
    stub.dra_listed = {
        "deviceclasses": [_dra("gpu", 21, spec={"selectors": [{"cel": {"expression": "true"}}]})],
        "resourceslices": [_slice("s0", 22, "n0"), bad, nameless, _slice("s1", 23, "n1")],
        "resourceclaims": [_dra("c0", 24, "team-a", spec=_claim_spec())],
        "resourceclaimtemplates": [_dra("t0", 25, "team-a", spec={"spec": _claim_spec()})],
    }
    taint = {"key": "example.com/broken", "effect": "NoSchedule"}
    if rules:
        stub.dra_listed["devicetaintrules"] = [_dra("r0", 26, spec={"deviceSelector": {"pool": "s0"}, "taint": taint})]
    stub.dra_added = {
        "deviceclasses": _dra("late", 101),
        "resourceslices": _slice("late", 102, "n1"),
        "resourceclaims": _dra("late", 103, "team-b", spec=_claim_spec()),
        "resourceclaimtemplates": _dra("late", 104, "team-b", spec={"spec": _claim_spec()}),
    }
    sched = Scheduler(
        parse_config({}, features=features), FakeBinder(), FakeRecorder(), clock=FakeClock(), rng=random.Random(0)
    )
    storage = sched.cache.storage

    def all_in() -> bool:
        # Every kind's watch started too: no late DeviceTaintRule arrives to wait for, and its watch
        # may start after the other kinds' late objects are in.
        watching = {r.path for r in stub.requests if r.query.get("watch") == "true"}
        return (
            storage.device_class("late") is not None
            and "late" in {s.name for s in storage.resource_slices_on("n1")}
            and storage.resource_claim("team-b", "late") is not None
            and storage.resource_claim_template("team-b", "late") is not None
            and all(f"/apis/resource.k8s.io/v1/{plural}" in watching for plural in stub.dra_listed)
        )

    async def main() -> None:
        async with served(stub) as api, KopfEngine(watch_session(api, lambda: None)) as engine:
            await _running(Informer(engine, sched.handlers, kinds=kinds), all_in)

    with structlog.testing.capture_logs() as logs:
        asyncio.run(main())
    paths = {(r.path, r.query.get("watch") == "true") for r in stub.requests}
    for plural in stub.dra_listed if rules else set(stub.dra_listed) - {"devicetaintrules"}:
        assert {(f"/apis/resource.k8s.io/v1/{plural}", False), (f"/apis/resource.k8s.io/v1/{plural}", True)} <= paths
    assert storage.device_class("gpu") is not None
    assert sorted(s.name for s in storage.resource_slices_on("n0")) == ["bad", "s0"]
    assert sorted(s.name for s in storage.resource_slices_on("n1")) == ["late", "s1"]
    assert storage.resource_claim("team-a", "c0") is not None
    assert storage.resource_claim_template("team-a", "t0") is not None
    # Parsed once, as the minor's k8s.io/api has a device's attributes (list kinds from 1.36).
    s0 = storage.api_object("ResourceSlice", "s0")
    assert isinstance(s0, ResourceSlice)
    assert (s0.errors == ()) is features.dra_api.list_attributes
    assert s0.devices[0].taints == ()  # as the driver published it; the allocator reads the indexes
    seen = {s.name: [t.key for d in s.devices for t in d.taints] for s in storage.resource_slices()}
    assert seen["s0"] == (["example.com/broken"] if rules else [])
    assert seen["s1"] == []
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    invalid = [w for w in warnings if w.get("name") == "bad"]
    assert invalid and invalid[0]["event"] == "ResourceSlice has invalid fields"
    assert any(e.startswith("spec.devices[0].capacity[memory].value: not a quantity") for e in invalid[0]["errors"])
    assert any(w["event"] == "ignoring a storage object without a name" for w in warnings)
