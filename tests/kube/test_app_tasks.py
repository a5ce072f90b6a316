"""The run's own tasks: a keeper that dies stops the process with its traceback in the log."""

from __future__ import annotations

import asyncio

import structlog.testing

from scheduler.kube import app


def test_a_keeper_that_dies_is_logged_and_stops_the_run_and_its_cancel_does_not_raise() -> None:
    async def main() -> tuple[bool, list[str]]:
        stop, died = asyncio.Event(), []

        async def broken() -> None:
            raise RuntimeError("boom")

        async def cancelled() -> None:
            await asyncio.sleep(3600)

        task = asyncio.create_task(broken(), name="Rebalancer")
        task.add_done_callback(lambda t: app._keeper_died(t, stop, died))
        quiet = asyncio.create_task(cancelled(), name="DeletionCostKeeper")
        quiet.add_done_callback(lambda t: app._keeper_died(t, stop, died))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await app._cancel(task)  # ended on its own: nothing raised again at exit
        await app._cancel(quiet)  # cancelled at exit: not a death
        return stop.is_set(), died

    with structlog.testing.capture_logs() as logs:
        stopped, died = asyncio.run(main())
    assert stopped and died == ["Rebalancer"]
    errors = [entry for entry in logs if entry["log_level"] == "error"]
    assert [(e["event"], e["err"]) for e in errors] == [("the Rebalancer stopped; exiting", "RuntimeError('boom')")]
