"""``spread-scheduler run``: kopf watches, the scheduler decides, ``kubernetes.aio`` writes. One event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import kopf
import structlog
from kubernetes.aio import client
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential_jitter

from scheduler.config import SchedulerConfig
from scheduler.kube.client import KubeconfigError, api_client
from scheduler.kube.delegated_auth import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    api_reviews,
)
from scheduler.kube.deletion_cost import ApiCostWriter, DeletionCostKeeper
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.kube.gc_policy import gc_housekeeping
from scheduler.kube.leader import Leadership, LeadershipLost, run_with_leader_election, with_lease_namespace
from scheduler.kube.listing import list_uids
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.preemption import AsyncPreemption
from scheduler.kube.resync import ApiTrouble, KopfOutageHandler, resync_loop
from scheduler.kube.server import SecureServer, ServingAuth, bind_host, serving_ssl_context
from scheduler.kube.tls_buffers import use_small_tls_read_buffers
from scheduler.kube.volumes import ApiVolumeBinder
from scheduler.kube.watch import build_registry
from scheduler.kube.writes import ApiBinder, ApiPodWriter, ApiRecorder, ApiWrites, RateLimiter
from scheduler.scheduler import Scheduler

__all__ = ["SecureServing", "ServingError", "run_scheduler"]

log = structlog.get_logger("spread-scheduler")

SYNC_WARNING_AFTER = 30.0
RELIST_EVERY = 5.0


async def _list_uids(api: client.ApiClient) -> set[str]:
    """UIDs of every node and non-terminal pod right now: the cache is synced once it saw them all."""
    return await list_uids(api, "Node") | await list_uids(api, "Pod")


# client-go's reflector backs a failed list off from 800 ms to 30 s and never gives up: nor do we.
LIST_RETRY_INITIAL = 0.8
LIST_RETRY_MAX = 30.0
_UNANSWERED = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def _log_list_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    log.error(
        "Failed to list the cluster; retrying",
        err=_one_line(exc),
        attempt=state.attempt_number,
        retry_in=round(delay, 1),
    )


def _one_line(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else ""
    return " ".join(text.split()) or type(exc).__name__


async def _first_list(api: client.ApiClient, stop: asyncio.Event) -> set[str] | None:
    """The UIDs the cache must see before deciding, listed as soon as the API server answers; None if stopped.

    kube-scheduler starts with an unreachable (or refusing) API server and its informers retry for
    as long as it takes; so does this list, one line per failure, before kopf starts (kopf gives up
    after nine tries and would take the process down).
    """

    async def listing() -> set[str]:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(_UNANSWERED),
            wait=wait_exponential_jitter(multiplier=LIST_RETRY_INITIAL, max=LIST_RETRY_MAX, jitter=LIST_RETRY_INITIAL),
            before_sleep=_log_list_retry,
            reraise=True,
        ):
            with attempt:
                return await _list_uids(api)
        raise AssertionError("unreachable: the retrying loop either returns or raises")

    listed, stopping = asyncio.ensure_future(listing()), asyncio.ensure_future(stop.wait())
    await asyncio.wait({listed, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for task in (listed, stopping):
        task.cancel()
    if not listed.done() or listed.cancelled():
        return None
    return listed.result()


async def _wait_for_sync(
    api: client.ApiClient, sched: Scheduler, operator: asyncio.Task[None], stop: asyncio.Event, wanted: set[str]
) -> bool:
    """Like ``WaitForCacheSync``: no decision is made on a cache that misses objects that exist.

    Objects deleted after our list never reach the watch: once the watch has brought nothing we still
    wait for in ``RELIST_EVERY`` seconds, the list is taken again and only what still exists stays
    wanted (a namespace being emptied cannot stall the start). Not while objects keep arriving: a
    list of a large cluster costs the loop seconds that the watch's first list needs. Waits as long
    as it takes (with a warning now and then); False if kopf died or we were stopped.
    """
    warn_at = time.monotonic() + SYNC_WARNING_AFTER
    relist_at = time.monotonic() + RELIST_EVERY
    left = len(wanted)
    while True:
        missing = wanted - sched.seen_uids
        if not missing:
            return True
        if operator.done() or stop.is_set():
            return False
        now = time.monotonic()
        if len(missing) < left:  # progress: the stall clock starts again
            left, relist_at = len(missing), now + RELIST_EVERY
        if now > relist_at:
            with contextlib.suppress(Exception):  # the API away for a moment: keep the old list
                wanted &= await _list_uids(api)
            relist_at = time.monotonic() + RELIST_EVERY
        if now > warn_at:
            log.warning("cache not synced yet", missing=len(missing))
            warn_at = now + SYNC_WARNING_AFTER
        await asyncio.sleep(0.05)


@dataclass(frozen=True, slots=True)
class SecureServing:
    """``run``'s secure-serving flags, named as kube-scheduler names them; ``secure_port`` 0 serves nothing."""

    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS


