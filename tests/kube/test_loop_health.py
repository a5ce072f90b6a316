"""Health that means something: a wedged scheduling loop fails /healthz and loses the Lease.

Renewals run on their own thread and the secure port on another, so before this a loop blocked for
good (here ``time.sleep`` on the test's loop, which plays the scheduling loop) kept the Lease and an
"ok" /healthz. Now the loop beats a heartbeat (``LoopProgress``); past its bound /healthz answers 500
in upstream's words and the renewal thread stops renewing, so a healthy replica takes the Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from scheduler.config import LeaderElection
from scheduler.kube import leader as leader_module
from scheduler.kube.delegated_auth import DelegatingAuthenticator, DelegatingAuthorizer
from scheduler.kube.leader import Leadership, LeadershipLost, run_with_leader_election
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.progress import LOOP_PROGRESS_TIMEOUT, LoopProgress
from scheduler.kube.server import SecureServer, ServingAuth, serving_ssl_context
from tests.fakes import FakeClock
from tests.kube.test_delegated_auth import AccessReviews, TokenReviews
from tests.kube.test_leader import FAST, Elector, LeaseServer, _ClosableApi, use_fake_electors
from tests.kube.test_secure_server import get

FAILED = "[-]scheduling-loop failed: reason withheld\nhealthz check failed\n"


def test_the_heartbeat_is_wedged_only_past_its_bound() -> None:
    clock = FakeClock()
    progress = LoopProgress(timeout=20.0, clock=clock)
    clock.now += 20.0
    assert progress.healthy() and progress.stalled_for() == 20.0
    clock.now += 0.001
    assert progress.wedged() and not progress.healthy()
    progress.beat()
    assert progress.healthy() and progress.stalled_for() == 0.0
    assert LOOP_PROGRESS_TIMEOUT == 20.0  # kube-scheduler's NewLeaderHealthzAdaptor(time.Second * 20)


def test_an_idle_loop_keeps_beating() -> None:
    """The beat comes from a timer on the loop itself: an idle loop (nothing to schedule) is healthy."""
    progress = LoopProgress(timeout=0.3)

    async def main() -> float:
        progress.beat_on(asyncio.get_running_loop(), period=0.05)
        await asyncio.sleep(0.6)  # idle: only the heartbeat's timer runs
        stalled = progress.stalled_for()
        progress.stop()
        return stalled

    assert asyncio.run(main()) < 0.3


def _serve_blocked(body: Callable[[SecureServer], Any], progress: LoopProgress, block: float) -> Any:
    """Serve with the loop's heartbeat as the /healthz check; ``body(server)`` runs in a client
    thread while the test's loop (the scheduling loop) is blocked by ``time.sleep(block)``."""
    tls = serving_ssl_context(None, None, "127.0.0.1")

    async def make_auth() -> ServingAuth:
        async def close() -> None:
            return None

        return ServingAuth(DelegatingAuthenticator(TokenReviews()), DelegatingAuthorizer(AccessReviews(set())), close)

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        progress.beat_on(loop, period=0.05)
        server = SecureServer(
            SchedulerMetrics(process=False),
            lambda: True,
            before_scrape=lambda: None,
            scheduler_loop=loop,
            make_auth=make_auth,
            ssl_context=tls,
            checks=[("scheduling-loop", progress.healthy)],
        )
        server.start("127.0.0.1", 0)
        try:
            client = asyncio.ensure_future(asyncio.to_thread(body, server))
            await asyncio.sleep(0.05)
            time.sleep(block)  # the scheduling loop is wedged: no beat, no task, nothing
            return await client
        finally:
            progress.stop()
            server.stop()

    return asyncio.run(main())


