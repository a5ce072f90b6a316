"""The run's own tasks: a keeper that dies stops the process with its traceback in the log; one that
does not end when cancelled does not keep a replica that lost its Lease alive."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from typing import Any

import pytest
import structlog.testing
from kubernetes.aio import client

from scheduler.config import load_config
from scheduler.kube import app
from scheduler.kube.leader import LeadershipLost


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


BOUND = 0.5  # the exit bound, shortened


class _Stubborn:
    """A keeper whose task does not end when cancelled until ``released`` (a write's retries, a
    PreBind, anything awaited again in a ``finally``)."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def pod_changed(self, old: object, new: object) -> None:
        pass

    def node_changed(self, old: object, new: object) -> None:
        pass

    async def run(self, stop: asyncio.Event) -> None:
        while not self.released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.02)


class _Engine:
    def __init__(self, _login: object) -> None:
        pass

    async def __aenter__(self) -> _Engine:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        return None


class _Informer:
    def __init__(self, *_args: object) -> None:
        self.synced = asyncio.Event()
        self.synced.set()
        self.has_synced = True

    def unsynced(self) -> list[str]:
        return []

    async def run(self) -> None:
        await asyncio.Event().wait()


def test_a_replica_that_lost_its_lease_exits_within_the_bound_when_a_teardown_step_hangs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Upstream exits at once on "leaderelection lost"; ours tidies up first, and a keeper that does
    not end when cancelled must not keep a replica that lost its Lease alive (a fresh-clone CI run saw
    one exit more than 60 s after it logged "Leaderelection lost")."""
    released, exited = threading.Event(), threading.Event()
    codes: list[int] = []

    def exit_now(code: int) -> None:
        codes.append(code)
        exited.set()

    compose = app._compose

    def composed(*args: Any) -> Any:
        sched, writes, leadership, keepers = compose(*args)
        return sched, writes, leadership, [*keepers, _Stubborn(released)]

    async def fake_client(_kubeconfig: str | None) -> client.ApiClient:
        return client.ApiClient(client.Configuration(host="https://127.0.0.1:1"))

    async def lost(*_args: object, **_kwargs: object) -> None:
        await asyncio.sleep(0.05)  # the keepers are running
        raise LeadershipLost("leaderelection lost: lease kube-system/spread-scheduler")

    monkeypatch.setattr(app, "api_client", fake_client)
    monkeypatch.setattr(app, "KopfEngine", _Engine)
    monkeypatch.setattr(app, "Informer", _Informer)
    monkeypatch.setattr(app, "_compose", composed)
    monkeypatch.setattr(app, "run_with_leader_election", lost)
    monkeypatch.setattr(app, "LOST_EXIT_BOUND", BOUND, raising=False)
    monkeypatch.setattr(os, "_exit", exit_now)
    returned: list[int] = []

    def run() -> None:
        serving = app.SecureServing(secure_port=0)
        returned.append(asyncio.run(app.run_scheduler(load_config(None), serving=serving)))
        exited.set()

    with structlog.testing.capture_logs() as logs:
        began = time.monotonic()
        thread = threading.Thread(target=run, name="run-scheduler", daemon=True)
        thread.start()
        exited.wait(10)
        took, returned_in_time = time.monotonic() - began, list(returned)
        released.set()  # the stubborn keeper ends: the run's thread with it
        thread.join(10)
    assert exited.is_set() and took < BOUND + 3, f"still running {took:.1f} s after the lease was lost"
    assert codes == [1] and not returned_in_time  # the watchdog ended it, the teardown was still in the keeper's step
    fired = [e for e in logs if e["event"] == "the exit did not finish in time: exiting now"]
    assert [e["step"] for e in fired] == ["stopping the _Stubborn"], logs
