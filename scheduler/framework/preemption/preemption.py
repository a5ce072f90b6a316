"""The preemption Evaluator (upstream ``pkg/scheduler/framework/preemption/preemption.go``). Pure.

``Evaluator.preempt`` is upstream's ``Preempt`` up to the choice of a node and its victims: the
pod's eligibility, the candidates found by dry runs on the nodes Filter called Unschedulable
(``find_candidates``, ``dry_run_preemption``), and ``pickOneNodeForPreemption``'s criteria. The
writes upstream makes next (``prepareCandidate``: the victims' DisruptionTarget condition and
deletion, lower-priority nominations cleared) go to the ``PreemptionSink`` of the handle; the
decision is also kept in the cycle state (``PREEMPTION_OUTCOME_KEY``) for ``simulate`` to show.

Upstream runs the dry runs in parallel and stops once enough candidates are found; here they run
one after the other from the random offset, which is what upstream's tests pin with parallelism 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import NodeName, Pod, PodKey
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import CLEAR_NOMINATED_NODE, Handle, NominatingInfo, NominatingMode
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodeInfo, NodeToStatus

__all__ = [
    "ERR_NOT_HELPFUL",
    "PREEMPTION_OUTCOME_KEY",
    "Candidate",
    "Evaluator",
    "Interface",
    "PreemptionOutcome",
    "Victims",
    "get_earliest_pod_start_time",
    "more_important_order",
    "pick_one_node_for_preemption",
]

ERR_NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPTION_OUTCOME_KEY = "PreemptionOutcome"
# Priorities are int32: adding 2^31 makes every one >= 0 for the sum criterion.
_PRIORITY_SHIFT = 2**31


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods to preempt on one node, most important first, and how many PDBs that violates
    (upstream's ``extenderv1.Victims``)."""

    pods: tuple[Pod, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node the preemptor fits on once ``victims`` are gone."""

    name: NodeName
    victims: Victims


@dataclass(frozen=True, slots=True)
class PreemptionOutcome:
    """What PostFilter decided for this cycle's pod: the nominated node and its victims (None and
    empty when preemption does not help), for ``simulate``'s output. Read-only: ``clone`` is itself."""

    nominated_node: NodeName | None
    victims: tuple[Pod, ...] = ()

    def clone(self) -> PreemptionOutcome:
        return self


class Interface(Protocol):
    """What a preemption plugin decides (upstream's ``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset into the potential nodes and how many candidates to look for."""
        ...

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        """The fewest pods to remove from ``node_info`` (a copy) for ``pod`` to fit, and the PDB violations."""
        ...

    def ordered_score_funcs(self, nodes_to_victims: Mapping[NodeName, Victims]) -> list[Callable[[NodeName], int]]:
        """Score functions for ``pick_one_node_for_preemption``; empty: upstream's default criteria."""
        ...


def more_important_order(pods: Sequence[Pod], now: float, made: Mapping[PodKey, int] | None = None) -> list[Pod]:
    """``pods`` sorted by upstream's ``MoreImportantPod``, most important first: higher priority, then
    the earlier ``status.startTime`` (none yet: ``now``).

    Through 1.36 upstream reads ``time.Now()`` afresh for each unstarted pod, so of two unstarted
    pods of equal priority each is "more important" than the other, and Go's sort (insertion sort up
    to 12 elements) leaves them last first; so do we (beyond 12, pdqsort's order is not reproduced).
    From 1.37 (``made``: each pod's index in the order its victim was made) each victim reads "now"
    once when it is made (``NewVictim``): the one made first is the earlier.
    """
    indexed = list(enumerate(pods))

    def key(item: tuple[int, Pod]) -> tuple[int, float, int]:
        i, pod = item
        started = pod.start_time
        if made is not None:
            return (-pod.priority, now if started is None else started, made[pod.key] if started is None else i)
        return (-pod.priority, now if started is None else started, -i if started is None else i)

    return [pod for _, pod in sorted(indexed, key=key)]


def get_earliest_pod_start_time(victims: Victims, now: float) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority victims."""
    pods = victims.pods
    max_priority = pods[0].priority
    earliest = _start(pods[0], now)
    for pod in pods:
        if pod.priority == max_priority:
            earliest = min(earliest, _start(pod, now))
        elif pod.priority > max_priority:
            max_priority, earliest = pod.priority, _start(pod, now)
    return earliest


def _start(pod: Pod, now: float) -> float:
    """``GetPodStartTime``: assumed and bound pods that have not started yet have no startTime."""
    return now if pod.start_time is None else pod.start_time


def default_score_funcs(nodes_to_victims: Mapping[NodeName, Victims], now: float) -> list[Callable[[NodeName], float]]:
    """``pickOneNodeForPreemption``'s criteria, in order; each scores higher what it prefers."""

    def min_num_pdb_violating(node: NodeName) -> float:
        return -nodes_to_victims[node].num_pdb_violations

    def min_highest_priority(node: NodeName) -> float:
        return -nodes_to_victims[node].pods[0].priority

    def min_sum_priorities(node: NodeName) -> float:
        return -sum(pod.priority + _PRIORITY_SHIFT for pod in nodes_to_victims[node].pods)

    def min_num_pods(node: NodeName) -> float:
        return -len(nodes_to_victims[node].pods)

    def latest_start_time(node: NodeName) -> float:
        return get_earliest_pod_start_time(nodes_to_victims[node], now)

    return [min_num_pdb_violating, min_highest_priority, min_sum_priorities, min_num_pods, latest_start_time]


