"""Garbage-collector policy of the scheduler process: frozen survivors, one bounded full collection."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable

import structlog

from scheduler.kube.gc_pauses import GC_PAUSES

__all__ = ["FREEZE_EVERY", "FULL_COLLECTION_EVERY", "GCPolicy", "gc_housekeeping"]

log = structlog.get_logger("spread-scheduler")

FREEZE_EVERY = 5.0
FULL_COLLECTION_EVERY = 600.0


class GCPolicy:
    """The collector's policy as steps a loop calls (``gc_housekeeping`` in the scheduler process,
    bench.inprocess between pods, so that the benchmark measures the collector the binary runs)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last_full = clock()

    def start(self) -> None:
        """What is alive now (the synced cache) moves to the permanent generation."""
        gc.freeze()
        self.last_full = self.clock()

    def step(self) -> None:
        """Every ``FREEZE_EVERY`` seconds: the young collected, the survivors frozen; every
        ``FULL_COLLECTION_EVERY``, one full collection over everything first."""
        if self.clock() - self.last_full >= FULL_COLLECTION_EVERY:
            gc.unfreeze()
            started = time.perf_counter()
            collected = gc.collect()
            log.info("full garbage collection", collected=collected, ms=round((time.perf_counter() - started) * 1000))
            self.last_full = self.clock()
        gc.collect(1)  # what already died young is collected, not frozen (milliseconds: young objects only)
        gc.freeze()


async def gc_housekeeping(stop: asyncio.Event, freeze_every: float = FREEZE_EVERY) -> None:
    """Keep CPython's full collections short, so /healthz never waits a second behind one.

    The cache holds a few hundred objects per pod, and a generation-2 collection walks all of them:
    long enough, with a thousand pods, to hold a probe past its timeout (docs/reliability.md). Every
    ``freeze_every`` seconds the survivors move to the permanent generation (``gc.freeze``, a list
    splice), so automatic collections only walk what is new. Freed memory is unaffected (reference
    counting still frees), but a cycle that dies after being frozen would never be collected: every
    ``FULL_COLLECTION_EVERY`` seconds one full collection over everything reclaims those, one
    bounded pause every ten minutes.

    CPython's collection thresholds are left as they are: larger ones for the young generation made
    collections rarer but did not lower the collector's time or our CPU beyond the noise, measured
    on and off end to end (docs/benchmarks.md, "Why the I/O layer is shaped as it is").
    """
    GC_PAUSES.install()
    policy = GCPolicy()
    try:
        policy.start()
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), freeze_every)
            policy.step()
    finally:
        GC_PAUSES.uninstall()
