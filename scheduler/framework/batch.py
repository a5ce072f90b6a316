"""Opportunistic batching (``pkg/scheduler/framework/runtime/batch.go``, beta and on in 1.35).

After a pod is scored, the nodes it did not take stay sorted by score. When the next pod of the
same profile, in the very next cycle, signs exactly like it (``Framework.sign_pod``) and no longer
fits the node the previous pod took, the runner-up is offered as a hint: evaluated alone, like a
nominated node, and taken without scoring if it passes Filter. That is right when pods go one per
node (the previous scores still rank the other nodes); it is upstream's decision even when a fresh
scoring would rank them differently, and so it is ours.

From 1.37 (``Features.batch_rescores_last_node``) a pod that still fits the node the previous one
took does not end the batch: that node is scored again for this pod (PreScore over it and the
stored nodes, on a copy of the cycle state) and normalized with the stored nodes' kept raw scores,
and the best of them is the hint. A pod with a nominated node gets no hint.

State is per profile, kept between cycles and never copied. The clock is injected (``simulate``'s
stands still, so its state never expires). No I/O, no logging: ``last_flush_reason`` and
``batched_pods`` say what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.api.objects import NodeName, Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.sorted_nodes import ScoredNode, SortedScoredNodes

if TYPE_CHECKING:
    from scheduler.framework.interface import Snapshot
    from scheduler.framework.runtime import Framework
    from scheduler.framework.types import NodeInfo

__all__ = [
    "FLUSH_EMPTY_LIST",
    "FLUSH_EXPIRED",
    "FLUSH_FILTER_ERROR",
    "FLUSH_NODE_MISSING",
    "FLUSH_NODE_NOT_FULL",
    "FLUSH_POD_FAILED",
    "FLUSH_POD_INCOMPATIBLE",
    "FLUSH_POD_NOMINATED",
    "FLUSH_POD_NOT_BATCHABLE",
    "FLUSH_POD_SKIPPED",
    "MAX_BATCH_AGE",
    "BatchState",
    "OpportunisticBatch",
    "SchedulingCycle",
]

# The stored results are used for at most this long (seconds): neither an endless run of
# compatible pods nor a long wait between two pods reuses old scores.
MAX_BATCH_AGE = 0.5

# Why stored results were not used (upstream's BatchCacheFlushed reasons).
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_POD_NOMINATED = "pod_nominated"  # 1.37 on
FLUSH_FILTER_ERROR = "filter_error"
FLUSH_PRESCORE_ERROR = "prescore_error"
FLUSH_RESCORE_ERROR = "rescore_error"
FLUSH_NORMALIZE_ERROR = "normalize_error"


@dataclass(slots=True)
class BatchState:
    """A scored pod's signature and the nodes it did not take, in upstream's heap."""

    signature: bytes
    sorted_nodes: SortedScoredNodes
    creation_time: float
    # 1.37: each stored node's raw score per Score plugin, kept to normalize again after a rescore.
    raw_scores: dict[NodeName, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SchedulingCycle:
    """The last cycle that stored results: its number and the node it chose."""

    cycle_count: int = 0
    chosen_node: str = ""
    # Upstream never stores a failed cycle, so this is always True once set; a failure shows as a
    # gap in the cycle count instead.
    succeeded: bool = False


@dataclass(slots=True)
class OpportunisticBatch:
    clock: Callable[[], float]
    rescore: bool = False  # Features.batch_rescores_last_node
    state: BatchState | None = None
    last_cycle: SchedulingCycle = field(default_factory=SchedulingCycle)
    batched_pods: int = 0  # pods placed on a hint (tests, metrics)
    last_flush_reason: str | None = None  # why the last unusable state was not used (tests, metrics)

    def get_node_hint(
        self, fwk: Framework, state: CycleState, pod: Pod, cycle_count: int, snapshot: Snapshot
    ) -> tuple[NodeName | None, bytes | None]:
        """``GetNodeHint``: the next node of the stored list (popped), or None; and the pod's
        signature, which ``store_schedule_results`` needs whatever the answer. Called after PreFilter
        succeeded (the last chosen node is filtered with this cycle's state)."""
        signature = fwk.sign_pod(pod)
        if not self._compatible(fwk, state, pod, signature, cycle_count, snapshot):
            return None, signature
        assert self.state is not None
        if self.rescore and not self._refresh(fwk, state, pod, snapshot):
            return None, signature
        hint = self.state.sorted_nodes.pop().name
        return hint, signature

    def store_schedule_results(
        self,
        signature: bytes | None,
        hinted_node: str | None,
        chosen_node: str,
        other_nodes: Sequence[NodeName],
        cycle_count: int,
        raw_scores: Callable[[], Mapping[NodeName, Mapping[str, int]]] | None = None,
        totals: Mapping[NodeName, int] | None = None,
    ) -> None:
        """``StoreScheduleResults``, after a cycle that found a node (before Reserve): a used hint
        keeps the state as it is (already popped); otherwise a signed pod with other nodes stores
        them (with their raw scores, from 1.37: ``raw_scores`` is called only then, as building them
        for every scored node costs as much as a Score plugin), and anything else clears the state.

        ``other_nodes`` are in our ranking (``totals`` best first, ties in examination order). Upstream
        heaps every scored node and pops its host from the same heap; its tie-breakers are random,
        and ours rank the nodes (the chosen one first), so the heap left behind is laid out as
        upstream's is when its random draws rank them the same way (the differential oracle makes
        them so)."""
        self.last_cycle = SchedulingCycle(cycle_count, chosen_node, succeeded=True)
        if hinted_node is not None and hinted_node == chosen_node:
            self.batched_pods += 1
            return
        if signature is not None and other_nodes:
            ranked = [NodeName(chosen_node), *other_nodes]
            score = totals or {}
            heap = SortedScoredNodes(
                ScoredNode(name, score.get(name, 0), len(ranked) - i) for i, name in enumerate(ranked)
            )
            heap.pop()  # the chosen node
            self.state = BatchState(signature, heap, self.clock(), dict(raw_scores() if raw_scores else {}))
            return
        self.last_flush_reason = FLUSH_EMPTY_LIST if not other_nodes else FLUSH_POD_NOT_BATCHABLE
        self.state = None

    def _compatible(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        signature: bytes | None,
        cycle_count: int,
        snapshot: Snapshot,
    ) -> bool:
        """``batchStateCompatible``. An unusable state is not cleared here: the cycle's own
        ``store_schedule_results`` replaces it (and a failed cycle leaves a gap in the count)."""
        if self.state is None or not self.state.sorted_nodes:
            return False
        reason = None
        if cycle_count != self.last_cycle.cycle_count + 1:
            reason = FLUSH_POD_SKIPPED  # another profile's pod, a failed or skipped pod came between
        elif not self.last_cycle.succeeded:
            reason = FLUSH_POD_FAILED
        elif self.rescore and pod.nominated_node_name:
            reason = FLUSH_POD_NOMINATED
        elif signature is None or signature != self.state.signature:
            reason = FLUSH_POD_INCOMPATIBLE
        elif self.clock() > self.state.creation_time + MAX_BATCH_AGE:
            reason = FLUSH_EXPIRED
        elif not self.rescore:
            # The stored ranking still holds only if this pod no longer fits where the last one went
            # (one pod per node): had it fit there, that node might still be the best one.
            last = snapshot.get(self.last_cycle.chosen_node)
            if last is None:
                reason = FLUSH_NODE_MISSING
            else:
                status = fwk.run_filter_plugins(state, pod, last)
                if status is None or not status.is_rejected():
                    reason = FLUSH_NODE_NOT_FULL
        if reason is not None:
            self.last_flush_reason = reason
            return False
        return True

    def _refresh(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot) -> bool:
        """``refreshHintCandidates`` (1.37): the last chosen node, if the pod still fits it, is scored
        again and competes with the stored nodes; False (state unusable) when it is gone or an
        error occurred."""
        assert self.state is not None
        last = snapshot.get(self.last_cycle.chosen_node)
        if last is None:
            return self._unusable(FLUSH_NODE_MISSING)
        status = fwk.run_filter_plugins(state, pod, last)
        if status is None or status.is_success():
            return self._rescore(fwk, state, pod, snapshot, last)
        if not status.is_rejected():
            return self._unusable(FLUSH_FILTER_ERROR)
        return True

    def _rescore(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot, last: NodeInfo) -> bool:
        """``rescoreHintedNode``: PreScore over the stored nodes and ``last`` on a copy of the state,
        ``last``'s raw scores, then all of them normalized again and heaped anew: the stored nodes in
        the heap's layout, then ``last`` as a fresh entry (tie-breaker 0: it pops after every stored
        node of the same total)."""
        assert self.state is not None
        cached = self.state.sorted_nodes.unordered()
        names = [node.name for node in cached]
        nodes: list[NodeInfo] = []
        for name in names:
            info = snapshot.get(name)
            if info is None:
                return self._unusable(FLUSH_NODE_MISSING)
            nodes.append(info)
        nodes.append(last)
        names.append(NodeName(last.name))
        rescore_state = state.clone()
        if fwk.run_pre_score_plugins(rescore_state, pod, nodes) is not None:
            return self._unusable(FLUSH_PRESCORE_ERROR)
        fresh, status = fwk.run_raw_score_plugins(rescore_state, pod, last)
        if status is not None:
            return self._unusable(FLUSH_RESCORE_ERROR)
        raw = self.state.raw_scores
        raw[names[-1]] = fresh
        scores, status = fwk.normalize_scores(rescore_state, pod, nodes, [raw.get(n, {}) for n in names])
        if status is not None:
            return self._unusable(FLUSH_NORMALIZE_ERROR)
        totals = [0] * len(names)
        for plugin in scores:
            totals = [t + v * plugin.weight for t, v in zip(totals, plugin.normalized, strict=True)]
        randomizers = [node.randomizer for node in cached] + [0]
        self.state.sorted_nodes = SortedScoredNodes(
            ScoredNode(name, total, randomizer)
            for name, total, randomizer in zip(names, totals, randomizers, strict=True)
        )
        return True

    def _unusable(self, reason: str) -> bool:
        self.last_flush_reason = reason
        return False
