"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules.

Followers keep their caches warm (the informer runs before and regardless of the election); only the
leader runs the scheduling loop. A leader that cannot renew within ``renewDeadline`` stops with
``LeadershipLost`` (upstream exits: "leaderelection lost"), so a restarted replica rejoins as a
follower. A graceful stop releases the lease so a follower takes over at once.

As client-go, a follower judges expiry by its own monotonic clock from the moment it *observed* the
lease record change, never by the holder's ``renewTime`` against its wall clock (a clock 30 s fast
would otherwise take a live lease). Every lease request is bounded by the time left before
``renewDeadline``. And the writers ask ``Leadership.sure()`` before each request (fencing): a leader
is sure for ``renewDeadline`` after *sending* its last successful renewal, so a process paused longer
than that (SIGSTOP, a VM freeze) wakes up and writes nothing before it learns it lost.

A leader renews only while its scheduling loop makes progress (``progress.LoopProgress``): renewals
run on a thread of their own and would otherwise keep the Lease for a loop that is wedged for good.

Our own small implementation over the Lease API: the one in ``kubernetes.aio.leaderelection`` sends
invalid requests (``pretty=True``, a float lease duration) against current API servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog
from kubernetes.aio import client

from scheduler.config import LeaderElection
from scheduler.kube.client.transport import read_capped
from scheduler.kube.progress import LoopProgress

__all__ = [
    "DEFAULT_LEASE_NAMESPACE",
    "Leadership",
    "LeadershipLost",
    "LeaseElector",
    "run_with_leader_election",
    "with_lease_namespace",
]

log = structlog.get_logger("spread-scheduler")

JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor
LOST_GRACE_SECONDS = 1.0  # how long a leader that lost its lease lets the loop unwind before it goes

DEFAULT_LEASE_NAMESPACE = "spread-scheduler"  # the manifests' and the chart's default namespace


def with_lease_namespace(settings: LeaderElection, environ: Mapping[str, str]) -> LeaderElection:
    """An unset ``resourceNamespace`` means the pod's own namespace (``POD_NAMESPACE``, downward API).

    The Role for the Lease is granted in the namespace the scheduler is installed into, so the Lease
    must live there too wherever that is; outside a pod ``spread-scheduler``. Upstream defaults to
    kube-system, which a secondary scheduler's least-privilege RBAC does not reach.
    """
    if settings.resource_namespace:
        return settings
    namespace = environ.get("POD_NAMESPACE", "").strip() or DEFAULT_LEASE_NAMESPACE
    return dataclasses.replace(settings, resource_namespace=namespace)


class LeadershipLost(RuntimeError):  # noqa: N818 - upstream's wording: "leaderelection lost"
    """The lease could not be renewed in time: another replica may be scheduling now."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Leadership:
    """Whether this process may write now: the fence the writers check before every request.

    Without leader election it always may. With it, only while leading and within ``renew_deadline``
    of sending the last renewal the server accepted: past that, a follower may take the lease
    ``lease_duration`` after it observed that renewal, and a write could land after it did.
    """

    def __init__(self, renew_deadline: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._deadline = renew_deadline
        self._clock = clock
        self._renewed_at: float | None = None

    def renewed(self, sent_at: float) -> None:
        self._renewed_at = sent_at

    def stepped_down(self) -> None:
        self._renewed_at = None

    def sure(self) -> bool:
        if self._deadline is None:
            return True
        return self._renewed_at is not None and self._clock() - self._renewed_at < self._deadline


def _reason(body: bytes) -> str:
    """The API's message from a Status body (falls back to the raw text)."""
    try:
        return str(json.loads(body).get("message") or body.decode(errors="replace"))
    except (ValueError, AttributeError):
        return body.decode(errors="replace")[:200]


