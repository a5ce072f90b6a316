"""An extender's ``bind`` is a write: fenced by the Lease as every other write (``Leadership.sure``).

The fence is asked right before the request goes out: before it is built, again once it has its
connection (a wait for a connection can outlast the lease), and once more right before its bytes.
A fence that says no at any of these means not one byte reaches the extender. A raw TCP server
counts the bytes, so a request whose headers went out without its body would show too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from scheduler.config.extenders import ExtenderConfig
from scheduler.errors import NotLeadingError
from scheduler.framework.extender import extenders_binding
from scheduler.kube.extender import HTTPExtender, http_extenders
from scheduler.kube.leader import Leadership
from scheduler.testing import make_pod

POD = make_pod("web").build()
ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"Error":""}'


class RawServer:
    """Counts every byte received; answers a bind with ``{"Error":""}`` once it has a whole request."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        pending = b""
        while chunk := await reader.read(65536):
            self.received += chunk
            pending += chunk
            head, sep, body = pending.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            if sep and len(body) >= length:  # one whole request: answer it
                pending = b""
                writer.write(ANSWER)
                await writer.drain()
        writer.close()
        await writer.wait_closed()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for writer in self._writers:
            writer.close()
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=5)


def answers(*said: bool) -> Callable[[], bool]:
    """A fence that says ``said`` in turn, then no (which of its questions says no is under test)."""
    replies = iter(said)
    return lambda: next(replies, False)


def run_bind(fence: Callable[[], bool]) -> tuple[Exception | None, RawServer]:
    server = RawServer()

    async def main() -> Exception | None:
        url = await server.start()
        ext = HTTPExtender(ExtenderConfig(url_prefix=url, bind_verb="bind", weight=1), fence=fence)
        try:
            await ext.bind(POD, "node1")
        except Exception as exc:  # the test reads what came out
            return exc
        finally:
            await ext.close()
            await server.stop()
        return None

    return asyncio.run(main()), server


def test_a_sure_leader_binds_through_the_extender() -> None:
    error, server = run_bind(lambda: True)
    assert error is None
    assert b"POST /bind" in server.received and b'"PodName": "web"' in server.received


@pytest.mark.parametrize(
    "said",
    [
        pytest.param((), id="before-the-request"),
        pytest.param((True,), id="once-connected"),
        pytest.param((True, True), id="before-the-first-byte"),
    ],
)
def test_a_fence_that_says_no_sends_nothing_to_the_extender(said: tuple[bool, ...]) -> None:
    error, server = run_bind(answers(*said))
    assert isinstance(error, NotLeadingError), repr(error)
    assert "not sure it still holds the leader lease" in str(error)
    assert bytes(server.received) == b""


def test_a_lapsed_lease_fences_the_extender_built_by_http_extenders() -> None:
    """The wiring ``run`` uses: ``http_extenders(..., fence=leadership.sure)``; a lease renewed more
    than renewDeadline ago says no, and the binding cycle gets the error (the pod is retried)."""
    clock = [100.0]
    leadership = Leadership(renew_deadline=10.0, clock=lambda: clock[0])
    leadership.renewed(85.0)  # 15 s ago: past renewDeadline
    server = RawServer()

    async def main() -> tuple[bool, str | None]:
        url = await server.start()
        (ext,) = http_extenders([ExtenderConfig(url_prefix=url, bind_verb="bind", weight=1)], fence=leadership.sure)
        try:
            return await extenders_binding([ext], POD, "node1")
        finally:
            await ext.close()
            await server.stop()

    handled, error = asyncio.run(main())
    assert handled and error is not None and "leader lease" in error
    assert bytes(server.received) == b""


def test_filter_is_a_read_and_not_fenced() -> None:
    """Only bind writes: a follower's closed fence must not stop the cycle's questions."""
    server = RawServer()

    async def main() -> list[str]:
        url = await server.start()
        ext = HTTPExtender(ExtenderConfig(url_prefix=url, filter_verb="filter", weight=1), fence=lambda: False)
        try:
            return (await ext.filter(POD, [])).node_names
        finally:
            await ext.close()
            await server.stop()

    assert asyncio.run(main()) == []
    assert b"POST /filter" in server.received
