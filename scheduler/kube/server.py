"""/healthz, /livez, /readyz and /metrics over HTTPS on ``--secure-port``, as kube-scheduler serves them.

The server runs in a thread of its own with its own event loop: a long scheduling cycle on the
scheduling loop must not make the kubelet's probe time out. It reads the scheduler only through
thread-safe means: ``ready()`` reads one bool, and a scrape asks the scheduling loop to publish the
queue's numbers (``before_scrape``) and waits for that at most ``SCRAPE_REFRESH_WAIT`` (a busy loop
means numbers a moment old, never a slow scrape).

Every request is authenticated (a bearer token -> TokenReview, none -> ``system:anonymous``) and
authorized (``scheduler.kube.delegated_auth``), then answered; the answers for 401/403 are
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

from scheduler.kube.delegated_auth import (
    AuthenticationError,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    forbidden_message,
)
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.selfsigned import SelfSignedCert, generate_self_signed

__all__ = ["SCRAPE_REFRESH_WAIT", "SecureServer", "ServingAuth", "serving_ssl_context"]

log = structlog.get_logger("spread-scheduler")

SCRAPE_REFRESH_WAIT = 0.5
START_TIMEOUT = 30.0
# The serving thread answers between the scheduling thread's bytecodes: each time it needs the GIL it
# waits up to one switch interval, and a TLS handshake plus a request takes dozens of hand-offs.
# CPython's 5 ms is made 1 ms; a thread that does not ask for the GIL (the idle server) costs nothing.
SWITCH_INTERVAL = 0.001


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
        self._ssl_context = ssl_context
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
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port, ssl_context=self._ssl_context)
            await site.start()
            bound = port
            for address in runner.addresses:  # the bound port, when asked for port 0 (tests)
                if isinstance(address, tuple):
                    bound = int(address[1])
            started.set_result(bound)
            await self._stopped.wait()
        finally:
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
