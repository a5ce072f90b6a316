"""Opportunistic batching (``pkg/scheduler/framework/runtime/batch.go``, beta and on in 1.35).

After a pod is scored, the nodes it did not take stay sorted by score. When the next pod of the
same profile, in the very next cycle, signs exactly like it (``Framework.sign_pod``) and no longer
fits the node the previous pod took, the runner-up is offered as a hint: evaluated alone, like a
nominated node, and taken without scoring if it passes Filter. That is right when pods go one per
node (the previous scores still rank the other nodes); it is upstream's decision even when a fresh
scoring would rank them differently, and so it is ours.

State is per profile, kept between cycles and never copied. The clock is injected (``simulate``'s
stands still, so its state never expires). No I/O, no logging: ``last_flush_reason`` and
``batched_pods`` say what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.api.objects import NodeName, Pod
from scheduler.framework.cycle_state import CycleState

if TYPE_CHECKING:
    from scheduler.framework.interface import Snapshot
    from scheduler.framework.runtime import Framework

__all__ = [
    "FLUSH_EMPTY_LIST",
    "FLUSH_EXPIRED",
    "FLUSH_NODE_MISSING",
    "FLUSH_NODE_NOT_FULL",
    "FLUSH_POD_FAILED",
    "FLUSH_POD_INCOMPATIBLE",
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


@dataclass(slots=True)
class BatchState:
    """A scored pod's signature and the nodes it did not take, best first (popped from the front)."""

    signature: bytes
    sorted_nodes: list[NodeName]
    creation_time: float


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
        hint = self.state.sorted_nodes.pop(0)
        return hint, signature

    def store_schedule_results(
        self,
        signature: bytes | None,
        hinted_node: str | None,
        chosen_node: str,
        other_nodes: Sequence[NodeName],
        cycle_count: int,
    ) -> None:
        """``StoreScheduleResults``, after a cycle that found a node (before Reserve): a used hint
        keeps the state as it is (already popped); otherwise a signed pod with other nodes stores
        them, and anything else clears the state."""
        self.last_cycle = SchedulingCycle(cycle_count, chosen_node, succeeded=True)
        if hinted_node is not None and hinted_node == chosen_node:
            self.batched_pods += 1
            return
        if signature is not None and other_nodes:
            self.state = BatchState(signature, list(other_nodes), self.clock())
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
        elif signature is None or signature != self.state.signature:
            reason = FLUSH_POD_INCOMPATIBLE
        elif self.clock() > self.state.creation_time + MAX_BATCH_AGE:
            reason = FLUSH_EXPIRED
        else:
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
