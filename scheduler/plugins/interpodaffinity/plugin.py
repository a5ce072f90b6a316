"""InterPodAffinity: the plugin object, its args, events and queueing hints.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/plugin.go``.

The plugin is deliberately not a ``SignPlugin``: its Filter and Score on one node depend on pods on
other nodes (an existing pod's anti-affinity reaches across its whole topology domain), so its
results may never be reused per node the way ``scheduler.framework.node_results`` reuses signed
plugins' results. (Upstream's ``SignPod`` refuses pods with inter-pod affinity for the same reason.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from scheduler.api.fields import FieldError, opt_int
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
    as_objects,
    counted_by_hints,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.interpodaffinity import scoring
from scheduler.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PreFilterState,
    cal_pre_filter_state,
    pod_matches_all_affinity_terms,
    pod_matches_any_affinity_term,
    satisfy_existing_pods_anti_affinity,
    satisfy_pod_affinity,
    satisfy_pod_anti_affinity,
)

__all__ = ["InterPodAffinity", "parse_args"]

NAME = names.INTER_POD_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1  # SetDefaults_InterPodAffinityArgs
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_AFFINITY = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,), NAME)
_ANTI_AFFINITY = Status(Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,), NAME)
_EXISTING_ANTI_AFFINITY = Status(Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,), NAME)


def parse_args(args: Mapping[str, Any]) -> tuple[int, bool]:
    """``InterPodAffinityArgs`` → (hardPodAffinityWeight, ignorePreferredTermsOfExistingPods).

    Defaults and range as ``SetDefaults_InterPodAffinityArgs`` and ``ValidateInterPodAffinityArgs``;
    a ValueError names the field.
    """
    errors: list[FieldError] = []
    weight = opt_int(args.get("hardPodAffinityWeight"), "hardPodAffinityWeight", errors)
    if weight is None and not errors:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if weight is not None and not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        errors.append(
            FieldError(
                "hardPodAffinityWeight",
                f"Invalid value: {weight}: not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
            )
        )
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        errors.append(FieldError("ignorePreferredTermsOfExistingPods", f"must be a boolean, got {ignore!r}"))
    if errors:
        raise ValueError("; ".join(str(e) for e in errors))
    return weight or 0, bool(ignore)


class InterPodAffinity:
    """PreFilter (+extensions), Filter, PreScore, Score (+Normalize) and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.hard_pod_affinity_weight, self.ignore_preferred_terms_of_existing_pods = parse_args(args)
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        if pod.pod_affinity.declared:
            return (), Status(Code.UNSCHEDULABLE, ("pods with InterPodAffinity are not signable",))
        # With this option only pods with affinity terms are matched against, so the pod's labels
        # do not matter when it has no terms itself.
        if self.ignore_preferred_terms_of_existing_pods:
            return (), None
        return [(signers.LABELS_SIGNER_NAME, signers.labels_signer(pod))], None

    # -- events -------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_event = ClusterEventWithHint(
            # With queueing hints there is no preCheck, so UpdateNodeTaint is not needed (#109437).
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            self.is_schedulable_after_node_change,
        )
        # Delete: an existing pod whose anti-affinity the pod violated may go away.
        # UpdatePodLabel: an existing pod's labels may stop (or start) matching the pod's terms.
        # Add: an assigned pod may satisfy the pod's affinity.
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        if not self.features.target_pod_events:
            return [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change
                ),
                node_event,
            ]
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, pod_actions), self.is_schedulable_after_assigned_pod_change
            ),
            # The pod's own new labels may no longer match another pod's anti-affinity.
            ClusterEventWithHint(
                ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_LABEL),
                self.is_schedulable_after_target_pod_update_label,
            ),
            node_event,
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """Before 1.37: one hint for every pod's Add, relabelling and Delete."""
        pods = as_objects(Pod, old, new)
        if pods is None:
            return QueueingHint.QUEUE  # not a pod event: upstream's conversion error means Queue
        old_pod, new_pod = pods
        if (
            self.features.affinity_hints_both_ways
            and old_pod is not None
            and new_pod is not None
            and new_pod.uid == pod.uid
        ):
            return self.is_schedulable_after_target_pod_update_label(pod, old_pod, new_pod)
        return self.is_schedulable_after_assigned_pod_change(pod, old_pod, new_pod)

    def is_schedulable_after_target_pod_update_label(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        """The only update of its own registered is a relabelling: another pod's anti-affinity may
        have matched the old labels and not the new ones."""
        return QueueingHint.QUEUE

    def is_schedulable_after_assigned_pod_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        if pods is None:
            return QueueingHint.QUEUE  # not a pod event: upstream's conversion error means Queue
        old_pod, new_pod = pods
        if not counted_by_hints(self.features, old_pod, new_pod):
            return QueueingHint.QUEUE_SKIP  # an unscheduled pod makes no difference to affinity
        # The pod's own terms as parsed (namespace selectors are not resolved here, as upstream).
        terms = pod.pod_affinity.required_affinity_terms
        anti_terms = pod.pod_affinity.required_anti_affinity_terms
        # A pod conflicts with an anti-affinity term by matching it alone (since 1.37 the hints say so).
        conflicts = (
            pod_matches_any_affinity_term
            if self.features.anti_affinity_hints_any_term
            else pod_matches_all_affinity_terms
        )
        if new_pod is not None and old_pod is not None:
            # A single existing pod must satisfy all affinity terms at once, so "all" is the test.
            if not pod_matches_all_affinity_terms(terms, old_pod) and pod_matches_all_affinity_terms(terms, new_pod):
                return QueueingHint.QUEUE  # updated to match the pod's affinity
            if conflicts(anti_terms, old_pod) and not conflicts(anti_terms, new_pod):
                return QueueingHint.QUEUE  # updated not to match the pod's anti-affinity
            return QueueingHint.QUEUE_SKIP
        if new_pod is not None:
            if pod_matches_all_affinity_terms(terms, new_pod):
                return QueueingHint.QUEUE  # an added pod matches the pod's affinity
            return QueueingHint.QUEUE_SKIP
        if old_pod is None:
            return QueueingHint.QUEUE_SKIP
        if conflicts(anti_terms, old_pod):
            return QueueingHint.QUEUE  # a deleted pod matched the pod's anti-affinity
        if self.features.affinity_hints_both_ways and conflicts(old_pod.pod_affinity.required_anti_affinity_terms, pod):
            return QueueingHint.QUEUE  # the pod matched a deleted pod's anti-affinity
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        nodes = as_objects(Node, old, new)
        if nodes is None:
            return QueueingHint.QUEUE  # not a node event: upstream's conversion error means Queue
        old_node, new_node = nodes
        if new_node is None:
            return QueueingHint.QUEUE  # Node/Delete is not registered; never skip what we cannot judge
        for t in pod.pod_affinity.required_affinity_terms:
            key = t.topology_key
            if old_node is None:
                if key in new_node.labels:
                    return QueueingHint.QUEUE  # an added node has the affinity topology key
                continue
            if key not in old_node.labels and key in new_node.labels:
                return QueueingHint.QUEUE  # a node gained the affinity topology key
            if key in old_node.labels and key in new_node.labels and old_node.labels[key] != new_node.labels[key]:
                return QueueingHint.QUEUE  # a node moved to another affinity domain
        for t in pod.pod_affinity.required_anti_affinity_terms:
            key = t.topology_key
            if old_node is None:
                # A node without the key always accepts the pod, and one with it may join a domain
                # without the pods it hates: checking which is out of this hint's scope.
                return QueueingHint.QUEUE
            if key in old_node.labels and key not in new_node.labels:
                return QueueingHint.QUEUE  # a node lost the anti-affinity topology key
            if key in old_node.labels and key in new_node.labels and old_node.labels[key] != new_node.labels[key]:
                return QueueingHint.QUEUE  # a node moved to another anti-affinity domain
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter / Filter -------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        stored = cal_pre_filter_state(pod, self.handle.current())
        if (
            not stored.existing_anti_affinity_counts
            and not stored.required_affinity_terms
            and not stored.required_anti_affinity_terms
        ):
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, stored)
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            return _no_pre_filter_state()
        stored.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            return _no_pre_filter_state()
        stored.update_with_pod(pod_to_remove, node_info.node, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            return _no_pre_filter_state()
        return _check(stored, node_info)

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None]:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            error = _no_pre_filter_state()
            return lambda _info: error
        return partial(_check, stored)

    # -- Score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        stored = scoring.pre_score_state(
            pod,
            self.handle.current(),
            hard_pod_affinity_weight=self.hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods=self.ignore_preferred_terms_of_existing_pods,
        )
        if stored is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, stored)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return scoring.score(state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState), node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        stored = state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState)
        return [scoring.score(stored, info) for info in nodes]

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        stored = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(stored, scoring.PreScoreState):
            return Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        scoring.normalize(stored, scores)
        return None


def _no_pre_filter_state() -> Status:
    # Go's %q and %w: upstream says error reading "PreFilterInterPodAffinity" from cycleState: not found
    return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


def _check(stored: PreFilterState, node_info: NodeInfo) -> Status | None:
    """Filter on one node: the pod's affinity (unresolvable), its anti-affinity, then existing pods'."""
    if not satisfy_pod_affinity(stored, node_info):
        return _AFFINITY
    if not satisfy_pod_anti_affinity(stored, node_info):
        return _ANTI_AFFINITY
    if not satisfy_existing_pods_anti_affinity(stored, node_info):
        return _EXISTING_ANTI_AFFINITY
    return None
