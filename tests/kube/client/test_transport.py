"""The writes' own HTTP/1.1 connections (``scheduler.kube.client.transport``): responses parsed from any
split of their bytes, connections reused only when whole, bounded, dropped on any doubt, and a
request that its check refuses never reaching the server."""

from __future__ import annotations

import asyncio
import errno
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.aio import client

from scheduler.errors import NotLeadingError
from scheduler.kube import writes
from scheduler.kube.client import transport
from scheduler.kube.client.transport import MAX_BODY, Http1Connections, MalformedResponseError, Reply, parse_response
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.writes import ApiWrites, _call

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
    )
    status, headers, body = parse_response(CHUNKED + b"HTTP/1.1 ...") or (0, {}, b"")
    assert (status, headers["retry-after"], body) == (200, "3", b"hello, world")


@given(st.sampled_from([CREATED, CHUNKED]), st.data())
def test_a_response_split_anywhere_is_complete_only_with_its_last_byte(raw: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(raw) - 1))
    assert parse_response(raw[:cut]) is None
    assert parse_response(raw) is not None


def test_informational_replies_are_skipped_and_bodiless_ones_end_at_their_head() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n"
    assert parse_response(raw) == (204, {"x": "y"}, b"")


def test_a_body_without_length_or_chunks_ends_with_the_connection() -> None:
    raw = b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nboom"
    assert parse_response(raw) is None
    assert parse_response(raw, eof=True) == (500, {"connection": "close"}, b"boom")


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
                return writes.send_once(sender, "POST", "/binding", {}, {"kind": "Binding"}, "application/json")

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


# -- hostile or broken responses (issue #41) -------------------------------------------------------

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    "size",
    [b"-6", b"-1", b"-ff", b"+5", b"0x5", b"5_0", b"5 junk", b"", b"1" * 17, b"\xd9\xa1"],
    ids=repr,
)
def test_a_chunk_size_that_is_not_one_to_sixteen_hex_digits_is_refused(size: bytes) -> None:
    """Go's ``parseHexUint``: 1-16 hex digits, then an optional extension; Python's ``int(_, 16)``
    also takes signs, ``0x``, underscores, and a negative size walked the parser backwards."""
    with pytest.raises(MalformedResponseError, match="chunk"):
        parse_response(CHUNKED_HEAD + size + b"\r\nhello\r\n0\r\n\r\n")


def test_a_chunk_size_may_carry_an_extension_and_trailing_whitespace() -> None:
    raw = CHUNKED_HEAD + b"5 ;name=value\r\nhello\r\n5\t\r\n, you\r\n0\r\n\r\n"
    assert (parse_response(raw) or (0, {}, b""))[2] == b"hello, you"


def test_chunk_data_not_followed_by_crlf_is_refused() -> None:
    with pytest.raises(MalformedResponseError, match="chunk"):
        parse_response(CHUNKED_HEAD + b"3\r\nhelloXY0\r\n\r\n")


@pytest.mark.timeout(20)
def test_a_negative_chunk_size_fails_the_request_instead_of_spinning() -> None:
    """Red before: ``-6`` moved the chunk parser back to the same line, forever, inside
    ``data_received``: the event loop never ran again, so ``wait_for`` below could not end it (only
    pytest-timeout's signal does). Now the request fails and its connection is dropped."""

    async def negative(_request: bytes) -> bytes:
        return CHUNKED_HEAD + b"-6\r\nhello\r\n0\r\n\r\n"

    async def body() -> int:
        async with Server(negative) as server:
            pool = Http1Connections(server.url, None, 1)
            with pytest.raises(MalformedResponseError):
                await asyncio.wait_for(_send(pool), 5)
            await pool.close()
            return len(server.requests)

    assert asyncio.run(body()) == 1


