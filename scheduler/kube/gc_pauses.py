"""The garbage collector's pauses, timed: what a timed stretch of work lost to a collection."""

from __future__ import annotations

import gc
import time

__all__ = ["GC_PAUSES", "GcPauses"]

GENERATIONS = 3


class GcPauses:
    """The time CPython's collector held the process, per generation, summed by ``gc.callbacks``.

    A collection runs inside whatever Python code allocated last, so a timed stretch of work (a
    planning slice) tells its own cost from a collection's only by subtracting this clock. The
    callback only adds floats: it may run inside any code, including code holding a metric's lock,
    so it must take none; the sums are read at scrape time and by the timers.
    """

    def __init__(self) -> None:
        self.seconds = [0.0] * GENERATIONS
        self.collections = [0] * GENERATIONS
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info.get("generation", 0)
        self.seconds[generation] += time.perf_counter() - self._started
        self.collections[generation] += 1

    def total(self) -> float:
        return sum(self.seconds)

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)


# One process, one collector: the pauses are process-wide (installed by ``gc_policy.gc_housekeeping``).
GC_PAUSES = GcPauses()
