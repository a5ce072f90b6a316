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
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.config import LeaderElection, load_config
from scheduler.framework.extender import ExtenderFilterResult, HostPriority
from scheduler.framework.types import NodeInfo
from scheduler.kube import leader as leader_module
from scheduler.kube.leader import Leadership, LeadershipLost, run_with_leader_election
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.progress import LOOP_PROGRESS_TIMEOUT, LoopProgress
from scheduler.kube.serving.delegated_auth import DelegatingAuthenticator, DelegatingAuthorizer
from scheduler.kube.serving.server import SecureServer, ServingAuth, serving_ssl_context
from scheduler.scheduler import Scheduler
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder
from tests.kube.serving.test_delegated_auth import AccessReviews, TokenReviews
from tests.kube.serving.test_secure_server import get
from tests.kube.test_leader import FAST, Elector, LeaseServer, _ClosableApi, use_fake_electors

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


@contextlib.asynccontextmanager
async def _healthz_server(
    loop: asyncio.AbstractEventLoop, progress: LoopProgress, tls: ssl.SSLContext
) -> AsyncIterator[SecureServer]:
    """The secure port with the progress check, as run_scheduler serves it."""

    async def make_auth() -> ServingAuth:
        async def close() -> None:
            return None

        return ServingAuth(DelegatingAuthenticator(TokenReviews()), DelegatingAuthorizer(AccessReviews(set())), close)

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
        yield server
    finally:
        server.stop()


def _serve_blocked(body: Callable[[SecureServer], Any], progress: LoopProgress, block: float) -> Any:
    """Serve with the loop's heartbeat as the /healthz check; ``body(server)`` runs in a client
    thread while the test's loop (the scheduling loop) is blocked by ``time.sleep(block)``."""
    tls = serving_ssl_context(None, None, "127.0.0.1")

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        progress.beat_on(loop, period=0.05)
        try:
            async with _healthz_server(loop, progress, tls) as server:
                client = asyncio.ensure_future(asyncio.to_thread(body, server))
                await asyncio.sleep(0.05)
                time.sleep(block)  # the scheduling loop is wedged: no beat, no task, nothing
                return await client
        finally:
            progress.stop()

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


def _as_replica_a(
    settings: LeaderElection,
    lead: Callable[[asyncio.Event], Awaitable[None]],
    fence: Leadership,
    progress: LoopProgress,
) -> Coroutine[Any, Any, None]:
    """``lead`` as replica "a" under leader election over the fake electors, renewing on a thread of
    its own that asks ``progress`` first."""
    return run_with_leader_election(
        None,  # type: ignore[arg-type]
        settings,
        "a",
        lead,
        asyncio.Event(),
        leadership=fence,
        renew_api=_ClosableApi,  # type: ignore[arg-type]
        progress=progress,
    )


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
            await _as_replica_a(settings, lead, fence, progress)
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


# -- progress per scheduling cycle (issue #46, finding 3) -------------------------------------------


def _scheduling() -> tuple[FakeClock, LoopProgress]:
    """A fake clock and the progress of a leader whose scheduling loop has started, bound 20 s."""
    clock = FakeClock()
    progress = LoopProgress(timeout=20.0, clock=clock)
    progress.scheduling(True)
    return clock, progress


def test_an_idle_scheduler_coming_round_every_second_stays_healthy() -> None:
    """Nothing to schedule: the loop waits a second at a time and comes round after each wait."""
    clock, progress = _scheduling()
    for _ in range(120):
        clock.now += 1.0
        progress.beat()
        progress.came_round()
        assert progress.healthy()


def test_a_scheduling_cycle_in_progress_past_the_bound_is_a_stall() -> None:
    """The event loop turns (it beats), but the scheduling loop has not come round for 20 s: a cycle
    stuck on an await. It recovers the moment the loop comes round again."""
    clock, progress = _scheduling()
    for _ in range(20):
        clock.now += 1.0
        progress.beat()
    assert progress.healthy() and progress.stall() == (20.0, "scheduling cycle")
    clock.now += 0.5
    progress.beat()
    assert progress.wedged() and progress.stall() == (20.5, "scheduling cycle")
    progress.came_round()
    assert progress.healthy()


