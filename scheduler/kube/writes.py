"""The one way the scheduler writes to the API: ``ApiWriter`` (the rate limiter, the leadership
fence, the request, its status mapped to our errors, transient failures retried) over ``ApiWrites``
(our own connections, or the client's session behind a proxy). The writers hold one: the Binding
(``scheduler.kube.binder``), PodScheduled=False and Events (``scheduler.kube.record``), preemption's
(``scheduler.kube.preemption``), the volumes' and the controllers'.

Built on ``kubernetes.aio`` (the official client's asyncio package, on the scheduler's loop). API errors
are mapped once, here, to the few errors the core understands (``scheduler.errors``); transient
ones (429, 5xx, connection trouble) are retried with exponential backoff by tenacity, never 404/409.
Requests pass a token bucket (``scheduler.kube.flowcontrol``) so the client honours
``clientConnection.qps``/``burst``.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import structlog
from kubernetes.aio import client
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from scheduler.api.objects import Pod
from scheduler.errors import BindConflictError, DisruptionBudgetError, NotLeadingError, PodGoneError, TransientAPIError
from scheduler.kube.client.rest import expand, note_reply, request_headers, send
from scheduler.kube.client.transport import WRITE_CONNECTIONS, Http1Connections, read_capped
from scheduler.kube.fence import FENCE, NOT_SURE, always
from scheduler.kube.flowcontrol import RateLimiter

__all__ = [
    "ApiWriter",
    "ApiWrites",
    "map_status",
]

log = structlog.get_logger("spread-scheduler")

MAX_TRIES = 5


def map_status(status: int, body: bytes, what: str, retry_after: float | None = None) -> Exception | None:
    """The error of ours for an HTTP status, or None for 2xx. Every handled code is listed here."""
    if 200 <= status < 300:
        return None
    reason, budget = "", None
    try:
        status_body = json.loads(body)
        message, reason = str(status_body.get("message", "")), str(status_body.get("reason", ""))
        budget = _budget_cause(status_body)
    except (ValueError, AttributeError):
        message = body[:200].decode(errors="replace")
    # The API's Status reason too (Forbidden, Invalid, Conflict): what an operator greps the log for.
    text = f"{what}: HTTP {status}{' ' + reason if reason else ''}: {message}"
    if status == 404:
        return PodGoneError(text)
    if status == 409:
        return BindConflictError(text)
    if status == 429 and budget is not None:
        return DisruptionBudgetError(f"{text} ({budget})")
    if status == 429 or status >= 500:
        return TransientAPIError(text, retry_after)
    return RuntimeError(text)  # 400/403/422: a bug or missing RBAC; not retried, reported


def _budget_cause(status_body: Any) -> str | None:
    """The message of a Status's ``DisruptionBudget`` cause (policy/v1 ``DisruptionBudgetCause``, which
    the eviction subresource adds to its 429s, pkg/registry/core/pod/storage/eviction.go); None without one."""
    details = status_body.get("details") if isinstance(status_body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    for cause in causes if isinstance(causes, list) else ():
        if isinstance(cause, dict) and cause.get("type") == "DisruptionBudget":
            return str(cause.get("message", ""))
    return None


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds, as client-go reads it (a whole number of seconds; a date is ignored)."""
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(seconds) if seconds > 0 else None


_BACKOFF = wait_exponential_jitter(multiplier=0.2, max=5, jitter=0.2)
RETRY_AFTER_JITTER = 0.2  # up to 20 % more than the server asked: retries of one burst spread out


def _wait(retry_state: RetryCallState) -> float:
    """Exponential backoff with jitter (0.2 s doubling to 5 s, +0-0.2 s), and never sooner than the
    server's Retry-After (client-go waits exactly that; we add up to 20 % so a throttled burst does not
    come back in one instant)."""
    backoff = float(_BACKOFF(retry_state))
    error = retry_state.outcome.exception() if retry_state.outcome is not None else None
    after = getattr(error, "retry_after", None)
    if isinstance(after, float):
        return max(backoff, after * (1 + random.random() * RETRY_AFTER_JITTER))
    return backoff


_TRANSIENT = (TransientAPIError, aiohttp.ClientError, asyncio.TimeoutError, socket.gaierror, ConnectionError)
_OUTAGE = (aiohttp.ClientConnectionError, asyncio.TimeoutError, socket.gaierror, ConnectionError)


def _retried(error: BaseException) -> bool:
    """Whether a failed try is tried again: a transient failure, unless the lease is in doubt."""
    return isinstance(error, _TRANSIENT) and not isinstance(error, NotLeadingError)


# Stateless, so made once (not for every request).
_RETRY = retry_if_exception(_retried)
_STOP = stop_after_attempt(MAX_TRIES)


def _ignore(_outcome: str) -> None:
    return None


