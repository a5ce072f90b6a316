"""Leader election on a Lease (``kubernetes.aio.leaderelection``), as kube-scheduler does it.

Followers keep their caches warm (kopf watches run before and regardless of the election); only the
leader runs the scheduling loop. Losing the lease ends the process with an error, like upstream
("leaderelection lost"), so a restarted pod rejoins as a follower with a fresh cache. On a graceful
stop the lease is released, so a follower takes over at once instead of waiting for expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog
from kubernetes.aio import client
from kubernetes.aio.leaderelection import electionconfig, leaderelection
from kubernetes.aio.leaderelection.resourcelock.leaselock import LeaseLock

from scheduler.config import LeaderElection

__all__ = ["LeadershipLost", "run_with_leader_election"]

log = structlog.get_logger("spread-scheduler")


class LeadershipLost(RuntimeError):  # noqa: N818 - upstream's wording: "leaderelection lost"
    """The lease could not be renewed in time: another replica may be scheduling now."""


async def _release(api: client.ApiClient, settings: LeaderElection, identity: str) -> None:
    """Hand the lease back (holder cleared, 1 s duration), as ``ReleaseOnCancel`` does."""
    leases = client.CoordinationV1Api(api)
    with contextlib.suppress(Exception):
        lease = await leases.read_namespaced_lease(settings.resource_name, settings.resource_namespace)
        if lease.spec is None or lease.spec.holder_identity != identity:
            return
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        lease.spec.renew_time = datetime.now(UTC)
        await leases.replace_namespaced_lease(settings.resource_name, settings.resource_namespace, lease)
        log.info("leader lease released", lease=f"{settings.resource_namespace}/{settings.resource_name}")


async def run_with_leader_election(
    api: client.ApiClient,
    settings: LeaderElection,
    identity: str,
    lead: Callable[[asyncio.Event], Awaitable[None]],
    stop: asyncio.Event,
    on_leading: Callable[[bool], None] = lambda _leading: None,
) -> None:
    """Run ``lead(stop)`` while holding the lease; raise ``LeadershipLost`` if it is lost."""
    if not settings.leader_elect:
        on_leading(True)
        await lead(stop)
        return
    lost = asyncio.Event()
    leading = asyncio.Event()
    finished = asyncio.Event()

    async def started() -> None:
        leading.set()
        on_leading(True)
        log.info("became leader", identity=identity)
        try:
            await lead(stop)
        finally:
            finished.set()

    async def stopped() -> None:
        on_leading(False)
        if not stop.is_set():
            lost.set()

    config = electionconfig.Config(
        LeaseLock(settings.resource_name, settings.resource_namespace, identity, api),
        settings.lease_duration,
        settings.renew_deadline,
        settings.retry_period,
        started,
        stopped,
    )
    election = asyncio.create_task(leaderelection.LeaderElection(config).run(), name="leader-election")
    waiters = [asyncio.ensure_future(e.wait()) for e in (stop, lost, finished)]
    try:
        await asyncio.wait([election, *waiters], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if lost.is_set() and not stop.is_set():
        election.cancel()
        raise LeadershipLost(f"leaderelection lost: lease {settings.resource_namespace}/{settings.resource_name}")
    if leading.is_set() and not finished.is_set():
        await finished.wait()  # the loop sees `stop`, finishes in-flight bindings, returns
    election.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await election
    if leading.is_set():
        await _release(api, settings, identity)
