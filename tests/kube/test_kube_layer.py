"""The I/O seam: API error mapping and the client-side rate limiter."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.errors import BindConflictError, NotLeadingError, PodGoneError, SchedulerIOError, TransientAPIError
from scheduler.kube import writes
from scheduler.kube.controllers.deletion_cost import cost_limiter
from scheduler.kube.flowcontrol import RateLimiter, YieldingLimiter
from scheduler.kube.writes import MAX_TRIES, _call, map_status, retry_after_seconds
from tests.fakes import FakeClock


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(200, None, id="ok"),
        pytest.param(201, None, id="created"),
        pytest.param(404, PodGoneError, id="not-found-means-pod-gone"),
        pytest.param(409, BindConflictError, id="conflict-means-already-bound"),
        pytest.param(429, TransientAPIError, id="throttled-is-retried"),
        pytest.param(500, TransientAPIError, id="server-error-is-retried"),
        pytest.param(503, TransientAPIError, id="unavailable-is-retried"),
        pytest.param(403, RuntimeError, id="forbidden-is-a-bug-not-retried"),
        pytest.param(422, RuntimeError, id="invalid-is-a-bug-not-retried"),
    ],
)
def test_every_handled_status_code_is_mapped(status: int, expected: type[Exception] | None) -> None:
    error = map_status(status, b'{"message": "pods \\"p\\" not found"}', "binding ns/p")
    if expected is None:
        assert error is None
    else:
        assert type(error) is expected
        assert "binding ns/p: HTTP" in str(error)


def test_mapped_errors_share_one_base_and_keep_the_server_message() -> None:
    error = map_status(409, b'{"message": "pod p is already assigned to node \\"n1\\""}', "binding ns/p to n2")
    assert isinstance(error, SchedulerIOError)
    assert str(error) == 'binding ns/p to n2: HTTP 409: pod p is already assigned to node "n1"'
    forbidden = map_status(403, b'{"reason": "Forbidden", "message": "pods \\"p\\" is forbidden"}', "binding ns/p")
    assert str(forbidden) == 'binding ns/p: HTTP 403 Forbidden: pods "p" is forbidden'
    garbled = map_status(500, b"<html>oops</html>", "x")
    assert str(garbled) == "x: HTTP 500: <html>oops</html>"


def _acquire(count: int, qps: float, burst: int, oversleep: float = 0.0) -> tuple[list[float], float]:
    """``count`` acquisitions on a fake clock; each sleep wakes ``oversleep`` late. (sleeps, end time)"""
    now = [0.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds + oversleep

    async def scenario() -> None:
        limiter = RateLimiter(qps=qps, burst=burst, clock=lambda: now[0])
        original = asyncio.sleep
        asyncio.sleep = fake_sleep  # type: ignore[assignment]
        try:
            for _ in range(count):
                await limiter.acquire()
        finally:
            asyncio.sleep = original

    asyncio.run(scenario())
    return slept, now[0]


def test_rate_limiter_allows_a_burst_then_paces_at_qps() -> None:
    slept, _ = _acquire(5, qps=10, burst=3)
    assert len(slept) == 2  # three requests ride the burst, the next two wait a token each
    assert slept == pytest.approx([0.1, 0.1])


def test_a_yielding_limiter_takes_only_its_own_tokens_and_none_while_the_writer_is_waited_for() -> None:
    clock = FakeClock(0.0)

    async def scenario() -> list[str]:
        above = RateLimiter(qps=10, burst=2, clock=clock)
        below = YieldingLimiter(qps=1, burst=3, above=above, clock=clock)
        order: list[str] = []

        async def take(limiter: RateLimiter, name: str) -> None:
            await limiter.acquire()
            order.append(name)

        for _ in range(3):  # its own burst: the writer's bucket is left whole
            await take(below, "cost")
        assert above._tokens == 2
        clock.advance(10)  # both buckets full again
        for _ in range(2):
            await take(above, "binding")  # the writer's burst spent: the next Bindings wait
        waiting = [asyncio.create_task(take(above, "binding")) for _ in range(2)]
        patch = asyncio.create_task(take(below, "cost"))
        await asyncio.sleep(0)
        assert above.waiting == 2
        await asyncio.gather(*waiting, patch)
        return order

    order = asyncio.run(scenario())
    assert order == ["cost"] * 3 + ["binding"] * 4 + ["cost"]  # the patch waited for the queued Bindings


def test_the_costs_bucket_is_a_tenth_of_the_writers() -> None:
    limiter = cost_limiter(RateLimiter(qps=50, burst=100))
    assert (limiter.qps, limiter.burst) == (5, 10)
    assert cost_limiter(RateLimiter(qps=0, burst=1)).qps == 0  # an unlimited writer: yielding only


def test_rate_limiter_counts_the_time_a_busy_loop_overslept() -> None:
    # Each sleep wakes 0.3 s late (a loop busy with scheduling cycles): the three tokens accrued
    # meanwhile are owed (up to the burst), so after one late wake-up three requests go at once.
    slept, end = _acquire(8, qps=10, burst=4, oversleep=0.3)
    assert slept == pytest.approx([0.1])  # 4 ride the burst, the 5th waits, 6-8 use the owed tokens
    assert end == pytest.approx(0.4)  # 8 requests by 0.4 s: burst 4 + 10/s, never more


class _Response:
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        # Names in lower case, as both real replies answer them (aiohttp's CIMultiDict, transport.Reply).
        self.status, self.headers = status, {name.lower(): value for name, value in headers.items()}

    async def read(self) -> bytes:
        return b'{"message": "Too many requests, please try again later."}'

    def release(self) -> None:
        return None


def _recorded_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds every ``asyncio.sleep`` from now on asks for; none of them is waited."""
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float, *args: object) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    return slept


