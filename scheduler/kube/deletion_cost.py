"""Spread-aware scale-down, the writing half: keep ``controller.kubernetes.io/pod-deletion-cost`` on
the pods of our ReplicaSets as ``scheduler.spread.deletion_cost`` ranks them.

Cheap and batched: a cache change marks the workloads it touches (the pod's own ReplicaSet, those
whose constraints count it, the pods' workloads on a relabelled or retainted node), never a scan
of the cluster; after ``DEBOUNCE`` seconds without news (or ``MAX_DELAY`` after the first mark, so a
cluster that is never quiet is still served) the marked workloads are ranked again and
only the pods whose cost must change are patched. Every patch is fenced by the Lease
(``Leadership.sure``) and passes the same rate limiter as the other writes; it carries the
resourceVersion it was computed from, so a pod changed meanwhile (someone else's cost among the
changes) is refused with 409 and ranked again from its next event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from scheduler.api.labels import Selector
from scheduler.api.objects import Node, Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.errors import BindConflictError, NotLeadingError, PodGoneError
from scheduler.framework.runtime import Framework
from scheduler.kube.writes import ApiWriter
from scheduler.spread.deletion_cost import (
    COST_ANNOTATION,
    MARKER_ANNOTATION,
    CostChange,
    Workload,
    constraint_selectors,
    cost_changes,
    workload_costs,
    workload_of,
)

__all__ = ["DEBOUNCE", "MAX_DELAY", "ApiCostWriter", "DeletionCostKeeper"]

log = structlog.get_logger("spread-scheduler")

# A scale-up binds its pods in a burst: one ranking after the burst, not one per pod.
DEBOUNCE = 1.0
# ... but never later than this after the first mark: pod events of a large cluster never pause.
MAX_DELAY = 5.0
# While this replica is not sure of the Lease, it looks again this often (the marked workloads wait).
NOT_LEADING_RETRY = 1.0


def _always() -> bool:
    return True


class ApiCostWriter:
    """A merge patch of a pod's annotations: the cost and our marker, with the resourceVersion the
    cost was computed from (a precondition: 409 if the pod changed since)."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer  # the one write path: limiter, fence, retries

    async def write(self, change: CostChange) -> None:
        pod = change.pod
        metadata: dict[str, Any] = {"annotations": {COST_ANNOTATION: change.value, MARKER_ANNOTATION: change.value}}
        if pod.resource_version:
            metadata["resourceVersion"] = pod.resource_version
        await self._writer.write(
            f"patching the deletion cost of {pod.key}",
            "PATCH",
            "/api/v1/namespaces/{namespace}/pods/{name}",
            {"namespace": pod.namespace, "name": pod.name},
            {"metadata": metadata},
            "application/merge-patch+json",
        )


class DeletionCostKeeper:
    """Marks workloads on cache changes (``pod_changed``/``node_changed``, from the event handlers)
    and ``run`` ranks and patches them. Per event: the pod's workload, plus one selector match per
    ranked workload of the pod's namespace."""

    def __init__(
        self,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        writer: ApiCostWriter,
        fence: Callable[[], bool] = _always,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
    ) -> None:
        self._cache = cache
        self._frameworks = frameworks
        self._writer = writer
        self._fence = fence
        self._debounce = debounce
        self._max_delay = max_delay
        self._members: dict[Workload, set[PodKey]] = {}
        # Per namespace: the selectors each ranked workload's constraints count with (a pod of
        # another workload that matches moves its counts).
        self._selectors: dict[str, dict[Workload, tuple[Selector, ...]]] = {}
        self.dirty: set[Workload] = set()
        self._wake = asyncio.Event()
        self.patched = 0

    # -- the event handlers' side (synchronous, on the loop) ----------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        for pod, present in ((old, False), (new, True)):
            if pod is None:
                continue
            workload = workload_of(pod)
            if workload is not None and pod.scheduler_name in self._frameworks:
                members = self._members.setdefault(workload, set())
                if present:
                    members.add(pod.key)
                else:
                    members.discard(pod.key)
                self._mark(workload)
            for other, selectors in self._selectors.get(pod.namespace, {}).items():
                if other != workload and any(s.matches(pod.labels) for s in selectors):
                    self._mark(other)

    def node_changed(self, old: Node | None, new: Node | None) -> None:
        if old is None or new is None:
            return  # a new node holds no pod yet; a deleted one's pods leave through their own events
        if dict(old.labels) == dict(new.labels) and old.taints == new.taints:
            return  # a heartbeat: no domain moved
        info = self._cache.get(new.name)
        for pod in info.pods.values() if info is not None else ():
            workload = workload_of(pod)
            if workload is not None and workload in self._members:
                self._mark(workload)

    def _mark(self, workload: Workload) -> None:
        self.dirty.add(workload)
        self._wake.set()

    # -- the writing side ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: wait for marked workloads, let the burst settle, rank and patch them."""
        while not stop.is_set():
            await _wait_either(self._wake, stop)
            if stop.is_set():
                return
            await self._settle()
            if not self._fence():
                await asyncio.sleep(NOT_LEADING_RETRY)
                self._wake.set()  # the marked workloads wait for the Lease
                continue
            await self.sync_once()

    async def _settle(self) -> None:
        """Wait until no mark came for ``debounce`` seconds, or ``max_delay`` passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._max_delay
        while True:
            self._wake.clear()
            left = deadline - loop.time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._wake.wait(), min(self._debounce, left))
            except TimeoutError:
                return

    async def sync_once(self) -> None:
        """Rank every marked workload and patch the costs that must change."""
        batch, self.dirty = self.dirty, set()
        for workload in sorted(batch, key=lambda w: (w.namespace, w.kind, w.name)):
            try:
                await self._sync(workload)
            except NotLeadingError:
                self.dirty |= batch  # the rest waits for a replica sure of the Lease
                self._wake.set()
                return

    async def _sync(self, workload: Workload) -> None:
        keys = self._members.get(workload, set())
        pods = [p for k in keys if (p := self._cache.pod(k)) is not None]
        if not pods:
            self._members.pop(workload, None)
            self._selectors.get(workload.namespace, {}).pop(workload, None)
            return
        desired = workload_costs(pods, self._cache, self._frameworks)
        # One template: the first pod's selectors are the workload's.
        selectors = constraint_selectors(pods[0], self._frameworks, self._cache)
        if selectors:
            self._selectors.setdefault(workload.namespace, {})[workload] = selectors
        else:
            self._selectors.get(workload.namespace, {}).pop(workload, None)
        changes = cost_changes(pods, desired)
        written = 0
        for change in changes:
            try:
                await self._writer.write(change)
                written += 1
            except (PodGoneError, BindConflictError):
                continue  # gone, or changed since: its next event marks the workload again
            except NotLeadingError:
                raise
            except Exception as exc:  # an outage, a refusal (RBAC): logged, the keeper goes on
                log.warning("deletion cost not written", pod=change.pod.key, err=str(exc))
        self.patched += written
        if changes:
            log.info(
                "deletion costs updated",
                namespace=workload.namespace,
                kind=workload.kind,
                name=workload.name,
                patched=written,
                ranked=len(desired),
            )


async def _wait_either(event: asyncio.Event, stop: asyncio.Event) -> None:
    waiter, stopper = asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        stopper.cancel()
