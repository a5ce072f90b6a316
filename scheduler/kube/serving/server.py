"""/healthz, /livez, /readyz and /metrics over HTTPS on ``--secure-port``, as kube-scheduler serves them.

The server runs in a thread of its own with its own event loop: a long scheduling cycle on the
scheduling loop must not make the kubelet's probe time out. It reads the scheduler only through
thread-safe means: ``ready()`` reads one bool, and a scrape asks the scheduling loop to publish the
queue's numbers (``before_scrape``) and waits for that at most ``SCRAPE_REFRESH_WAIT`` (a busy loop
means numbers a moment old, never a slow scrape).

Every request is authenticated (a bearer token -> TokenReview, none -> ``system:anonymous``) and
authorized (``scheduler.kube.serving.delegated_auth``), then answered; the answers for 401/403 are
upstream's ``metav1.Status`` bodies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ipaddress
import json
import os
import ssl
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.serving.delegated_auth import (
    AuthenticationError,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    forbidden_message,
)
from scheduler.kube.serving.selfsigned import SelfSignedCert, generate_self_signed

__all__ = ["SCRAPE_REFRESH_WAIT", "SecureServer", "ServingAuth", "ServingLimits", "serving_ssl_context"]

log = structlog.get_logger("spread-scheduler")

SCRAPE_REFRESH_WAIT = 0.5
START_TIMEOUT = 30.0
# The serving thread answers between the scheduling thread's bytecodes: each time it needs the GIL it
# waits up to one switch interval, and a TLS handshake plus a request takes dozens of hand-offs.
# CPython's 5 ms is made 1 ms; a thread that does not ask for the GIL (the idle server) costs nothing.
SWITCH_INTERVAL = 0.001


# The bounds on every connection to the secure port, as the API server's own serving has them.
# k8s.io/apiserver pkg/server/secure_serving.go: ReadHeaderTimeout 32 s ("just shy of
# requestTimeoutUpperBound"), IdleTimeout 90 s ("matches http.DefaultTransport keep-alive timeout").
READ_HEADER_TIMEOUT = 32.0
IDLE_TIMEOUT = 90.0
# Go's net/http bounds the TLS handshake by the smallest of its read/write timeouts: ReadHeaderTimeout.
TLS_HANDSHAKE_TIMEOUT = 32.0
# Upstream has no cap (Go's goroutines are cheap); ours costs memory per connection. Beyond the cap a
# connection is closed at once, before its handshake: waiting ones would hold memory all the same,
# and a prober or Prometheus retries. A handful of scrapers need far fewer.
MAX_CONNECTIONS = 256


@dataclass(frozen=True, slots=True)
class ServingLimits:
    """The bounds above, as one server holds them."""

    read_header_timeout: float
    idle_timeout: float
    tls_handshake_timeout: float
    max_connections: int

    @classmethod
    def current(cls) -> ServingLimits:
        """The module's bounds, read when a server is made (the tests shorten them on the module)."""
        return cls(READ_HEADER_TIMEOUT, IDLE_TIMEOUT, TLS_HANDSHAKE_TIMEOUT, MAX_CONNECTIONS)


class _Guard(asyncio.Protocol):
    """Sits before aiohttp's protocol: the cap, the TLS handshake (with its timeout), the header deadline.

    aiohttp has a keep-alive timeout but no deadline for a request head: the head's deadline starts at the
    handshake's end and at a new request's first byte, and ends when the request reaches the middleware.
    """

    def __init__(self, owner: SecureServer, inner: asyncio.Protocol) -> None:
        self._owner = owner
        self._inner = inner
        self._raw: asyncio.BaseTransport | None = None
        self._tls: asyncio.BaseTransport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._in_request = False
        self._counted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        owner = self._owner
        if owner.connections >= owner.limits.max_connections:
            transport.abort()  # type: ignore[attr-defined]
            return
        owner.connections += 1
        self._counted = True
        self._raw = transport
        transport.pause_reading()  # type: ignore[attr-defined]  # start_tls reads the ClientHello
        asyncio.get_running_loop().create_task(self._handshake())

    async def _handshake(self) -> None:
        """TLS on the raw connection; the slot is given back on every way out but a handed-over connection.

        While the handshake runs, asyncio's TLS protocol owns the raw transport and, if the connection
        dies then (a reset, a close, a failed or timed-out handshake), never calls this guard's
        ``connection_lost``: the count is released here, or a port scan would fill the cap for good.
        """
        loop = asyncio.get_running_loop()
        assert self._raw is not None
        try:
            tls = await loop.start_tls(
                self._raw,  # type: ignore[arg-type]
                self,
                self._owner.ssl_context,
                server_side=True,
                ssl_handshake_timeout=self._owner.limits.tls_handshake_timeout,
            )
        except BaseException as exc:
            self._raw.abort()  # type: ignore[attr-defined]
            self._release()
            if isinstance(exc, Exception):
                return  # a client that went away or spoke no TLS: nothing to report
            raise  # cancelled (the server stops)
        if tls is None or self._raw.is_closing():
            return  # asyncio's protocol calls connection_lost (and so _release) once the transport closes
        self._tls = tls
        self._owner.guards[self._inner] = self
        self._arm()
        self._inner.connection_made(tls)

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().call_later(self._owner.limits.read_header_timeout, self._expire)

    def _expire(self) -> None:
        self._deadline = None
        if self._tls is not None:
            self._tls.abort()  # type: ignore[attr-defined]  # Go closes a connection whose head is late

    def request_started(self) -> None:
        self._in_request = True
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def request_done(self) -> None:
        self._in_request = False  # idle now: aiohttp's keep-alive timeout applies until the next byte

    def data_received(self, data: bytes) -> None:
        if not self._in_request:
            self._arm()
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _release(self) -> None:
        """Un-count this connection, once, whichever way it ends."""
        if self._counted:
            self._counted = False
            self._owner.connections -= 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._release()
        self._owner.guards.pop(self._inner, None)
        if self._tls is not None:
            self._inner.connection_lost(exc)