class LeaseElector:
    """Acquire/renew/release one Lease; every write carries the resourceVersion it read."""

    def __init__(
        self,
        api: client.ApiClient,
        settings: LeaderElection,
        identity: str,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], str] | None = None,
    ) -> None:
        self._leases = client.CoordinationV1Api(api)
        self.settings = settings
        self.identity = identity
        self.observed_holder: str | None = None
        self._clock = clock
        self._wall = wall or _now  # the module's, looked up now: e2e's skewed-clock runs replace it
        # client-go's observedRecord/observedTime: the last record read, and when (our monotonic
        # clock) it last changed. Expiry is judged from that, whatever the holder's clock wrote.
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        # client-go's LeaseLock.lease: the Lease as the server last returned it to us, whose
        # resourceVersion an optimistic renewal writes against.
        self._lease: dict[str, Any] | None = None
        self._warned_missing_namespace = False

    def adopt(self, other: LeaseElector) -> None:
        """Take over what ``other`` observed (a renewal thread's elector continues the acquirer's)."""
        self.observed_holder = other.observed_holder
        self._observed, self._observed_at = other._observed, other._observed_at
        self._lease = other._lease

    def _observe(self, spec: Mapping[str, Any]) -> None:
        record = tuple(
            spec.get(k)
            for k in ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions")
        )
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()

    async def _read(self) -> dict[str, Any] | None:
        s = self.settings
        response = await self._leases.read_namespaced_lease_without_preload_content(
            s.resource_name, s.resource_namespace
        )
        try:
            body = await read_capped(response)
            if response.status == 404:
                return None
            if response.status != 200:
                raise RuntimeError(f"reading lease: HTTP {response.status}")
            lease: dict[str, Any] = json.loads(body)
            return lease
        finally:
            response.release()

    async def _write(self, lease: dict[str, Any], create: bool) -> dict[str, Any] | None:
        """The Lease as the server stored it, or None when it refused the write (409: written since)."""
        s = self.settings
        if create:
            request = self._leases.create_namespaced_lease_without_preload_content(
                s.resource_namespace, client.V1Lease.model_validate(lease)
            )
        else:
            request = self._leases.replace_namespaced_lease_without_preload_content(
                s.resource_name, s.resource_namespace, client.V1Lease.model_validate(lease)
            )
        response = await request
        try:
            body = await read_capped(response)
            if create and response.status == 404 and not self._warned_missing_namespace:
                # A namespace that does not exist: no round can ever succeed, say so once.
                self._warned_missing_namespace = True
                log.warning(
                    "cannot create the leader lease",
                    lease=f"{s.resource_namespace}/{s.resource_name}",
                    status=response.status,
                    reason=_reason(body),
                )
            if not 200 <= response.status < 300:
                return None  # 409: someone else wrote first
            stored = json.loads(body)
            if not isinstance(stored, dict):
                raise ValueError(f"writing lease: HTTP {response.status} with no Lease in its body")
            return stored
        finally:
            response.release()

    def _leading(self) -> bool:
        """client-go's ``IsLeader() && isLeaseValid(now)``: the last record we observed is ours, and
        not older than its lease duration by our clock."""
        record = self._observed
        if record is None or record[0] != self.identity:
            return False
        return bool(self._observed_at + float(record[1] or 0) > self._clock())

    async def try_acquire_or_renew(self) -> bool:
        """One round of client-go's ``tryAcquireOrRenew``. A leader first writes its renewal over the
        Lease its last write returned (one request, where a read first costs two round trips on a
        loaded server); a 409 or any error falls back to reading it, as client-go's fast path does."""
        s = self.settings
        now = self._wall()
        spec_mine = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(s.lease_duration),
            "renewTime": now,
        }
        if self._lease is not None and self._leading():
            spec = {**(self._lease.get("spec") or {}), **spec_mine}
            try:
                if await self._written({**self._lease, "spec": spec}, create=False):
                    return True
                reason = "written since we last saw it"
            except Exception as exc:  # client-go falls back on any error, as here
                reason = str(exc)
            log.info("optimistic lease renewal failed, reading the lease", reason=reason)
        lease = await self._read()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": s.resource_name, "namespace": s.resource_namespace},
                "spec": {**spec_mine, "acquireTime": now, "leaseTransitions": 0},
            }
            return await self._written(body, create=True)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        self.observed_holder = holder or None
        self._observe(spec)
        duration = float(spec.get("leaseDurationSeconds") or 0)
        if holder and holder != self.identity and self._observed_at + duration > self._clock():
            return False  # held by someone else, and not silent for a whole lease duration since we saw it change
        if holder != self.identity:
            spec_mine["acquireTime"] = now
            spec_mine["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = {**spec, **spec_mine}
        return await self._written(lease, create=False)

    async def _written(self, lease: dict[str, Any], create: bool) -> bool:
        stored = await self._write(lease, create)
        if stored is None:
            return False
        self._lease = stored
        self._observe(lease["spec"])
        return True

    async def release(self) -> None:
        with contextlib.suppress(Exception):
            lease = await self._read()
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"].update({"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": _now()})
            if await self._write(lease, create=False) is not None:
                log.info(
                    "leader lease released", lease=f"{self.settings.resource_namespace}/{self.settings.resource_name}"
                )


async def _safely(elector: LeaseElector, on_outage: Callable[[], None], timeout: float) -> bool:
    """One round, bounded by ``timeout`` (client-go bounds its renewals by renewDeadline).

    The round runs as a task of its own and is abandoned, not awaited, when the time is up: a request
    the client does not give up on when cancelled (found with etcd stopped, docs/benchmarks.md) must
    not decide when this process steps down.
    """
    task = asyncio.ensure_future(elector.try_acquire_or_renew())
    done, _pending = await asyncio.wait({task}, timeout=max(timeout, 0.001))
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        log.warning("lease round failed", err=f"no answer within {timeout:.1f}s")
        on_outage()
        return False
    try:
        return task.result()
    except Exception as exc:  # an unreachable API server is a failed round, not a crash
        log.warning("lease round failed", err=str(exc))
        on_outage()
        return False


def _retrieve(task: asyncio.Future[bool]) -> None:
    """An abandoned round's outcome is read so asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _jittered(period: float) -> float:
    """client-go's acquire loop: ``wait.JitterUntil(..., RetryPeriod, JitterFactor 1.2, ...)``."""
    return period * (1 + random.random() * JITTER_FACTOR)


class _Renewal:
    """client-go's renew loop: every retryPeriod, each try bounded by what is left of renewDeadline
    since the last renewal the server accepted (counted from when that request was sent)."""

    def __init__(
        self,
        settings: LeaderElection,
        fence: Leadership,
        clock: Callable[[], float],
        sent: float,
        progress: LoopProgress | None = None,
    ) -> None:
        self.settings = settings
        self.fence = fence
        self.clock = clock
        self.last_ok = sent
        self.progress = progress
        self._said_wedged = False

    def _loop_wedged(self) -> bool:
        """Whether the scheduling loop has made no progress past its bound: then no renewal, so the
        Lease lapses after renewDeadline and a healthy replica takes it."""
        if self.progress is None or not self.progress.wedged():
            self._said_wedged = False
            return False
        if not self._said_wedged:
            self._said_wedged = True
            stalled, part = self.progress.stall()
            log.error(
                "not renewing the leader lease: the scheduling loop has made no progress",
                stalled=f"{stalled:.1f}s",
                waiting=part,
                bound=f"{self.progress.timeout:g}s",
            )
        return True

    async def run(
        self,
        elector: LeaseElector,
        halted: Callable[[], bool],
        stop: asyncio.Event | None,
        on_outage: Callable[[], None],
        lose: Callable[[], None],
    ) -> None:
        s = self.settings
        while not halted():
            await _pause(s.retry_period, halted, stop)
            if halted():
                return
            attempt = self.clock()
            left = s.renew_deadline - (attempt - self.last_ok)
            if left > 0 and not self._loop_wedged() and await _safely(elector, on_outage, left):
                self.last_ok = attempt
                self.fence.renewed(attempt)
            elif self.clock() - self.last_ok >= s.renew_deadline:
                lose()
                return

    async def on_thread(
        self,
        renew_api: Callable[[], client.ApiClient],
        identity: str,
        elector: LeaseElector,
        stop: asyncio.Event,
        on_outage: Callable[[], None],
        lose: Callable[[], None],
    ) -> None:
        """``run`` on a thread with its own event loop and client, as upstream renews from a goroutine
        of its own: a burst can keep this process's loop busy for longer than renewDeadline, and the
        leader would lose a lease it could keep (docs/benchmarks.md). The writers' fence is the same
        object (it holds one float); what the main loop must do is handed to it thread-safely."""
        loop = asyncio.get_running_loop()
        halt = threading.Event()

        def outage() -> None:
            loop.call_soon_threadsafe(on_outage)

        def lost() -> None:
            loop.call_soon_threadsafe(lose)

        async def renewing() -> None:
            api = renew_api()
            own = LeaseElector(api, self.settings, identity, self.clock)
            own.adopt(elector)
            try:
                await self.run(own, halt.is_set, None, outage, lost)
            finally:
                await api.close()  # type: ignore[no-untyped-call]

        thread = threading.Thread(target=asyncio.run, args=(renewing(),), name="lease-renew", daemon=True)
        thread.start()
        try:
            while thread.is_alive() and not stop.is_set():
                await asyncio.sleep(0.05)
        finally:
            halt.set()
            await asyncio.to_thread(thread.join, self.settings.renew_deadline)


async def _pause(seconds: float, halted: Callable[[], bool], stop: asyncio.Event | None) -> None:
    """Wait ``seconds`` or until halted (woken at once by ``stop`` when there is one)."""
    if stop is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
        return
    deadline = time.monotonic() + seconds
    while not halted() and time.monotonic() < deadline:
        await asyncio.sleep(min(0.05, max(deadline - time.monotonic(), 0)))


async def run_with_leader_election(
    api: client.ApiClient,
    settings: LeaderElection,
    identity: str,
    lead: Callable[[asyncio.Event], Awaitable[None]],
    stop: asyncio.Event,
    on_leading: Callable[[bool], None] = lambda _leading: None,
    on_outage: Callable[[], None] = lambda: None,
    leadership: Leadership | None = None,
    clock: Callable[[], float] = time.monotonic,
    renew_api: Callable[[], client.ApiClient] | None = None,
    progress: LoopProgress | None = None,
) -> None:
    """Run ``lead(stop)`` while holding the lease; raise ``LeadershipLost`` if renewal fails.

    ``leadership`` (the writers' fence) learns of every renewal the server accepted and of the end.
    With ``renew_api`` (a client factory), renewals run on a thread of their own (``_Renewal``), and
    with ``progress`` only while the scheduling loop's heartbeat is within its bound.
    """
    fence = leadership or Leadership(settings.renew_deadline, clock)
    if not settings.leader_elect:
        on_leading(True)
        await lead(stop)
        return
    elector = LeaseElector(api, settings, identity, clock)
    lock = f"{settings.resource_namespace}/{settings.resource_name}"
    on_leading(False)
    log.info("Attempting to acquire leader lease...", lock=lock)
    while True:
        sent = clock()
        if await _safely(elector, on_outage, settings.renew_deadline):
            fence.renewed(sent)
            break
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), _jittered(settings.retry_period))
        if stop.is_set():
            return
    on_leading(True)
    log.info("Successfully acquired lease", lock=lock, identity=identity)
    lost = asyncio.Event()
    inner_stop = asyncio.Event()

    def lose() -> None:
        fence.stepped_down()
        lost.set()
        inner_stop.set()

    renewal = _Renewal(settings, fence, clock, sent, progress)
    if renew_api is not None:
        renewer: asyncio.Future[object] = asyncio.ensure_future(
            renewal.on_thread(renew_api, identity, elector, stop, on_outage, lose)
        )
    else:
        renewer = asyncio.ensure_future(renewal.run(elector, stop.is_set, stop, on_outage, lose))

    async def relay_stop() -> None:
        await stop.wait()
        inner_stop.set()

    relay = asyncio.create_task(relay_stop(), name="stop-relay")
    leading: asyncio.Future[object] = asyncio.ensure_future(lead(inner_stop))
    losing: asyncio.Future[object] = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait([leading, losing], return_when=asyncio.FIRST_COMPLETED)
        if leading.done():
            leading.result()  # its error, if any, is ours
        else:
            # Lost: upstream exits at once (klog.FlushAndExit). A graceful stop lets Bindings in flight
            # finish; a lost lease must not wait for them (with etcd away the server takes long to
            # give up on each): they were sent while sure, the next leader sees what landed.
            leading.cancel()
            await asyncio.wait({leading}, timeout=LOST_GRACE_SECONDS)
    finally:
        for task in (renewer, relay, losing):
            task.cancel()
        # The renewal thread finishes its round before the lease is released below: a renewal landing
        # after the release would hold the lease for a process that is gone.
        await asyncio.wait({renewer}, timeout=settings.renew_deadline + 1)
        on_leading(False)
    if lost.is_set():
        raise LeadershipLost(f"leaderelection lost: lease {lock}")
    fence.stepped_down()
    await elector.release()
