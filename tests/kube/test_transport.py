"""The writes' own HTTP/1.1 connections (``scheduler.kube.transport``): responses parsed from any
split of their bytes, connections reused only when whole, bounded, dropped on any doubt, and a
request that its check refuses never reaching the server."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.aio import client

from scheduler.errors import NotLeadingError
from scheduler.kube import writes
from scheduler.kube.transport import Http1Connections, MalformedResponseError, Reply, parse_response
from scheduler.kube.writes import ApiWrites, RateLimiter, _call

CREATED = b'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"kind":1}\n'
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
    b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"
)


def test_a_response_is_read_by_its_length_or_its_chunks() -> None:
    assert parse_response(CREATED) == (
        201,
        {"content-type": "application/json", "content-length": "11"},
        b'{"kind":1}\n',
        len(CREATED),
    )
    status, headers, body, used = parse_response(CHUNKED + b"HTTP/1.1 ...") or (0, {}, b"", 0)
    assert (status, headers["retry-after"], body, used) == (200, "3", b"hello, world", len(CHUNKED))


@given(st.sampled_from([CREATED, CHUNKED]), st.data())
def test_a_response_split_anywhere_is_complete_only_with_its_last_byte(raw: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(raw) - 1))
    assert parse_response(raw[:cut]) is None
    assert parse_response(raw) is not None


def test_informational_replies_are_skipped_and_bodiless_ones_end_at_their_head() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n"
    assert parse_response(raw) == (204, {"x": "y"}, b"", len(raw))


def test_a_body_without_length_or_chunks_ends_with_the_connection() -> None:
    raw = b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nboom"
    assert parse_response(raw) is None
    assert parse_response(raw, eof=True) == (500, {"connection": "close"}, b"boom", len(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 2x1 Created\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70_000,
    ],
)
def test_bytes_that_are_not_a_response_are_refused(raw: bytes) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(raw)


class Server:
    """An HTTP/1.1 server that answers each request with what ``reply`` says, counting connections."""

    def __init__(self, reply: Callable[[bytes], Awaitable[bytes | None]], hang_up_after_reply: bool = False) -> None:
        self.reply = reply
        self.hang_up_after_reply = hang_up_after_reply
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next((int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = await self.reply(request)
                if answer is None:
                    break  # hang up without answering
                writer.write(answer)
                await writer.drain()
                if self.hang_up_after_reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _created(_request: bytes) -> bytes:
    return CREATED


def _send(pool: Http1Connections, path: str = "/x", may_send: Callable[[], bool] = lambda: True) -> Awaitable[Reply]:
    return pool.request("POST", path, {"Content-Type": "application/json"}, b"{}", may_send, RuntimeError)


def test_requests_one_after_another_share_one_connection() -> None:
    async def body() -> tuple[int, list[bytes]]:
        async with Server(_created) as server:
            pool = Http1Connections(server.url + "/prefix/", None, 4)
            for _ in range(3):
                reply = await _send(pool, "/api/v1/namespaces/a%20b/pods")
                assert (reply.status, await reply.read()) == (201, b'{"kind":1}\n')
            await pool.close()
            return server.connections, server.requests

    connections, requests = asyncio.run(body())
    assert connections == 1 and len(requests) == 3
    assert requests[0].startswith(b"POST /prefix/api/v1/namespaces/a%20b/pods HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 2\r\n\r\n{}" in requests[0]


def test_concurrent_requests_open_no_more_connections_than_the_limit() -> None:
    async def slow(_request: bytes) -> bytes:
        await asyncio.sleep(0.02)
        return CREATED

    async def body() -> tuple[int, int]:
        async with Server(slow) as server:
            pool = Http1Connections(server.url, None, 2)
            replies = await asyncio.gather(*(_send(pool) for _ in range(7)))
            await pool.close()
            return server.connections, sum(r.status == 201 for r in replies)

    assert asyncio.run(body()) == (2, 7)


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    answered = 0

    async def once(_request: bytes) -> bytes:
        nonlocal answered
        answered += 1
        return CREATED.replace(b"Content-Length", b"Connection: close\r\nContent-Length")

    async def body() -> int:
        async with Server(once) as server:
            pool = Http1Connections(server.url, None, 1)
            for _ in range(3):
                assert (await _send(pool)).status == 201
                await asyncio.sleep(0.01)
            await pool.close()
            return server.connections

    assert asyncio.run(body()) == 3 and answered == 3


def test_a_connection_the_server_closed_without_saying_so_is_not_reused() -> None:
    """Go's server closes idle keep-alive connections without a header saying it will."""

    async def body() -> int:
        async with Server(_created, hang_up_after_reply=True) as server:
            pool = Http1Connections(server.url, None, 1)
            for _ in range(3):
                assert (await asyncio.wait_for(_send(pool), 5)).status == 201
                await asyncio.sleep(0.05)  # the close reaches us while the connection is idle
            await pool.close()
            return server.connections

    assert asyncio.run(body()) == 3


