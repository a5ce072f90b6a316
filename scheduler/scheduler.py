"""The scheduler: profiles, cache, queue, event handlers and cycles wired together, and the run loop.

No API client here: writes go through the ``Binder`` and ``Recorder`` seams and extenders come in
built, so the whole loop runs against ``scheduler.kube`` in production and in memory in
``simulate`` and the tests.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.scheduling_queue import UNSCHEDULABLE_FLUSH_PERIOD, SchedulingQueue
from scheduler.config import SchedulerConfig
from scheduler.eventhandlers import EventHandlers, HeldChanges
from scheduler.framework.extender import Extender
from scheduler.framework.interface import Binder, PreemptionSink, Recorder, VolumeBinder
from scheduler.framework.runtime import Framework
from scheduler.plugins.dynamicresources.plugin.claimwrites import ClaimWriter
from scheduler.plugins.dynamicresources.plugin.plugin import BindingConditionsMetrics, StructuredDynamicResources
from scheduler.plugins.names import DYNAMIC_RESOURCES
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.schedule_one import Progress, ScheduleOne, SchedulerStats, SchedulingAlgorithm

# Seconds a stop gives the status patches and Events still waiting for the rate limiter, after the
# last binding: a stop must end within the pod's termination grace period (30 s by default).
REPORT_GRACE = 2.0

__all__ = ["Recorder", "Scheduler", "SchedulerStats"]


class Scheduler:
    """Owns the profiles, the cache and the queue; ``run`` is the scheduling loop.

    ``extenders`` are the clients of ``config.extenders`` (``scheduler.kube.extender``), made and
    closed by the caller that owns their connections.
    """

    def __init__(
        self,
        config: SchedulerConfig,
        binder: Binder,
        recorder: Recorder,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        extenders: Sequence[Extender] = (),
        bind_through_extenders: bool = True,
    ) -> None:
        if config.extenders and len(extenders) != len(config.extenders):
            raise ValueError("the configuration has extenders: pass their clients (scheduler.kube.extender)")
        self.config = config
        self.extenders = list(extenders)
        self.frameworks: dict[str, Framework] = build_frameworks(config, binder, self.extenders)
        self.clock = clock
        self._wakeup = asyncio.Event()
        self.cache = Cache(requests_rule=config.features.pod_requests_rule)
        self.queue = SchedulingQueue(
            self.frameworks,
            sort_key=queue_sort_key(self.frameworks),
            clock=clock,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            on_change=self._wakeup.set,
        )
        whole_nodes = any(not e.node_cache_capable for e in config.extenders)
        self.handlers = EventHandlers(
            self.cache, self.queue, self.frameworks, HeldChanges(), whole_nodes=whole_nodes, features=config.features
        )
        # The nominator checks that a pod it nominates still waits unbound (upstream: its podLister),
        # and Filter counts the nominated pods through each profile's handle.
        self.queue.nominator.pod_lister = self.handlers.pending.get
        for fwk in self.frameworks.values():
            fwk.handle.nominator = self.queue
            dra = fwk.plugins.get(DYNAMIC_RESOURCES)
            if isinstance(dra, StructuredDynamicResources):
                dra.use_lister(self.cache.storage)  # PreEnqueue and the hints run outside any cycle
        self.algorithm = SchedulingAlgorithm(rng)
        self.cycles = ScheduleOne(
            self.frameworks,
            self.handlers,
            self.algorithm,
            recorder,
            clock=clock,
            bind_through_extenders=bind_through_extenders,
        )
        self.recorder = recorder
        self._drain_preemption: Callable[[], Awaitable[None]] | None = None
        # The faces the kube layer and the tests use.
        self.on_object = self.handlers.on_object
        self.reconcile = self.handlers.reconcile
        self.schedule_one = self.cycles.schedule_one
        self.schedule_one_async = self.cycles.schedule_one_async
        self.stats = self.cycles.stats
        self.attempt_observers = self.cycles.attempt_observers
        self.bound_observers = self.cycles.bound_observers
        self.binding_failure_observers = self.cycles.binding_failure_observers
        self.pods_in_pre_bind = self.cycles.pods_in_pre_bind

    def use_volume_binder(self, volume_binder: VolumeBinder) -> None:
        """VolumeBinding binds claims that wait for their first consumer through ``volume_binder``
        (without one it refuses such pods)."""
        for fwk in self.frameworks.values():
            fwk.handle.volume_binder = volume_binder

    def use_claim_writer(self, writer: ClaimWriter) -> None:
        """DynamicResources' PreBind writes its claims through ``writer`` (``scheduler.kube.resourceclaims``
        in ``run``, memory in ``simulate``); without one it fails the binding of a pod with claims to write."""
        for fwk in self.frameworks.values():
            plugin = fwk.plugins.get(DYNAMIC_RESOURCES)
            if isinstance(plugin, StructuredDynamicResources):
                plugin.claim_writer = writer

    def use_binding_conditions_metrics(self, metrics_of: Callable[[str], BindingConditionsMetrics]) -> None:
        """DynamicResources' PreBind counts its waits for binding conditions in ``metrics_of(profile)``
        (``scheduler.kube.metrics``, where the minor has these metrics)."""
        for name, fwk in self.frameworks.items():
            plugin = fwk.plugins.get(DYNAMIC_RESOURCES)
            if isinstance(plugin, StructuredDynamicResources):
                plugin.binding_metrics = metrics_of(name)

    def use_preemption(self, sink: PreemptionSink, drain: Callable[[], Awaitable[None]] | None = None) -> None:
        """Where DefaultPreemption's decisions go (``scheduler.kube.preemption`` in ``run``);
        ``drain`` waits for the writes in flight when the loop stops."""
        for fwk in self.frameworks.values():
            fwk.handle.preemption = sink
        self._drain_preemption = drain

    def use_progress(self, progress: Progress) -> None:
        """Who hears that the scheduler gets on: each time round the loop, each bind (``run``'s health)."""
        self.cycles.progress = progress

    @property
    def pending(self) -> Mapping[PodKey, Pod]:
        return self.handlers.pending

    @property
    def synced(self) -> bool:
        return self.handlers.synced

    @synced.setter
    def synced(self, value: bool) -> None:
        self.handlers.synced = value

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set, then let in-flight bindings finish.

        Comes round after every cycle and at least once a second when idle, and says so (``Progress``):
        a cycle that never ends, on an await that never returns, shows as a loop that stopped coming round.
        """
        progress = self.cycles.progress
        progress.scheduling(True)
        for fwk in self.frameworks.values():
            fwk.handle.stopping.clear()  # a run after an earlier one's stop
        try:
            await self._loop(stop, progress)
        finally:
            progress.scheduling(False)
            # Stopped, or cancelled on a lost lease: a PreBind still waiting (for binding conditions)
            # ends now rather than holding the stop for up to its timeout.
            for fwk in self.frameworks.values():
                fwk.handle.stopping.set()
        await self.drain(report_grace=REPORT_GRACE)

    async def _loop(self, stop: asyncio.Event, progress: Progress) -> None:
        last_flush = self.clock()
        while not stop.is_set():
            progress.came_round()
            now = self.clock()
            if now - last_flush >= UNSCHEDULABLE_FLUSH_PERIOD:
                self.queue.flush_unschedulable_leftover()
                last_flush = now
            if await self.schedule_one_async() if self.extenders else self.schedule_one():
                await asyncio.sleep(0)  # let watch events in between two cycles
                continue
            self._wakeup.clear()
            waiter = asyncio.ensure_future(self._wakeup.wait())
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()

    async def drain(self, report_grace: float | None = None) -> None:
        """Let every binding cycle and write in flight finish (reports: ``ScheduleOne.drain``)."""
        await self.cycles.drain(report_grace)
        if self._drain_preemption is not None:
            await self._drain_preemption()
