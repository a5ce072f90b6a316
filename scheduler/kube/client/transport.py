"""The writes' own keep-alive HTTP/1.1 connections to the API server (client-go's transport, for us).

A Binding and a Scheduled event per pod are most of what the scheduler sends, and written here on a
plain ``asyncio.Protocol`` over the client's TLS context a write costs about half the CPU it costs
through the client's aiohttp session (cookie jar, payload registry, header multidicts, a timer and a
writer task per request): ``python -m bench.http_writes``, figures in docs/benchmarks.md. Reads,
watches and anything behind a proxy stay on the client's session: ``for_client`` says None when a
proxy is configured.

What a write needs and nothing more: a bounded pool (``WRITE_CONNECTIONS``), one request at a time
per connection, a body by Content-Length or chunks, one deadline for the whole request as the client
had (300 s), and a check (``may_send``) asked right before the request's bytes are handed to the
socket, in the same step of the event loop, so a process paused while it waited for a connection
never sends after waking. A connection whose request failed, timed out or was cancelled is closed,
never reused: its next bytes could belong to the wrong request.

Responses are parsed by llhttp (``httptools``) as they arrive, held to what Go's ``net/http`` (the
client kube-scheduler uses) accepts: chunk sizes of 1-16 hex digits, ``chunked`` as the only
transfer coding, the heads of the 1xx responses and the final one within one budget (64 KiB),
trailers within 64 KiB, a bounded body; a repeated Content-Length, which Go takes when its values
agree, llhttp refuses. Anything else fails the request with ``MalformedResponseError`` and drops the
connection. What we send is checked
too: a header name or value that would split the request (CR, LF, NUL) is refused before a
connection is asked for.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

import aiohttp
import httptools
from kubernetes.aio import client

from scheduler.kube.client.credentials import tls_of

__all__ = [
    "CONNECT_TIMEOUT",
    "MAX_BODY",
    "PROXY_VARIABLES",
    "REQUEST_TIMEOUT",
    "WRITE_CONNECTIONS",
    "Http1Connections",
    "MalformedResponseError",
    "Reply",
    "parse_response",
    "read_capped",
]

# HTTP/1.1 carries one request per connection at a time and each new one costs a TLS handshake on
# both sides (kube-scheduler multiplexes over one HTTP/2 connection); kept open, a pool pays its
# handshakes once. 64 lets a burst's binding cycles wait at the API server rather than queue here
# holding their cycle's state, which cost memory at 16; more did not raise the rate (docs/benchmarks.md).
WRITE_CONNECTIONS = 64
REQUEST_TIMEOUT = 300.0  # the client's own default for a request without _request_timeout (5 minutes)
CONNECT_TIMEOUT = 30.0  # client-go's dialer (transport/cache.go: net.Dialer{Timeout: 30 * time.Second})
TLS_HANDSHAKE_TIMEOUT = 10.0  # client-go's http.Transport (transport/cache.go: TLSHandshakeTimeout)
# client-go's dialer sets KeepAlive: 30 * time.Second, which Go makes the idle time before the first
# probe; the interval and count are Go's defaults (net/dial.go: 15 s, 9 probes).
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 15, 9
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
_MAX_HEAD = 64 * 1024  # a response's heads (1xx ones too) or its trailers larger than this are not an API server's
# A body's bytes: a write's reply is one object or a Status, a few KiB; the cap only bounds what a
# broken or hostile server can make us hold.
MAX_BODY = 64 * 1024 * 1024
_SLICE = 16 * 1024  # the parser reads at most this much at a time once the head is complete
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 section 5.6.2: a field name is a token
_SPLITS_A_FIELD = re.compile(r"[\r\n\x00]")  # RFC 9110 section 5.5: never in a field value
_NOT_IN_TARGET = re.compile(r"[\x00-\x20\x7f-\uffff]")  # a request target is visible ASCII (RFC 9112 3.2)


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


async def read_capped(response: Reply | aiohttp.ClientResponse, limit: int = MAX_BODY) -> bytes:
    """A response's body, at most ``limit`` bytes. Ours (``Reply``) was bounded as it was parsed; one
    of aiohttp's (the client's session: a proxy, the Lease) is read in chunks and given up past the
    limit, so a broken or hostile server cannot make us hold an unbounded body."""
    if not isinstance(response, aiohttp.ClientResponse):
        return await response.read()
    if response.content_length is not None and response.content_length > limit:
        raise MalformedResponseError(f"response body over {limit} bytes (Content-Length {response.content_length})")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise MalformedResponseError(f"response body over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_response(buffer: bytes | bytearray, eof: bool = False) -> tuple[int, dict[str, str], bytes] | None:
    """The first complete response in ``buffer``: (status, headers, body), or None if more bytes are
    needed. ``eof``: the server closed the connection, so a body with neither a length nor chunks
    ends here. Informational (1xx) responses are skipped. Header names are in lower case; a repeated
    field's values are joined by ", " in order (RFC 9110 section 5.3). Raises
    ``MalformedResponseError`` for anything else, as soon as the bytes show it."""
    response = _Response()
    if not response.feed(bytes(buffer)) and eof:
        response.finish()
    return (response.status, response.headers, response.body()) if response.complete else None


class _BeyondTheResponse(Exception):  # noqa: N818  (a signal out of the parser's callback, not an error)
    """Bytes after the final response: the parser stops there."""


def _malformed(exc: Exception) -> MalformedResponseError:
    """What the parser raised, as the error a write connection fails with."""
    cause = exc.__context__  # an exception raised in one of our callbacks
    if isinstance(cause, MalformedResponseError):
        return cause
    if isinstance(exc, httptools.HttpParserUpgrade):
        return MalformedResponseError("101 Switching Protocols in reply to a write")
    reason = str(cause or exc)
    return MalformedResponseError(f"malformed response: {reason[:1].lower()}{reason[1:]}")


class _Response:
    """One response, read by llhttp (``httptools``) as its bytes arrive, within our bounds.

    llhttp through httptools, measured against h11 and aiohttp's parser (docs/benchmarks.md): h11
    nearly doubled a write's CPU and took 30 times as long on a stream of 1-byte chunks; aiohttp's is
    not its public API and shows neither a head's nor a trailer's bytes, so the bounds below could
    not be counted.

    The parser reads a slice at a time, so the counts below stop it within a slice of their bound
    (the head's to the byte): the heads of the 1xx responses and the final one share one budget (Go's
    ``persistConn.readLimit``, 64 KiB here), the body ``MAX_BODY``, the trailers' fields 64 KiB (Go:
    its read buffer), and so do the bytes read without body data (a chunk line, an unfinished
    trailer)."""

    __slots__ = (
        "_in_head",
        "_parser",
        "_parts",
        "_quiet",
        "_saw_body",
        "_size",
        "_trailers",
        "_until_eof",
        "complete",
        "extra",
        "final",
        "head_bytes",
        "headers",
        "keep_alive",
        "status",
    )

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        # Go's removeChunkExtension trims blanks after a chunk size (llhttp refuses them by default).
        self._parser.set_dangerous_leniencies(lenient_spaces_after_chunk_size=True)
        self.status = 0
        self.headers: dict[str, str] = {}
        self._parts: list[bytes] = []
        self._size = 0  # body bytes
        self.head_bytes = 0  # bytes read before the final response's head was complete
        self.final = False  # the final (not 1xx) head is complete
        self._in_head = False
        self._trailers = 0
        self._quiet = 0  # bytes since the last body data, once the head is complete
        self._saw_body = False
        self._until_eof = False
        self.complete = False
        self.extra = False  # bytes came after the response
        self.keep_alive = False

    def feed(self, data: bytes) -> bool:
        """Read ``data``; True once the response is complete (what follows it sets ``extra``)."""
        view = memoryview(data)
        while view:
            if self.complete:
                self.extra = True
                break
            in_body = self.final
            size = _SLICE if in_body else _MAX_HEAD - self.head_bytes
            piece, view = view[:size], view[size:]
            self._saw_body = False
            try:
                self._parser.feed_data(piece)
            except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
                if self.complete:  # what follows the response is not read: the connection goes
                    self.extra = True
                    break
                raise _malformed(exc) from None
            if not self.final:
                self.head_bytes += len(piece)
                if self.head_bytes >= _MAX_HEAD:  # Go's message (transport.go, readLoop)
                    raise MalformedResponseError(f"server response headers exceeded {_MAX_HEAD} bytes; aborted")
            elif in_body and not self.complete and not self._saw_body:
                self._quiet += len(piece)
                if self._quiet > _MAX_HEAD:
                    raise MalformedResponseError(f"over {_MAX_HEAD} bytes of chunk lines or trailers without data")
        return self.complete

    def finish(self) -> None:
        """The connection ended: a body framed by the connection's end is complete."""
        if self.final and self._until_eof:
            self.complete = True
            self.keep_alive = False

    def body(self) -> bytes:
        return b"".join(self._parts)

    # httptools' callbacks

    def on_message_begin(self) -> None:
        if self.complete:
            raise _BeyondTheResponse  # stops the parser; feed() sees the response complete
        self.headers = {}
        self._in_head = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._in_head:  # a trailer: counted, not kept (as before)
            self._trailers += len(name) + len(value) + 4
            if self._trailers > _MAX_HEAD:  # Go: "http: suspiciously long trailer after chunked body"
                raise MalformedResponseError(f"chunked trailers over {_MAX_HEAD} bytes")
            return
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1").strip(" \t")
        seen = self.headers.get(key)
        if seen is None:
            self.headers[key] = text
        elif key == "transfer-encoding":
            raise MalformedResponseError("too many transfer encodings")  # Go's parseTransferEncoding
        else:  # llhttp refuses a second Content-Length
            self.headers[key] = f"{seen}, {text}"

    def on_headers_complete(self) -> None:
        self._in_head = False
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            return  # informational: llhttp reads it as a message of its own, without a body
        self.status = status
        self.final = True
        chunked, length = _framing(self.headers)
        self._until_eof = not chunked and length is None and status not in (204, 304)

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > MAX_BODY:
            raise MalformedResponseError(f"response body over {MAX_BODY} bytes")
        self._parts.append(body)
        self._saw_body = True
        self._quiet = 0

    def on_message_complete(self) -> None:
        if self.final:
            self.complete = True
            self.keep_alive = self._parser.should_keep_alive()


