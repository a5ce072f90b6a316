"""The bodies ``scheduler.kube.writes`` sends for preemption: the requests are captured at ``send_once``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes.aio import client

from scheduler.errors import PodGoneError
from scheduler.kube import writes
from scheduler.kube.binder import ApiBinder
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.preemption import ApiPodWriter
from scheduler.kube.record import ApiRecorder
from scheduler.kube.writes import ApiWriter
from scheduler.testing import make_pod


class Reply:
    def __init__(self, status: int = 200, body: bytes = b"{}") -> None:
        self.status, self._body = status, body
        self.headers: dict[str, str] = {}

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None


class Sent(list[tuple[str, str, dict[str, Any], str]]):
    """(method, path with its parameters, body, content type) of every request; ``status`` answers."""

    status = 200


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    requests = Sent()

    async def send(
        api: object, method: str, path: str, params: dict[str, str], body: dict[str, Any], content_type: str
    ) -> Reply:
        requests.append((method, path.format(**params), body, content_type))
        return Reply(requests.status, b'{"message": "not found"}' if requests.status == 404 else b"{}")

    monkeypatch.setattr(writes, "send_once", send)
    return requests


LIMITER = RateLimiter(qps=0, burst=1)
WRITER = ApiWriter(None, LIMITER)  # type: ignore[arg-type]  # send_once is captured: no API behind it
SMP = "application/strategic-merge-patch+json"


def test_the_nomination_goes_with_the_condition(sent: Sent) -> None:
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    pod = make_pod("web", "shop").build()
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "0/2 nodes", nominated_node_name="n1"))
    ((method, path, body, content_type),) = sent
    assert (method, path, content_type) == ("PATCH", "/api/v1/namespaces/shop/pods/web/status", SMP)
    assert body["status"]["nominatedNodeName"] == "n1"
    assert body["status"]["conditions"][0]["type"] == "PodScheduled"


def test_an_unchanged_condition_still_sends_a_new_nomination_alone(sent: Sent) -> None:
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    pod = make_pod("web", "shop").set("status.conditions", [cond]).set("status.nominatedNodeName", "n1").build()
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "m", nominated_node_name=""))
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "m", nominated_node_name="n1"))  # no change
    assert [body for _, _, body, _ in sent] == [{"status": {"nominatedNodeName": None}}]


def test_the_condition_carries_the_pod_s_generation(sent: Sent) -> None:
    """handleSchedulingFailure: ObservedGeneration = CalculatePodConditionObservedGeneration, the
    pod's generation (PodObservedGenerationTracking is locked on at 1.35-1.37)."""
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    pod = make_pod("web", "shop").set("metadata.generation", 3).build()
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "0/2 nodes"))
    ((_, _, body, _),) = sent
    (condition,) = body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["observedGeneration"]) == ("PodScheduled", "False", 3)


def test_a_moved_generation_alone_sends_no_patch_but_rides_along_with_a_new_nomination(sent: Sent) -> None:
    """UpdatePodCondition does not compare observedGeneration: the same status, reason and message is
    no change; when the nomination moves, the two-way diff carries the new generation with it."""
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    pod = (
        make_pod("web", "shop")
        .set("metadata.generation", 2)
        .set("status.conditions", [{**cond, "observedGeneration": 1}])
        .build()
    )
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "m"))
    assert sent == []
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "m", nominated_node_name="n1"))
    ((_, _, body, _),) = sent
    assert body["status"]["nominatedNodeName"] == "n1"
    (condition,) = body["status"]["conditions"]
    assert condition["observedGeneration"] == 2
    assert "lastTransitionTime" not in condition  # the status did not change: the old time stays


def test_a_probe_time_on_the_condition_is_a_change(sent: Sent) -> None:
    """UpdatePodCondition compares lastProbeTime too: the scheduler's condition has none."""
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    pod = make_pod("web", "shop").set("status.conditions", [{**cond, "lastProbeTime": "2026-01-01T00:00:00Z"}]).build()
    asyncio.run(recorder.set_unschedulable(pod, "Unschedulable", "m"))
    ((_, _, body, _),) = sent
    assert body["status"]["conditions"][0]["lastProbeTime"] is None


def test_the_binding_cycle_s_nomination_is_a_patch_of_that_field_alone(sent: Sent) -> None:
    recorder = ApiRecorder(WRITER, "spread-scheduler", "x")
    pod = make_pod("web", "shop").build()
    asyncio.run(recorder.set_nominated_node_name(pod, "n1"))
    assert sent == [("PATCH", "/api/v1/namespaces/shop/pods/web/status", {"status": {"nominatedNodeName": "n1"}}, SMP)]