def test_a_follower_is_judged_by_its_event_loop_alone() -> None:
    """A follower runs no scheduling loop: it never comes round, and must not fail for that."""
    clock, progress = _scheduling()
    progress.scheduling(False)  # the loop stopped (lost the lease, or stopping)
    clock.now += 60.0
    progress.beat()
    assert progress.healthy()


def test_a_long_burst_of_short_cycles_and_slow_binds_stays_healthy() -> None:
    """Thousands of binds queue behind the write rate limiter, each for minutes, while cycles run
    every few milliseconds: one bind ends every 20 ms, so the binds progress."""
    clock, progress = _scheduling()
    for _ in range(5000):
        progress.bind_started()
    for step in range(15_000):  # 300 s of a 50 QPS budget
        clock.now += 0.02
        progress.came_round()
        if step % 50 == 0:
            progress.beat()
        progress.bind_finished()
        progress.bind_started()
        assert progress.stalled_for() < 1.0


def _turn_without_binds_ending(clock: FakeClock, progress: LoopProgress, seconds: int) -> None:
    """The loop turns and comes round every second; no bind ends and nothing is answered."""
    for _ in range(seconds):
        clock.now += 1.0
        progress.beat()
        progress.came_round()


def test_binds_of_which_none_ends_past_the_bound_are_a_stall() -> None:
    """Every binder stuck on an await: the loop still turns and comes round (nothing left to
    schedule), but no bind ends. One that ends (or a first one starting after an idle spell)
    restarts the count."""
    clock, progress = _scheduling()
    clock.now += 300.0  # idle for long (or waiting in PreBind for a volume): a bind starting now is not late
    progress.beat()
    progress.came_round()
    progress.bind_started()
    progress.bind_started()
    assert progress.healthy()
    _turn_without_binds_ending(clock, progress, 21)
    assert progress.wedged() and progress.stall() == (21.0, "binds")
    progress.bind_finished()  # one of them returned: the other may simply be slow
    assert progress.healthy()
    progress.bind_finished()
    clock.now += 60.0
    progress.beat()
    progress.came_round()
    assert progress.healthy()  # none in flight: nothing to wait for


def test_binds_queued_behind_answered_writes_are_not_a_stall() -> None:
    """A backlog of other writes (a terminating namespace's refused pods: PodScheduled patches and
    Events, answered 403) holds the write rate limiter for longer than the bound: no bind ends, but
    the API server answers a write every 20 ms, so the binds are queued, not stuck. Once nothing
    is answered either, the bound applies again."""
    clock, progress = _scheduling()
    for _ in range(800):
        progress.bind_started()
    for _ in range(1500):  # 30 s of a 50 QPS budget spent on the backlog
        clock.now += 0.02
        progress.beat()
        progress.came_round()
        progress.answered()
        assert progress.healthy()
    _turn_without_binds_ending(clock, progress, 21)
    assert progress.wedged() and progress.stall() == (21.0, "binds")


class _StuckExtender:
    """A filter extender whose call never returns (its HTTP timeout lost, say); the loop still turns."""

    name = "http://stuck"
    weight = 1

    def __init__(self, entered: asyncio.Event) -> None:
        self.entered = entered

    def is_ignorable(self) -> bool:
        return False

    def is_filter(self) -> bool:
        return True

    def is_prioritizer(self) -> bool:
        return False

    def is_binder(self) -> bool:
        return False

    def is_interested(self, pod: Pod) -> bool:
        return True

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult:
        self.entered.set()
        await asyncio.get_running_loop().create_future()  # never resolved
        raise AssertionError("unreachable")

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[HostPriority]:
        raise AssertionError("not a prioritizer")

    async def bind(self, pod: Pod, node_name: str) -> None:
        raise AssertionError("not a binder")


@dataclasses.dataclass
class _Probe:
    """/healthz and the Lease's version, read every 50 ms from a thread of their own."""

    server: LeaseServer
    seen: list[tuple[float, int, int]] = dataclasses.field(default_factory=list)  # (time, status, lease version)
    done: threading.Event = dataclasses.field(default_factory=threading.Event)

    def run(self, port: int) -> None:
        while not self.done.is_set():
            status, _ = get(port, "/healthz")
            self.seen.append((time.monotonic(), status, self.server.version))
            time.sleep(0.05)