def pick_one_node_for_preemption(
    nodes_to_victims: Mapping[NodeName, Victims],
    score_funcs: Sequence[Callable[[NodeName], float]] = (),
    now: float = 0.0,
) -> NodeName | None:
    """``pickOneNodeForPreemption``: each score function keeps the nodes with its highest score, the
    next one breaks their tie; still tied, the first (upstream: first in its map's order, i.e. any)."""
    if not nodes_to_victims:
        return None
    candidates = list(nodes_to_victims)
    funcs = list(score_funcs) or default_score_funcs(nodes_to_victims, now)
    for func in funcs:
        best = -math.inf
        selected: list[NodeName] = []
        for node in candidates:
            score = func(node)
            if score > best:
                best, selected = score, []
            if score == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        candidates = selected
    return candidates[0]


@dataclass(slots=True)
class _CandidateList:
    """Upstream's ``candidateList``: at most ``size`` candidates; later ones are dropped."""

    size: int
    items: list[Candidate] = field(default_factory=list)

    def add(self, candidate: Candidate) -> None:
        if len(self.items) < self.size:
            self.items.append(candidate)


def _aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: each text once, in order; one alone as it is,
    several as ``[a, b]``."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


class Evaluator:
    """Upstream's ``Evaluator``: the preemption steps shared by preemption plugins."""

    def __init__(
        self, plugin_name: str, handle: Handle, interface: Interface, *, placement_message: bool = False
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface
        # 1.37 (#140180): Success carries "found a potential placement ..." (``Features``).
        self.placement_message = placement_message

    def preempt(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus, now: float
    ) -> tuple[NominatingInfo | None, Status]:
        """``Preempt``: (nomination, Success) with a node to wait for; (Override "", Unschedulable)
        when no node would fit even with preemption; (None, status) when nothing may change."""
        # 1) The preemptor must be eligible.
        eligible, reason = self.interface.pod_eligible_to_preempt_others(
            pod, statuses.get_status(pod.nominated_node_name)
        )
        if not eligible:
            state.write(PREEMPTION_OUTCOME_KEY, PreemptionOutcome(None))
            return None, Status(Code.UNSCHEDULABLE, (reason,))

        # 2) The candidates.
        all_nodes = self.handle.current().node_infos()
        if not all_nodes:
            return None, Status.as_error("no nodes available")
        candidates, node_statuses, error = self.find_candidates(state, all_nodes, pod, statuses)
        if error and not candidates:
            return None, Status.as_error(error)
        if not candidates:
            # A FitError of its own, whose message becomes the "preemption: ..." part.
            diagnosis = Diagnosis(
                node_to_status=dict(node_statuses),
                absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NOT_HELPFUL,)),
            )
            fit = FitError(pod, len(all_nodes), diagnosis)
            state.write(PREEMPTION_OUTCOME_KEY, PreemptionOutcome(None))
            return CLEAR_NOMINATED_NODE, Status(Code.UNSCHEDULABLE, (str(fit),))

        # 3) Extenders' preemption verbs are not called (ours run none: docs/differences.md).
        # 4) The best candidate.
        best = self.select_candidate(candidates, now)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))

        # 5) What upstream's prepareCandidate writes.
        sink = self.handle.preemption
        if sink is not None:
            status = sink.prepare_candidate(pod, best.name, best.victims.pods)
            if status is not None and not status.is_success():
                return None, status
        state.write(PREEMPTION_OUTCOME_KEY, PreemptionOutcome(best.name, best.victims.pods))
        if self.placement_message:
            message = (
                f"found a potential placement for pod on node {best.name}, preempting {len(best.victims.pods)} victims"
            )
            return NominatingInfo(best.name, NominatingMode.OVERRIDE), Status(Code.SUCCESS, (message,))
        return NominatingInfo(best.name, NominatingMode.OVERRIDE), Status(Code.SUCCESS)

    def find_candidates(
        self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: Pod, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, str]:
        """``findCandidates``: dry runs on the nodes Filter called Unschedulable (removing pods cannot
        help a node that is UnschedulableAndUnresolvable)."""
        potential = statuses.nodes_for_status_code(all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), ""
        pdbs = self.handle.current().pod_disruption_budgets()
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num_candidates)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, str]:
        """``DryRunPreemption``: victims per node, from ``offset`` round the list, on copies of the
        node and the state; stops once a PDB-respecting candidate is among ``num_candidates`` found.
        Candidates that violate no PDB come first; the error text aggregates every node's Error."""
        non_violating, violating = _CandidateList(num_candidates), _CandidateList(num_candidates)
        node_statuses = NodeToStatus()
        errors: list[str] = []
        count = len(potential_nodes)
        for i in range(count):
            node_copy = potential_nodes[(offset + i) % count].snapshot()
            pods, violations, status = self.interface.select_victims_on_node(state.clone(), pod, node_copy, pdbs)
            if status.is_success() and pods:
                candidate = Candidate(node_copy.name, Victims(tuple(pods), violations))
                (violating if violations else non_violating).add(candidate)
                found = len(non_violating.items)
                if found > 0 and found + len(violating.items) >= num_candidates:
                    break
                continue
            if status.is_success():
                status = Status.as_error(f'expected at least one victim pod on node "{node_copy.name}"')
            if status.code is Code.ERROR:
                errors.append(status.message())
            node_statuses.set(node_copy.name, status)
        return non_violating.items + violating.items, node_statuses, _aggregate(errors) if errors else ""

    def select_candidate(self, candidates: Sequence[Candidate], now: float) -> Candidate | None:
        """``SelectCandidate``: the one candidate, or the node ``pick_one_node_for_preemption`` picks."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims_map = {c.name: c.victims for c in candidates}
        funcs = self.interface.ordered_score_funcs(victims_map)
        node = pick_one_node_for_preemption(victims_map, funcs, now)
        return next((c for c in candidates if c.name == node), candidates[0])
