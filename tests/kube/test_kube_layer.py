"""The I/O seam: API error mapping, the client-side rate limiter, and the kopf registry's shape."""

from __future__ import annotations

import asyncio
import types

import kopf
import pytest
import structlog

from scheduler.errors import BindConflictError, NotLeadingError, PodGoneError, SchedulerIOError, TransientAPIError
from scheduler.kube import writes
from scheduler.kube.listing import PAGE_SIZE
from scheduler.kube.watch import WATCHED, WORKER_IDLE_TIMEOUT, build_registry
from scheduler.kube.writes import MAX_TRIES, RateLimiter, _call, map_status, retry_after_seconds


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


def test_rate_limiter_counts_the_time_a_busy_loop_overslept() -> None:
    # Each sleep wakes 0.3 s late (a loop busy with scheduling cycles): the three tokens accrued
    # meanwhile are owed (up to the burst), so after one late wake-up three requests go at once.
    slept, end = _acquire(8, qps=10, burst=4, oversleep=0.3)
    assert slept == pytest.approx([0.1])  # 4 ride the burst, the 5th waits, 6-8 use the owed tokens
    assert end == pytest.approx(0.4)  # 8 requests by 0.4 s: burst 4 + 10/s, never more


def test_registry_watches_every_resource_the_cache_reads_and_nothing_writes() -> None:
    registry = build_registry(lambda event_type, obj: None)
    assert len(registry._watching.get_all_handlers()) == len(WATCHED)
    # No state-tracking (changing), daemon/timer (spawning), indexing or webhook handlers: those are
    # the kinds that make kopf persist progress in annotations, add finalizers or patch status.
    for kind in ("_changing", "_spawning", "_indexing", "_webhooks"):
        assert getattr(registry, kind).get_all_handlers() == [], kind
    assert len(registry._activities.get_all_handlers()) == 2  # startup settings + login
    assert {p for _, p in WATCHED} == {
        "nodes",
        "pods",
        "services",
        "replicationcontrollers",
        "replicasets",
        "statefulsets",
        "namespaces",
        "poddisruptionbudgets",
        "persistentvolumes",
        "persistentvolumeclaims",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
    }


def _configured(settings: kopf.OperatorSettings) -> None:
    """What the registry's startup handler does to kopf's settings, as kopf runs it at start."""
    for handler in build_registry(lambda event_type, obj: None)._activities.get_all_handlers():
        if handler.activity == "startup":
            handler.fn(settings=settings)


def test_kopf_lists_in_pages_so_a_big_cluster_is_never_parsed_at_once() -> None:
    """kopf's default is one unpaginated LIST: 30,000 pods parsed in one piece were the peak RSS."""
    settings = kopf.OperatorSettings()
    assert settings.watching.chunk_size is None  # kopf's default, which the startup handler must change
    _configured(settings)
    assert settings.watching.chunk_size == PAGE_SIZE == 500
    assert settings.posting.enabled is False


def test_kopf_workers_let_go_of_an_object_half_a_second_after_its_last_event() -> None:
    """Each kopf worker keeps its object's last event while it idles: at kopf's 5 s, a burst's pods
    were all held twice, a sixth of the peak RSS at 500 nodes."""
    settings = kopf.OperatorSettings()
    assert settings.queueing.idle_timeout == 5.0  # kopf's default, which the startup handler must change
    _configured(settings)
    assert settings.queueing.idle_timeout == WORKER_IDLE_TIMEOUT == 0.5


def test_cache_sync_does_not_wait_for_objects_deleted_after_the_first_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod listed at start and deleted before the watch delivered it must not stall the start."""
    from scheduler.kube import app  # noqa: PLC0415 - the module under test, patched below

    lists = iter([{"node"}])

    async def list_uids(_api: object) -> set[str]:
        return set(next(lists, {"node"}))

    monkeypatch.setattr(app, "_list_uids", list_uids)
    monkeypatch.setattr(app, "RELIST_EVERY", 0.0)

    # The watch delivered the node; the pod was gone before kopf listed.
    seen = types.SimpleNamespace(seen_uids={"node"})

    async def main() -> bool:
        operator = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(
                app._wait_for_sync(object(), seen, operator, asyncio.Event(), {"node", "deleted-pod"}), 5
            )  # type: ignore[arg-type]
        finally:
            operator.cancel()

    assert asyncio.run(main()) is True


def test_start_up_retries_an_unreachable_api_server_until_it_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """kube-scheduler's informers retry a failed list for as long as it takes: one line per failure, no traceback."""
    from scheduler import logs  # noqa: PLC0415
    from scheduler.kube import app  # noqa: PLC0415

    failures = [ConnectionError("Cannot connect to host 127.0.0.1:1"), OSError("Unauthorized")]

    async def list_uids(_api: object) -> set[str]:
        if failures:
            raise failures.pop(0)
        return {"node"}

    monkeypatch.setattr(app, "_list_uids", list_uids)
    monkeypatch.setattr(app, "LIST_RETRY_INITIAL", 0.001)
    logs.configure("text", 0)
    try:
        assert asyncio.run(app._first_list(object(), asyncio.Event())) == {"node"}  # type: ignore[arg-type]
    finally:
        structlog.reset_defaults()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all('"Failed to list the cluster; retrying"' in line for line in lines), lines
    assert 'err="Cannot connect to host 127.0.0.1:1" attempt=1' in lines[0] and "attempt=2" in lines[1]


def test_start_up_waiting_for_the_api_server_ends_on_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.kube import app  # noqa: PLC0415

    async def never(_api: object) -> set[str]:
        raise ConnectionError("refused")

    monkeypatch.setattr(app, "_list_uids", never)

    async def main() -> set[str] | None:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, stop.set)
        return await asyncio.wait_for(app._first_list(object(), stop), 5)  # type: ignore[arg-type]

    assert asyncio.run(main()) is None


def test_in_cluster_login_goes_where_kubernetes_service_host_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """kopf's handler would connect to kubernetes.default.svc (cluster DNS); client-go uses the env."""
    from scheduler.kube import watch  # noqa: PLC0415

    files = kopf.ConnectionInfo(server="https://kubernetes.default.svc", token="t", ca_path="/ca.crt")
    monkeypatch.setattr(watch.kopf, "login_with_service_account", lambda **_: files)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    info = watch.login_in_cluster()
    assert info is not None and (info.server, info.token, info.ca_path) == ("https://10.96.0.1:443", "t", "/ca.crt")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert (watch.login_in_cluster() or files).server == "https://[fd00::1]:443"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert watch.login_in_cluster() is files  # not in a pod's environment: kopf's own default
    monkeypatch.setattr(watch.kopf, "login_with_service_account", lambda **_: None)
    assert watch.login_in_cluster() is None  # no token file: no in-cluster credentials


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