async def _call(
    limiter: RateLimiter,
    what: str,
    request: Callable[[], Awaitable[Any]],
    observe: Callable[[str], None] = _ignore,
    fence: Callable[[], bool] = always,
) -> bytes:
    """One API request with rate limiting, status mapping and retries of transient failures.

    ``fence`` is asked right before every try, after the rate limiter's wait: a leader that is no
    longer sure of its lease (``Leadership.sure``) sends nothing and raises ``NotLeadingError``.

    ``observe`` hears the outcome of every attempt: ``ok``, ``outage`` (no connection, a timeout, a
    5xx: the cache is re-listed once the server is back), ``throttled`` (429) or ``refused`` (other
    4xx); the counts are how the fault tests prove bounded retries.

    The first try goes without tenacity: its retry loop costs CPU per request and a dozen objects in
    reference cycles (a ``concurrent.futures.Future`` with its lock and condition for every outcome),
    left to the garbage collector, for two writes a pod that nearly always succeed. Once a try has
    failed transiently, tenacity runs the rest from that outcome as its own first attempt: the same
    waits, the same number of tries.
    """
    try:
        return await _try(limiter, what, request, observe, fence)
    except BaseException as exc:
        if not _retried(exc):
            raise
        failed: BaseException | None = exc
    async for attempt in AsyncRetrying(retry=_RETRY, wait=_wait, stop=_STOP, reraise=True):
        with attempt:
            if failed is not None:
                first, failed = failed, None
                raise first  # the try above, as tenacity's attempt 1
            return await _try(limiter, what, request, observe, fence)
    raise TransientAPIError(what)  # unreachable: AsyncRetrying re-raises the last error


async def _try(
    limiter: RateLimiter,
    what: str,
    request: Callable[[], Awaitable[Any]],
    observe: Callable[[str], None],
    fence: Callable[[], bool],
) -> bytes:
    """One try of ``_call``: wait for the rate limiter, ask the fence, send, map the status."""
    await limiter.acquire()
    if not fence():
        raise NotLeadingError(f"{what}: {NOT_SURE}")
    token = FENCE.set(fence)
    try:
        response = await request()
    except NotLeadingError:
        raise NotLeadingError(f"{what}: {NOT_SURE}") from None
    except aiohttp.ClientError as exc:
        if isinstance(exc.__cause__, NotLeadingError):
            raise NotLeadingError(f"{what}: {NOT_SURE}") from None
        if isinstance(exc, aiohttp.ClientResponseError):
            observe(_outcome(exc.status))
            raise map_status(exc.status, str(exc.message).encode(), what) or exc from exc
        if isinstance(exc, _OUTAGE):
            observe("outage")
        raise
    except _OUTAGE:
        observe("outage")
        raise
    finally:
        FENCE.reset(token)
    try:
        body = await read_capped(response)
        error = map_status(response.status, body, what, retry_after_seconds(response.headers.get("retry-after")))
    finally:
        response.release()
    observe(_outcome(response.status))
    if error is not None:
        raise error
    return body


class ApiWrites:
    """Where the writes go: our own keep-alive connections (``scheduler.kube.client.transport``), or the
    client's session when a proxy is configured (which only it knows how to go through)."""

    def __init__(self, api: client.ApiClient, connections: int = WRITE_CONNECTIONS) -> None:
        self.api = api
        self.connections = Http1Connections.for_client(api, connections)

    async def close(self) -> None:
        if self.connections is not None:
            await self.connections.close()


def _refused() -> NotLeadingError:
    return NotLeadingError(NOT_SURE)


async def send_once(
    writes: ApiWrites, method: str, path: str, params: dict[str, str], body: dict[str, Any] | None, content_type: str
) -> Any:
    """One write with a plain JSON body (None: none, a write's read of the object it retries); its
    fence (``fence.FENCE``) is asked right before it is sent. (Tests capture requests here.)"""
    connections = writes.connections
    if connections is None:
        return await send(writes.api, method, path, params, body=body, content_type=content_type)
    headers = await request_headers(writes.api, content_type)
    payload = json.dumps(body).encode() if body is not None else b""
    reply = await connections.request(method, expand(path, params), headers, payload, FENCE.get(), _refused)
    note_reply(writes.api, headers, reply.status)  # a 401 renews the credentials, as on the client's session
    return reply


def _outcome(status: int) -> str:
    if status >= 500:
        return "outage"
    if status == 429:
        return "throttled"
    return "ok" if status < 400 else "refused"


JSON = "application/json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class ApiWriter:
    """The one way a write goes out: the rate limiter, the leadership fence, the request, its status
    mapped to our errors, transient failures retried (``_call`` around ``send_once``). Every writer of
    this package (Binding, status patches, Events, preemption's, the volumes') holds one."""

    def __init__(
        self,
        api: ApiWrites,
        limiter: RateLimiter,
        observe: Callable[[str], None] = _ignore,
        fence: Callable[[], bool] = always,
    ) -> None:
        self.api = api
        self.limiter = limiter
        self.observe = observe
        self.fence = fence

    async def write(
        self,
        what: str,
        method: str,
        path: str,
        params: dict[str, str],
        body: dict[str, Any] | None,
        content_type: str = JSON,
        limiter: RateLimiter | None = None,
    ) -> bytes:
        """``method path`` (its ``{name}`` fields from ``params``) with ``body`` as JSON (None: no
        body); ``what`` names it in errors and logs. ``limiter``: another budget than the writer's
        (Events)."""
        return await _call(
            limiter or self.limiter,
            what,
            lambda: send_once(self.api, method, path, params, body, content_type),
            self.observe,
            self.fence,
        )

    async def post_to_pod(self, what: str, pod: Pod, subresource: str, body: dict[str, Any]) -> bytes:
        """``POST pods/{name}/<subresource>`` of ``pod`` (a Binding, an Eviction)."""
        return await self.write(
            what,
            "POST",
            "/api/v1/namespaces/{namespace}/pods/{name}/" + subresource,
            {"namespace": pod.namespace, "name": pod.name},
            body,
        )