class ServingError(Exception):
    """The secure port cannot be served (unreadable certificate, port taken): the process exits 1."""


def serving_tls(serving: SecureServing) -> ssl.SSLContext | None:
    """The TLS context of the secure port; None when ``--secure-port=0``. Before any connection is made."""
    if serving.secure_port == 0:
        return None
    try:
        return serving_ssl_context(serving.tls_cert_file, serving.tls_private_key_file, serving.bind_address)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ServingError(f"unable to load --tls-cert-file/--tls-private-key-file: {exc}") from exc


def _start_server(
    serving: SecureServing,
    tls: ssl.SSLContext | None,
    kubeconfig: str | None,
    sched: Scheduler,
    metrics: SchedulerMetrics,
) -> SecureServer | None:
    if tls is None:
        log.info("secure serving disabled (--secure-port=0): no /healthz, /readyz, /livez or /metrics")
        return None

    async def delegated() -> ServingAuth:
        # A client of its own, on the server's loop: the scheduling loop's client cannot be shared.
        api = await api_client(kubeconfig)
        token_review, access_review = api_reviews(api)
        return ServingAuth(
            DelegatingAuthenticator(token_review),
            DelegatingAuthorizer(access_review, serving.always_allow_paths),
            api.close,
        )

    def publish() -> None:  # on the scheduling loop: the only place the queue is read
        metrics.publish_queue(sched.queue.pending_counts(), sched.queue.incoming)

    publish()
    server = SecureServer(
        metrics,
        lambda: sched.synced,
        before_scrape=publish,
        scheduler_loop=asyncio.get_running_loop(),
        make_auth=delegated,
        ssl_context=tls,
    )
    try:
        server.start(bind_host(serving.bind_address), serving.secure_port)
    except OSError as exc:
        raise ServingError(f"failed to start secure server: {exc}") from exc  # upstream's words
    address = f"{serving.bind_address}:{server.port}"
    log.info(f"Serving securely on {address}", address=address)  # upstream's line; tests read the address
    return server


def _attach_metrics(sched: Scheduler, metrics: SchedulerMetrics) -> None:
    def on_attempt(attempt: Any, seconds: float) -> None:
        result = "scheduled" if attempt.host else ("unschedulable" if attempt.status.is_rejected() else "error")
        metrics.observe_attempt(result, attempt.pod.scheduler_name, seconds)

    def on_bound(qpi: Any, now: float) -> None:
        first = qpi.initial_attempt_timestamp if qpi.initial_attempt_timestamp is not None else now
        metrics.observe_bound(qpi.attempts, max(0.0, now - first))

    for fwk in sched.frameworks.values():
        fwk.plugin_observer = metrics.plugin_duration.observe
    sched.attempt_observers.append(on_attempt)
    sched.bound_observers.append(on_bound)


