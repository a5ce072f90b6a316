"""Spread-aware scale-down, the writing half: keep ``controller.kubernetes.io/pod-deletion-cost`` on
the pods of our ReplicaSets as ``scheduler.spread.deletion_cost`` ranks them.

Coalesced (``scheduler.kube.controllers.workload_marks``: cache changes mark workloads, a burst
settles, then each marked workload is re-ranked once, however many events marked it), and only the
pods whose cost must change are patched, at most ``PATCHES_PER_RERANK`` per re-rank, those the
controller would delete first first; the rest waits for the next window. The counts of other
workloads' pods are held within ``FOREIGN_SLACK`` (``rank_workload``): one such pod coming or going
patches nothing.

Below the Bindings: the patches take tokens of their own bucket (``cost_limiter``), never the
writer's, and only while no write waits at the writer's (a burst of Bindings goes first). Every
patch is fenced by the Lease (``Leadership.sure``); it carries the resourceVersion it was computed
from, so a pod changed meanwhile (someone else's cost among the changes) is refused with 409 and
ranked again from its next event.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import structlog

from scheduler.backend.cache.cache import Cache
from scheduler.errors import BindConflictError, NotLeadingError, PodGoneError
from scheduler.framework.runtime import Framework
from scheduler.kube.controllers.workload_marks import DEBOUNCE, MAX_DELAY, WorkloadMarker
from scheduler.kube.fence import always
from scheduler.kube.flowcontrol import RateLimiter, YieldingLimiter
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.writes import ApiWriter
from scheduler.spread.deletion_cost import (
    COST_ANNOTATION,
    MARKER_ANNOTATION,
    CostChange,
    Others,
    cost_changes,
    rank_workload,
)
from scheduler.spread.workload import Workload

__all__ = [
    "COST_SHARE",
    "DEBOUNCE",
    "MAX_DELAY",
    "PATCHES_PER_RERANK",
    "REBASE_AFTER",
    "ApiCostWriter",
    "DeletionCostKeeper",
    "cost_limiter",
]

# The costs' bucket, as a share of the writer's (clientConnection.qps/burst; 50/100 by default: 5/s,
# burst 10). A cost is read only at a scale-down, rarer and later than the scale-up that needs the
# Bindings; 5/s costs a 100-pod scale-up 20 s and the first pass over 1,200 pods 4 minutes, while
# API Priority and Fairness, which sees all our writes as one flow, keeps nine tenths for the rest.
COST_SHARE = 0.1
# Patches per re-rank of one workload: at 5/s they are sent within the 5 s the marks wait at most
# (MAX_DELAY), so the next window ranks a fresh cache; the pods deleted first are patched first.
PATCHES_PER_RERANK = 20
# A drift of the other pods' counts held (within FOREIGN_SLACK) longer than this is ranked exactly: a
# pod that comes and goes within a minute costs no patch, one that stays is counted after a minute.
REBASE_AFTER = 60.0

log = structlog.get_logger("spread-scheduler")


def cost_limiter(above: RateLimiter) -> YieldingLimiter:
    """The costs' bucket: ``COST_SHARE`` of ``above``'s (unlimited if it is), yielding to it."""
    if above.qps <= 0:
        return YieldingLimiter(0, 1, above)
    return YieldingLimiter(max(1.0, above.qps * COST_SHARE), max(1, int(above.burst * COST_SHARE)), above)


class ApiCostWriter:
    """A merge patch of a pod's annotations: the cost and our marker, with the resourceVersion the
    cost was computed from (a precondition: 409 if the pod changed since). Through the writer (fence,
    retries) but on ``limiter``, by default ``cost_limiter`` beneath the writer's."""

    def __init__(self, writer: ApiWriter, limiter: RateLimiter | None = None) -> None:
        self._writer = writer  # the one write path: fence, retries
        self.limiter = limiter or cost_limiter(writer.limiter)

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
            limiter=self.limiter,
        )


class DeletionCostKeeper(WorkloadMarker):
    """Ranks the marked workloads (``scheduler.kube.controllers.workload_marks``) and patches their pods' costs."""

    def __init__(
        self,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        writer: ApiCostWriter,
        fence: Callable[[], bool] = always,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
        metrics: SchedulerMetrics | None = None,
        cap: int = PATCHES_PER_RERANK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(cache, frameworks, fence, debounce, max_delay)
        self._writer = writer
        self._metrics = metrics
        self._cap = cap
        self._held: dict[Workload, dict[Hashable, Others]] = {}  # the counts of other pods ranked with
        self._owed: dict[Workload, int] = {}  # changes beyond the cap, for the next window
        self._drifted: dict[Workload, float] = {}  # since when a held count is not the count now
        self._clock = clock
        self.patched = 0

    def _idle_timeout(self) -> float | None:
        if not self._drifted:
            return None
        return max(0.0, min(self._drifted.values()) + REBASE_AFTER - self._clock())

    async def sync_once(self) -> None:
        """Rank every marked workload (and those whose drift is due) and patch the costs that must change."""
        due = {w for w, since in self._drifted.items() if since + REBASE_AFTER <= self._clock()}
        batch, self.dirty = self.dirty | due, set()
        for workload in sorted(batch):
            try:
                await self._sync(workload)
            except NotLeadingError:
                self.dirty |= batch  # the rest waits for a replica sure of the Lease
                self._wake.set()
                return

    async def _sync(self, workload: Workload) -> None:
        pods = self._pods(workload)
        if not pods:
            self._held.pop(workload, None)
            self._drifted.pop(workload, None)
            self._owe(workload, 0)
            return
        now = self._clock()
        since = self._drifted.get(workload)
        held = {} if since is not None and since + REBASE_AFTER <= now else self._held.get(workload, {})
        ranking = rank_workload(pods, self._cache, self._frameworks, held)
        self._held[workload] = ranking.held
        if ranking.drifted:
            self._drifted.setdefault(workload, now)
        else:
            self._drifted.pop(workload, None)
        desired = ranking.costs
        changes = sorted(cost_changes(pods, desired), key=lambda c: (int(c.value), c.pod.key))
        sent, rest = changes[: self._cap], changes[self._cap :]
        self._owe(workload, len(rest))
        if rest:
            self._mark(workload)  # the rest next window
        if self._metrics is not None:
            self._metrics.cost_patches_per_rerank.observe(len(sent))
        written = 0
        for change in sent:
            result = "patched"
            try:
                await self._writer.write(change)
                written += 1
            except BindConflictError:
                result = "conflict"  # changed since: its next event marks the workload again
            except PodGoneError:
                result = "gone"
            except NotLeadingError:
                raise
            except Exception as exc:  # an outage, a refusal (RBAC): logged, the keeper goes on
                result = "failed"
                log.warning("deletion cost not written", pod=change.pod.key, err=str(exc))
            if self._metrics is not None:
                self._metrics.cost_patches.labels(result).inc()
        self.patched += written
        if changes:
            log.info(
                "deletion costs updated",
                namespace=workload.namespace,
                kind=workload.kind,
                name=workload.name,
                patched=written,
                deferred=len(rest),
                ranked=len(desired),
            )

    def _owe(self, workload: Workload, count: int) -> None:
        if count:
            self._owed[workload] = count
        else:
            self._owed.pop(workload, None)
        if self._metrics is not None:
            self._metrics.cost_queue_depth.set(sum(self._owed.values()))
