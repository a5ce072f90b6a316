"""``spread-scheduler run``: the informer watches, the scheduler decides, ``kubernetes.aio`` writes. One event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from kubernetes.aio import client

from scheduler import __version__
from scheduler.config import ConfigError, SchedulerConfig
from scheduler.features import Features
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client.apiclient import KubeconfigError, api_client
from scheduler.kube.client.informer import Informer
from scheduler.kube.client.tls_buffers import use_small_tls_read_buffers
from scheduler.kube.client.version import VersionError
from scheduler.kube.client.watch import KopfEngine, watch_session, watched
from scheduler.kube.controllers.deletion_cost import ApiCostWriter, DeletionCostKeeper, cost_limiter
from scheduler.kube.controllers.rebalance import ApiEvictor, Rebalancer
from scheduler.kube.controllers.workload_marks import WorkloadMarker
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.gc_policy import gc_housekeeping
from scheduler.kube.kube_version import KubeVersion, decide_as, read_decided
from scheduler.kube.leader import Leadership, LeadershipLost, run_with_leader_election, with_lease_namespace
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.preemption import ApiPodWriter, AsyncPreemption
from scheduler.kube.progress import LoopProgress
from scheduler.kube.record import ApiRecorder
from scheduler.kube.resourceclaims import ApiClaimWriter
from scheduler.kube.serving.delegated_auth import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    api_reviews,
)
from scheduler.kube.serving.server import SecureServer, ServingAuth, bind_host, serving_ssl_context
from scheduler.kube.teardown import LOST_EXIT_BOUND, ExitWatchdog, Teardown
from scheduler.kube.volumes import ApiVolumeBinder
from scheduler.kube.writes import ApiWriter, ApiWrites
from scheduler.scheduler import Scheduler

__all__ = ["Rebalancing", "SecureServing", "ServingError", "run_scheduler"]

log = structlog.get_logger("spread-scheduler")

SYNC_WARNING_AFTER = 30.0


async def _wait_for_sync(informer: Informer, watching: asyncio.Task[None], stop: asyncio.Event) -> bool:
    """``WaitForCacheSync``: True once every kind's first list is in the cache; False if stopped or
    the informer died. Waits as long as it takes (the lists retry), with a line now and then."""
    waiters = {asyncio.ensure_future(informer.synced.wait()), asyncio.ensure_future(stop.wait()), watching}
    try:
        while True:
            done, _ = await asyncio.wait(waiters, timeout=SYNC_WARNING_AFTER, return_when=asyncio.FIRST_COMPLETED)
            if done:
                return informer.has_synced and not stop.is_set()
            log.warning("cache not synced yet", waiting_for=informer.unsynced())
    finally:
        for waiter in waiters - {watching}:
            waiter.cancel()


@dataclass(frozen=True, slots=True)
class SecureServing:
    """``run``'s secure-serving flags, named as kube-scheduler names them; ``secure_port`` 0 serves nothing."""

    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS


@dataclass(frozen=True, slots=True)
class Rebalancing:
    """``--rebalance`` (on: the opted-in workloads are rebalanced) and ``--rebalance-default`` (the
    opt-in of a workload whose pods carry no ``spread-scheduler.io/rebalance`` annotation)."""

    enabled: bool = True
    default: bool = False


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
    progress: LoopProgress,
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
        checks=[("scheduling-loop", progress.healthy)],
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
    if sched.config.features.enabled("DRADeviceBindingConditions"):
        sched.use_binding_conditions_metrics(metrics.binding_conditions())
    sched.attempt_observers.append(on_attempt)
    sched.bound_observers.append(on_bound)


