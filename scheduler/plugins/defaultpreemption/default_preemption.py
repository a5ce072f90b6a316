"""DefaultPreemption: a PostFilter that finds lower-priority pods whose removal lets the pod fit.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``, in the
default profile. The decision is upstream's (``scheduler.framework.preemption``); the handle's
``PreemptionSink`` carries it out: the API in ``run`` (``scheduler.kube.preemption``, asynchronous
as upstream's SchedulerAsyncPreemption, on by default in 1.35), memory in ``simulate``. Without a
sink (tests of other plugins) it finds nothing to do and adds nothing to the message.

Its PreEnqueue keeps a pod out of activeQ while its victims are still being evicted, as upstream's
does with async preemption; the Pod/Delete event it registers only lets such a gated pod be asked
about again: its other rejectors' hints decide (upstream's ``isPodSchedulableAfterPodDeletion``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.fields import FieldError, opt_int
from scheduler.api.objects import PREEMPT_NEVER, NodeName, Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    assigned_pod_resource,
)
from scheduler.framework.interface import Handle, NominatingInfo
from scheduler.framework.preemption import Evaluator, Victims, more_important_order
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeToStatus
from scheduler.plugins import names

__all__ = ["DefaultPreemption", "filter_pods_with_pdb_violation", "parse_args"]

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100
ERR_NO_VICTIMS = "No preemption victims found for incoming pod"
ERR_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING_ON_NOMINATED_NODE = "not eligible due to a terminating pod on the nominated node."
ERR_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


def parse_args(args: Mapping[str, Any]) -> tuple[int, int]:
    """``DefaultPreemptionArgs`` → (minCandidateNodesPercentage, minCandidateNodesAbsolute), with
    ``SetDefaults_DefaultPreemptionArgs``' defaults and ``ValidateDefaultPreemptionArgs``' checks."""
    errors: list[FieldError] = []
    percentage = opt_int(args.get("minCandidateNodesPercentage"), "minCandidateNodesPercentage", errors)
    absolute = opt_int(args.get("minCandidateNodesAbsolute"), "minCandidateNodesAbsolute", errors)
    if errors:
        raise ValueError("; ".join(str(e) for e in errors))
    pct = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE if percentage is None else percentage
    num = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE if absolute is None else absolute
    if not 0 <= pct <= 100:
        errors.append(FieldError("minCandidateNodesPercentage", f"Invalid value: {pct}: not in valid range [0, 100]"))
    if num < 0:
        errors.append(FieldError("minCandidateNodesAbsolute", f"Invalid value: {num}: not in valid range [0, inf)"))
    if pct == 0 and num == 0:
        zero = "Invalid value: 0: cannot be zero at the same time as {}"
        errors.append(FieldError("minCandidateNodesPercentage", zero.format("minCandidateNodesAbsolute")))
        errors.append(FieldError("minCandidateNodesAbsolute", zero.format("minCandidateNodesPercentage")))
    if errors:
        raise ValueError("; ".join(str(e) for e in errors))
    return pct, num


def filter_pods_with_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in ``pods``' order. Each pod
    matched by a PDB uses one of its ``disruptionsAllowed`` (a pod already in ``disruptedPods`` was
    counted by the API server); a pod is violating once some matching PDB goes below zero."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no PDB
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod.namespace, pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


class DefaultPreemption:
    """PreEnqueue and PostFilter; the Evaluator's ``Interface`` (upstream's plugin is all three)."""

    NAME = names.DEFAULT_PREEMPTION

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute = parse_args(args)
        self.handle = handle
        self.features = features
        self.evaluator = Evaluator(self.NAME, handle, self, placement_message=features.preemption_placement_message)
        # The random offset into the potential nodes (upstream's ``getOffsetRand``, ``rand.Int31n``):
        # ``simulate`` seeds it, tests replace it.
        self.offset_rand: Callable[[int], int] = random.Random().randrange
        # "Now", for pods without status.startTime (upstream's ``GetPodStartTime``): read once per cycle.
        self.clock: Callable[[], float] = time.time
        self._now: float | None = None
        self.victim_start_read_once = features.victim_start_read_once

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Not into activeQ while the pod's own preemption still evicts its victims."""
        sink = self.handle.preemption
        if sink is not None and sink.is_pod_running_preemption(pod):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_WAITING_FOR_PREEMPTION,))
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A victim's deletion may end the wait; the pod's other rejectors decide whether it fits now.
        return [
            ClusterEventWithHint(
                ClusterEvent(assigned_pod_resource(self.features), ActionType.DELETE),
                self.is_pod_schedulable_after_pod_deletion,
            )
        ]

    def is_pod_schedulable_after_pod_deletion(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """Always Skip: the plugins whose failure the preemption resolves decide when to requeue."""
        return QueueingHint.QUEUE_SKIP

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        if self.handle.preemption is None:
            return None, Status(Code.UNSCHEDULABLE)  # nobody would delete the victims: decide nothing
        node_to_status = statuses if isinstance(statuses, NodeToStatus) else NodeToStatus(statuses)
        self._now = now = self.clock()
        result, status = self.evaluator.preempt(state, pod, node_to_status, now)
        message = status.message()
        if not message:
            return result, status
        if status.code is Code.ERROR:
            return result, Status.as_error("preemption: " + message)
        return result, Status(status.code, ("preemption: " + message,))

    # -- preemption.Interface -----------------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``calculateNumCandidates``: the percentage of the nodes, at least the absolute, at most all."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(n, self.min_candidate_nodes_absolute), num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.offset_rand(num_nodes), self.calculate_num_candidates(num_nodes)

    def ordered_score_funcs(self, nodes_to_victims: Mapping[NodeName, Victims]) -> list[Callable[[NodeName], int]]:
        return []  # upstream's default criteria

    def is_preemption_allowed(self, node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
        """Only lower-priority pods are victims (upstream's ``IsEligiblePod`` allows every one)."""
        return victim.priority < preemptor.priority

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status) -> tuple[bool, str]:
        """``PodEligibleToPreemptOthers``: not with preemptionPolicy Never, and not while victims of an
        earlier preemption still terminate on the pod's nominated node (unless that node is now
        UnschedulableAndUnresolvable for it: then preempting elsewhere is the way)."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, ERR_PREEMPTION_POLICY_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            info = self.handle.current().get(nominated)
            if info is not None:
                for other in info.pods.values():
                    if (
                        self.is_preemption_allowed(info, other, pod)
                        and other.terminating
                        and other.preempted_by_scheduler
                    ):
                        return False, ERR_TERMINATING_ON_NOMINATED_NODE
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        """``SelectVictimsOnNode``: remove every lower-priority pod; if the pod then fits, add them
        back one by one, most important first and the PDB-violating ones before the rest, keeping
        out (as victims) those it no longer fits with. ``state`` and ``node_info`` are copies."""
        runner = self.handle.runner()
        now = self.clock() if self._now is None else self._now

        def remove(victim: Pod) -> Status | None:
            node_info.remove_pod(victim.key)
            return runner.run_pre_filter_extension_remove_pod(state, pod, victim, node_info)

        def add(victim: Pod) -> Status | None:
            node_info.add_pod(victim)
            return runner.run_pre_filter_extension_add_pod(state, pod, victim, node_info)

        potential: list[Pod] = []
        for other in list(node_info.pods.values()):
            if self.is_preemption_allowed(node_info, other, pod):
                potential.append(other)
                status = remove(other)
                if status is not None:
                    return [], 0, status
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NO_VICTIMS,))
        # Affinity of the pod to a victim is not looked for (upstream: for performance, and such
        # affinity between pods that may preempt each other is not recommended).
        status = runner.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if status is not None and not status.is_success():
            return [], 0, status

        victims: list[Pod] = []
        made = {other.key: i for i, other in enumerate(potential)} if self.victim_start_read_once else None
        potential = more_important_order(potential, now, made)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)

        def reprieve(victim: Pod) -> tuple[bool, Status | None]:
            """Whether ``victim`` can stay; an Error status when a PreFilter extension failed."""
            error = add(victim)
            if error is not None:
                return False, error
            verdict = runner.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            fits = verdict is None or verdict.is_success()
            if not fits:
                error = remove(victim)
                if error is not None:
                    return False, error
                victims.append(victim)
            return fits, None

        num_violating = 0
        for victim in violating:
            fits, error = reprieve(victim)
            if error is not None:
                return [], 0, error
            if not fits:
                num_violating += 1
        for victim in non_violating:
            _, error = reprieve(victim)
            if error is not None:
                return [], 0, error
        if violating and non_violating:
            victims = more_important_order(victims, now, made)
        return victims, num_violating, Status(Code.SUCCESS)
