"""Whether the scheduling loop makes progress: a heartbeat the loop beats itself, read from other threads.

Lease renewal runs on a thread of its own (``leader._Renewal.on_thread``) and the secure port on
another (``server``), so neither notices a scheduling loop that is wedged: a blocking call, a cycle
that never yields. The loop beats a monotonic timestamp from a timer on itself, idle or busy (the
scheduling loop yields between cycles); a loop that has not beaten for ``timeout`` is wedged. Then
``/healthz`` fails and the renewal thread stops renewing, so a healthy replica takes the Lease.

Upstream's nearest: client-go's ``leaderelection.HealthzAdaptor``, which kube-scheduler registers on
``/healthz`` as the ``leaderElection`` check with a 20 s timeout (``NewLeaderHealthzAdaptor(time.Second
* 20)``, cmd/kube-scheduler/app/options/options.go). It fails a leader whose renewals have stopped
for leaseDuration + 20 s, and renewals go on whatever the scheduling goroutines do. Ours watches the
loop that schedules and makes renewal depend on it; the 20 s bound is upstream's number.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["HEARTBEAT_PERIOD", "LOOP_PROGRESS_TIMEOUT", "LoopProgress"]

LOOP_PROGRESS_TIMEOUT = 20.0  # kube-scheduler's leader-election healthz timeout (see above)
HEARTBEAT_PERIOD = 1.0  # a beat a second: the bound is far above it, and an idle loop costs nothing


class LoopProgress:
    """The last beat of the scheduling loop (one float: written there, read from any thread)."""

    def __init__(self, timeout: float = LOOP_PROGRESS_TIMEOUT, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._last = clock()
        self._timer: asyncio.TimerHandle | None = None

    def beat(self) -> None:
        self._last = self._clock()

    def stalled_for(self) -> float:
        """Seconds since the loop last beat."""
        return max(0.0, self._clock() - self._last)

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
