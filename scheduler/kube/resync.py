"""Re-list after API trouble, so the cache never keeps objects that were deleted while no watch saw it.

client-go's reflector replaces its store on every re-list (what it missed becomes a delete). kopf
re-lists too, but does not tell its handlers where a listing ends, so a deletion that fell into a
watch gap would stay in our cache: a deleted pod would keep counting for spread and resources, a
deleted node could still be chosen. After any request failed with a connection error or a 5xx (the
API server restarting, etcd away), once the API answers again, we LIST nodes and pods (paginated)
and drop what the list no longer has; also every hour as a safety net. Additions and updates are
left to kopf: its watch resumes or re-lists and delivers them, while a deletion in a gap is the one
thing no later event reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable

import structlog
from kubernetes.aio import client

from scheduler.kube.listing import list_objects
from scheduler.scheduler import Scheduler

__all__ = ["ApiTrouble", "KopfOutageHandler", "resync_loop"]

log = structlog.get_logger("spread-scheduler")

RESYNC_PERIOD = 3600.0
RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)  # then every 8 s: bounded, never a busy loop while the API is down


class ApiTrouble:
    """Counts the outcome of every request we send; an ``outage`` wakes the resync loop."""

    def __init__(self, on_outcome: Callable[[str], None] = lambda _outcome: None) -> None:
        self.event = asyncio.Event()
        self._on_outcome = on_outcome  # the metrics counter keeps the counts

    def observe(self, outcome: str) -> None:
        self._on_outcome(outcome)
        if outcome == "outage":
            self.event.set()

    def report(self) -> None:
        """An outage seen outside ``observe`` (a failed lease round)."""
        self.observe("outage")


class KopfOutageHandler(logging.Handler):
    """kopf retries its own watch requests and says so in its log; to us that is an outage as well."""

    def __init__(self, trouble: ApiTrouble) -> None:
        super().__init__(logging.WARNING)
        self._trouble = trouble

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Request attempt") and " failed" in message:
            self._trouble.report()


async def resync_once(api: client.ApiClient, sched: Scheduler) -> dict[str, int]:
    """LIST nodes, then pods (paginated), and drop what the watch missed the deletion of; per kind."""
    done: dict[str, int] = {}
    for kind in ("Node", "Pod"):
        listing = await list_objects(api, kind)
        done[kind] = sched.reconcile(kind, listing.versions, listing.resource_version)
    return done


async def resync_loop(
    api: client.ApiClient,
    sched: Scheduler,
    trouble: ApiTrouble,
    stop: asyncio.Event,
    period: float = RESYNC_PERIOD,
) -> None:
    """Reconcile after each spell of API trouble (once the API is back) and every ``period`` seconds."""
    while not stop.is_set():
        waiters = {asyncio.ensure_future(trouble.event.wait()), asyncio.ensure_future(stop.wait())}
        _, pending = await asyncio.wait(waiters, timeout=period, return_when=asyncio.FIRST_COMPLETED)
        for waiter in pending:
            waiter.cancel()
        if stop.is_set():
            return
        after_trouble = trouble.event.is_set()
        trouble.event.clear()
        for attempt in itertools.count():
            try:
                result = await resync_once(api, sched)
            except Exception as exc:  # the API is still away: wait and try again, boundedly
                delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
                log.info("resync waiting for the API server", err=str(exc) or type(exc).__name__, retry_in=delay)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                if stop.is_set():
                    return
                continue
            trouble.event.clear()  # failures reported while we listed are covered by this list
            log.info("resynced from a fresh list", reason="api-trouble" if after_trouble else "period", removed=result)
            break
