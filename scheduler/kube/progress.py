"""Whether the scheduler gets on with its work: what the scheduling loop reports, read from other threads.

Lease renewal runs on a thread of its own (``leader._Renewal.on_thread``) and the secure port on
another (``server``), so neither notices a scheduler that has stopped getting on. Three things must
each have moved within ``timeout``, or the scheduler is stalled: then ``/healthz`` fails and the
renewal thread stops renewing, so a healthy replica takes the Lease.

* The event loop turns: a timer on it beats, idle or busy (the loop yields between cycles). A loop
  blocked in CPU or in a blocking call stops beating.
* While it schedules (the leader's ``Scheduler.run``), the scheduling loop comes round: after each
  cycle, and at least once a second when it waits for work. A cycle stuck on an await that never
  returns (an extender's call, a bug) stops it coming round while the event loop still turns. A loop
  idle with nothing to schedule comes round every second and stays healthy; so does a long burst of
  short cycles. A follower does not schedule, so only its event loop counts.
* While binds are in flight (a binding cycle's Binding, through an extender or the Bind plugins),
  one of them ends (bound or failed). Progress is counted on the binds as a whole, not on each: in a
  burst thousands wait behind the write rate limiter, each for minutes, but one ends every few
  milliseconds. A bind waits for the API within bounded timeouts (each request, the retries), and one
  slow bind among others that end is not a stall; nor are binds queued behind other writes (a
  backlog of PodScheduled patches and Events, say) while the API server answers those: any answered
  write counts. Binds of which none ends for ``timeout``, with no other write answered meanwhile,
  are: every binder stuck on an await that never returns, or an API server that has answered none
  of our writes for 20 s, twice the renewDeadline in which it must answer the Lease's. The price:
  binders stuck while other writes are answered go unseen (each request and extender call has a
  timeout of its own, so only a bug of ours can hold one for good).
  PreBind is left out on purpose: VolumeBinding's waits for the PV controller to provision a volume,
  up to ``bindTimeoutSeconds`` (10 minutes by default), and a quiet cluster may have nothing else to do.

A scheduling cycle in progress longer than ``timeout`` is a stall whatever it waits for: with
extenders, one whose ``httpTimeout`` lets a cycle run past 20 s fails ``/healthz`` while it does
(upstream's default is 5 s).

Upstream's nearest: client-go's ``leaderelection.HealthzAdaptor``, which kube-scheduler registers on
``/healthz`` as the ``leaderElection`` check with a 20 s timeout (``NewLeaderHealthzAdaptor(time.Second
* 20)``, cmd/kube-scheduler/app/options/options.go). It fails a leader whose renewals have stopped
for leaseDuration + 20 s, and renewals go on whatever the scheduling goroutines do. Ours watches the
work itself and makes renewal depend on it; the 20 s bound is upstream's number.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["HEARTBEAT_PERIOD", "LOOP_PROGRESS_TIMEOUT", "LoopProgress"]

LOOP_PROGRESS_TIMEOUT = 20.0  # kube-scheduler's leader-election healthz timeout (see above)
HEARTBEAT_PERIOD = 1.0  # a beat a second: the bound is far above it, and an idle loop costs nothing

EVENT_LOOP = "event loop"
SCHEDULING_CYCLE = "scheduling cycle"
BINDS = "binds"


class LoopProgress:
    """When each part last moved (floats and a count: written on the scheduling loop, read from any
    thread). Implements ``scheduler.schedule_one.Progress``, which ``Scheduler.run`` reports to."""

    def __init__(self, timeout: float = LOOP_PROGRESS_TIMEOUT, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._last = clock()  # the event loop's last beat
        self._round_at: float | None = None  # the scheduling loop's last time round; None: not scheduling
        self._binds = 0  # binds in flight
        self._bind_at = self._last  # when one last ended, or the first of a batch started
        self._timer: asyncio.TimerHandle | None = None

    def beat(self) -> None:
        self._last = self._clock()

    # -- what the scheduling loop reports (scheduler.schedule_one.Progress) -----------------------

    def scheduling(self, running: bool) -> None:
        self._round_at = self._clock() if running else None

    def came_round(self) -> None:
        self._round_at = self._clock()

    def bind_started(self) -> None:
        if self._binds == 0:
            self._bind_at = self._clock()  # before the count: whoever reads the count sees this time
        self._binds += 1

    def bind_finished(self) -> None:
        self._bind_at = self._clock()
        self._binds = max(0, self._binds - 1)

    def answered(self) -> None:
        """The API server answered one of our writes, whatever its status: binds waiting behind other
        writes in the rate limiter (a backlog of status patches and Events) are getting on, not stuck."""
        self._bind_at = self._clock()

    # -- what /healthz and the renewals ask -----------------------------------------------------

    def stall(self) -> tuple[float, str]:
        """Seconds since the part that has gone longest without moving last moved, and that part."""
        now = self._clock()
        parts = [(now - self._last, EVENT_LOOP)]
        round_at = self._round_at
        if round_at is not None:
            parts.append((now - round_at, SCHEDULING_CYCLE))
        if self._binds > 0:  # read before the time, which bind_started writes first
            parts.append((now - self._bind_at, BINDS))
        seconds, part = max(parts, key=lambda found: found[0])
        return max(0.0, seconds), part

    def stalled_for(self) -> float:
        return self.stall()[0]

    def wedged(self) -> bool:
        return self.stalled_for() > self.timeout

    def healthy(self) -> bool:
        return not self.wedged()

    def beat_on(self, loop: asyncio.AbstractEventLoop, period: float = HEARTBEAT_PERIOD) -> None:
        """Beat now and every ``period`` from a timer on ``loop`` (a timer, not a task: nothing to
        await at shutdown, and a closed loop just drops it)."""

        def tick() -> None:
            self.beat()
            self._timer = loop.call_later(period, tick)

        self.stop()
        tick()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