@dataclass(frozen=True, slots=True)
class ServingAuth:
    """The delegated authenticator and authorizer, made on the server's loop (their API client lives there)."""

    authenticator: DelegatingAuthenticator
    authorizer: DelegatingAuthorizer
    close: Callable[[], Awaitable[None]]


def _load_in_memory(context: ssl.SSLContext, generated: SelfSignedCert) -> None:
    """``load_cert_chain`` reads files only: hand it an anonymous memory file (the root filesystem is read-only)."""
    pem = generated.cert_pem + generated.key_pem
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("spread-scheduler-serving-cert")
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory() as scratch:  # not Linux: a private temporary file, removed at once
        path = Path(scratch) / "serving.pem"
        path.touch(mode=0o600)
        path.write_bytes(pem)
        context.load_cert_chain(str(path))


def serving_ssl_context(cert_file: str | None, key_file: str | None, bind_address: str) -> ssl.SSLContext:
    """TLS 1.2+ (upstream's minimum); the given pair, or a self-signed certificate made now.

    Upstream's self-signed certificate names ``localhost``, 127.0.0.1 and the bind address unless it is
    unspecified (0.0.0.0 or ::). Raises ``ValueError`` for one file without the other and ``OSError``/
    ``ssl.SSLError`` for a pair that cannot be read.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file or key_file:
        if not (cert_file and key_file):
            raise ValueError("missing filename for serving cert")  # upstream's message
        context.load_cert_chain(cert_file, key_file)
        return context
    ips = ["127.0.0.1"]
    if not ipaddress.ip_address(bind_address).is_unspecified:
        ips.append(bind_address)
    _load_in_memory(context, generate_self_signed("localhost", tuple(ips), ("localhost",)))
    log.info("Generated self-signed cert in-memory")  # upstream's line
    return context


def _status(code: int, reason: str, message: str, *, details: bool) -> web.Response:
    """A ``metav1.Status`` as the API server's filters write it."""
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = {}
    body["code"] = code
    return web.Response(
        status=code,
        text=json.dumps(body, separators=(",", ":")) + "\n",
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )


