"""Garbage-collector policy of the scheduler process: rare young collections, frozen survivors."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

import structlog

__all__ = ["FREEZE_EVERY", "FULL_COLLECTION_EVERY", "GC_THRESHOLDS", "gc_housekeeping"]

log = structlog.get_logger("spread-scheduler")

FREEZE_EVERY = 5.0
FULL_COLLECTION_EVERY = 600.0
GC_THRESHOLDS = (50_000, 20, 100)


async def gc_housekeeping(stop: asyncio.Event, freeze_every: float = FREEZE_EVERY) -> None:
    """Keep CPython's full collections short, so /healthz never waits a second behind one.

    The cache holds a few hundred objects per pod; a generation-2 collection walks all of them and
    was measured at 0.2-0.8 s with only 1,000 pods. Every ``freeze_every`` seconds the survivors move
    to the permanent generation (``gc.freeze``, a list splice), so automatic collections only walk
    what is new. Freed memory is unaffected (reference counting still frees), but a cycle that dies
    after being frozen would never be collected: every ``FULL_COLLECTION_EVERY`` seconds one full
    collection over everything reclaims those, one bounded pause every ten minutes.

    Young collections are made rarer too (``GC_THRESHOLDS``): a scheduling cycle allocates thousands
    of short-lived tuples and lists, which reference counting frees anyway; at CPython's default
    (700) the collector ran about 400 times in a 1,000-pod burst and took 8 % of the CPU (0.85 s),
    0.35 s with these thresholds, which is mostly the housekeeping's own collections.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()
    last_full = time.monotonic()
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), freeze_every)
        if time.monotonic() - last_full >= FULL_COLLECTION_EVERY:
            gc.unfreeze()
            started = time.perf_counter()
            collected = gc.collect()
            log.info("full garbage collection", collected=collected, ms=round((time.perf_counter() - started) * 1000))
            last_full = time.monotonic()
        gc.collect(1)  # what already died young is collected, not frozen (milliseconds: young objects only)
        gc.freeze()