@pytest.mark.parametrize(
    "fields",
    [
        b"Content-Length: \xb2\r\n",  # latin-1 superscript two: str.isdigit() says yes, int() raises
        b"Content-Length: \xb9\xb2\r\n",
        b"Content-Length: +2\r\n",
        b"Content-Length: 2 \x0b\r\n",
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Content-Length: 2, 3\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n",
        b"Transfer-Encoding: gzip\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    ],
    ids=repr,
)
def test_an_ambiguous_body_length_is_refused_not_raised_out_of_the_parser(fields: bytes) -> None:
    """Red before: ``\\xb2`` raised ValueError out of ``parse_response`` (and out of
    ``data_received``), and two lengths or a length beside chunks were read by whichever came last."""
    raw = b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n2\r\nok\r\n0\r\n\r\n"
    with pytest.raises(MalformedResponseError):
        parse_response(raw)


def test_a_repeated_content_length_is_refused_even_with_one_value() -> None:
    """Go's ``fixLength`` collapses duplicates of one value; llhttp refuses them, which RFC 9110
    section 8.6 allows too. An API server (Go's server) writes one."""
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"
    with pytest.raises(MalformedResponseError, match="Content-Length"):
        parse_response(raw)


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1),
        b"Content-Length: " + b"9" * 40 + b"\r\n\r\n",
    ],
    ids=["length", "huge length"],
)
def test_a_body_over_the_cap_is_refused_as_soon_as_its_size_is_known(head: bytes) -> None:
    """Red before: the parser waited for the bytes, and the buffer grew with them."""
    with pytest.raises(MalformedResponseError, match="over"):
        parse_response(b"HTTP/1.1 200 OK\r\n" + head)


@pytest.mark.parametrize(
    "chunks", [b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", b"%x\r\n" % (MAX_BODY + 1) + b"x" * 9], ids=["two", "one"]
)
def test_chunks_past_the_cap_are_refused_as_their_bytes_pass_it(monkeypatch: pytest.MonkeyPatch, chunks: bytes) -> None:
    """A chunk's declared size is llhttp's own (no parser library shows it), so one declared over
    the cap is refused once its bytes pass the cap: what is held stays under it."""
    monkeypatch.setattr(transport, "MAX_BODY", 8)
    with pytest.raises(MalformedResponseError, match="over"):
        parse_response(CHUNKED_HEAD + chunks)


def test_a_body_until_the_connection_ends_is_capped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_BODY", 8)
    with pytest.raises(MalformedResponseError, match="over"):
        parse_response(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 9)


def test_repeated_response_headers_are_all_kept() -> None:
    """RFC 9110 section 5.3: field lines of one name combine, in order, joined by commas. Red
    before: the last one overwrote the others."""
    raw = b'HTTP/1.1 200 OK\r\nWarning: 299 - "a"\r\nContent-Length: 0\r\nwarning: 299 - "b"\r\n\r\n'
    _, headers, _ = parse_response(raw) or (0, {}, b"")
    assert headers["warning"] == '299 - "a", 299 - "b"'


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Bearer token\n"),
        ("Authorization", "Bearer to\r\nX-Injected: 1"),
        ("Authorization", "Bearer \x00"),
        ("X-Bad\r\nName", "v"),
        ("X Bad", "v"),
        ("", "v"),
    ],
    ids=repr,
)
def test_a_request_header_with_cr_lf_or_nul_is_refused_before_anything_is_sent(name: str, value: str) -> None:
    """A token read from a file with its trailing newline must never reach the wire (RFC 9110
    section 5.5: CR, LF and NUL are invalid in a field value; a name is a token). Red before: the
    header went out as given, splitting the request. The message names the header, not its value."""

    async def body() -> int:
        async with Server(_created) as server:
            pool = Http1Connections(server.url, None, 1)
            with pytest.raises(ValueError, match="header") as refused:
                await pool.request("POST", "/x", {name: value}, b"{}", lambda: True, RuntimeError)
            assert "Bearer" not in str(refused.value)
            await pool.close()
            return server.connections + len(server.requests)

    assert asyncio.run(body()) == 0


def test_a_request_target_with_a_space_or_newline_is_refused() -> None:
    async def body() -> None:
        pool = Http1Connections("http://127.0.0.1:9", None, 1)
        for target in ("/a b", "/a\r\nX: y", "/a\n"):
            with pytest.raises(ValueError, match="target"):
                await pool.request("POST", target, {}, b"", lambda: True, RuntimeError)

    asyncio.run(body())


