"""Planning as generators that yield to their caller between pieces of work once ``due()`` says the
slice of CPU is spent (the rebalancer runs them on the scheduling loop). Pure; the vocabulary the
planner's phases share: the search, the deletion-cost ranking, the check of a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeAlias, TypeVar

__all__ = ["CHUNK", "Steps", "every", "finish", "never"]

T = TypeVar("T")
# A planning generator: yields (None) when its slice is spent, returns its result.
Steps: TypeAlias = Generator[None, None, T]
# Pods of a walk over a workload between two looks at the clock: well under a millisecond of work
# each (a pod's constraints resolved, its cost order taken), so a slice overruns by a few at most.
CHUNK = 64


def never() -> bool:
    return False


def finish(steps: Steps[T]) -> T:
    """Run a planning generator to its end without yielding to anyone."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def every(due: Callable[[], bool], chunk: int = CHUNK) -> Callable[[], bool]:
    """``due`` asked at every ``chunk``-th call only: a walk over thousands of pods calls it per pod
    (``if tick(): yield``) without reading the clock thousands of times."""
    calls = 0

    def tick() -> bool:
        nonlocal calls
        calls += 1
        return calls % chunk == 0 and due()

    return tick
