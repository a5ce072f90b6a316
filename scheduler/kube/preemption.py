"""Preemption's writes in ``run``: upstream's ``prepareCandidateAsync`` and ``PreemptPod``.

DefaultPreemption decides (pure, ``scheduler.framework.preemption``) and hands the decision to this
``PreemptionSink``. As kube-scheduler v1.35.4, where SchedulerAsyncPreemption is on by default, the
writes run in a task of their own, after the scheduling cycle, while the preemptor is already
nominated (its ``status.nominatedNodeName`` goes out with the failure handler's status patch):

1. lower-priority pods nominated to the node get their ``status.nominatedNodeName`` cleared (an error
   is logged, and the rest goes on: "not critical");
2. every victim but the last, concurrently: the ``DisruptionTarget`` condition (reason
   ``PreemptionByScheduler``) through ``pods/status``, then ``DELETE``, then the ``Preempted`` Event;
   the first error cancels the others and the last victim is left alone;
3. the last victim the same way, once the preemptor is recorded as waiting for it.

Until then the preemptor "is running preemption" and DefaultPreemption's PreEnqueue keeps it out of
activeQ; once the last victim is terminating or gone, it may go back (the victims' deletions wake it
through its Filter rejectors' hints). A victim already gone (404) is fine; any other error ends the
preemption and activates the preemptor at once, so it does not wait for an event that never comes.
A victim already terminating gets no second deletion. No Permit plugin of ours waits, so no victim
is ever a waiting pod to reject instead.

From 1.36 a victim whose PreBind is still running here (``PodsInPreBind``: say VolumeBinding waits
for its claim) is preempted in memory: its binding cycle is cancelled, it goes back to the queue, and
it gets no condition and no deletion, only the Event ("... (in kube-scheduler memory).").
From 1.37, when that was the last victim, the preemptor is activated at the end (no deletion event
will wake it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from scheduler.api.objects import Pod, PodKey
from scheduler.errors import PodGoneError
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.interface import PodNominator, Recorder
from scheduler.framework.pods_in_pre_bind import PodInPreBind, PodsInPreBind
from scheduler.framework.status import Status
from scheduler.kube.record import condition_changed, pod_condition
from scheduler.kube.writes import STRATEGIC_MERGE_PATCH, ApiWriter
from scheduler.logs import kobj
from scheduler.plugins.names import DEFAULT_PREEMPTION

__all__ = [
    "DISRUPTION_TARGET",
    "PREEMPTION_BY_SCHEDULER",
    "ApiPodWriter",
    "AsyncPreemption",
    "PodWriter",
    "disruption_target_condition",
    "preempted_note",
]

log = structlog.get_logger("spread-scheduler")

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


class PodWriter(Protocol):
    """The API calls a preemption makes (``ApiPodWriter``); 404 raises
    ``PodGoneError``."""

    async def add_condition(self, pod: Pod, condition: dict[str, Any]) -> None: ...

    async def clear_nominated_node_name(self, pod: Pod) -> None: ...

    async def delete_pod(self, pod: Pod) -> None: ...


class ApiPodWriter:
    """Preemption's writes to other pods (upstream's ``PreemptPod`` and ``clearNominatedNodeName``):
    strategic-merge patches of ``pods/status`` and ``DELETE pods``. A 404 raises ``PodGoneError``:
    the caller decides that a victim already gone is fine."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer

    async def _patch_status(self, pod: Pod, status: dict[str, Any], what: str) -> None:
        await self._writer.write(
            f"{what} of {pod.key}",
            "PATCH",
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"namespace": pod.namespace, "name": pod.name},
            {"status": status},
            STRATEGIC_MERGE_PATCH,
        )

    async def add_condition(self, pod: Pod, condition: dict[str, Any]) -> None:
        """One condition, merged by type into ``status.conditions``."""
        await self._patch_status(pod, {"conditions": [condition]}, "patching status")

    async def clear_nominated_node_name(self, pod: Pod) -> None:
        await self._patch_status(pod, {"nominatedNodeName": None}, "clearing nominatedNodeName")

    async def delete_pod(self, pod: Pod) -> None:
        """``util.DeletePod``: default DeleteOptions (the pod's own grace period, no preconditions)."""
        await self._writer.write(
            f"deleting {pod.key}",
            "DELETE",
            "/api/v1/namespaces/{namespace}/pods/{name}",
            {"namespace": pod.namespace, "name": pod.name},
            {},
        )


def disruption_target_condition(preemptor: Pod, victim: Pod, now: datetime) -> dict[str, Any]:
    """The condition upstream's ``PreemptPod`` puts on a victim (observedGeneration: the victim's
    generation, PodObservedGenerationTracking being locked on in 1.35)."""
    condition: dict[str, Any] = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if victim.generation:
        condition["observedGeneration"] = victim.generation
    return condition


