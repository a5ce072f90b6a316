"""client-go's util/flowcontrol: the token bucket every API request passes, so the client honours
``clientConnection.qps``/``burst``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["RateLimiter"]


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
