"""client-go's tools/record, as the scheduler uses it: events.k8s.io/v1 Events, and the
PodScheduled=False condition of a pod that did not fit (with ``status.nominatedNodeName``); both
through the one writer (``scheduler.kube.writes``), the Events on a budget of their own."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from scheduler.api.objects import Pod
from scheduler.errors import BindConflictError, PodGoneError
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.writes import STRATEGIC_MERGE_PATCH, ApiWriter

__all__ = ["ApiRecorder", "condition_changed", "pod_condition"]


def _rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiRecorder:
    """PodScheduled=False via a strategic-merge patch of ``pods/status``, and events.k8s.io/v1 Events."""

    def __init__(
        self, writer: ApiWriter, scheduler_name: str, instance: str, event_limiter: RateLimiter | None = None
    ) -> None:
        self._writer = writer
        # Events get their own budget, as kube-scheduler's event client has its own rate limiter
        # (``createClients`` in cmd/kube-scheduler/app/options/options.go builds a second clientset
        # for events): otherwise every Scheduled event would halve the binding rate at the default QPS.
        self._event_limiter = event_limiter or writer.limiter
        self._controller = scheduler_name
        self._instance = instance

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        """Upstream's ``updatePod``: a patch only when ``UpdatePodCondition`` finds the condition changed
        (status, reason, message, probe time: not observedGeneration) or the nomination moves. When it
        goes out, the condition carries ``observedGeneration`` = the pod's generation (the patch is a
        two-way diff, so a moved generation rides along with a new nomination too)."""
        current = pod_condition(pod, "PodScheduled")
        same = not condition_changed(current, "False", reason, message)
        # CalculatePodConditionObservedGeneration: PodObservedGenerationTracking is GA and locked on at
        # every minor we decide as (features.py), so always the pod's generation (0: omitted).
        generation = pod.generation or None
        status: dict[str, Any] = {}
        if nominated_node_name is not None and nominated_node_name != pod.nominated_node_name:
            status["nominatedNodeName"] = nominated_node_name or None  # null removes it (omitempty)
        if same and not status:
            return  # nothing changed: upstream sends no patch either
        if not same or (current is not None and current.get("observedGeneration") != generation):
            now = datetime.now(UTC)
            condition: dict[str, Any] = {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
            }
            if generation is not None:
                condition["observedGeneration"] = generation
            if current is None or current.get("status") != "False":
                condition["lastTransitionTime"] = _rfc3339(now)
            status["conditions"] = [condition]
        try:
            await self._patch_status(pod, status)
        except PodGoneError:
            return

    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        """The patch of ``status.nominatedNodeName`` alone; errors go to the caller, who logs them."""
        await self._patch_status(pod, {"nominatedNodeName": node_name or None})

    async def _patch_status(self, pod: Pod, status: dict[str, Any]) -> None:
        """A strategic-merge patch of the pod's ``status`` subresource, on the one write path."""
        await self._writer.write(
            f"patching status of {pod.key}",
            "PATCH",
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"namespace": pod.namespace, "name": pod.name},
            {"status": status},
            STRATEGIC_MERGE_PATCH,
        )

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        await self.object_event(_object_reference(pod), event_type, reason, action, note, related)

    async def object_event(
        self,
        regarding: dict[str, Any],
        event_type: str,
        reason: str,
        action: str,
        note: str,
        related: Pod | None = None,
    ) -> None:
        """An Event about any object (``regarding``: its ObjectReference, with a namespace and name),
        such as the ReplicaSet whose pod the rebalancer moved."""
        now = datetime.now(UTC)
        namespace, name = str(regarding["namespace"]), str(regarding["name"])
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": self._controller,
            "reportingInstance": self._instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": event_type,
            "regarding": regarding,
        }
        if related is not None:
            body["related"] = _object_reference(related)
        try:
            await self._writer.write(
                f"posting event {reason} for {namespace}/{name}",
                "POST",
                "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                {"namespace": namespace},
                body,
                limiter=self._event_limiter,
            )
        except (PodGoneError, BindConflictError):
            return  # namespace gone, or a duplicate name: an event is best effort


def _object_reference(pod: Pod) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "resourceVersion": pod.resource_version,
    }


def pod_condition(pod: Pod, condition_type: str) -> dict[str, Any] | None:
    """The pod's condition of that type, as last read (``GetPodCondition``)."""
    status = pod.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions or ():
        if isinstance(cond, dict) and cond.get("type") == condition_type:
            return cond
    return None


def condition_changed(existing: dict[str, Any] | None, status: str, reason: str, message: str) -> bool:
    """``UpdatePodCondition``'s answer for a new condition without a probe time: a change unless the
    existing one has the same status, reason and message and no probe time (its transition time is
    then kept; observedGeneration is not compared)."""
    if existing is None:
        return True
    same = (existing.get("status"), existing.get("reason"), existing.get("message")) == (status, reason, message)
    return not same or existing.get("lastProbeTime") is not None
