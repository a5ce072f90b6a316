"""Spread-aware scale-down, the writing half: keep ``controller.kubernetes.io/pod-deletion-cost`` on
the pods of our ReplicaSets as ``scheduler.spread.deletion_cost`` ranks them.

Cheap and batched (``scheduler.kube.controllers.workload_marks``: cache changes mark workloads, a burst
settles, then the marked workloads are served): the marked workloads are ranked again and only
the pods whose cost must change are patched. Every patch is fenced by the Lease
(``Leadership.sure``) and passes the same rate limiter as the other writes; it carries the
resourceVersion it was computed from, so a pod changed meanwhile (someone else's cost among the
changes) is refused with 409 and ranked again from its next event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from scheduler.backend.cache.cache import Cache
from scheduler.errors import BindConflictError, NotLeadingError, PodGoneError
from scheduler.framework.runtime import Framework
from scheduler.kube.controllers.workload_marks import DEBOUNCE, MAX_DELAY, WorkloadMarker
from scheduler.kube.fence import always
from scheduler.kube.writes import ApiWriter
from scheduler.spread.deletion_cost import (
    COST_ANNOTATION,
    MARKER_ANNOTATION,
    CostChange,
    cost_changes,
    workload_costs,
)
from scheduler.spread.workload import Workload

__all__ = ["DEBOUNCE", "MAX_DELAY", "ApiCostWriter", "DeletionCostKeeper"]

log = structlog.get_logger("spread-scheduler")


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
    ) -> None:
        super().__init__(cache, frameworks, fence, debounce, max_delay)
        self._writer = writer
        self.patched = 0

    async def sync_once(self) -> None:
        """Rank every marked workload and patch the costs that must change."""
        batch, self.dirty = self.dirty, set()
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
            return
        desired = workload_costs(pods, self._cache, self._frameworks)
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
