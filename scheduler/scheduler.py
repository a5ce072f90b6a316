"""The live scheduler: event handlers feeding Cache and queue, the scheduling loop, binding cycles.

No API client here: writes go through the ``Binder`` and ``Recorder`` seams, so the whole loop
runs in tests against in-memory fakes and, in production, against ``scheduler.kube``.
Event handlers are synchronous: on one event loop they can never interleave with a scheduling
cycle, which is what lets the cache serve as the cycle's snapshot without copying.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal, Protocol

import structlog

from scheduler.api.objects import SELECTING_KINDS, Node, Pod, PodKey, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.scheduling_queue import QueuedPodInfo, SchedulingQueue
from scheduler.config import SchedulerConfig
from scheduler.errors import BindConflictError, PodGoneError
from scheduler.framework import events as ev
from scheduler.framework.extender import Extender, extenders_binding
from scheduler.framework.interface import Binder
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.profile import build_frameworks
from scheduler.schedule_one import Attempt, SchedulingAlgorithm

__all__ = ["Recorder", "Scheduler", "SchedulerStats"]

log = structlog.get_logger("spread-scheduler")

EVENT_NOTE_LIMIT = 1024
INVALID_POD_REJECTOR = "PodValidation"


class Recorder(Protocol):
    """The writes besides the Binding: the PodScheduled condition and Events."""

    async def set_unschedulable(self, pod: Pod, reason: str, message: str) -> None: ...

    async def event(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None: ...


@dataclasses.dataclass(slots=True)
class SchedulerStats:
    attempts: dict[str, int]
    bound: int = 0
    bind_failures: int = 0


def _truncate_note(message: str) -> str:
    """Events carry at most 1024 bytes: upstream keeps 1020 and appends " ..."."""
    data = message.encode()
    if len(data) <= EVENT_NOTE_LIMIT:
        return message
    return data[: EVENT_NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


class Scheduler:
    """Owns the cache, the queue and the profiles; ``run`` is the scheduling loop."""

    def __init__(
        self,
        config: SchedulerConfig,
        binder: Binder,
        recorder: Recorder,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        extenders: Sequence[Extender] | None = None,
    ) -> None:
        self.config = config
        # ``extenders`` replaces the HTTP clients of ``config.extenders`` (tests pass fakes).
        self._owns_extenders = extenders is None
        self.extenders: list[Extender] = list(http_extenders(config.extenders) if extenders is None else extenders)
        self.frameworks: dict[str, Framework] = build_frameworks(config, binder, self.extenders)
        # Cache changes held while a cycle awaits an extender (see ``schedule_one_async``).
        self._deferred: list[Callable[[], None]] | None = None
        self.cache = Cache()
        self.clock = clock
        self._wakeup = asyncio.Event()
        self.queue = SchedulingQueue(
            self.frameworks,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            on_change=self._wakeup.set,
        )
        self.algorithm = SchedulingAlgorithm(rng)
        self.recorder = recorder
        self._pending: dict[PodKey, Pod] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._reported: dict[PodKey, str] = {}
        self.stats = SchedulerStats(attempts={})
        self.attempt_observers: list[Callable[[Attempt, float], None]] = []
        self.bound_observers: list[Callable[[QueuedPodInfo, float], None]] = []  # (pod info, now)
        self.synced = False
        self.seen_uids: set[str] = set()  # recorded until the first sync, to know when the cache is complete

    # -- watch events ----------------------------------------------------------------------

    def on_node(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        if self._held(functools.partial(self.on_node, event_type, obj)):
            return
        now = self.clock()
        node = Node.from_dict(obj)
        if not node.name:
            log.warning("ignoring node without a name", errors=[str(e) for e in node.errors])
            return
        old_info = self.cache.get(node.name)
        if event_type == "DELETED":
            if old_info is not None:
                self.cache.remove_node(node.name)
                self.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, old_info.node, None, now)
            return
        if old_info is None:
            self.cache.add_node(node)
            self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node, now)
            return
        old = old_info.node
        if node.resource_version and node.resource_version == old.resource_version:
            return
        if _older(node.resource_version, old.resource_version):
            return  # an event older than the version we hold (integer resourceVersions): never go back
        self.cache.update_node(old, node)
        for event in ev.node_scheduling_properties_change(node, old):
            self.queue.move_all_to_active_or_backoff(event, old, node, now)

    def on_pod(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        if self._held(functools.partial(self.on_pod, event_type, obj)):
            return
        now = self.clock()
        pod = Pod.from_dict(obj)
        key = pod.key
        held = self.cache.pod(key) or self._pending.get(key)
        if event_type != "DELETED" and held is not None and _older(pod.resource_version, held.resource_version):
            return  # an event older than the version we hold (integer resourceVersions): never go back
        if event_type == "DELETED" or pod.terminal:
            self._forget_pod(pod, now)
            return
        if pod.assigned:
            if key in self._pending:
                del self._pending[key]
                self.queue.delete(key)
            old = self.cache.pod(key)
            was_assumed = self.cache.is_assumed(key)
            self.cache.add_pod(pod)
            if old is None or was_assumed:
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, pod, now)
            elif old.resource_version != pod.resource_version or not pod.resource_version:
                for event in ev.pod_scheduling_properties_change(pod, old, ev.EventResource.ASSIGNED_POD):
                    self.queue.move_all_to_active_or_backoff(event, old, pod, now)
            return
        if pod.scheduler_name not in self.frameworks:
            return  # not ours
        old_pending = self._pending.get(key)
        if self.cache.is_assumed(key):
            # Decided, binding in flight: no new attempt, but keep the latest version, which a failed
            # binding requeues (upstream re-reads the informer). A deletion that starts now frees the
            # assumed place at once (1.35 ``handleAssumedPodDeletion``).
            if old_pending is not None:
                self._pending[key] = pod
            assumed = self.cache.pod(key)
            if pod.terminating and not (old_pending is not None and old_pending.terminating) and assumed:
                self.cache.forget_pod(assumed)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None, now)
            return
        self._pending[key] = pod
        if old_pending is None:
            self.queue.add(pod, now)
        elif old_pending.resource_version != pod.resource_version or not pod.resource_version:
            self.queue.update(old_pending, pod, now)

    def _forget_pod(self, pod: Pod, now: float) -> None:
        key = pod.key
        self._reported.pop(key, None)
        if self._pending.pop(key, None) is not None:
            self.queue.delete(key)
        old = self.cache.pod(key)
        if old is not None:
            self.cache.remove_pod(old)
            self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old, None, now)

    def reconcile(self, kind: str, listed: Mapping[str, str], list_version: str) -> int:
        """Drop what a fresh LIST of ``kind`` (Pod or Node), taken at ``list_version``, no longer has.

        ``listed`` maps each listed key to its resourceVersion. As client-go's ``Replace`` does for
        deletions: an object we hold that the list lacks, and that is not newer than the list, was
        deleted while no watch told us; it becomes a DELETED event. Objects newer than the list are
        left to the watch, and so are additions and updates (the watch still delivers those).
        Returns how many objects were dropped.
        """
        handle = self.on_pod if kind == "Pod" else self.on_node
        held: dict[str, Pod | Node]
        if kind == "Pod":
            held = {pod.key: pod for pod in self.cache.pods()}
            held.update((str(key), pod) for key, pod in self._pending.items())
        else:
            held = {info.name: info.node for info in self.cache.node_infos()}
        removed = 0
        for key, obj in held.items():
            if key not in listed and not _newer(obj.resource_version, list_version):
                handle("DELETED", {**obj.raw, "kind": kind})
                removed += 1
        return removed

    def on_selecting_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Services, ReplicaSets, StatefulSets, ReplicationControllers: inputs of default spreading."""
        if self._held(functools.partial(self.on_selecting_object, event_type, obj)):
            return
        selecting = parse_selecting_object(obj)
        if selecting is None:
            return
        if event_type == "DELETED":
            self.cache.remove_selecting_object(selecting.kind, selecting.namespace, selecting.name)
        else:
            self.cache.upsert_selecting_object(selecting)

    def on_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        if not self.synced:
            meta = obj.get("metadata")
            uid = meta.get("uid") if isinstance(meta, Mapping) else None
            if isinstance(uid, str):
                self.seen_uids.add(uid)
        if kind == "Pod":
            self.on_pod(event_type, obj)
        elif kind == "Node":
            self.on_node(event_type, obj)
        elif kind in SELECTING_KINDS:
            self.on_selecting_object(event_type, obj)

    # -- the scheduling cycle ----------------------------------------------------------------

    def schedule_one(self) -> bool:
        """Pop one pod and decide it; the binding cycle continues as a task. False when idle."""
        cycle = self._next_cycle()
        if cycle is None or cycle is True:
            return cycle is True
        qpi, pod, fwk, now, started = cycle
        attempt = self.algorithm.schedule_pod(fwk, self.cache, pod)
        self._finish_cycle(qpi, fwk, attempt, now, started)
        return True

    async def schedule_one_async(self) -> bool:
        """``schedule_one`` for profiles with extenders: their calls are awaited mid-cycle.

        The cache is the cycle's snapshot, so watch events (and re-list reconciles, and forgetting
        a pod whose binding failed) that happen while an extender answers are held and applied right
        after the cycle, in order, as if they had happened then.
        """
        cycle = self._next_cycle()
        if cycle is None or cycle is True:
            return cycle is True
        qpi, pod, fwk, now, started = cycle
        self._deferred = []
        try:
            attempt = await self.algorithm.schedule_pod_async(fwk, self.cache, pod)
        finally:
            deferred, self._deferred = self._deferred, None
        self._finish_cycle(qpi, fwk, attempt, now, started)
        for change in deferred:
            change()
        return True

    def _held(self, change: Callable[[], None]) -> bool:
        """True when a cycle awaits an extender: ``change`` (a cache mutation) runs after that cycle."""
        if self._deferred is None:
            return False
        self._deferred.append(change)
        return True

    def _next_cycle(self) -> tuple[QueuedPodInfo, Pod, Framework, float, float] | Literal[True] | None:
        """The popped pod ready for a cycle; True when the pop needed no cycle; None when idle."""
        now = self.clock()
        qpi = self.queue.pop(now)
        if qpi is None:
            return None
        key = qpi.key
        pod = self._pending.get(key)
        if pod is None or self.cache.is_assumed(key):
            self.queue.done(key)
            return True
        qpi.pod = pod
        fwk = self.frameworks[pod.scheduler_name]
        if pod.terminating:
            self.queue.done(key)
            self._spawn(
                self.recorder.event(
                    pod, "Warning", "FailedScheduling", "Scheduling", f"skip schedule deleting pod: {key}"
                )
            )
            return True
        return qpi, pod, fwk, now, time.perf_counter()

    def _finish_cycle(self, qpi: QueuedPodInfo, fwk: Framework, attempt: Attempt, now: float, started: float) -> None:
        pod, key = attempt.pod, qpi.key
        host = attempt.host
        if host is None:
            self._on_failure(qpi, attempt.status, attempt.message, attempt, now)
            self._observe(attempt, started)
            return
        # The cache holds a copy with spec.nodeName set, as upstream's assume: whoever sees it later
        # (the AssignedPodDelete of a forgotten pod, hints) sees a pod on its node.
        self.cache.assume_pod(dataclasses.replace(pod, node_name=host), host)
        status = fwk.run_reserve_plugins_reserve(attempt.state, pod, host)
        if status is None:
            status = fwk.run_permit_plugins(attempt.state, pod, host)
        if status is not None:
            fwk.run_reserve_plugins_unreserve(attempt.state, pod, host)
            self.cache.forget_pod(pod)
            attempt.status, attempt.host, attempt.message = status, None, status.message()
            self._on_failure(qpi, status, status.message(), attempt, now)
            self._observe(attempt, started)
            return
        self.queue.done(key)
        self._observe(attempt, started)
        self._spawn(self._binding_cycle(fwk, attempt, qpi, host, started))

    def _observe(self, attempt: Attempt, started: float) -> None:
        result = "scheduled" if attempt.host else ("unschedulable" if attempt.status.is_rejected() else "error")
        self.stats.attempts[result] = self.stats.attempts.get(result, 0) + 1
        duration = time.perf_counter() - started
        for observer in self.attempt_observers:
            observer(attempt, duration)
        log.info(
            "scheduling attempt",
            pod=attempt.pod.key,
            result=result,
            node=attempt.host,
            feasible=len(attempt.feasible),
            duration_ms=round(duration * 1000, 3),
            message=None if attempt.host else attempt.message,
        )

    async def _binding_cycle(
        self, fwk: Framework, attempt: Attempt, qpi: QueuedPodInfo, host: str, started: float
    ) -> None:
        pod, state = attempt.pod, attempt.state
        try:
            status: Status | None = await fwk.run_pre_bind_plugins(state, pod, host)
            if status is None and self.cache.get(host) is None:
                # The API server would accept a Binding to a node that no longer exists (it does not check)
                # and leave the pod stranded there: decide again instead.
                status = Status.as_error(f'node "{host}" was deleted before the pod was bound to it')
            if status is None:
                # Extenders that bind come first, then the Bind plugins (upstream's ``bind``).
                handled, error = await extenders_binding(fwk.extenders, pod, host)
                if handled:
                    status = None if error is None else Status.as_error(error)
                else:
                    status = await fwk.run_bind_plugins(state, pod, host)
                    if status.is_success():
                        status = None
                    elif status.is_skip():
                        status = Status.as_error("no bind plugin bound the pod")
        except (PodGoneError, BindConflictError) as exc:
            # The pod is gone or someone else bound it: the watch will tell the truth, never retry.
            self._undo_assume(fwk, attempt, host)
            self.stats.bind_failures += 1
            log.info("binding abandoned", pod=pod.key, node=host, reason=str(exc))
            return
        except Exception as exc:  # any other failure of the binding cycle is retried with backoff
            status = Status.as_error(f"binding rejected: {exc}")
        if status is not None:
            self._undo_assume(fwk, attempt, host)
            self.stats.bind_failures += 1
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
            self._on_failure(qpi, status, status.message(), attempt, self.clock())
            return
        fwk.run_post_bind_plugins(state, pod, host)
        if self.cache.get(host) is None:
            log.warning("bound to a node that was deleted while the binding was in flight", pod=pod.key, node=host)
        self.stats.bound += 1
        bound_at = self.clock()
        for observer in self.bound_observers:
            observer(qpi, bound_at)
        self._reported.pop(pod.key, None)
        await self.recorder.event(pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.key} to {host}")

    def _undo_assume(self, fwk: Framework, attempt: Attempt, host: str) -> None:
        if self._held(functools.partial(self._undo_assume, fwk, attempt, host)):
            return
        fwk.run_reserve_plugins_unreserve(attempt.state, attempt.pod, host)
        self.cache.forget_pod(attempt.pod)
        assumed = dataclasses.replace(attempt.pod, node_name=host)
        self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None, self.clock())

    def _on_failure(self, qpi: QueuedPodInfo, status: Status, message: str, attempt: Attempt, now: float) -> None:
        key = qpi.key
        rejected = status.is_rejected()
        if rejected:
            qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(attempt.diagnosis.pending_plugins)
            if attempt.pod.errors:
                # No plugin's event can fix an invalid spec: only the pod's update or the 5-minute flush.
                qpi.unschedulable_plugins.add(INVALID_POD_REJECTOR)
        current = self._pending.get(key)
        if current is None:  # deleted or bound meanwhile: nothing to requeue or report
            self.queue.done(key)
            return
        self.queue.add_unschedulable_if_not_present(qpi, now, error=not qpi.rejectors)
        reason = "Unschedulable" if rejected else "SchedulerError"
        if self._reported.get(key) == message:
            return  # the same message was posted already: do not flood the API
        self._reported[key] = message
        self._spawn(self._report_failure(current, reason, message))

    async def _report_failure(self, pod: Pod, reason: str, message: str) -> None:
        await self.recorder.set_unschedulable(pod, reason, message)
        await self.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", _truncate_note(message))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background write failed", error=repr(task.exception()))

    # -- the loop ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set, then let in-flight bindings finish."""
        last_flush = self.clock()
        while not stop.is_set():
            now = self.clock()
            if now - last_flush >= 30.0:
                self.queue.flush_unschedulable_leftover(now)
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
        await self.drain()

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._owns_extenders:
            await close_extenders(self.extenders)

    @property
    def pending(self) -> Mapping[PodKey, Pod]:
        return self._pending


def _older(version: str, than: str) -> bool:
    """Strictly older, when both are etcd's integer resourceVersions (never for other spellings)."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)


def _newer(version: str, than: str) -> bool:
    """resourceVersions are opaque, but etcd's are integers: compare those, otherwise assume newer."""
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than
