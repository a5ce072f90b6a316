"""``spread-scheduler run``: kopf watches, the scheduler decides, ``kubernetes.aio`` writes. One event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
import sys
import time
from dataclasses import dataclass
from typing import Any

import kopf
import structlog
from kubernetes.aio import client
from kubernetes.aio import config as kube_config

from scheduler.config import SchedulerConfig
from scheduler.kube.delegated_auth import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    api_reviews,
)
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.kube.gc_policy import gc_housekeeping
from scheduler.kube.leader import run_with_leader_election, with_lease_namespace
from scheduler.kube.listing import list_objects
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.resync import ApiTrouble, KopfOutageHandler, resync_loop
from scheduler.kube.server import SecureServer, ServingAuth, bind_host, serving_ssl_context
from scheduler.kube.watch import build_registry
from scheduler.kube.writes import ApiBinder, ApiRecorder, RateLimiter
from scheduler.scheduler import Scheduler

__all__ = ["SecureServing", "ServingError", "configure_logging", "run_scheduler"]

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
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``); finish in-flight bindings; exit 0."""
    serving = serving or SecureServing()
    try:
        tls = serving_tls(serving)
    except ServingError as exc:
        log.error(str(exc))
        return 1
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
    try:
        server = _start_server(serving, tls, kubeconfig, sched, metrics)
    except ServingError as exc:
        log.error(str(exc))
        logging.getLogger("kopf").removeHandler(kopf_trouble)
        await close_extenders(extenders)
        await api.close()  # type: ignore[no-untyped-call]
        return 1
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
        if server is not None:
            server.stop()
        await close_extenders(extenders)
        await api.close()  # type: ignore[no-untyped-call]
    log.info("stopped", bound=sched.stats.bound, attempts=sched.stats.attempts)
    return exit_code


def kopf_stop_requested(operator: asyncio.Task[None]) -> bool:
    """True when kopf ended cleanly (we asked it to); False when it died on its own."""
    return not operator.cancelled() and operator.exception() is None
