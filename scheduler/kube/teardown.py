"""``run``'s way out, timed, and bounded where upstream's is.

Each step of the teardown (a keeper cancelled, the informer, the watch sessions, the secure server,
the writers' connections, then the tasks still left) is named: one that takes longer than
``SLOW_STEP`` is logged with its name and seconds when it ends, and once when it passes that bound
while still running, so an exit that hangs says where it hangs.

A replica that lost its Lease exits within ``LOST_EXIT_BOUND`` whatever a step does: kube-scheduler
does no teardown at all there (``klog.FlushAndExit(klog.ExitFlushTimeout, 1)`` on "leaderelection
lost"); ours runs one for tidiness, and ``ExitWatchdog`` ends the process when it overruns, after
logging the step it was in and writing every thread's stack to stderr.
"""

from __future__ import annotations

import asyncio
import faulthandler
import os
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

__all__ = [
    "LOST_EXIT_BOUND",
    "REMAINING_TASKS_BOUND",
    "SLOW_STEP",
    "ExitWatchdog",
    "Teardown",
    "dump_stacks_on",
]

log = structlog.get_logger("spread-scheduler")

SLOW_STEP = 1.0  # a teardown step past this is logged (name and seconds)
# A replica that lost its Lease is gone this long after at the latest: klog.ExitFlushTimeout.
LOST_EXIT_BOUND = 10.0
# The tasks still pending once the teardown's steps are done are cancelled and given this long; the
# ones still there are named (asyncio.run would wait for them without a bound or a word).
REMAINING_TASKS_BOUND = 3.0
MAX_NAMED_TASKS = 10  # a log line, not a dump


class Teardown:
    """Names the teardown's steps and times them; ``step`` is the one running (None between two)."""

    def __init__(self, slow: float = SLOW_STEP, clock: Callable[[], float] = time.monotonic) -> None:
        self.slow = slow
        self._clock = clock
        self.step: str | None = None

    def _done(self, name: str, started: float) -> None:
        took = self._clock() - started
        self.step = None
        if took > self.slow:
            log.warning("shutting down: a slow step", step=name, seconds=round(took, 2))

    def sync(self, name: str, call: Callable[..., object], *args: Any) -> Callable[[], None]:
        """``call(*args)`` as a named step (for ``AsyncExitStack.callback``)."""

        def step() -> None:
            self.step, started = name, self._clock()
            try:
                call(*args)
            finally:
                self._done(name, started)

        return step

    def awaited(self, name: str, call: Callable[..., Awaitable[object]], *args: Any) -> Callable[[], Awaitable[None]]:
        """``await call(*args)`` as a named step (for ``AsyncExitStack.push_async_callback``); one still
        running after ``slow`` seconds says so then."""

        async def step() -> None:
            self.step, started = name, self._clock()
            loop = asyncio.get_running_loop()
            waiting = loop.call_later(
                self.slow, lambda: log.warning("shutting down: still waiting", step=name, seconds=self.slow)
            )
            try:
                await call(*args)
            finally:
                waiting.cancel()
                self._done(name, started)

        return step

    async def remaining_tasks(self, bound: float = REMAINING_TASKS_BOUND) -> None:
        """Cancel every task but this one and wait ``bound`` seconds at most; name those left (what
        each awaits), which asyncio.run's shutdown would then wait for without a bound."""
        self.step, started = "the remaining tasks", self._clock()
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        for task in tasks:
            task.cancel()
        try:
            if not tasks:
                return
            _done, left = await asyncio.wait(tasks, timeout=bound)
            if left:
                log.warning(
                    "shutting down: tasks that did not end when cancelled",
                    count=len(left),
                    tasks=sorted(_where(t) for t in left)[:MAX_NAMED_TASKS],
                    waited=bound,
                )
        finally:
            self._done("the remaining tasks", started)
            # What comes next is asyncio.run's own: its default executor's threads, then the interpreter's.
            self.step = "asyncio.run's shutdown and the interpreter's exit (executor and other threads)"


def _where(task: asyncio.Task[Any]) -> str:
    """A task's name and the line its coroutine waits at."""
    frames = task.get_stack(limit=1)
    at = f"{frames[0].f_code.co_filename.rpartition('/')[2]}:{frames[0].f_lineno}" if frames else "?"
    return f"{task.get_name()} at {at}"


class ExitWatchdog:
    """Ends the process ``bound`` seconds after ``arm`` if it is still there: logs the teardown step
    it is in, writes every thread's stack to stderr (faulthandler), flushes, and exits with ``code``.
    A daemon thread: a process that exits in time never hears of it."""

    def __init__(
        self,
        teardown: Teardown,
        bound: float = LOST_EXIT_BOUND,
        exit_now: Callable[[int], object] | None = None,
        dump: Callable[[], None] | None = None,
    ) -> None:
        self._teardown = teardown
        self._bound = bound
        self._exit_now = exit_now  # None: os._exit, looked up when it fires
        self._dump = dump or _dump_all_threads
        self._timer: threading.Timer | None = None

    def arm(self, code: int) -> None:
        self._timer = threading.Timer(self._bound, self._fire, args=(code,))
        self._timer.name = "exit-watchdog"
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self, code: int) -> None:
        log.error(
            "the exit did not finish in time: exiting now",
            step=self._teardown.step,
            bound=self._bound,
            exit_code=code,
        )
        self._dump()
        (self._exit_now or os._exit)(code)


def _dump_all_threads() -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        faulthandler.dump_traceback(sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError):  # a stderr without a file descriptor (a test's capture)
        for ident, frame in sys._current_frames().items():
            sys.stderr.write(f"Thread {ident:#x}:\n" + "".join(traceback.format_stack(frame)))
    sys.stderr.flush()


def dump_stacks_on(signum: int) -> None:
    """On ``signum``, every thread's stack to stderr, the process going on (a hang looked into
    without py-spy; kube-scheduler's Go runtime dumps its goroutines on SIGQUIT, and exits)."""
    # faulthandler writes to a file descriptor: a stderr replaced by an object without one (an
    # embedding host, pytest's capture) gets the process's own fd 2 instead.
    try:
        sys.stderr.fileno()
        target: Any = sys.stderr
    except (AttributeError, OSError, ValueError):
        target = sys.__stderr__
    if target is None:
        log.warning("no stderr to dump stacks to: SIGUSR1 keeps its default action")
        return
    faulthandler.register(signum, file=target, all_threads=True, chain=False)
