"""The writes' own keep-alive HTTP/1.1 connections to the API server (client-go's transport, for us).

A Binding and a Scheduled event per pod are most of what the scheduler sends. Through the
client's aiohttp session one such request cost 254 us of our CPU (cookie jar, payload registry,
header multidicts, a timer and a writer task per request); written here on a plain
``asyncio.Protocol`` over the same TLS context, 140 us (``python -m bench.http_writes``, medians of 3).
Reads, watches and anything behind a proxy stay on the client's session: ``for_client`` says None
when a proxy is configured.

What a write needs and nothing more: a bounded pool (``WRITE_CONNECTIONS``), one request at a time
per connection, a body by Content-Length or chunks, one deadline for the whole request as the client
had (300 s), and a check (``may_send``) asked right before the request's bytes are handed to the
socket, in the same step of the event loop, so a process paused while it waited for a connection
never sends after waking. A connection whose request failed, timed out or was cancelled is closed,
never reused: its next bytes could belong to the wrong request.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from kubernetes.aio import client

__all__ = [
    "PROXY_VARIABLES",
    "REQUEST_TIMEOUT",
    "WRITE_CONNECTIONS",
    "Http1Connections",
    "MalformedResponseError",
    "Reply",
    "parse_response",
]

# HTTP/1.1 carries one request per connection at a time, and each new connection costs a TLS
# handshake on both sides (kube-scheduler multiplexes over one HTTP/2 connection). A pool of 100 (the
# client's default) opened a connection for nearly every Binding of a burst through aiohttp: 3 % of
# the scheduler's CPU went to handshakes. Ours are kept open, so a pool costs its handshakes once.
# With 16, a 1,000-pod burst at 500 nodes queued up to 800 binding cycles here, each holding its
# cycle's state (peak RSS 118-128 MB, seven runs); with 64, 100-290 (110-116 MB, six runs), the
# same rate (190-211 pods/s either way: the control plane's CPU is the limit); 128 and 256 were no
# better. The API server then holds the queue, as it holds kube-scheduler's HTTP/2 streams.
WRITE_CONNECTIONS = 64
REQUEST_TIMEOUT = 300.0  # the client's own default for a request without _request_timeout (5 minutes)
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
_MAX_HEAD = 64 * 1024  # a response head larger than this is not an API server's


class MalformedResponseError(ConnectionError):
    """The bytes on a write connection were not an HTTP/1.1 response; the connection is dropped."""


class Reply:
    """A complete response: what ``scheduler.kube.writes`` reads of aiohttp's, already read."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers  # names in lower case
        self.body = body

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        return None