def _framing(headers: dict[str, str]) -> tuple[bool, int | None]:
    """(chunked, Content-Length) of a response, refusing what two parsers could read two ways."""
    coding = headers.get("transfer-encoding")
    length = headers.get("content-length")
    if coding is not None:
        if coding.lower() != "chunked":  # Go's parseTransferEncoding: chunked alone, or nothing
            raise MalformedResponseError(f"unsupported transfer encoding: {coding[:40]!r}")
        if length is not None:  # RFC 9112 section 6.3: "ought to be handled as an error"
            raise MalformedResponseError("both Transfer-Encoding and Content-Length")
        return True, None
    if length is None:
        return False, None
    if not (length.isascii() and length.isdigit()):  # str.isdigit() alone takes "²" and "١٢"
        raise MalformedResponseError(f"Content-Length {length[:20]!r}")
    if len(length) > 19 or int(length) > MAX_BODY:
        raise MalformedResponseError(f"response body over {MAX_BODY} bytes (Content-Length {length[:20]})")
    return False, int(length)


def _checked_head(method: str, target: str, authority: str, headers: Mapping[str, str], length: int) -> bytes:
    """The request's head, or ValueError naming the part that would split it (never a value: it
    may be a token)."""
    if _NOT_IN_TARGET.search(target):
        raise ValueError(f"request target {target[:80]!r} has a space, a control or a non-ASCII character; not sent")
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"request header name {name[:80]!r} is not a valid field name; not sent")
        if _SPLITS_A_FIELD.search(value):
            raise ValueError(f"request header {name}: its value has a CR, LF or NUL; not sent")
    head = "".join(
        (
            f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\n",
            *(f"{name}: {value}\r\n" for name, value in headers.items()),
            f"Content-Length: {length}\r\n\r\n",
        ),
    )
    try:
        return head.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("a request header's value is not Latin-1; not sent") from None


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request in flight, its reply delivered as a future."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.usable = True
        self._response: _Response | None = None
        self._reply: asyncio.Future[Reply] | None = None
        self.tls: ssl.SSLContext | None = None  # the context it was opened with (its client certificate)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            # A peer gone without a FIN (a node lost, a NAT entry dropped) is found by probes, as
            # client-go's connections find it, not only by the request deadline.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if hasattr(socket, "TCP_KEEPIDLE"):  # Linux; elsewhere the system's keepalive timings
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_COUNT)

    def expect(self, reply: asyncio.Future[Reply]) -> None:
        self._reply = reply
        self._response = _Response()

    def data_received(self, data: bytes) -> None:
        reply, response = self._reply, self._response
        if reply is None or reply.done() or response is None:
            self._fail(MalformedResponseError("bytes from the API server with no request waiting"))
            return
        try:
            complete = response.feed(data)
        except MalformedResponseError as exc:
            self._fail(exc)
            return
        if complete:
            self._deliver(response)

    def eof_received(self) -> bool | None:
        response = self._response
        if response is not None and self._reply is not None and not self._reply.done():
            response.finish()
            if response.complete:
                self._deliver(response)
        self._fail(ConnectionResetError("the API server closed the connection"))
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionResetError(f"connection to the API server lost: {exc or 'closed'}"))

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.abort()

    def _deliver(self, response: _Response) -> None:
        reply, self._reply, self._response = self._reply, None, None
        if response.extra or not response.keep_alive:
            self.usable = False  # bytes beyond the reply, or the server will close: not reused
        if reply is not None and not reply.done():
            reply.set_result(Reply(response.status, response.headers, response.body()))

    def _fail(self, exc: Exception) -> None:
        self.usable = False
        reply, self._reply, self._response = self._reply, None, None
        if reply is not None and not reply.done():
            reply.set_exception(exc)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