def test_a_connection_that_never_completes_its_tls_handshake_fails_at_the_connect_timeout() -> None:
    """The server accepts TCP and says nothing: the handshake waits. Red before: only the request's
    300 s deadline ended it (here 30 s); now the connect timeout does, as an outage."""

    async def body() -> float:
        held: list[asyncio.StreamWriter] = []

        async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            held.append(writer)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Http1Connections(
            f"https://127.0.0.1:{port}", ssl.create_default_context(), 1, timeout=30, connect_timeout=0.3
        )
        started = time.monotonic()
        with pytest.raises(ConnectionError, match=r"connecting to 127\.0\.0\.1"):
            await _send(pool)
        elapsed = time.monotonic() - started
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
        return elapsed

    assert asyncio.run(body()) < 5


def test_write_connections_have_tcp_keepalive_as_client_go_dials_them() -> None:
    """client-go's dialer: ``KeepAlive: 30 * time.Second``, which Go's ``newTCPConn`` makes the idle
    time, with its defaults for the rest (``net/dial.go``: interval 15 s, 9 probes). Red before: off."""

    async def body() -> tuple[int, int, int, int]:
        async with Server(_created) as server:
            pool = Http1Connections(server.url, None, 1)
            await _send(pool)
            (conn,) = pool._open
            assert conn.transport is not None
            sock = conn.transport.get_extra_info("socket")
            options = (
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
            )
            await pool.close()
            return options

    assert asyncio.run(body()) == (1, 30, 15, 9)