def parse_response(buffer: bytes | bytearray, eof: bool = False) -> tuple[int, dict[str, str], bytes, int] | None:
    """The first complete response in ``buffer``: (status, headers, body, bytes used), or None if
    more bytes are needed. ``eof``: the server closed the connection, so a body with neither a
    length nor chunks ends here. Informational (1xx) responses are skipped. Raises
    ``MalformedResponseError`` for anything else."""
    start = 0
    while True:
        end = buffer.find(b"\r\n\r\n", start)
        if end < 0:
            if len(buffer) - start > _MAX_HEAD:
                raise MalformedResponseError("response head over 64 KiB")
            return None
        lines = bytes(buffer[start:end]).decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise MalformedResponseError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise MalformedResponseError(f"malformed header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        body_start = end + 4
        if 100 <= status < 200:
            start = body_start
            continue
        if status in (204, 304):
            return status, headers, b"", body_start
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = _dechunk(buffer, body_start)
            if chunks is None:
                return None
            return status, headers, chunks[0], chunks[1]
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise MalformedResponseError(f"Content-Length {length[:20]!r}")
            stop = body_start + int(length)
            return (status, headers, bytes(buffer[body_start:stop]), stop) if len(buffer) >= stop else None
        if not eof:
            return None
        return status, headers, bytes(buffer[body_start:]), len(buffer)


def _dechunk(buffer: bytes | bytearray, pos: int) -> tuple[bytes, int] | None:
    parts: list[bytes] = []
    while True:
        line_end = buffer.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size_text = bytes(buffer[pos:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise MalformedResponseError(f"chunk size {size_text[:20]!r}") from None
        pos = line_end + 2
        if size == 0:
            while True:  # trailers, up to the empty line
                line_end = buffer.find(b"\r\n", pos)
                if line_end < 0:
                    return None
                if line_end == pos:
                    return b"".join(parts), pos + 2
                pos = line_end + 2
        if len(buffer) < pos + size + 2:
            return None
        parts.append(bytes(buffer[pos : pos + size]))
        pos += size + 2


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request in flight, its reply delivered as a future."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.usable = True
        self._buffer = bytearray()
        self._reply: asyncio.Future[Reply] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def expect(self, reply: asyncio.Future[Reply]) -> None:
        self._reply = reply

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        reply = self._reply
        if reply is None or reply.done():
            self._fail(MalformedResponseError("bytes from the API server with no request waiting"))
            return
        self._deliver(eof=False)

    def eof_received(self) -> bool | None:
        self._deliver(eof=True)
        self._fail(ConnectionResetError("the API server closed the connection"))
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionResetError(f"connection to the API server lost: {exc or 'closed'}"))

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.abort()

    def _deliver(self, eof: bool) -> None:
        reply = self._reply
        if reply is None or reply.done():
            return
        try:
            parsed = parse_response(self._buffer, eof)
        except MalformedResponseError as exc:
            self._fail(exc)
            return
        if parsed is None:
            return
        status, headers, body, used = parsed
        del self._buffer[:used]
        if self._buffer or "close" in headers.get("connection", "").lower():
            self.usable = False  # bytes beyond the reply, or the server will close: not reused
        self._reply = None
        reply.set_result(Reply(status, headers, body))

    def _fail(self, exc: Exception) -> None:
        self.usable = False
        reply, self._reply = self._reply, None
        if reply is not None and not reply.done():
            reply.set_exception(exc)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


class Http1Connections:
    """Up to ``limit`` keep-alive connections to one API server, for one request each at a time."""

    def __init__(
        self,
        url: str,
        ssl_context: ssl.SSLContext | None,
        limit: int,
        *,
        server_hostname: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"API server URL {url!r}: want http(s)://host[:port][/prefix]")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._authority = parts.netloc
        self.prefix = parts.path.rstrip("/")
        self._ssl = ssl_context if parts.scheme == "https" else None
        self._server_hostname = server_hostname if self._ssl is not None else None
        self._timeout = timeout
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    @classmethod
    def for_client(cls, api: client.ApiClient, limit: int) -> Http1Connections | None:
        """Connections like the client's own (its host, TLS context and server name), or None where
        the client's session must carry the writes: a proxy is configured."""
        config = api.configuration
        if config.proxy or any(os.environ.get(name) for name in PROXY_VARIABLES):
            return None
        return cls(
            config.host,
            api.rest_client.ssl_context,
            limit,
            server_hostname=config.tls_server_name or None,
        )

    async def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        may_send: Callable[[], bool],
        refused: Callable[[], BaseException],
    ) -> Reply:
        """Send one request on a pooled connection and wait for its reply.

        ``target`` is the path and query under the URL's prefix. ``may_send`` is asked once a
        connection is ready, right before the bytes go out; if it says no, ``refused()`` is raised
        and nothing is sent. Timeouts raise ``TimeoutError``, connection failures ``ConnectionError``.
        """
        head = "".join(
            (
                f"{method} {self.prefix}{target} HTTP/1.1\r\nHost: {self._authority}\r\n",
                *(f"{name}: {value}\r\n" for name, value in headers.items()),
                f"Content-Length: {len(body)}\r\n\r\n",
            ),
        ).encode("latin-1")
        async with asyncio.timeout(self._timeout), self._slots:
            conn = await self._connection()
            if not may_send():
                self._idle.append(conn)  # nothing was sent on it
                raise refused()
            reply: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
            try:
                conn.expect(reply)
                assert conn.transport is not None
                conn.transport.write(head + body)
                result = await reply
            except BaseException:
                self._drop(conn)
                raise
            if conn.usable:
                self._idle.append(conn)
            else:
                self._drop(conn)
            return result

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable and conn.transport is not None and not conn.transport.is_closing():
                return conn
            self._drop(conn)
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(
                _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname
            )
        except ConnectionError:
            raise
        except OSError as exc:  # unreachable, a failed TLS handshake: an outage like a refusal, retried
            raise ConnectionError(f"connecting to {self._authority}: {exc}") from exc
        self._open.add(conn)
        return conn

    async def close(self) -> None:
        """Close every connection (the scheduler is stopping)."""
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports finish closing