def test_healthz_fails_while_the_scheduling_loop_is_wedged_and_recovers_after() -> None:
    progress = LoopProgress(timeout=0.4)

    def body(server: SecureServer) -> dict[str, tuple[int, str]]:
        answers = {"healthy": get(server.port, "/healthz")}  # 0.05 s into the block: inside the bound
        time.sleep(0.7)  # well past the bound, still inside the block
        answers["wedged"] = get(server.port, "/healthz")
        answers["livez"] = get(server.port, "/livez")  # upstream's livez is the ping check only
        time.sleep(1.0)  # the block is over and the loop beats again
        answers["recovered"] = get(server.port, "/healthz")
        return answers

    answers = _serve_blocked(body, progress, block=1.2)
    assert answers["healthy"] == (200, "ok")
    assert answers["wedged"] == (500, FAILED)
    assert answers["livez"] == (200, "ok")
    assert answers["recovered"] == (200, "ok")


def _lead_with_heartbeat(
    settings: LeaderElection,
    lead: Callable[[asyncio.Event], Awaitable[None]],
    fence: Leadership,
    progress: LoopProgress,
) -> None:
    """``lead`` as replica "a" under leader election, the test's loop beating ``progress`` (as
    run_scheduler's scheduling loop does) and the renewals asking it."""

    async def body() -> None:
        progress.beat_on(asyncio.get_running_loop(), period=0.05)
        try:
            await run_with_leader_election(
                None,  # type: ignore[arg-type]
                settings,
                "a",
                lead,
                asyncio.Event(),
                leadership=fence,
                renew_api=_ClosableApi,  # type: ignore[arg-type]
                progress=progress,
            )
        finally:
            progress.stop()

    asyncio.run(body())


def test_a_wedged_leader_stops_renewing_and_a_healthy_replica_takes_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """The renewal thread asks the heartbeat before each renewal: the leader's loop blocked for longer
    than the bound stops its renewals, the follower takes the lease a lease duration after the last
    renewal it saw, and the leader, when its loop wakes, finds it lost (and exits)."""
    server = LeaseServer()
    settings = dataclasses.replace(FAST, lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)

    def elector(_api: object, s: LeaderElection, identity: str, _clock: object) -> Elector:
        made = Elector(server, identity, time.monotonic)  # type: ignore[arg-type]
        made.settings = s  # the leader writes this lease duration, which the follower waits out
        return made

    monkeypatch.setattr(leader_module, "LeaseElector", elector)
    progress = LoopProgress(timeout=0.4)
    fence = Leadership(settings.renew_deadline)
    taken = threading.Event()
    versions: dict[str, int] = {}

    def follower() -> None:
        other = Elector(server, "b", time.monotonic)  # type: ignore[arg-type]
        other.settings = settings
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and not taken.is_set():
            if asyncio.run(other.try_acquire_or_renew()):
                taken.set()
            time.sleep(0.05)

    async def lead(stop: asyncio.Event) -> None:
        await asyncio.sleep(0.3)
        versions["before"] = server.version
        thread = threading.Thread(target=follower)
        thread.start()
        time.sleep(2.5)  # wedged: past the bound (0.4 s), renewDeadline and a lease duration
        versions["after"] = server.version
        thread.join()
        await asyncio.sleep(10)  # the lost lease ends this

    with pytest.raises(LeadershipLost):
        _lead_with_heartbeat(settings, lead, fence, progress)
    assert taken.is_set(), "the healthy replica took the lease"
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] == "b"
    assert not fence.sure()
    # The leader renewed at most a few times at the start of the block (before the bound), then not.
    assert versions["after"] - versions["before"] <= 6, versions


def test_a_busy_loop_within_the_bound_keeps_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the bound the heartbeat changes nothing: a 1 s block with a 2 s bound keeps the lease
    (renewals go on from their thread, as test_leader's busy-loop test shows without a heartbeat)."""
    server = LeaseServer()
    use_fake_electors(monkeypatch, server)
    progress = LoopProgress(timeout=2.0)
    fence = Leadership(FAST.renew_deadline)
    seen: list[bool] = []

    async def lead(stop: asyncio.Event) -> None:
        await asyncio.sleep(0.3)
        time.sleep(1.0)
        seen.append(fence.sure())

    with contextlib.suppress(LeadershipLost):
        _lead_with_heartbeat(FAST, lead, fence, progress)
    assert seen == [True]