def test_a_429_with_retry_after_waits_at_least_that_long_with_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    """API Priority and Fairness answers 429 with Retry-After: 1. client-go waits that long before the
    next try; so do we (plus up to 20 %, so a throttled burst does not return in one instant), where
    the plain backoff would have come back after 0.2-0.4 s."""
    slept = _recorded_sleeps(monkeypatch)
    answers = [_Response(429, {"Retry-After": "1"}), _Response(429, {"Retry-After": "1"}), _Response(201, {})]
    outcomes: list[str] = []

    async def request() -> _Response:
        return answers.pop(0)

    asyncio.run(_call(RateLimiter(0, 1), "binding ns/p to n1", request, outcomes.append))
    assert outcomes == ["throttled", "throttled", "ok"]
    assert len(slept) == 2 and all(1.0 <= s <= 1.2 for s in slept), slept
    assert len(set(slept)) == 2  # jittered


def test_a_write_failing_every_time_is_tried_max_tries_times_with_a_wait_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first try goes outside tenacity's loop; the failures after it are retried from there: still
    MAX_TRIES requests in all, MAX_TRIES - 1 waits, and the last error raised."""
    slept = _recorded_sleeps(monkeypatch)
    outcomes: list[str] = []

    async def request() -> _Response:
        return _Response(503, {})

    with pytest.raises(TransientAPIError):
        asyncio.run(_call(RateLimiter(0, 1), "binding ns/p to n1", request, outcomes.append))
    assert outcomes == ["outage"] * MAX_TRIES == ["outage"] * 5
    assert len(slept) == MAX_TRIES - 1
    assert slept[0] < slept[-1]  # backing off from the first failure, as from tenacity's own attempt 1


def test_a_write_whose_lease_is_in_doubt_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """NotLeadingError is a TransientAPIError, but a leader unsure of its lease must step down, not
    wait and try again: nothing sent, no backoff."""
    slept = _recorded_sleeps(monkeypatch)
    sent: list[str] = []

    async def request() -> _Response:
        sent.append("binding")
        return _Response(201, {})

    with pytest.raises(NotLeadingError):
        asyncio.run(_call(RateLimiter(0, 1), "binding ns/p to n1", request, fence=lambda: False))
    assert sent == [] and slept == []


def test_a_write_that_succeeds_at_once_never_builds_a_retry_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """tenacity's loop costs 19 us and a dozen objects in reference cycles a request: only a failure needs it."""

    def no_loop(*args: object, **kwargs: object) -> None:
        raise AssertionError("a retry loop for a write that succeeded at once")

    monkeypatch.setattr(writes, "AsyncRetrying", no_loop)

    async def request() -> _Response:
        return _Response(201, {})

    assert asyncio.run(_call(RateLimiter(0, 1), "binding ns/p to n1", request)).startswith(b"{")


def test_retry_after_is_read_as_client_go_reads_it() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(" 1 ") == 1.0
    assert retry_after_seconds("0") is None  # no wait asked
    assert retry_after_seconds("Wed, 21 Oct 2026 07:28:00 GMT") is None  # a date: client-go ignores it too
    assert retry_after_seconds(None) is None
    error = map_status(429, b"{}", "binding ns/p", retry_after=2.0)
    assert isinstance(error, TransientAPIError) and error.retry_after == 2.0
