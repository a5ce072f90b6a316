"""client-go's util/flowcontrol: the token bucket every API request passes, so the client honours
``clientConnection.qps``/``burst``; and a lower-priority bucket beneath it for writes that must
never cost a Binding its turn (the deletion costs)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["RateLimiter", "YieldingLimiter"]


class RateLimiter:
    """A token bucket: ``qps`` tokens a second, at most ``burst`` saved up (client-go's flowcontrol).
    ``waiting`` counts the callers that have asked and not yet got a token (a burst being held back)."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._clock = clock
        self._last = clock()
        self._lock = asyncio.Lock()
        self.waiting = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        self.waiting += 1
        self._idle.clear()
        try:
            async with self._lock:
                self._refill()
                if self._tokens < 1:
                    await asyncio.sleep((1 - self._tokens) / self.qps)
                    # Count the time actually slept: a busy loop wakes us late, and those tokens are
                    # owed (setting the bucket to one token lost them and the QPS was not reached).
                    self._refill()
                self._tokens -= 1
        finally:
            self.waiting -= 1
            if not self.waiting:
                self._idle.set()

    async def idle(self) -> None:
        """Return once nobody waits for a token (at once if nobody does)."""
        while self.waiting:
            await self._idle.wait()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now


class YieldingLimiter(RateLimiter):
    """Its own bucket, below ``above`` in priority: a caller takes a token of this bucket only, and
    only while nobody waits at ``above``. As kube-scheduler's events go through a clientset of their
    own (its own limiter), a write of lesser urgency never takes a token a Binding needs; and a
    burst of Bindings held back by their own bucket is not joined by these writes on the wire."""

    def __init__(self, qps: float, burst: int, above: RateLimiter, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(qps, burst, clock)
        self.above = above

    async def acquire(self) -> None:
        await self.above.idle()
        await super().acquire()
        await self.above.idle()  # a burst that queued while we waited for our own token goes first