def test_the_preemption_writes(sent: Sent) -> None:
    writer = ApiPodWriter(WRITER)
    victim = make_pod("low", "batch").build()
    asyncio.run(writer.add_condition(victim, {"type": "DisruptionTarget"}))
    asyncio.run(writer.delete_pod(victim))
    asyncio.run(writer.clear_nominated_node_name(victim))
    assert [(m, p, b) for m, p, b, _ in sent] == [
        (
            "PATCH",
            "/api/v1/namespaces/batch/pods/low/status",
            {"status": {"conditions": [{"type": "DisruptionTarget"}]}},
        ),
        ("DELETE", "/api/v1/namespaces/batch/pods/low", {}),
        ("PATCH", "/api/v1/namespaces/batch/pods/low/status", {"status": {"nominatedNodeName": None}}),
    ]


def test_a_victim_already_gone_raises_pod_gone(sent: Sent) -> None:
    sent.status = 404
    writer = ApiPodWriter(WRITER)
    with pytest.raises(PodGoneError):
        asyncio.run(writer.delete_pod(make_pod("low", "batch").build()))


@contextlib.asynccontextmanager
async def _writes_to(
    handler: Callable[[web.Request], Awaitable[web.Response]], token: str
) -> AsyncIterator[writes.ApiWrites]:
    """The writes' connections to a local HTTP server answering with ``handler``, as ``Bearer <token>``."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    server = TestServer(app)
    await server.start_server()
    config = client.Configuration(host=str(server.make_url("")).rstrip("/"))
    config.api_key = {"BearerToken": token}
    config.api_key_prefix = {"BearerToken": "Bearer"}
    api = client.ApiClient(config)
    sender = writes.ApiWrites(api)
    try:
        yield sender
    finally:
        await sender.close()
        await api.close()  # type: ignore[no-untyped-call]
        await server.close()


def test_a_write_goes_out_with_its_path_quoted_its_token_and_its_json_body() -> None:
    """``send_once`` builds the request itself (not the client's ``param_serialize``): the URL under the
    configured host, the content type, the client's User-Agent and the bearer token asked of the
    configuration at every request (a refreshed token is used)."""

    async def body() -> list[tuple[str, str, dict[str, str], Any]]:
        seen: list[tuple[str, str, dict[str, str], Any]] = []

        async def handler(request: web.Request) -> web.Response:
            seen.append((request.method, request.raw_path, dict(request.headers), await request.json()))
            return web.Response(text="{}")

        async with _writes_to(handler, "first") as sender:
            binder = ApiBinder(ApiWriter(sender, LIMITER))
            await binder.bind(make_pod("web 1", "shop").build(), "n1")
            sender.api.configuration.api_key = {"BearerToken": "second"}
            await binder.bind(make_pod("web", "shop").build(), "n2")
        return seen

    (m1, path1, headers1, body1), (_, _, headers2, body2) = asyncio.run(body())
    assert (m1, path1) == ("POST", "/api/v1/namespaces/shop/pods/web%201/binding")
    assert headers1["Authorization"] == "Bearer first" and headers2["Authorization"] == "Bearer second"
    assert headers1["Content-Type"] == "application/json" and headers1["User-Agent"].startswith("OpenAPI-Generator")
    assert body1["target"] == {"kind": "Node", "name": "n1"} and body2["metadata"]["name"] == "web"


def test_a_token_with_a_trailing_newline_is_never_written_into_the_header() -> None:
    """A token file read with its newline (issue #41): the Binding fails once with a message naming
    the header, not retried, and the server receives nothing. Red before: the header went out split."""

    async def body() -> tuple[str, int]:
        seen: list[str] = []

        async def handler(request: web.Request) -> web.Response:
            seen.append(request.path)
            return web.Response(text="{}")

        outcomes: list[str] = []
        async with _writes_to(handler, "secret\n") as sender:
            try:
                await ApiBinder(ApiWriter(sender, LIMITER, outcomes.append)).bind(make_pod("web", "shop").build(), "n1")
                error = ""
            except ValueError as exc:
                error = str(exc)
        return error, len(seen) + len(outcomes)

    error, reached = asyncio.run(body())
    assert error.lower() == "request header authorization: its value has a cr, lf or nul; not sent"
    assert reached == 0