class SecureServer:
    """The endpoints in their own thread; ``start`` returns once the port is bound (or raises why not)."""

    def __init__(
        self,
        metrics: SchedulerMetrics,
        ready: Callable[[], bool],
        *,
        before_scrape: Callable[[], None],
        scheduler_loop: asyncio.AbstractEventLoop,
        make_auth: Callable[[], Awaitable[ServingAuth]],
        ssl_context: ssl.SSLContext,
        checks: Sequence[tuple[str, Callable[[], bool]]] = (),
    ) -> None:
        self._metrics = metrics
        self._checks = tuple(checks)
        self._ready = ready
        self._before_scrape = before_scrape
        self._scheduler_loop = scheduler_loop
        self._make_auth = make_auth
        self.ssl_context = ssl_context
        self.limits = ServingLimits.current()
        self.connections = 0  # open connections (on the server's loop only)
        self.guards: dict[asyncio.BaseProtocol, _Guard] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self.port = 0

    # -- handlers (on the server's loop) --------------------------------------------------------

    async def _healthz(self, _request: web.Request) -> web.Response:
        """The named checks (thread-safe reads, such as the scheduling loop's heartbeat), answered as
        k8s.io/apiserver's healthz handler does: "ok", or each check's line and 500 when one fails
        (the reason withheld: the endpoint may be public)."""
        results = [(name, healthy()) for name, healthy in self._checks]
        if all(ok for _name, ok in results):
            return web.Response(text="ok")
        failed = [name for name, ok in results if not ok]
        log.info("healthz check failed", checks=failed)  # upstream logs it (V(2)) with the reasons
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld" for name, ok in results]
        return web.Response(status=500, text="\n".join([*lines, "healthz check failed"]) + "\n")

    async def _livez(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")  # kube-scheduler's /livez has the ping check only

    async def _readyz(self, _request: web.Request) -> web.Response:
        if self._ready():  # one bool, written by the scheduling loop: safe to read here
            return web.Response(text="ok")
        return web.Response(status=503, text="cache not synced")

    async def _refresh_from_scheduler(self) -> None:
        """Let the scheduling loop publish the queue's numbers; do not wait long for a busy loop."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def publish() -> None:
            if not done.set_running_or_notify_cancel():
                return  # the scrape stopped waiting: the next one publishes
            try:
                self._before_scrape()
            except Exception as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)

        try:
            self._scheduler_loop.call_soon_threadsafe(publish)
        except RuntimeError:  # the scheduling loop has closed (shutting down)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(done), SCRAPE_REFRESH_WAIT)

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        await self._refresh_from_scheduler()
        body = generate_latest(self._metrics.registry)  # prometheus_client's metrics lock their values
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _middleware(self, auth: ServingAuth) -> Callable[..., Awaitable[web.StreamResponse]]:
        @web.middleware
        async def authenticate_and_authorize(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            guard = self.guards.get(request.protocol)
            if guard is not None:
                guard.request_started()
            try:
                return await answer(request, handler)
            finally:
                if guard is not None:
                    guard.request_done()

        async def answer(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            try:
                user = await auth.authenticator.authenticate(request.headers.get("Authorization"))
            except AuthenticationError:
                return _status(401, "Unauthorized", "Unauthorized", details=False)
            verb = request.method.lower()  # a non-resource request's verb, as upstream's RequestInfo
            try:
                decision = await auth.authorizer.authorize(user, verb, request.path)
            except Exception as exc:
                log.error("SubjectAccessReview failed", path=request.path, err=str(exc))
                return web.Response(status=500, text=f'Internal Server Error: "{request.path}": {exc}')
            if not decision.allowed:
                message = forbidden_message(user, verb, request.path, decision.reason)
                return _status(403, "Forbidden", message, details=True)
            response = await handler(request)
            response.headers.setdefault("Cache-Control", "no-cache, private")  # upstream's WithCacheControl
            response.headers.setdefault("X-Content-Type-Options", "nosniff")
            return response

        return authenticate_and_authorize

    # -- life cycle -----------------------------------------------------------------------------

    def start(self, host: str | None, port: int) -> None:
        sys.setswitchinterval(SWITCH_INTERVAL)
        started: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(host, port, started), name="secure-serving", daemon=True
        )
        self._thread.start()
        self.port = started.result(timeout=START_TIMEOUT)  # re-raises a bind error here

    def _serve(self, host: str | None, port: int, started: concurrent.futures.Future[int]) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._run(host, port, started))
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            else:
                log.error("the secure server stopped", err=repr(exc))
        finally:
            loop.close()

    async def _run(self, host: str | None, port: int, started: concurrent.futures.Future[int]) -> None:
        self._stopped = asyncio.Event()
        auth = await self._make_auth()
        app = web.Application(middlewares=[self._middleware(auth)])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._livez)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics_handler)
        # keepalive_timeout: upstream's IdleTimeout. aiohttp's head limits (8190-byte lines and fields) are
        # tighter than upstream's MaxHeaderBytes (1 << 20, secure_serving.go) and stay.
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.limits.idle_timeout)
        await runner.setup()
        server: asyncio.Server | None = None
        try:
            assert runner.server is not None
            handler_factory = runner.server
            loop = asyncio.get_running_loop()
            # TLS is started by _Guard (not create_server's ssl=): a connection beyond the cap is closed
            # before it costs a handshake.
            server = await loop.create_server(lambda: _Guard(self, handler_factory()), host, port)
            bound = port
            for sock in server.sockets:  # the bound port, when asked for port 0 (tests)
                bound = int(sock.getsockname()[1])
            started.set_result(bound)
            await self._stopped.wait()
        finally:
            if server is not None:
                server.close()
            await runner.cleanup()
            await auth.close()

    def stop(self) -> None:
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None:
            with contextlib.suppress(RuntimeError):  # already closed
                loop.call_soon_threadsafe(stopped.set)
        if self._thread is not None:
            self._thread.join(timeout=10)


def bind_host(bind_address: str) -> str | None:
    """aiohttp's host for ``--bind-address``: None (0.0.0.0 or ::) listens on every interface and family."""
    return None if ipaddress.ip_address(bind_address).is_unspecified else bind_address