def condition_needs_update(victim: Pod, condition: Mapping[str, Any]) -> bool:
    """``UpdatePodCondition``'s answer for the victim (``condition_changed``)."""
    return condition_changed(
        pod_condition(victim, condition["type"]), condition["status"], condition["reason"], condition["message"]
    )


def preempted_note(preemptor: Pod, node_name: str, *, in_memory: bool = False) -> str:
    """The ``Preempted`` Event's message (upstream: ``Preempted by pod %v on node %v``, the UID; from
    1.36 a victim preempted without a deletion says so)."""
    note = f"Preempted by pod {preemptor.uid} on node {node_name}"
    return note + " (in kube-scheduler memory)." if in_memory else note


class AsyncPreemption:
    """The PreemptionSink of ``run``: each decision's writes in a task, as ``prepareCandidateAsync``.

    ``nominator`` is the queue (the pods nominated to a node), ``pod_lister`` the cache's assigned
    pods (is the last victim gone or terminating?), ``activate`` the queue's ``activate``,
    ``pods_in_pre_bind`` the binding cycles' (filled from 1.36 only).
    """

    def __init__(
        self,
        writer: PodWriter,
        recorder: Recorder,
        nominator: PodNominator,
        pod_lister: Callable[[PodKey], Pod | None],
        activate: Callable[[Pod], None],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        *,
        pods_in_pre_bind: PodsInPreBind | None = None,
        features: Features = DEFAULT_FEATURES,
    ) -> None:
        self._writer = writer
        self._pods_in_pre_bind = pods_in_pre_bind
        self._features = features
        self._recorder = recorder
        self._nominator = nominator
        self._pod_lister = pod_lister
        self._activate = activate
        self._clock = clock
        self._preempting: set[str] = set()  # preemptors' UIDs (upstream keys by UID too)
        self._last_victims: dict[str, PodKey] = {}  # preemptor UID -> the last victim it waits for
        self._tasks: set[asyncio.Task[None]] = set()
        self.attempted: list[tuple[str, PodKey]] = []  # (what, pod): every write tried, for tests

    # -- PreemptionSink -----------------------------------------------------------------------

    def prepare_candidate(self, preemptor: Pod, node_name: str, victims: Sequence[Pod]) -> Status | None:
        to_delete = []
        for victim in victims:
            if victim.terminating:
                # Graceful deletion has started already: another call is unnecessary.
                log.info(
                    "Victim Pod is already being deleted, skipping the API call for it",
                    v=2,
                    preemptor=kobj(preemptor.key),
                    node=node_name,
                    victim=kobj(victim.key),
                )
                continue
            to_delete.append(victim)
        if not to_delete:
            return None
        self._preempting.add(preemptor.uid)
        task = asyncio.get_running_loop().create_task(self._preempt(preemptor, node_name, to_delete, len(victims)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return None

    def is_pod_running_preemption(self, pod: Pod) -> bool:
        if pod.uid not in self._preempting:
            return False
        last = self._last_victims.get(pod.uid)
        if last is None:
            return True  # the victims but the last are still being evicted
        victim = self._pod_lister(last)
        # The last victim's deletion has started (or it is gone): the preemption is done.
        return victim is not None and not victim.terminating

    async def drain(self) -> None:
        """Wait for every preemption in flight."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- the task ------------------------------------------------------------------------------

    async def _preempt(self, preemptor: Pod, node_name: str, victims: list[Pod], num_victims: int) -> None:
        failed = in_memory = False
        log.info(
            "Start the preemption asynchronously",
            v=2,
            preemptor=kobj(preemptor.key),
            node=node_name,
            numVictims=num_victims,
            numVictimsToDelete=len(victims),
        )
        try:
            if not await self._clear_lower_priority_nominations(preemptor, node_name):
                failed = True
            *others, last = victims
            if others and not await self._preempt_concurrently(preemptor, node_name, others):
                failed = True
            else:
                self._last_victims[preemptor.uid] = last.key
                try:
                    cancelled = await self._preempt_pod(preemptor, node_name, last)
                    if cancelled is not None and self._features.in_memory_victim_activates:
                        # No deletion will wake the preemptor: it is activated below, once the victim's
                        # binding cycle has left PreBind (this resumes after that task's step, which
                        # forgets the victim), so that its next cycle finds the node free.
                        await cancelled.left.wait()
                        in_memory = True
                except Exception as exc:  # logged in _preempt_pod; the pod is activated below
                    log.error("Error occurred during async preemption", err=str(exc) or type(exc).__name__)
                    failed = True
        finally:
            self._preempting.discard(preemptor.uid)
            self._last_victims.pop(preemptor.uid, None)
            result = "error" if failed else "success"
            log.info(
                "Async Preemption finished completely",
                v=2,
                preemptor=kobj(preemptor.key),
                node=node_name,
                result=result,
            )
            if failed or in_memory:
                # The pod could be stuck among the unschedulable pods otherwise.
                self._activate(preemptor)

    async def _clear_lower_priority_nominations(self, preemptor: Pod, node_name: str) -> bool:
        """``getLowerPriorityNominatedPods`` + ``clearNominatedNodeName``; False if a patch failed."""
        ok = True
        for pod in self._nominator.nominated_pods_for_node(node_name):
            if pod.priority >= preemptor.priority or not pod.nominated_node_name:
                continue
            self.attempted.append(("clear-nomination", pod.key))
            try:
                await self._writer.clear_nominated_node_name(pod)
            except Exception as exc:
                log.error(
                    "Cannot clear 'NominatedNodeName' field from lower priority pods on the same target node",
                    node=node_name,
                    pod=kobj(pod.key),
                    err=str(exc) or type(exc).__name__,
                )
                ok = False
        return ok

    async def _preempt_concurrently(self, preemptor: Pod, node_name: str, victims: list[Pod]) -> bool:
        """All at once; the first error cancels the rest (upstream's ``SendErrorWithCancel``)."""
        tasks = [asyncio.ensure_future(self._preempt_pod(preemptor, node_name, victim)) for victim in victims]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        errors = [task.exception() for task in done if not task.cancelled() and task.exception() is not None]
        if errors:
            log.error("Error occurred during async preemption", err=str(errors[0]) or type(errors[0]).__name__)
        return not errors

    async def _preempt_pod(self, preemptor: Pod, node_name: str, victim: Pod) -> PodInPreBind | None:
        """``PreemptPod``: condition, deletion, Event. A victim already gone returns quietly (no
        Event); any other API error is logged and raised. Returns the victim's PreBind when it was
        preempted in memory (cancelled there, nothing written), else None."""
        cancelled = self._cancel_pre_bind(preemptor, node_name, victim)
        if cancelled is not None:
            return cancelled
        condition = disruption_target_condition(preemptor, victim, self._clock())
        try:
            if condition_needs_update(victim, condition):
                self.attempted.append(("condition", victim.key))
                try:
                    await self._writer.add_condition(victim, condition)
                except PodGoneError:
                    raise
                except Exception as exc:
                    log.error(
                        "Could not add DisruptionTarget condition due to preemption",
                        preemptor=kobj(preemptor.key),
                        victim=kobj(victim.key),
                        err=str(exc) or type(exc).__name__,
                    )
                    raise
            self.attempted.append(("delete", victim.key))
            try:
                await self._writer.delete_pod(victim)
            except PodGoneError:
                raise
            except Exception as exc:
                log.error(
                    "Tried to preempted pod",
                    pod=kobj(victim.key),
                    preemptor=kobj(preemptor.key),
                    err=str(exc) or type(exc).__name__,
                )
                raise
        except PodGoneError:
            log.info(
                "Victim Pod is already deleted",
                v=2,
                preemptor=kobj(preemptor.key),
                victim=kobj(victim.key),
                node=node_name,
            )
            return None
        log.info(
            "Preemptor Pod preempted victim Pod",
            v=2,
            preemptor=kobj(preemptor.key),
            victim=kobj(victim.key),
            node=node_name,
        )
        await self._post_preempted(preemptor, node_name, victim)
        return None

    def _cancel_pre_bind(self, preemptor: Pod, node_name: str, victim: Pod) -> PodInPreBind | None:
        """A victim still in PreBind here has its binding cycle cancelled instead of being deleted;
        None when it is not in PreBind, or its PreBind finished first (then it is deleted)."""
        entry = self._pods_in_pre_bind.get(victim.uid) if self._pods_in_pre_bind is not None else None
        if entry is None:
            return None
        if not entry.cancel_pod(f"preempted by {DEFAULT_PREEMPTION}"):
            log.info(
                "Failed to reject a pod in preBind, falling back to deletion via api call",
                v=5,
                preemptor=kobj(preemptor.key),
                podInPreBind=kobj(victim.key),
                node=node_name,
            )
            return None
        log.info(
            "Preemptor rejected a pod in preBind",
            v=2,
            preemptorType="pod",
            preemptor=kobj(preemptor.key),
            podInPreBind=kobj(victim.key),
            node=node_name,
        )
        # Not awaited, as upstream's recorder never blocks: the preemption does not wait on the Event.
        task = asyncio.get_running_loop().create_task(
            self._post_preempted(preemptor, node_name, victim, in_memory=True)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return entry

    async def _post_preempted(self, preemptor: Pod, node_name: str, victim: Pod, *, in_memory: bool = False) -> None:
        try:
            await self._recorder.event(
                victim,
                "Normal",
                "Preempted",
                "Preempting",
                preempted_note(preemptor, node_name, in_memory=in_memory),
                related=preemptor,
            )
        except Exception as exc:  # an Event is best effort, as upstream's broadcaster
            log.warning("could not post the Preempted event", pod=kobj(victim.key), err=str(exc))
