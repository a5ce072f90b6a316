"""Which of our workloads a cache change touches, and a loop that serves them once the burst settles.

Shared by the deletion-cost keeper (``scheduler.kube.controllers.deletion_cost``) and the rebalancer
(``scheduler.kube.controllers.rebalance``): a cache change marks the workloads it touches (the pod's own
ReplicaSet, those whose constraints count it, the pods' workloads on a relabelled or retainted
node), never a scan of the cluster; after ``DEBOUNCE`` seconds without news (or ``MAX_DELAY`` after
the first mark, so a cluster that is never quiet is still served) ``sync_once`` serves the marked
workloads, while this replica is sure of the Lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from scheduler.api.labels import Selector
from scheduler.api.objects import Node, Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.kube.fence import always
from scheduler.spread.workload import RANKED_KINDS, Workload, constraint_selectors, workload_of

__all__ = ["DEBOUNCE", "MAX_DELAY", "NOT_LEADING_RETRY", "WorkloadMarker"]

# A scale-up binds its pods in a burst: one pass after the burst, not one per pod.
DEBOUNCE = 1.0
# ... but never later than this after the first mark: pod events of a large cluster never pause.
MAX_DELAY = 5.0
# While this replica is not sure of the Lease, it looks again this often (the marked workloads wait).
NOT_LEADING_RETRY = 1.0


class WorkloadMarker:
    """Marks workloads on cache changes (``pod_changed``/``node_changed``, from the event handlers);
    ``run`` calls ``sync_once`` (a subclass's) for them. Per event: the pod's workload, plus one
    selector match per known workload of the pod's namespace."""

    def __init__(
        self,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        fence: Callable[[], bool] = always,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
        kinds: Sequence[str] = RANKED_KINDS,
    ) -> None:
        self._cache = cache
        self._kinds = kinds  # the controller kinds whose pods make a workload
        self._frameworks = frameworks
        self._fence = fence
        self._debounce = debounce
        self._max_delay = max_delay
        self._members: dict[Workload, set[PodKey]] = {}
        # Per namespace: the selectors each known workload's constraints count with (a pod of
        # another workload that matches moves its counts).
        self._selectors: dict[str, dict[Workload, tuple[Selector, ...]]] = {}
        self.dirty: set[Workload] = set()
        self._wake = asyncio.Event()

    # -- the event handlers' side (synchronous, on the loop) ----------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        for pod, present in ((old, False), (new, True)):
            if pod is None:
                continue
            workload = workload_of(pod, self._kinds)
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
            workload = workload_of(pod, self._kinds)
            if workload is not None and workload in self._members:
                self._mark(workload)

    def _mark(self, workload: Workload) -> None:
        self.dirty.add(workload)
        self._wake.set()

    def _mark_all(self) -> None:
        for workload in self._members:
            self._mark(workload)

    def _pods(self, workload: Workload) -> list[Pod]:
        """The workload's pods in the cache, its selectors refreshed from them (one template: the
        first pod's are the workload's); a workload without pods is forgotten."""
        keys = self._members.get(workload, set())
        pods = [p for k in keys if (p := self._cache.pod(k)) is not None]
        if not pods:
            self._members.pop(workload, None)
            self._selectors.get(workload.namespace, {}).pop(workload, None)
            return []
        selectors = constraint_selectors(pods[0], self._frameworks, self._cache)
        if selectors:
            self._selectors.setdefault(workload.namespace, {})[workload] = selectors
        else:
            self._selectors.get(workload.namespace, {}).pop(workload, None)
        return pods

    # -- the serving side ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: wait for marked workloads, let the burst settle, serve them."""
        while not stop.is_set():
            await _wait_either(self._wake, stop, self._idle_timeout())
            if stop.is_set():
                return
            await self._settle()
            if not self._fence():
                await asyncio.sleep(NOT_LEADING_RETRY)
                self._wake.set()  # the marked workloads wait for the Lease
                continue
            await self.sync_once()

    def _idle_timeout(self) -> float | None:
        """Seconds after which ``run`` serves without a new mark (work put off for later); None: never."""
        return None

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
        """Serve every marked workload (the subclass's work)."""
        raise NotImplementedError


async def _wait_either(event: asyncio.Event, stop: asyncio.Event, timeout: float | None = None) -> None:
    waiter, stopper = asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        stopper.cancel()
