"""TaintToleration: untolerated NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Node, Pod
from scheduler.api.taints import Effect, Toleration, find_untolerated, tolerates_any
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    another_pods_update,
    target_pod_resource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import names
from scheduler.plugins.helper.normalize_score import default_normalize_score

__all__ = ["ERR_REASON_NOT_MATCH", "ERR_REASON_UNTOLERATED", "TaintToleration"]

NAME = names.TAINT_TOLERATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME
FILTER_STATE_KEY = "Filter" + NAME

# 1.35 returns the generic text (PR #134740, so taint values do not leak into pod status).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
# Exported upstream but not what Filter returns; kept so a test can pin that it stays unused.
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"

FILTER_EFFECTS = frozenset({Effect.NO_SCHEDULE.value, Effect.NO_EXECUTE.value})
_UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNTOLERATED,), NAME)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The pod's tolerations that can tolerate a PreferNoSchedule taint."""

    tolerations: tuple[Toleration, ...]

    def clone(self) -> PreScoreState:
        return self


class UntoleratedIndex:
    """Per tainted node: (the node, whether ``tolerations`` leave a NoSchedule/NoExecute taint
    untolerated); a node index, so one node update costs one ``find_untolerated``."""

    def __init__(self, tolerations: tuple[Toleration, ...]) -> None:
        self.tolerations = tolerations
        self.verdicts: dict[str, tuple[Node, bool]] = {}

    def put(self, info: NodeInfo) -> None:
        node = info.node
        if node.taints:
            untolerated = find_untolerated(node.taints, self.tolerations, FILTER_EFFECTS) is not None
            self.verdicts[info.name] = (node, untolerated)
        else:
            self.verdicts.pop(info.name, None)

    def drop(self, name: str) -> None:
        self.verdicts.pop(name, None)


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    return tuple(t for t in pod.tolerations if t.effect in ("", Effect.PREFER_NO_SCHEDULE.value))


def _has_untolerated_hard_taint(node: Node | None, pod: Pod) -> bool:
    if node is None:
        return True
    return find_untolerated(node.taints, pod.tolerations, FILTER_EFFECTS) is not None


class TaintToleration:
    """Filter, PreScore, Score (+Normalize) and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.TOLERATIONS_SIGNER_NAME, signers.tolerations_signer(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new node, or a node whose taints changed, may now carry only tolerated taints.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            # A toleration added to the pending pod itself may tolerate what rejected it.
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        was_untolerated = _has_untolerated_hard_taint(old if isinstance(old, Node) else None, pod)
        if was_untolerated and not _has_untolerated_hard_taint(new, pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        if isinstance(new, Pod) and another_pods_update(self.features, pod, new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.tolerations

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if not node.taints:
            return None
        verdicts = state.get(FILTER_STATE_KEY)
        if not isinstance(verdicts, dict):
            verdicts = self._verdicts(pod)
            state.write(FILTER_STATE_KEY, verdicts)
        known = verdicts.get(node.name)
        if known is not None and known[0] is node:
            return _UNTOLERATED if known[1] else None
        return _UNTOLERATED if find_untolerated(node.taints, pod.tolerations, FILTER_EFFECTS) else None

    def _verdicts(self, pod: Pod) -> dict[str, tuple[Node, bool]]:
        """Per tainted snapshot node: whether these tolerations leave a NoSchedule/NoExecute taint
        untolerated. Shared by every pod with the same tolerations, kept per node by the cache."""
        snapshot = self.handle.snapshot
        if snapshot is None:
            return {}
        tolerations = pod.tolerations
        return snapshot.node_index(("TaintToleration", tolerations), lambda: UntoleratedIndex(tolerations)).verdicts

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(_prefer_no_schedule_tolerations(pod)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        stored = state.get(PRE_SCORE_STATE_KEY)
        tolerations = stored.tolerations if isinstance(stored, PreScoreState) else _prefer_no_schedule_tolerations(pod)
        return sum(
            1
            for taint in node_info.node.taints
            if taint.effect == Effect.PREFER_NO_SCHEDULE.value and not tolerates_any(tolerations, taint)
        )

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        default_normalize_score(scores, reverse=True)
        return None
