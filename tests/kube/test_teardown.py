"""The way out of ``run`` (scheduler.kube.teardown): a slow step says which it is, the tasks left
are cancelled within a bound, and the exit watchdog (tests/kube/test_app_tasks.py: a replica that
lost its Lease is gone within a bound whatever a step of its teardown does)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import structlog.testing

from scheduler.kube.teardown import ExitWatchdog, Teardown


def test_a_slow_step_is_logged_with_its_name_and_seconds_and_once_while_it_runs() -> None:
    teardown = Teardown(slow=0.05)

    async def slow() -> None:
        await asyncio.sleep(0.12)

    async def main() -> None:
        await teardown.awaited("closing the slow one", slow)()
        await teardown.awaited("closing the quick one", asyncio.sleep, 0)()
        teardown.sync("stopping a blocking one", time.sleep, 0.07)()

    with structlog.testing.capture_logs() as logs:
        asyncio.run(main())
    said = [(e["event"], e["step"]) for e in logs]
    assert said == [
        ("shutting down: still waiting", "closing the slow one"),
        ("shutting down: a slow step", "closing the slow one"),
        ("shutting down: a slow step", "stopping a blocking one"),
    ]
    assert 0.12 <= logs[1]["seconds"] < 1 and teardown.step is None


def test_the_remaining_tasks_are_cancelled_within_a_bound_and_the_stubborn_ones_named() -> None:
    teardown = Teardown()
    released = threading.Event()

    async def stubborn() -> None:
        while not released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.02)

    async def main() -> float:
        tasks = [asyncio.create_task(stubborn(), name="stubborn"), asyncio.create_task(asyncio.sleep(3600))]
        await asyncio.sleep(0)
        began = time.monotonic()
        await teardown.remaining_tasks(bound=0.2)
        took = time.monotonic() - began
        released.set()
        await asyncio.wait(tasks)
        return took

    with structlog.testing.capture_logs() as logs:
        took = asyncio.run(main())
    assert took < 1
    (said,) = [e for e in logs if e["event"] == "shutting down: tasks that did not end when cancelled"]
    assert said["count"] == 1 and said["tasks"][0].startswith("stubborn at test_teardown.py:"), said
    assert teardown.step is not None and "asyncio.run" in teardown.step  # what comes after is asyncio.run's


def test_the_watchdog_does_nothing_for_a_process_that_exits_in_time() -> None:
    exits: list[int] = []
    watchdog = ExitWatchdog(Teardown(), bound=0.05, exit_now=exits.append, dump=lambda: None)
    watchdog.arm(1)
    watchdog.disarm()
    time.sleep(0.15)
    assert exits == []
