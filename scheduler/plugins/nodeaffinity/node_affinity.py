"""NodeAffinity: nodeSelector and required node affinity as a filter, preferred terms as a score.

Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.fields import FieldError, as_mapping
from scheduler.api.nodeselector import NodeSelector, PreferredTerm, parse_node_selector, parse_preferred_terms
from scheduler.api.objects import Node, Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status, StatusError
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.normalize_score import default_normalize_score

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NodeAffinity",
    "RequiredNodeAffinity",
]

NAME = names.NODE_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,), NAME)
_POD_MISMATCH = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,), NAME)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``nodeaffinity.GetRequiredNodeAffinity``: nodeSelector AND required terms."""

    node_selector: Mapping[str, str] | None
    required: NodeSelector | None

    @classmethod
    def of(cls, pod: Pod) -> RequiredNodeAffinity:
        return cls(pod.node_selector or None, pod.required_affinity)

    @property
    def key(self) -> tuple[object, ...]:
        """Hashable identity: pods with equal keys match exactly the same nodes."""
        return (tuple(sorted(self.node_selector.items())) if self.node_selector else None, self.required)

    def matches(self, node: Node) -> bool:
        if self.node_selector:
            labels = node.labels
            for key, value in self.node_selector.items():
                if labels.get(key) != value:
                    return False
        if self.required is not None:
            return self.required.matches(node.name, node.labels)
        return True


class AffinityIndex:
    """Per node name: the node object the answer is about, and whether it matches ``affinity``; a
    node index, so one node update costs one match."""

    def __init__(self, affinity: RequiredNodeAffinity) -> None:
        self.affinity = affinity
        self.matches: dict[str, tuple[Node, bool]] = {}

    def put(self, info: NodeInfo) -> None:
        self.matches[info.name] = (info.node, self.affinity.matches(info.node))

    def drop(self, name: str) -> None:
        self.matches.pop(name, None)


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """The pod's required affinity and, per snapshot node, whether it matches (shared across pods)."""

    required: RequiredNodeAffinity
    matches: Mapping[str, tuple[Node, bool]]

    def clone(self) -> PreFilterState:
        return self


@dataclass(frozen=True, slots=True)
class PreScoreState:
    preferred: tuple[PreferredTerm, ...]

    def clone(self) -> PreScoreState:
        return self


def _preferred_errors(terms: Sequence[PreferredTerm]) -> list[str]:
    return [t.term.parse_error for t in terms if t.term.parse_error is not None]


def _preferred_error(terms: Sequence[PreferredTerm]) -> Status | None:
    """``NewPreferredSchedulingTerms``' error as a Status, or None: every term's parse errors, flattened
    and de-duplicated as an ``errors.Aggregate`` prints them (one alone, several as ``[a, b]``)."""
    unique = list(dict.fromkeys(e for t in terms for e in t.term.parse_errors))
    if not unique:
        return None
    return Status.as_error(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")


class NodeAffinity:
    """PreFilter, Filter, PreScore, Score (+Normalize) and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        errors: list[FieldError] = []
        added = as_mapping(args.get("addedAffinity"), "addedAffinity", errors)
        self.added_required: NodeSelector | None = parse_node_selector(
            added.get("requiredDuringSchedulingIgnoredDuringExecution"),
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            errors,
        )
        self.added_preferred = parse_preferred_terms(
            added.get("preferredDuringSchedulingIgnoredDuringExecution"),
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            errors,
        )
        for selector_errors in self.added_required.parse_errors if self.added_required else ():
            errors.append(FieldError("addedAffinity", selector_errors))
        errors.extend(FieldError("addedAffinity", e) for e in _preferred_errors(self.added_preferred))
        # Upstream parses the added preferred terms when the list is not empty; then every pod is
        # scored, even when all those terms are empty and were dropped.
        self.added_preferred_listed = bool(added.get("preferredDuringSchedulingIgnoredDuringExecution"))
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        self.handle = handle

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [
            (signers.NODE_AFFINITY_SIGNER_NAME, signers.node_affinity_signer(pod)),
            (signers.NODE_SELECTOR_SIGNER_NAME, signers.node_selector_signer(pod)),
        ], None

    # -- events ----------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new node, or a node whose labels changed, may now match the pod's affinity.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        if self.added_required is not None and not self.added_required.matches(new.name, new.labels):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity.of(pod)
        if not required.matches(new):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, Node):
            return QueueingHint.QUEUE
        if required.matches(old):  # it matched before, so this change is not what the pod waited for
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- PreFilter / Filter -------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> Hashable:
        selector = None if pod.node_selector is None else tuple(sorted(pod.node_selector.items()))
        return pod.required_affinity, selector, pod.preferred_affinity, pod.preferred_affinity_listed

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = pod.required_affinity
        no_node_affinity = required is None
        if no_node_affinity and self.added_required is None and pod.node_selector is None:
            return None, Status(Code.SKIP)
        affinity = RequiredNodeAffinity.of(pod)
        snapshot = self.handle.snapshot
        matches: Mapping[str, tuple[Node, bool]] = (
            snapshot.node_index(("NodeAffinity", affinity.key), lambda: AffinityIndex(affinity)).matches
            if snapshot is not None
            else {}
        )
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(affinity, matches))
        if required is None or not required.terms or required.has_empty_term:
            return None, None  # an empty term names no node, so it leaves every node a candidate
        # Narrow to node names only when every term names nodes through metadata.name In.
        node_names: set[str] = set()
        for term in required.terms:
            allowed = term.name_in_values()
            if allowed is None:
                return None, None
            node_names |= allowed
        if not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))
        return PreFilterResult(frozenset(node_names)), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if self.added_required is not None and not self.added_required.matches(node.name, node.labels):
            return _ENFORCED
        stored = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(stored, PreFilterState):
            known = stored.matches.get(node.name)
            matched = known[1] if known is not None and known[0] is node else stored.required.matches(node)
        else:
            matched = RequiredNodeAffinity.of(pod).matches(node)
        return None if matched else _POD_MISMATCH

    # -- Score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        # Skipped only when neither the pod nor the args list preferred terms (upstream: both nil).
        if not (pod.preferred_affinity or pod.preferred_affinity_listed or self.added_preferred_listed):
            return Status(Code.SKIP)
        error = _preferred_error(pod.preferred_affinity)
        if error is not None:
            return error
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(pod.preferred_affinity))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        stored = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(stored, PreScoreState):
            preferred = stored.preferred
        else:
            # Without PreScore, upstream's Score parses the terms itself: the same error.
            error = _preferred_error(pod.preferred_affinity)
            if error is not None:
                raise StatusError(error)
            preferred = pod.preferred_affinity
        total = 0
        for term in self.added_preferred:
            if term.term.matches(node.name, node.labels):
                total += term.weight
        for term in preferred:
            if term.term.matches(node.name, node.labels):
                total += term.weight
        return total

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None
