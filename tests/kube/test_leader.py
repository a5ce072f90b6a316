"""Leader election as client-go does it: expiry from the moment a follower observed the record change
(not the holder's renewTime against our clock), renewals bounded by renewDeadline, and the fence the
writers ask before every request."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from scheduler.config import LeaderElection
from scheduler.errors import NotLeadingError
from scheduler.kube import leader as leader_module
from scheduler.kube.fence import FencedRequest
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.leader import Leadership, LeadershipLost, LeaseElector, run_with_leader_election
from scheduler.kube.writes import _call
from tests.fakes import FakeClock

SETTINGS = LeaderElection(
    leader_elect=True,
    lease_duration=15.0,
    renew_deadline=10.0,
    retry_period=2.0,
    resource_namespace="ns",
    resource_name="lease",
)


class LeaseServer:
    """One Lease with resourceVersion checks, as the API server keeps it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.hang = False
        self.requests: list[str] = []  # "read", "write", "conflict"

    def read(self) -> dict[str, Any] | None:
        self.requests.append("read")
        return copy.deepcopy(self.lease)

    def write(self, lease: dict[str, Any], create: bool) -> dict[str, Any] | None:
        if create != (self.lease is None) or (
            not create and lease["metadata"].get("resourceVersion") != str(self.version)
        ):
            self.requests.append("conflict")
            return None  # 409: created or written since it was read
        self.requests.append("write")
        self.version += 1
        self.lease = copy.deepcopy(lease)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    def touch(self, **spec: Any) -> None:
        """Someone else's write (another candidate, an operator): the spec changed, a new version."""
        assert self.lease is not None
        self.lease["spec"].update(spec)
        self.version += 1
        self.lease["metadata"]["resourceVersion"] = str(self.version)


class Elector(LeaseElector):
    def __init__(self, server: LeaseServer, identity: str, clock: FakeClock, skew: float = 0.0) -> None:
        def wall() -> str:
            return (datetime.now(UTC) + timedelta(seconds=skew)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

        super().__init__(None, SETTINGS, identity, clock, wall)  # type: ignore[arg-type]
        self.server = server

    async def _read(self) -> dict[str, Any] | None:
        if self.server.hang:
            await asyncio.sleep(3600)
        return self.server.read()

    async def _write(self, lease: dict[str, Any], create: bool) -> dict[str, Any] | None:
        if self.server.hang:
            await asyncio.sleep(3600)
        return self.server.write(lease, create)


# Sub-second durations for the tests that run the renew loop for real.
FAST = dataclasses.replace(SETTINGS, lease_duration=1.5, renew_deadline=0.6, retry_period=0.1)


def use_fake_electors(monkeypatch: pytest.MonkeyPatch, server: LeaseServer) -> None:
    """``run_with_leader_election`` builds its electors over ``server`` instead of the API."""
    monkeypatch.setattr(
        leader_module, "LeaseElector", lambda _api, _s, identity, clock: Elector(server, identity, FakeClock())
    )


def seconds_to_lose(settings: LeaderElection, lead: Callable[[asyncio.Event], Awaitable[None]], **kwargs: Any) -> float:
    """How long ``run_with_leader_election`` (no API: the fake electors) takes to raise LeadershipLost."""

    async def body() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(LeadershipLost):
            await run_with_leader_election(None, settings, "a", lead, asyncio.Event(), **kwargs)  # type: ignore[arg-type]
        return loop.time() - started

    return asyncio.run(body())


def rounds(elector: Elector) -> bool:
    return asyncio.run(elector.try_acquire_or_renew())


@pytest.mark.parametrize("skew", [-30.0, 30.0])
def test_a_skewed_clock_never_takes_a_live_lease_and_takes_a_dead_one_after_a_lease_duration(skew: float) -> None:
    """The holder's clock is 30 s off (behind: its renewTime looks 30 s old; ahead: 30 s in the
    future). The follower judges from what it saw change, on its own monotonic clock."""
    server, clock = LeaseServer(), FakeClock()
    holder = Elector(server, "a", clock, skew=skew)
    follower = Elector(server, "b", clock)
    assert rounds(holder)
    for _ in range(20):  # a minute of renewals every 2 s (retryPeriod), the follower polling between
        clock.now += 1
        assert not rounds(follower)
        clock.now += 1
        assert rounds(holder)
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] == "a"
    # The holder dies. The follower saw the record last change now: it waits a whole lease duration.
    assert not rounds(follower)
    clock.now += 14.9
    assert not rounds(follower)
    clock.now += 0.2
    assert rounds(follower)
    assert server.lease["spec"]["holderIdentity"] == "b" and server.lease["spec"]["leaseTransitions"] == 1


def test_the_old_rule_would_have_taken_the_lease() -> None:
    """What the test above guards against: the holder's renewTime 30 s behind our wall clock looks
    expired by any renewTime-based rule (leaseDurationSeconds 15)."""
    server, clock = LeaseServer(), FakeClock()
    assert rounds(Elector(server, "a", clock, skew=-30))
    assert server.lease is not None
    renewed = datetime.fromisoformat(server.lease["spec"]["renewTime"].replace("Z", "+00:00"))
    assert renewed + timedelta(seconds=15) < datetime.now(UTC)


