"""The Lease fence asked at the last moment: once a request has its connection, and right before its first byte.

Every write (the API writers' and an extender's bind) sets its fence for the task sending it
(``fenced``); a request made with ``FencedRequest`` asks that fence again where a paused process
could otherwise send after a takeover. Other tasks, such as the lease renewals and the watches, see
the default fence and are never fenced.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

import aiohttp
from aiohttp.abc import AbstractStreamWriter
from aiohttp.connector import Connection

from scheduler.errors import NotLeadingError

__all__ = ["FENCE", "NOT_SURE", "FencedRequest", "always", "fenced"]

NOT_SURE = "not sent, this process is not sure it still holds the leader lease"


def always() -> bool:
    return True


# The fence of the write this task is sending.
FENCE: contextvars.ContextVar[Callable[[], bool]] = contextvars.ContextVar("spread_scheduler_fence", default=always)


@contextlib.contextmanager
def fenced(fence: Callable[[], bool]) -> Iterator[None]:
    """``fence`` is this task's fence while the block runs (and its requests are sent)."""
    token = FENCE.set(fence)
    try:
        yield
    finally:
        FENCE.reset(token)


class FencedRequest(aiohttp.ClientRequest):
    """A request that asks its task's fence again once it has its connection, and once more right
    before its body: the API writes behind a proxy (through the client's session; elsewhere
    ``transport`` asks the fence itself) and an extender's bind.

    A request can wait for a pooled connection, and a process paused while it waited must not send
    it on waking: ``send`` runs right after the connection is handed over, in the same step of the
    event loop, and a request without a body goes out from there. A request with a body leaves in a
    task of its own, a step later: aiohttp holds the headers back to send them with the body. A
    process paused in between (found by e2e/test_leader_election.py: Bindings sent after the
    takeover) would send it on waking. So ``write_bytes`` asks again right before the first
    byte; if it says no, the held-back headers are dropped with the connection and nothing is sent.
    (A pause after this check remains possible: a few microseconds of CPU, not a loop step.)
    Other tasks, such as the lease renewals and the watches, see the default fence and are never
    fenced. (Not connection hooks of an ``aiohttp.TraceConfig``: a trace costs every request a dozen
    awaited signals; docs/benchmarks.md.)"""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        if not FENCE.get()():
            raise NotLeadingError(NOT_SURE)
        return await super().send(conn)

    async def write_bytes(
        self, writer: AbstractStreamWriter, conn: Connection, content_length: int | None = None
    ) -> None:
        if not FENCE.get()() and conn.protocol is not None:
            conn.protocol.set_exception(NotLeadingError(NOT_SURE))
            conn.close()
            return
        await super().write_bytes(writer, conn, content_length)