class Http1Connections:
    """Up to ``limit`` keep-alive connections to one API server, for one request each at a time."""

    def __init__(
        self,
        url: str,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None,
        limit: int,
        *,
        server_hostname: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"API server URL {url!r}: want http(s)://host[:port][/prefix]")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._authority = parts.netloc
        self.prefix = parts.path.rstrip("/")
        # A callable is asked for the context at each new connection: the credential stack's current
        # one, so a rotated client certificate is presented from then on (and idle connections opened
        # with the old one are dropped, not reused).
        tls: Callable[[], ssl.SSLContext | None]
        if ssl_context is None or isinstance(ssl_context, ssl.SSLContext):
            fixed = ssl_context
            tls = lambda: fixed  # noqa: E731
        else:
            tls = ssl_context
        self._tls = tls if parts.scheme == "https" else None
        self._server_hostname = server_hostname if self._tls is not None else None
        self._timeout = timeout
        self._connect_timeout = connect_timeout
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
            tls_of(api),
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
        and nothing is sent. Timeouts raise ``TimeoutError``, connection failures (a connection not
        made within ``connect_timeout`` too) ``ConnectionError``, a header or target that would split
        the request ``ValueError`` before any connection is asked for.
        """
        head = _checked_head(method, self.prefix + target, self._authority, headers, len(body))
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
        tls = self._tls() if self._tls is not None else None
        while self._idle:
            conn = self._idle.pop()
            if conn.usable and conn.tls is tls and conn.transport is not None and not conn.transport.is_closing():
                return conn
            self._drop(conn)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, conn = await loop.create_connection(
                    _Connection,
                    self._host,
                    self._port,
                    ssl=tls,
                    server_hostname=self._server_hostname,
                    ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT if tls is not None else None,
                )
        except TimeoutError as exc:
            raise ConnectionError(
                f"connecting to {self._authority}: not connected within {self._connect_timeout:g} s"
            ) from exc
        except ConnectionError:
            raise
        except OSError as exc:  # unreachable, a failed TLS handshake: an outage like a refusal, retried
            raise ConnectionError(f"connecting to {self._authority}: {exc}") from exc
        conn.tls = tls
        self._open.add(conn)
        return conn

    async def close(self) -> None:
        """Close every connection (the scheduler is stopping)."""
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports finish closing