def test_a_released_lease_is_taken_at_once() -> None:
    server, clock = LeaseServer(), FakeClock()
    assert rounds(Elector(server, "a", clock))
    assert server.lease is not None
    server.touch(holderIdentity=None)  # what release() writes
    assert rounds(Elector(server, "b", clock))


def test_a_leader_renews_with_one_write_and_reads_only_when_it_was_written_since() -> None:
    """client-go's fast path: a leader whose last observed record is its own and within the lease
    duration writes its renewal over the Lease it last wrote, with that resourceVersion (one round
    trip; a read first doubles the time a renewal takes on a loaded server). A 409 falls back to a read."""
    server, clock = LeaseServer(), FakeClock()
    leader = Elector(server, "a", clock)
    assert rounds(leader)
    assert server.requests == ["read", "write"]  # the first round reads: nothing observed yet
    del server.requests[:]
    for _ in range(5):
        clock.now += 2
        assert rounds(leader)
    assert server.requests == ["write"] * 5
    assert server.lease is not None and server.lease["spec"]["leaseTransitions"] == 0
    acquired = server.lease["spec"]["acquireTime"]

    del server.requests[:]
    server.touch(leaseDurationSeconds=30)  # written by someone else: the optimistic write conflicts
    clock.now += 2
    assert rounds(leader)
    assert server.requests == ["conflict", "read", "write"]
    assert server.lease["spec"]["acquireTime"] == acquired and server.lease["spec"]["holderIdentity"] == "a"

    del server.requests[:]
    server.touch(holderIdentity="b")  # taken: the fallback read sees b's live lease, and a stops
    clock.now += 2
    assert not rounds(leader)
    assert server.requests == ["conflict", "read"]
    assert server.lease["spec"]["holderIdentity"] == "b"


def test_no_optimistic_write_once_the_observed_lease_has_run_out() -> None:
    """isLeaseValid: past a lease duration since our record last changed, another may hold it by now;
    the round reads first, as a candidate's does."""
    server, clock = LeaseServer(), FakeClock()
    leader = Elector(server, "a", clock)
    assert rounds(leader)
    del server.requests[:]
    clock.now += SETTINGS.lease_duration + 0.1
    assert rounds(leader)
    assert server.requests == ["read", "write"]


def test_leadership_is_sure_only_within_renew_deadline_of_the_last_accepted_renewal() -> None:
    clock = FakeClock()
    fence = Leadership(10.0, clock)
    assert not fence.sure()  # never renewed
    fence.renewed(clock.now)
    clock.now += 9.99
    assert fence.sure()
    clock.now += 0.01
    assert not fence.sure()  # a process paused here wakes up unsure
    fence.renewed(clock.now)
    assert fence.sure()
    fence.stepped_down()
    assert not fence.sure()
    assert Leadership(None).sure()  # no leader election: always


def test_a_fenced_write_is_never_sent_nor_retried() -> None:
    sent: list[int] = []

    async def request() -> Any:
        sent.append(1)
        raise AssertionError("must not be sent")

    async def body() -> None:
        with pytest.raises(NotLeadingError, match="binding ns/p to n1: not sent"):
            await _call(RateLimiter(0, 1), "binding ns/p to n1", request, fence=lambda: False)

    asyncio.run(body())
    assert sent == []