def _handle_signals(stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT set ``stop``: the loop finishes in-flight bindings, then the informer is stopped."""
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
    rebalance: Rebalancing | None = None,
    kube_version: KubeVersion | None = None,
    compose: Callable[[Features], SchedulerConfig] | None = None,
    teardown: Teardown | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``); finish in-flight bindings; exit 0.

    ``scale_down_spread``: keep the pod-deletion-cost of our ReplicaSets' pods (``--scale-down-spread``);
    ``rebalance``: move pods of opted-in workloads back within their skew (``--rebalance``);
    ``kube_version``: decide as ``--kube-version``, else as the API server's ``/version`` says, with
    ``compose`` making the configuration at that minor (None: as ``config`` is, no ``/version`` read).
    A server we cannot decide for is refused (exit 2) before anything is watched, or, when it was
    away at start, once the cache has synced and before anything is scheduled. ``teardown`` names
    the steps of the way out (its caller, who owns the loop, ends with its ``remaining_tasks``)."""
    serving = serving or SecureServing()
    use_small_tls_read_buffers()  # before the first connection: each keeps the buffer it opened with
    kubeconfig = kubeconfig or config.kubeconfig
    try:
        tls = serving_tls(serving)
        api = await api_client(kubeconfig)
    except (ServingError, KubeconfigError) as exc:
        log.error("command failed", err=str(exc))
        return 1
    stop = stop or asyncio.Event()
    _handle_signals(stop)
    owned = teardown is None
    teardown = teardown or Teardown()
    watchdog = ExitWatchdog(teardown, LOST_EXIT_BOUND)
    code = await _run(
        config,
        kubeconfig,
        serving,
        tls,
        api,
        stop,
        teardown,
        watchdog,
        scale_down_spread,
        rebalance,
        kube_version,
        compose,
    )
    if owned:  # no process of ours to end: the caller's (a test's) life goes on
        watchdog.disarm()
    return code


async def _run(
    config: SchedulerConfig,
    kubeconfig: str | None,
    serving: SecureServing,
    tls: ssl.SSLContext | None,
    api: client.ApiClient,
    stop: asyncio.Event,
    teardown: Teardown,
    watchdog: ExitWatchdog,
    scale_down_spread: bool,
    rebalance: Rebalancing | None,
    kube_version: KubeVersion | None,
    compose: Callable[[Features], SchedulerConfig] | None,
) -> int:
    """``run_scheduler`` up to its exit code, each step of its teardown named (``teardown``)."""
    step, awaited = teardown.sync, teardown.awaited
    async with contextlib.AsyncExitStack() as exits:
        exits.push_async_callback(awaited("closing the API client", api.close))
        metrics = SchedulerMetrics()
        server = ""
        unread: KubeVersion | None = None  # the version still to read: the API server was away at start
        if kube_version is not None:
            try:
                try:
                    decided = await read_decided(api, kube_version)
                except VersionError as exc:
                    # kube-scheduler starts with its API server away, its informers retrying until it
                    # answers: so do we, composed at the configuration's minor, and read the version again
                    # once the cache has synced, before anything is scheduled (_read_version_late).
                    log.warning("the API server's version is not known yet: read again once it answers", err=str(exc))
                    unread = kube_version
                    decided = decide_as(KubeVersion(config.features.minor, kube_version.gates), None)
                if compose is not None and decided.features != config.features:
                    config = compose(decided.features)
            except (VersionError, ValueError, ConfigError) as exc:
                log.error("command failed", err=str(exc))
                return 2
            if decided.warning:
                log.warning(decided.warning)
            server = decided.server
        _deciding_as(config, server, metrics)

        # The scheduler's progress: /healthz and the Lease renewals require it (scheduler.kube.progress).
        progress = LoopProgress()

        def count(outcome: str) -> None:
            metrics.api_requests.labels(outcome).inc()
            if outcome != "outage":  # the server answered (2xx, 429, another 4xx): writes get on
                progress.answered()

        sched, writes, leadership, keepers = _compose(
            config, api, metrics, count, scale_down_spread, rebalance or Rebalancing()
        )
        exits.push_async_callback(awaited("closing the writers' connections", writes.close))
        exits.push_async_callback(awaited("closing the extenders", close_extenders, sched.extenders))
        progress.beat_on(asyncio.get_running_loop())
        sched.use_progress(progress)
        exits.callback(step("stopping the heartbeat", progress.stop))
        try:
            secure = _start_server(serving, tls, kubeconfig, sched, metrics, progress)
        except ServingError as exc:
            log.error("command failed", err=str(exc))
            return 1
        if secure is not None:
            exits.callback(step("stopping the secure server", secure.stop))
        engine = KopfEngine(watch_session(api, lambda: count("outage")))
        await engine.__aenter__()
        exits.push_async_callback(awaited("closing the watch sessions", engine.__aexit__, None, None, None))
        informer = Informer(engine, sched.handlers, watched(config.features))
        watching = asyncio.create_task(informer.run(), name="informer")
        exits.push_async_callback(awaited("stopping the informer", _cancel, watching))
        # A dead informer means a blind scheduler: stop scheduling and exit non-zero.
        watching.add_done_callback(lambda _task: stop.set())
        if not await _wait_for_sync(informer, watching, stop):
            return _informer_exit(watching, sched)
        sched.synced = True
        log.info("cache synced", nodes=len(sched.cache.node_infos()), profiles=list(sched.frameworks))
        if unread is not None:
            late = await _read_version_late(api, unread, config, metrics)
            if late is not None:
                return late
        died: list[str] = []
        housekeeping = asyncio.create_task(gc_housekeeping(stop), name="gc-housekeeping")
        exits.push_async_callback(awaited("stopping the gc housekeeping", _cancel, housekeeping))
        housekeeping.add_done_callback(lambda task: _keeper_died(task, stop, died))
        for keeper in keepers:
            kept = asyncio.create_task(keeper.run(stop), name=type(keeper).__name__)
            exits.push_async_callback(awaited(f"stopping the {kept.get_name()}", _cancel, kept))
            # A keeper catches each workload's errors itself; one that dies anyway stops the process
            # (exit 1, restarted by its Deployment) rather than leaving spread unkept without a word.
            kept.add_done_callback(lambda task: _keeper_died(task, stop, died))
        lease = with_lease_namespace(config.leader_election, os.environ)
        identity = f"{socket.gethostname()}_{os.getpid()}_{time.time_ns():x}"
        try:
            await run_with_leader_election(
                api,
                lease,
                identity,
                sched.run,
                stop,
                lambda leading: metrics.leader.labels(lease.resource_name).set(1 if leading else 0),
                lambda: count("outage"),
                leadership,
                renew_api=lambda: client.ApiClient(api.configuration),
                progress=progress,
            )
        except LeadershipLost as exc:
            # Upstream exits 1 on "Leaderelection lost", at once: a restarted replica rejoins as a
            # follower. Our teardown is tidier, and bounded (teardown.ExitWatchdog).
            log.error("Leaderelection lost", err=str(exc))
            watchdog.arm(1)
            log.info("stopped", bound=sched.stats.bound, attempts=sched.stats.attempts)
            return 1
        return max(_informer_exit(watching, sched), 1 if died else 0)


async def _read_version_late(
    api: client.ApiClient, asked: KubeVersion, config: SchedulerConfig, metrics: SchedulerMetrics
) -> int | None:
    """The version the start could not read, read now that the server answers. None to go on: the
    server's minor is the one composed. Else an exit code, before anything is scheduled: 2 when the
    server cannot be decided for, 3 when it asks for another minor (a restart composes that one; the
    pipeline is not recomposed under a running informer)."""
    try:
        decided = await read_decided(api, asked)
    except (VersionError, ValueError) as exc:
        log.error("command failed", err=str(exc))
        return 2
    if decided.warning:
        log.warning(decided.warning)
    if decided.features != config.features:
        log.error(
            "the API server asks for another kube-scheduler minor than the one composed while it was away: "
            "exiting so that a restart decides as it",
            kube_version=decided.features.minor,
            composed=config.features.minor,
            server=decided.server,
        )
        return 3
    _deciding_as(config, decided.server, metrics)
    return None


def _deciding_as(config: SchedulerConfig, server: str, metrics: SchedulerMetrics) -> None:
    """Say which minor is decided as, for which server: one log line and the build_info series."""
    features = config.features
    metrics.build_info.clear()  # one series: the late read replaces the start's, whose server was unknown
    metrics.build_info.labels(__version__, features.minor, features.release, server).set(1)
    log.info("deciding as kube-scheduler", kube_version=features.minor, release=features.release, server=server)


def _compose(
    config: SchedulerConfig,
    api: client.ApiClient,
    metrics: SchedulerMetrics,
    count: Callable[[str], None],
    scale_down_spread: bool,
    rebalance: Rebalancing,
) -> tuple[Scheduler, ApiWrites, Leadership, list[WorkloadMarker]]:
    """The scheduler with its writers, each fenced by the Lease and rate-limited by the config's QPS."""
    limiter = RateLimiter(config.qps, config.burst)
    event_limiter = RateLimiter(config.qps, config.burst)
    name = config.profiles[0].scheduler_name
    instance = f"{name}-{socket.gethostname()}"
    # The fence every write asks first (an extender's bind too): with leader election, only a leader
    # sure of its lease writes.
    leader_election = config.leader_election
    leadership = Leadership(leader_election.renew_deadline if leader_election.leader_elect else None)
    extenders = http_extenders(config.extenders, leadership.sure)
    writes = ApiWrites(api)
    writer = ApiWriter(writes, limiter, count, leadership.sure)
    recorder = ApiRecorder(writer, name, instance, event_limiter)
    sched = Scheduler(config, ApiBinder(writer), recorder, extenders=extenders)
    preemption = AsyncPreemption(
        ApiPodWriter(writer),
        recorder,
        sched.queue,
        sched.cache.pod,
        sched.queue.activate,
        pods_in_pre_bind=sched.pods_in_pre_bind,
        features=config.features,
    )
    sched.use_preemption(preemption, preemption.drain)
    sched.use_volume_binder(ApiVolumeBinder(writer, sched.cache.storage))
    sched.use_claim_writer(ApiClaimWriter(writer, sched.cache.storage, config.features.minor))
    _attach_metrics(sched, metrics)
    keepers: list[WorkloadMarker] = []
    if scale_down_spread:
        # The costs' own bucket beneath the writer's (``cost_limiter``): never a Binding's token.
        costs = ApiCostWriter(writer, cost_limiter(limiter))
        keepers.append(DeletionCostKeeper(sched.cache, sched.frameworks, costs, leadership.sure, metrics=metrics))
    if rebalance.enabled:
        keepers.append(
            Rebalancer(
                sched.cache,
                sched.frameworks,
                ApiEvictor(writer),
                recorder,
                metrics,
                default=rebalance.default,
                pending=sched.handlers.pending.values,
                fence=leadership.sure,
            )
        )
    for keeper in keepers:
        sched.handlers.pod_changes.append(keeper.pod_changed)
        sched.handlers.node_changes.append(keeper.node_changed)
    return sched, writes, leadership, keepers


async def _cancel(task: asyncio.Task[None]) -> None:
    if task.done():  # ended on its own: what it raised was logged where it was seen
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _keeper_died(task: asyncio.Task[None], stop: asyncio.Event, died: list[str]) -> None:
    """A keeper's task ended on an exception: logged with its traceback, and the process stopped."""
    if task.cancelled() or task.exception() is None:
        return
    error = task.exception()
    log.error(f"the {task.get_name()} stopped; exiting", err=repr(error), exc_info=error)
    died.append(task.get_name())
    stop.set()


def _informer_exit(watching: asyncio.Task[None], sched: Scheduler) -> int:
    """0 when we were asked to stop; 1 when the informer died on its own (it never ends otherwise)."""
    code = 0
    if watching.done() and not watching.cancelled() and watching.exception() is not None:
        log.error("the informer stopped; exiting", err=repr(watching.exception()))
        code = 1
    log.info("stopped", bound=sched.stats.bound, attempts=sched.stats.attempts)
    return code