def _handle_signals(stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT set ``stop``: the loop finishes in-flight bindings, then kopf is stopped."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


async def run_scheduler(
    config: SchedulerConfig,
    kubeconfig: str | None = None,
    *,
    serving: SecureServing | None = None,
    stop: asyncio.Event | None = None,
    scale_down_spread: bool = True,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``); finish in-flight bindings; exit 0.

    ``scale_down_spread``: keep the pod-deletion-cost of our ReplicaSets' pods (``--scale-down-spread``)."""
    serving = serving or SecureServing()
    use_small_tls_read_buffers()  # before the first connection: each keeps the buffer it opened with
    try:
        tls = serving_tls(serving)
    except ServingError as exc:
        log.error("command failed", err=str(exc))
        return 1
    kubeconfig = kubeconfig or config.kubeconfig
    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig  # kopf's login handler reads it
    try:
        api = await api_client(kubeconfig)
    except KubeconfigError as exc:
        log.error("command failed", err=str(exc))
        return 1
    limiter = RateLimiter(config.qps, config.burst)
    name = config.profiles[0].scheduler_name
    hostname = socket.gethostname()
    instance = f"{name}-{hostname}"
    event_limiter = RateLimiter(config.qps, config.burst)
    metrics = SchedulerMetrics()
    trouble = ApiTrouble(lambda outcome: metrics.api_requests.labels(outcome).inc())
    kopf_trouble = KopfOutageHandler(trouble)
    logging.getLogger("kopf").addHandler(kopf_trouble)
    extenders = http_extenders(config.extenders)
    # The fence every write asks first: with leader election, only a leader sure of its lease writes.
    leader_election = config.leader_election
    leadership = Leadership(leader_election.renew_deadline if leader_election.leader_elect else None)
    writes = ApiWrites(api)
    recorder = ApiRecorder(writes, limiter, name, instance, event_limiter, trouble.observe, leadership.sure)
    binder = ApiBinder(writes, limiter, trouble.observe, leadership.sure)
    sched = Scheduler(config, binder, recorder, extenders=extenders)
    preemption = AsyncPreemption(
        ApiPodWriter(writes, limiter, trouble.observe, leadership.sure),
        recorder,
        sched.queue,
        sched.cache.pod,
        sched.queue.activate,
    )
    sched.use_preemption(preemption, preemption.drain)
    sched.use_volume_binder(ApiVolumeBinder(writes, limiter, sched.cache.storage, trouble.observe, leadership.sure))
    _attach_metrics(sched, metrics)
    keeper = None
    if scale_down_spread:
        keeper = DeletionCostKeeper(
            sched.cache,
            sched.frameworks,
            ApiCostWriter(writes, limiter, trouble.observe, leadership.sure),
            leadership.sure,
        )
        sched.handlers.pod_changes.append(keeper.pod_changed)
        sched.handlers.node_changes.append(keeper.node_changed)
    try:
        server = _start_server(serving, tls, kubeconfig, sched, metrics)
    except ServingError as exc:
        log.error("command failed", err=str(exc))
        logging.getLogger("kopf").removeHandler(kopf_trouble)
        await close_extenders(extenders)
        await writes.close()
        await api.close()  # type: ignore[no-untyped-call]
        return 1
    stop = stop or asyncio.Event()
    _handle_signals(stop)
    wanted = await _first_list(api, stop)
    if wanted is None:  # stopped before the API server ever answered
        logging.getLogger("kopf").removeHandler(kopf_trouble)
        if server is not None:
            server.stop()
        await close_extenders(extenders)
        await writes.close()
        await api.close()  # type: ignore[no-untyped-call]
        log.info("stopped", bound=0, attempts={})
        return 0

    kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event()
    registry = build_registry(sched.on_object)
    operator = asyncio.create_task(
        kopf.operator(registry=registry, clusterwide=True, standalone=True, stop_flag=kopf_stop, ready_flag=kopf_ready),
        name="kopf",
    )
    # A dead watch layer means a blind scheduler: stop scheduling and exit non-zero.
    operator.add_done_callback(lambda _task: stop.set())
    lease = with_lease_namespace(config.leader_election, os.environ)
    identity = f"{hostname}_{os.getpid()}_{time.time_ns():x}"
    exit_code = 0
    try:
        ready_wait = asyncio.ensure_future(kopf_ready.wait())
        await asyncio.wait({ready_wait, operator}, return_when=asyncio.FIRST_COMPLETED)
        ready_wait.cancel()
        _handle_signals(stop)  # kopf installed its own handlers on start: ours must decide the shutdown
        if await _wait_for_sync(api, sched, operator, stop, wanted):
            sched.synced = True
            log.info("cache synced", nodes=len(sched.cache.node_infos()), profiles=list(sched.frameworks))
            resync = asyncio.create_task(resync_loop(api, sched, trouble, stop), name="resync")
            housekeeping = asyncio.create_task(gc_housekeeping(stop), name="gc-housekeeping")
            background = [resync, housekeeping]
            if keeper is not None:
                background.append(asyncio.create_task(keeper.run(stop), name="deletion-costs"))
            try:
                await run_with_leader_election(
                    api,
                    lease,
                    identity,
                    sched.run,
                    stop,
                    lambda leading: metrics.leader.labels(lease.resource_name).set(1 if leading else 0),
                    trouble.report,
                    leadership,
                    renew_api=lambda: client.ApiClient(api.configuration),
                )
            except LeadershipLost as exc:
                # Upstream exits 1 on "Leaderelection lost": a restarted replica rejoins as a follower.
                log.error("Leaderelection lost", err=str(exc))
                exit_code = 1
            finally:
                for task in background:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    finally:
        kopf_stop.set()
        if operator.done() and not kopf_stop_requested(operator):
            exit_code = 1
            log.error("the watch layer (kopf) stopped; exiting", err=repr(operator.exception()))
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(operator, timeout=10)
        logging.getLogger("kopf").removeHandler(kopf_trouble)
        if server is not None:
            server.stop()
        await close_extenders(extenders)
        await writes.close()
        await api.close()  # type: ignore[no-untyped-call]
    log.info("stopped", bound=sched.stats.bound, attempts=sched.stats.attempts)
    return exit_code


def kopf_stop_requested(operator: asyncio.Task[None]) -> bool:
    """True when kopf ended cleanly (we asked it to); False when it died on its own."""
    return not operator.cancelled() and operator.exception() is None
