"""The scheduler's only writes: Binding, the PodScheduled=False condition (with
``status.nominatedNodeName``), Events, and preemption's: a victim's DisruptionTarget condition and
deletion, a lower-priority pod's nomination cleared.

Built on ``kubernetes.aio`` (the official client's asyncio package, on the scheduler's loop). API errors
are mapped once, here, to the few errors the core understands (``scheduler.errors``); transient
ones (429, 5xx, connection trouble) are retried with exponential backoff by tenacity, never 404/409.
Requests pass a token bucket so the client honours ``clientConnection.qps``/``burst``.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
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
from scheduler.kube.client.transport import WRITE_CONNECTIONS, Http1Connections
from scheduler.kube.fence import FENCE, NOT_SURE, always

__all__ = [
    "ApiBinder",
    "ApiPodWriter",
    "ApiRecorder",
    "ApiWriter",
    "ApiWrites",
    "RateLimiter",
    "map_status",
]

log = structlog.get_logger("spread-scheduler")

MAX_TRIES = 5


class RateLimiter:
    """A token bucket: ``qps`` tokens a second, at most ``burst`` saved up (client-go's flowcontrol)."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._clock = clock
        self._last = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        async with self._lock:
            self._refill()
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                # Count the time actually slept: a busy loop wakes us late, and those tokens are
                # owed (setting the bucket to one token lost them and the QPS was not reached).
                self._refill()
            self._tokens -= 1

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now


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
        body: bytes = await response.read()
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


async def _send(
    writes: ApiWrites, method: str, path: str, params: dict[str, str], body: dict[str, Any], content_type: str
) -> Any:
    """One write with a plain JSON body; its fence (``fence.FENCE``) is asked right before it is sent.
    (Tests capture requests here.)"""
    connections = writes.connections
    if connections is None:
        return await send(writes.api, method, path, params, body=body, content_type=content_type)
    headers = await request_headers(writes.api, content_type)
    payload = json.dumps(body).encode()
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
    mapped to our errors, transient failures retried (``_call`` around ``_send``). Every writer of
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
        body: dict[str, Any],
        content_type: str = JSON,
        limiter: RateLimiter | None = None,
    ) -> bytes:
        """``method path`` (its ``{name}`` fields from ``params``) with ``body`` as JSON; ``what``
        names it in errors and logs. ``limiter``: another budget than the writer's (Events)."""
        return await _call(
            limiter or self.limiter,
            what,
            lambda: _send(self.api, method, path, params, body, content_type),
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


class ApiBinder:
    """``POST pods/<name>/binding`` as DefaultBinder does it."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer

    async def bind(self, pod: Pod, node_name: str) -> None:
        metadata = {"name": pod.name, "namespace": pod.namespace} | ({"uid": pod.uid} if pod.uid else {})
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node_name},
        }
        await self._writer.post_to_pod(f"binding {pod.key} to {node_name}", pod, "binding", body)


def _rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiRecorder:
    """PodScheduled=False via a strategic-merge patch of ``pods/status``, and events.k8s.io/v1 Events."""

    def __init__(
        self, writer: ApiWriter, scheduler_name: str, instance: str, event_limiter: RateLimiter | None = None
    ) -> None:
        self._writer = writer
        # Events get their own budget, as kube-scheduler's event client has its own rate limiter
        # (``createClients`` in cmd/kube-scheduler/app/options/options.go builds a second clientset
        # for events): otherwise every Scheduled event would halve the binding rate at the default QPS.
        self._event_limiter = event_limiter or writer.limiter
        self._controller = scheduler_name
        self._instance = instance

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        current = _pod_scheduled_condition(pod)
        same = current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
            "False",
            reason,
            message,
        )
        status: dict[str, Any] = {}
        if nominated_node_name is not None and nominated_node_name != pod.nominated_node_name:
            status["nominatedNodeName"] = nominated_node_name or None  # null removes it (omitempty)
        if same and not status:
            return  # nothing changed: upstream sends no patch either
        if not same:
            now = datetime.now(UTC)
            condition: dict[str, Any] = {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
            }
            if current is None or current.get("status") != "False":
                condition["lastTransitionTime"] = _rfc3339(now)
            status["conditions"] = [condition]
        body = {"status": status}
        try:
            await self._writer.write(
                f"patching status of {pod.key}",
                "PATCH",
                "/api/v1/namespaces/{namespace}/pods/{name}/status",
                {"namespace": pod.namespace, "name": pod.name},
                body,
                STRATEGIC_MERGE_PATCH,
            )
        except PodGoneError:
            return

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        await self.object_event(_object_reference(pod), event_type, reason, action, note, related)

    async def object_event(
        self,
        regarding: dict[str, Any],
        event_type: str,
        reason: str,
        action: str,
        note: str,
        related: Pod | None = None,
    ) -> None:
        """An Event about any object (``regarding``: its ObjectReference, with a namespace and name),
        such as the ReplicaSet whose pod the rebalancer moved."""
        now = datetime.now(UTC)
        namespace, name = str(regarding["namespace"]), str(regarding["name"])
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": self._controller,
            "reportingInstance": self._instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": event_type,
            "regarding": regarding,
        }
        if related is not None:
            body["related"] = _object_reference(related)
        try:
            await self._writer.write(
                f"posting event {reason} for {namespace}/{name}",
                "POST",
                "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                {"namespace": namespace},
                body,
                limiter=self._event_limiter,
            )
        except (PodGoneError, BindConflictError):
            return  # namespace gone, or a duplicate name: an event is best effort


def _object_reference(pod: Pod) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "resourceVersion": pod.resource_version,
    }


class ApiPodWriter:
    """Preemption's writes to other pods (upstream's ``PreemptPod`` and ``clearNominatedNodeName``):
    strategic-merge patches of ``pods/status`` and ``DELETE pods``. A 404 raises ``PodGoneError``:
    the caller decides that a victim already gone is fine."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer

    async def _patch_status(self, pod: Pod, status: dict[str, Any], what: str) -> None:
        await self._writer.write(
            f"{what} of {pod.key}",
            "PATCH",
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"namespace": pod.namespace, "name": pod.name},
            {"status": status},
            STRATEGIC_MERGE_PATCH,
        )

    async def add_condition(self, pod: Pod, condition: dict[str, Any]) -> None:
        """One condition, merged by type into ``status.conditions``."""
        await self._patch_status(pod, {"conditions": [condition]}, "patching status")

    async def clear_nominated_node_name(self, pod: Pod) -> None:
        await self._patch_status(pod, {"nominatedNodeName": None}, "clearing nominatedNodeName")

    async def delete_pod(self, pod: Pod) -> None:
        """``util.DeletePod``: default DeleteOptions (the pod's own grace period, no preconditions)."""
        await self._writer.write(
            f"deleting {pod.key}",
            "DELETE",
            "/api/v1/namespaces/{namespace}/pods/{name}",
            {"namespace": pod.namespace, "name": pod.name},
            {},
        )


def _pod_scheduled_condition(pod: Pod) -> dict[str, Any] | None:
    status = pod.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions or ():
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled":
            return cond
    return None