def test_a_hanging_renewal_loses_the_lease_within_renew_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each lease request is bounded by what is left of renewDeadline: an API server that accepts
    the connection and never answers must not keep a leader leading."""
    server = LeaseServer()
    settings = FAST
    use_fake_electors(monkeypatch, server)
    fence = Leadership(settings.renew_deadline)
    seen: list[bool] = []

    async def lead(stop: asyncio.Event) -> None:
        seen.append(fence.sure())
        server.hang = True
        await stop.wait()
        seen.append(fence.sure())

    took = seconds_to_lose(settings, lead, leadership=fence)
    assert seen == [True, False]
    assert took < settings.renew_deadline + 2 * settings.retry_period + 0.3, took


def test_a_write_waiting_for_a_connection_is_not_sent_if_the_fence_closes_meanwhile() -> None:
    """The first check passes; the request then waits for the only pooled connection (busy with
    another request), and the lease is lost meanwhile. It must not go out when the connection frees."""

    async def body() -> list[str]:
        received: list[str] = []
        release = asyncio.Event()

        async def handler(request: web.Request) -> web.Response:
            received.append(request.path)
            if request.path == "/slow":
                await release.wait()
            return web.Response(text="{}")

        app = web.Application()
        app.router.add_route("*", "/{name}", handler)
        server = TestServer(app)
        await server.start_server()
        sure = True
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), request_class=FencedRequest
        ) as session:
            slow = asyncio.create_task(session.get(server.make_url("/slow")))
            while not received:
                await asyncio.sleep(0.01)

            async def bind() -> Any:
                return await session.post(server.make_url("/binding"))

            write = asyncio.create_task(_call(RateLimiter(0, 1), "binding ns/p to n1", bind, fence=lambda: sure))
            await asyncio.sleep(0.1)  # the write passed the first check and waits for the connection
            sure = False
            release.set()
            with pytest.raises(NotLeadingError, match="binding ns/p to n1: not sent"):
                await write
            (await slow).release()
        await server.close()
        return received

    assert asyncio.run(body()) == ["/slow"]


def test_a_write_whose_body_waits_a_loop_step_is_not_sent_if_the_fence_closes_meanwhile() -> None:
    """aiohttp holds the headers back and sends them with the body, from a task of its own: a step of
    the event loop after the connection hooks. The lease lost in that step: nothing may leave."""

    async def body() -> list[str]:
        received: list[str] = []

        async def handler(request: web.Request) -> web.Response:
            received.append(request.path)
            return web.Response(text="{}")

        app = web.Application()
        app.router.add_route("*", "/{name}", handler)
        server = TestServer(app)
        await server.start_server()
        sure, armed = [True], [True]

        async def lose(*_args: object) -> None:
            if armed[0]:
                sure[0] = False  # after the headers were buffered, before the body task runs

        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(lose)
        async with aiohttp.ClientSession(trace_configs=[trace], request_class=FencedRequest) as session:

            async def bind() -> Any:
                return await session.post(server.make_url("/binding"), data=b'{"kind": "Binding"}')

            with pytest.raises(NotLeadingError, match="binding ns/p to n1: not sent"):
                await _call(RateLimiter(0, 1), "binding ns/p to n1", bind, fence=lambda: sure[0])
            sure[0], armed[0] = True, False
            await _call(RateLimiter(0, 1), "binding ns/p to n2", bind, fence=lambda: sure[0])  # still usable
        await server.close()
        return received

    assert asyncio.run(body()) == ["/binding"]  # only the second


def test_a_renewal_that_ignores_cancellation_still_loses_the_lease_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the client keeps waiting on when cancelled (seen with etcd stopped) must not hold the
    decision: the round is abandoned at its deadline, not awaited."""
    server = LeaseServer()
    settings = FAST

    class Stubborn(Elector):
        async def _read(self) -> dict[str, Any] | None:
            if self.server.hang:
                for _ in range(30):  # swallows cancellation, as a client retrying a request would
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.sleep(0.1)
            return self.server.read()

    monkeypatch.setattr(
        leader_module, "LeaseElector", lambda _api, _s, identity, clock: Stubborn(server, identity, FakeClock())
    )

    async def lead(stop: asyncio.Event) -> None:
        server.hang = True
        await stop.wait()

    took = seconds_to_lose(settings, lead)
    assert took < settings.renew_deadline + 2 * settings.retry_period + 0.3, took  # not the 3 s the read takes


def test_a_lost_leader_does_not_wait_for_its_writes_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graceful stop drains Bindings in flight; a lost lease does not (upstream exits at once): with
    etcd away each would take the API server's 30 s to give up."""
    server = LeaseServer()
    settings = FAST
    use_fake_electors(monkeypatch, server)

    async def lead(stop: asyncio.Event) -> None:
        server.hang = True
        await stop.wait()
        await asyncio.sleep(30)  # draining a Binding the server never answers

    took = seconds_to_lose(settings, lead)
    assert took < settings.renew_deadline + 2 * settings.retry_period + leader_module.LOST_GRACE_SECONDS, took


class _ClosableApi:
    async def close(self) -> None:
        return None


@pytest.mark.parametrize(
    "threaded", [pytest.param(True, id="renewals-on-their-own-thread"), pytest.param(False, id="in-loop")]
)
def test_a_busy_event_loop_does_not_starve_renewals(monkeypatch: pytest.MonkeyPatch, threaded: bool) -> None:
    """A burst can keep the event loop busy for longer than renewDeadline (10,000 pods: more than
    3 s). Renewals on their own thread (as upstream's goroutine) keep the lease through a 1.5 s block
    of the loop with a 0.6 s renewDeadline; renewals on the loop itself lose it (the reason for the
    thread)."""
    server = LeaseServer()
    settings = FAST
    use_fake_electors(monkeypatch, server)
    fence = Leadership(settings.renew_deadline)
    seen: list[bool] = []

    async def lead(stop: asyncio.Event) -> None:
        await asyncio.sleep(0.3)
        time.sleep(1.5)  # the loop is busy: nothing else on it runs
        seen.append(fence.sure())

    async def body() -> None:
        renew_api = _ClosableApi if threaded else None
        await run_with_leader_election(
            None, settings, "a", lead, asyncio.Event(), leadership=fence, renew_api=renew_api
        )  # type: ignore[arg-type]

    if threaded:
        asyncio.run(body())
        assert seen == [True]
        assert server.version > 10, "renewals kept going while the loop was blocked"
    else:
        with contextlib.suppress(LeadershipLost):
            asyncio.run(body())
        assert seen == [False]  # the fence closed: the lease may be gone