def test_a_server_that_hangs_up_fails_the_request_as_a_connection_error_and_the_next_one_reconnects() -> None:
    calls = 0

    async def first_hangs_up(_request: bytes) -> bytes | None:
        nonlocal calls
        calls += 1
        return None if calls == 1 else CREATED

    async def body() -> int:
        async with Server(first_hangs_up) as server:
            pool = Http1Connections(server.url, None, 1)
            with pytest.raises(ConnectionError):
                await _send(pool)
            assert (await _send(pool)).status == 201
            await pool.close()
            return server.connections

    assert asyncio.run(body()) == 2


def test_any_failure_to_connect_is_a_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unreachable hosts and failed TLS handshakes are OSErrors that are not ConnectionErrors; the
    writes retry connection errors as an outage (as they did aiohttp's connector errors)."""

    async def unreachable(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EHOSTUNREACH, "No route to host")

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "create_connection", unreachable)
    with pytest.raises(ConnectionError, match=r"connecting to api\.invalid:6443: .*No route to host"):
        asyncio.run(_send(Http1Connections("https://api.invalid:6443", None, 1)))


def test_a_request_past_its_deadline_times_out_and_its_connection_is_not_reused() -> None:
    calls = 0

    async def first_never_answers(_request: bytes) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(3600)
        return CREATED

    async def body() -> int:
        async with Server(first_never_answers) as server:
            pool = Http1Connections(server.url, None, 1, timeout=0.2)
            with pytest.raises(TimeoutError):
                await _send(pool)
            assert (await _send(pool)).status == 201  # on a new connection: the old one may still answer
            await pool.close()
            return server.connections

    assert asyncio.run(body()) == 2


def test_a_request_refused_by_its_check_sends_nothing_and_leaves_the_connection_usable() -> None:
    async def body() -> tuple[int, int]:
        async with Server(_created) as server:
            pool = Http1Connections(server.url, None, 1)
            with pytest.raises(RuntimeError):
                await _send(pool, may_send=lambda: False)
            assert (await _send(pool)).status == 201
            await pool.close()
            return server.connections, len(server.requests)

    assert asyncio.run(body()) == (1, 1)


def test_a_write_waiting_for_the_only_connection_is_not_sent_if_the_lease_is_lost_meanwhile() -> None:
    """The fence passes in ``_call``; the write then waits for the pool's only connection, busy with
    a slow request, and the lease is lost meanwhile: asked again right before the bytes go out, the
    fence stops it, and the server sees only the slow request."""
    release = asyncio.Event()

    async def slow_first(request: bytes) -> bytes:
        if b"/slow" in request.split(b"\r\n", 1)[0]:
            await release.wait()
        return CREATED

    async def body() -> list[bytes]:
        async with Server(slow_first) as server:
            api = client.ApiClient(client.Configuration(host=server.url))
            sender = ApiWrites(api, connections=1)
            assert sender.connections is not None
            slow = asyncio.create_task(_send(sender.connections, "/slow"))
            while not server.requests:
                await asyncio.sleep(0.01)
            sure = True

            def bind() -> Awaitable[object]:
                return writes._send(sender, "POST", "/binding", {}, {"kind": "Binding"}, "application/json")

            write = asyncio.create_task(_call(RateLimiter(0, 1), "binding ns/p to n1", bind, fence=lambda: sure))
            await asyncio.sleep(0.1)  # past the first check, waiting for the connection
            sure = False
            release.set()
            with pytest.raises(NotLeadingError, match="binding ns/p to n1: not sent"):
                await write
            await slow
            await sender.close()
            await api.close()  # type: ignore[no-untyped-call]
            return [r.split(b" ", 2)[1] for r in server.requests]

    assert asyncio.run(body()) == [b"/slow"]


def test_behind_a_proxy_the_writes_stay_on_the_clients_session(monkeypatch: pytest.MonkeyPatch) -> None:
    async def body() -> list[bool]:
        seen = []
        for proxy, env in ((None, None), ("http://proxy.invalid:3128", None), (None, "http://proxy.invalid:3128")):
            if env:
                monkeypatch.setenv("HTTPS_PROXY", env)
            config = client.Configuration(host="https://api.invalid:6443")
            config.proxy = proxy
            api = client.ApiClient(config)
            seen.append(ApiWrites(api).connections is None)
            await api.close()  # type: ignore[no-untyped-call]
        return seen

    assert asyncio.run(body()) == [False, True, True]