@pytest.mark.parametrize(
    "stuck", [pytest.param("binder", id="bind-awaits-forever"), pytest.param("extender", id="extender-awaits-forever")]
)
def test_a_cycle_stuck_on_an_await_fails_healthz_and_stops_the_renewals(
    monkeypatch: pytest.MonkeyPatch, stuck: str
) -> None:
    """The live scheduling loop as ``run`` wires it: a pod whose binding (or whose scheduling cycle's
    extender call) awaits a future that never resolves, while the event loop keeps turning. Within the
    bound /healthz answers 500 and the renewals stop; the Lease lapses and the leader finds it lost.

    Old code: the heartbeat only proved that the event loop turned, so /healthz stayed 200 and the
    Lease was renewed every retry period for as long as the test let it run."""
    server = LeaseServer()
    use_fake_electors(monkeypatch, server)
    settings = dataclasses.replace(FAST, lease_duration=1.5, renew_deadline=0.6, retry_period=0.1)
    bound = 0.5
    progress = LoopProgress(timeout=bound)
    fence = Leadership(settings.renew_deadline)
    probe = _Probe(server)
    stamps: dict[str, float] = {}

    async def main() -> bool:
        loop = asyncio.get_running_loop()
        tls = serving_ssl_context(None, None, "127.0.0.1")  # generating its key blocks: before the beats
        entered = asyncio.Event()
        binder = FakeBinder(hold=entered if stuck == "binder" else None)  # ``hold`` is never set
        extenders = [_StuckExtender(entered)] if stuck == "extender" else []
        sched = Scheduler(load_config(None), binder, FakeRecorder(), extenders=extenders)
        sched.on_object("ADDED", make_node("node-1").dict())
        progress.beat_on(loop, period=0.05)
        wire = getattr(sched, "use_progress", None)  # 47be529 had no such seam: app.py wired the beat alone
        if wire is not None:
            wire(progress)

        async def lead(stop: asyncio.Event) -> None:
            scheduling = asyncio.ensure_future(sched.run(stop))
            await asyncio.sleep(0.5)  # leading and healthy for a while
            stamps["pod"] = time.monotonic()
            sched.on_object("ADDED", make_pod("stuck").dict())
            if stuck == "binder":
                while not binder.calls:
                    await asyncio.sleep(0.01)
            else:
                await entered.wait()
            stamps["stuck"] = time.monotonic()
            await scheduling

        async with _healthz_server(loop, progress, tls) as serving:
            client = asyncio.ensure_future(asyncio.to_thread(probe.run, serving.port))
            election = _as_replica_a(settings, lead, fence, progress)
            try:
                await asyncio.wait_for(election, timeout=4.0)
            except LeadershipLost:
                return True
            except TimeoutError:
                return False  # still leading: nothing noticed the stall
            finally:
                probe.done.set()
                await client
                progress.stop()
            return False

    lost = asyncio.run(main())
    stuck_at = stamps["stuck"]
    # Healthy while it scheduled nothing. One 500 is let pass: on a CPU-starved test worker the loop can
    # answer a probe after a long pause and before its late heartbeat runs (seen once in CI's shape).
    before = [status for at, status, _ in probe.seen if at < stamps["pod"]]
    assert before and before.count(200) >= len(before) - 1, f"unhealthy while it scheduled nothing: {before}"
    failing = [at for at, status, _ in probe.seen if status == 500 and at >= stamps["pod"]]
    assert failing, f"/healthz never failed: {sorted({s for _, s, _ in probe.seen})}"
    assert failing[0] - stuck_at < bound + 0.5, f"/healthz failed {failing[0] - stuck_at:.2f}s after the stall"
    # No renewal once the bound is past (one in flight at that moment may land).
    settled = [version for at, _, version in probe.seen if at > stuck_at + bound + 0.3]
    assert settled and settled[-1] - settled[0] <= 1, f"renewed {settled[-1] - settled[0]} times after the bound"
    assert lost, "the leader kept its Lease"
