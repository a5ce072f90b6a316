"""``spread-scheduler run``: kopf watches, the scheduler decides, ``kubernetes.aio`` writes. One event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

import kopf
import structlog
from kubernetes.aio import client
from kubernetes.aio import config as kube_config

from scheduler.config import SchedulerConfig
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.kube.gc_policy import gc_housekeeping
from scheduler.kube.leader import run_with_leader_election, with_lease_namespace
from scheduler.kube.listing import list_objects
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.resync import ApiTrouble, KopfOutageHandler, resync_loop
from scheduler.kube.server import HealthServer
from scheduler.kube.watch import build_registry
from scheduler.kube.writes import ApiBinder, ApiRecorder, RateLimiter
from scheduler.scheduler import Scheduler

__all__ = ["configure_logging", "run_scheduler"]

log = structlog.get_logger("spread-scheduler")

SYNC_WARNING_AFTER = 30.0
RELIST_EVERY = 5.0


def configure_logging(level: int = logging.INFO) -> None:
    """One line per event; JSON unless a person is watching a terminal."""
    renderer: Any = structlog.dev.ConsoleRenderer() if sys.stderr.isatty() else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


async def api_client(kubeconfig: str | None) -> client.ApiClient:
    if kubeconfig or os.environ.get("KUBECONFIG") or os.path.exists(os.path.expanduser("~/.kube/config")):
        api: client.ApiClient = await kube_config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    else:
        kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
        api = client.ApiClient()
    if not any(os.environ.get(name) for name in PROXY_VARIABLES):
        # aiohttp's trust_env reads ~/.netrc in a worker thread on every request: with no proxy to
        # honour, that is pure cost (it showed in the profile of a 1,000-pod burst).
        api.configuration.client_session_kwargs = {"trust_env": False}
    return api


async def _list_uids(api: client.ApiClient) -> set[str]:
    """UIDs of every node and non-terminal pod right now: the cache is synced once it saw them all."""
    uids: set[str] = set()
    for kind in ("Node", "Pod"):
        listing = await list_objects(api, kind)
        uids.update(o.uid for o in listing.objects.values() if not o.terminal)
    return uids


async def _wait_for_sync(
    api: client.ApiClient, sched: Scheduler, operator: asyncio.Task[None], stop: asyncio.Event
) -> bool:
    """Like ``WaitForCacheSync``: no decision is made on a cache that misses objects that exist.

    Objects deleted after our list never reach the watch: every ``RELIST_EVERY`` seconds the list is
    taken again and only what still exists stays wanted (a namespace being emptied cannot stall the
    start). Waits as long as it takes (with a warning now and then); False if kopf died or we were stopped.
    """
    wanted = await _list_uids(api)
    warn_at = time.monotonic() + SYNC_WARNING_AFTER
    relist_at = time.monotonic() + RELIST_EVERY
    while True:
        missing = wanted - sched.seen_uids
        if not missing:
            return True
        if operator.done() or stop.is_set():
            return False
        now = time.monotonic()
        if now > relist_at:
            with contextlib.suppress(Exception):  # the API away for a moment: keep the old list
                wanted &= await _list_uids(api)
            relist_at = time.monotonic() + RELIST_EVERY
        if now > warn_at:
            log.warning("cache not synced yet", missing=len(missing))
            warn_at = now + SYNC_WARNING_AFTER
        await asyncio.sleep(0.05)


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
    metrics.watch_queue(sched.queue.pending_counts)


def _handle_signals(stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT set ``stop``: the loop finishes in-flight bindings, then kopf is stopped."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)  # a scheduler pod serves its probes on all interfaces


async def run_scheduler(
    config: SchedulerConfig,
    kubeconfig: str | None = None,
    *,
    health_address: str = "0.0.0.0:10251",
    stop: asyncio.Event | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``); finish in-flight bindings; exit 0."""
    kubeconfig = kubeconfig or config.kubeconfig
    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig  # kopf's login handler reads it
    api = await api_client(kubeconfig)
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
    sched = Scheduler(
        config,
        ApiBinder(api, limiter, trouble.observe),
        ApiRecorder(api, limiter, name, instance, event_limiter, trouble.observe),
        extenders=extenders,
    )
    _attach_metrics(sched, metrics)
    server = HealthServer(metrics, lambda: sched.synced, lambda: metrics.sync_incoming(sched.queue.incoming))
    host, port = _split_address(health_address)
    await server.start(host, port)
    log.info("serving /healthz /readyz /metrics", address=f"{host}:{server.port}")
    stop = stop or asyncio.Event()
    _handle_signals(stop)

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
        if await _wait_for_sync(api, sched, operator, stop):
            sched.synced = True
            log.info("cache synced", nodes=len(sched.cache.node_infos()), profiles=list(sched.frameworks))
            resync = asyncio.create_task(resync_loop(api, sched, trouble, stop), name="resync")
            housekeeping = asyncio.create_task(gc_housekeeping(stop), name="gc-housekeeping")
            try:
                await run_with_leader_election(
                    api,
                    lease,
                    identity,
                    sched.run,
                    stop,
                    lambda leading: metrics.leader.labels(lease.resource_name).set(1 if leading else 0),
                    trouble.report,
                )
            finally:
                for task in (resync, housekeeping):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    finally:
        kopf_stop.set()
        if operator.done() and not kopf_stop_requested(operator):
            exit_code = 1
            log.error("the watch layer (kopf) stopped; exiting", error=repr(operator.exception()))
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(operator, timeout=10)
        logging.getLogger("kopf").removeHandler(kopf_trouble)
        await server.stop()
        await close_extenders(extenders)
        await api.close()  # type: ignore[no-untyped-call]
    log.info("stopped", bound=sched.stats.bound, attempts=sched.stats.attempts)
    return exit_code


def kopf_stop_requested(operator: asyncio.Task[None]) -> bool:
    """True when kopf ended cleanly (we asked it to); False when it died on its own."""
    return not operator.cancelled() and operator.exception() is None