# -- over real TLS ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for the name ``api.spread.test`` only (made with the openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl CLI")
    where = tmp_path_factory.mktemp("tls")
    cert, key = str(where / "cert.pem"), str(where / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-days", "1", "-subj", "/CN=api.spread.test", "-addext", "subjectAltName=DNS:api.spread.test",
         "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def _tls_round_trip(certificate: tuple[str, str], server_hostname: str) -> int:
    cert, key = certificate

    async def body() -> int:
        served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        served.load_cert_chain(cert, key)
        server = Server(_created)
        server.server = await asyncio.start_server(server._serve, "127.0.0.1", 0, ssl=served)
        trusting = ssl.create_default_context(cafile=cert)
        pool = Http1Connections(server.url.replace("http:", "https:"), trusting, 1, server_hostname=server_hostname)
        try:
            return (await asyncio.wait_for(_send(pool), 10)).status
        finally:
            await pool.close()
            await server.__aexit__()

    return asyncio.run(body())


def test_over_tls_the_name_in_the_certificate_is_accepted(certificate: tuple[str, str]) -> None:
    assert _tls_round_trip(certificate, "api.spread.test") == 201


def test_over_tls_a_certificate_for_another_name_is_refused(certificate: tuple[str, str]) -> None:
    with pytest.raises(ConnectionError, match="certificate verify failed: Hostname mismatch"):
        _tls_round_trip(certificate, "other.spread.test")


# -- limits a hostile server meets (issue #46) ------------------------------------------------------


def _one_reply(answer: bytes, timeout: float = 5) -> Awaitable[Reply]:
    """A request to a server that answers it with ``answer``, then keeps the connection open."""

    async def reply(_request: bytes) -> bytes:
        return answer

    async def body() -> Reply:
        async with Server(reply) as server:
            pool = Http1Connections(server.url, None, 1, timeout=timeout)
            try:
                return await _send(pool)
            finally:
                await pool.close()

    return body()


def test_trailers_past_64_kib_in_all_are_refused() -> None:
    """Each trailer line short, 5.7 MiB of them. Red before: only a line was bounded, so the reply
    was read whole (and its trailers held); now the request fails at 64 KiB of trailers."""
    trailers = b"X-Trailer: " + b"t" * 100 + b"\r\n"
    answer = CHUNKED_HEAD + b"2\r\nok\r\n0\r\n" + trailers * (57 * 1024 * 1024 // 10 // len(trailers)) + b"\r\n"
    with pytest.raises(MalformedResponseError, match="trailers over 65536 bytes"):
        asyncio.run(_one_reply(answer))


@pytest.mark.parametrize(
    "rest", [b"0\r\nX-Trailer: " + b"t" * 200_000, b"1;" + b"e" * 200_000], ids=["trailer", "chunk line"]
)
def test_bytes_without_body_data_are_bounded_too(rest: bytes) -> None:
    """An unfinished trailer line or chunk line: llhttp would hold the one and skip the other."""
    with pytest.raises(MalformedResponseError, match="without data"):
        parse_response(CHUNKED_HEAD + b"2\r\nok\r\n" + rest)


def test_endless_informational_responses_fail_the_request_at_the_head_budget() -> None:
    """A server that answers ``100 Continue`` forever. Go's transport (since 1.24) counts the heads
    of 1xx responses and the final one against one limit and fails the request with "server
    response headers exceeded N bytes; aborted"; ours is 64 KiB. Red before: the 1xx responses were
    skipped without a count and the request waited for its deadline (TimeoutError here)."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    started = time.monotonic()
    with pytest.raises(MalformedResponseError, match="server response headers exceeded 65536 bytes; aborted"):
        asyncio.run(_one_reply(interim * 200_000, timeout=5))
    assert time.monotonic() - started < 4


def test_a_few_informational_responses_before_the_reply_are_skipped() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\n" * 6 + b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + CREATED
    assert parse_response(raw) == (201, {"content-type": "application/json", "content-length": "11"}, b'{"kind":1}\n')


def test_a_body_of_one_byte_chunks_costs_linear_cpu_and_no_long_loop_stall() -> None:
    """1.1 MiB of chunked body in 1-byte chunks. Red before: every read re-parsed the whole buffer
    from its start (quadratic toward the 64 MiB cap): about 1 s of CPU and the loop held up to
    hundreds of ms in one callback. The CPU is the thread's (``thread_time``: the machine's load does
    not count), the stall the most CPU the loop spent between two ticks of a 1 ms ticker."""
    chunks = (1100 * 1024) // 6
    answer = CHUNKED_HEAD + b"1\r\nx\r\n" * chunks + b"0\r\n\r\n"
    worst = 0.0

    async def body() -> Reply:
        nonlocal worst
        done = False

        async def ticker() -> None:
            nonlocal worst
            while not done:
                before = time.thread_time()
                await asyncio.sleep(0.001)
                worst = max(worst, time.thread_time() - before)

        ticks = asyncio.create_task(ticker())
        try:
            return await _one_reply(answer, timeout=30)
        finally:
            done = True
            await ticks

    started = time.thread_time()
    reply = asyncio.run(body())
    cpu = time.thread_time() - started
    assert (reply.status, len(reply.body)) == (200, chunks)
    assert cpu < 0.4, f"{cpu:.3f} s of CPU"
    assert worst < 0.1, f"the loop spent {worst * 1000:.0f} ms in one step"


@pytest.mark.parametrize(("size", "chunked"), [(4096, False), (4096, True), (1024, False), (1024, True)])
def test_a_body_read_through_the_clients_session_is_capped(size: int, chunked: bool) -> None:
    """The client's session (a proxy's path, the Lease) reads aiohttp responses: past the cap the read
    gives up, whether the server announced the length or streamed chunks; at the cap it is whole."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if not chunked:
            return web.Response(body=b"x" * size)
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(size // 256):
            await response.write(b"x" * 256)
        await response.write_eof()
        return response

    async def read() -> bytes:
        app = web.Application()
        app.router.add_get("/", handler)
        server = TestServer(app)
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as session, session.get(server.make_url("/")) as response:
                return await transport.read_capped(response, limit=1024)
        finally:
            await server.close()

    if size > 1024:
        with pytest.raises(MalformedResponseError, match="response body over 1024 bytes"):
            asyncio.run(read())
    else:
        assert asyncio.run(read()) == b"x" * 1024
