"""PodTopologySpread: the plugin object, its args, events and queueing hints.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.labels import make_selector
from scheduler.api.names import label_key_errors
from scheduler.api.objects import Node, Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, SpreadConstraint
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
    node_taints_changed,
    pod_tolerations_changed,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.nodeaffinity.node_affinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread import scoring
from scheduler.plugins.podtopologyspread.common import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    node_has_all_keys,
    pod_constraints,
)
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PreFilterState,
    cal_pre_filter_state,
)

__all__ = ["PodTopologySpread", "parse_args"]

NAME = names.POD_TOPOLOGY_SPREAD
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

_MISSING_LABEL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,), NAME)
_SKEW = Status(Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,), NAME)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


def parse_args(args: Mapping[str, Any]) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """``PodTopologySpreadArgs`` → (default constraints, system-defaulted?); ValueError names the field."""
    errors: list[FieldError] = []
    defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
    raw = as_list(args.get("defaultConstraints"), "defaultConstraints", errors)
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errors.append(
            FieldError("defaultingType", f'Unsupported value: "{defaulting}": supported values: "List", "System"')
        )
    if defaulting == SYSTEM_DEFAULTING and raw:
        errors.append(
            FieldError(
                "defaultingType",
                'Invalid value: "System": when .defaultConstraints are not empty, defaultingType can only be List',
            )
        )
    out: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        path = f"defaultConstraints[{i}]"
        obj = as_mapping(item, path, errors)
        skew = opt_int(obj.get("maxSkew"), f"{path}.maxSkew", errors)
        if skew is None or skew <= 0:
            errors.append(FieldError(f"{path}.maxSkew", f"Invalid value: {skew}: not in valid range [1, 2147483647]"))
        key = opt_str(obj.get("topologyKey"), f"{path}.topologyKey", errors) or ""
        if not key:
            errors.append(FieldError(f"{path}.topologyKey", "Required value: can not be empty"))
        else:
            errors.extend(label_key_errors(key, f"{path}.topologyKey"))
        when = opt_str(obj.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable", errors) or ""
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errors.append(
                FieldError(
                    f"{path}.whenUnsatisfiable",
                    f'Unsupported value: "{when}": supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            )
        if (key, when) in seen:
            errors.append(FieldError(path, f'Duplicate value: "{{{key}, {when}}}"'))
        seen.add((key, when))
        if obj.get("labelSelector") is not None:
            errors.append(
                FieldError(
                    f"{path}.labelSelector",
                    "Forbidden: constraint must not define a selector, as they deduced for each pod",
                )
            )
        min_domains = opt_int(obj.get("minDomains"), f"{path}.minDomains", errors)
        policies = [opt_str(obj.get(f), f"{path}.{f}", errors) for f in ("nodeAffinityPolicy", "nodeTaintsPolicy")]
        for field_name, value in zip(("nodeAffinityPolicy", "nodeTaintsPolicy"), policies, strict=True):
            if value is not None and value not in ("Honor", "Ignore"):
                errors.append(
                    FieldError(
                        f"{path}.{field_name}",
                        f'Unsupported value: "{value}": supported values: "Honor", "Ignore"',
                    )
                )
        out.append(SpreadConstraint(skew or 0, key, when, make_selector([]), min_domains, policies[0], policies[1]))
    if errors:
        raise ValueError("; ".join(str(e) for e in errors))
    if defaulting == SYSTEM_DEFAULTING:
        return SYSTEM_DEFAULT_CONSTRAINTS, True
    return tuple(out), False


def _after_label_change(old_pod: Pod, new_pod: Pod, constraints: Sequence[Constraint]) -> QueueingHint:
    """``isSchedulableAfterPodLabelChange``: Queue when the update makes the pod match a constraint's
    selector it did not, or stop matching one it did."""
    if dict(new_pod.labels) == dict(old_pod.labels):
        return QueueingHint.QUEUE_SKIP
    for c in constraints:
        if c.selector.matches(old_pod.labels) != c.selector.matches(new_pod.labels):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


class PodTopologySpread:
    """PreFilter (+extensions), Filter, PreScore, Score (+Normalize) and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.default_constraints, self.system_defaulted = parse_args(args)
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        if signers.has_items(signers.spec_field(pod, "topologySpreadConstraints")):
            return (), Status(Code.UNSCHEDULABLE, ("pods with topology constraints are not signable",))
        # System defaulting always has default constraints, so no pod is signable under it.
        if self.default_constraints:
            return (), Status(Code.UNSCHEDULABLE, ("pods with default topology constraints are not signable",))
        return (), None

    def _constraints(self, pod: Pod, action: str) -> list[Constraint]:
        return pod_constraints(pod, action, self.default_constraints, self.handle.current())

    # -- events -------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_event = ClusterEventWithHint(
            # Nodes appearing, disappearing, relabelled or retainted change the domains.
            ClusterEvent(
                EventResource.NODE,
                ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
            ),
            self.is_schedulable_after_node_change,
        )
        if not self.features.target_pod_events:
            return [
                # Pods appearing, disappearing or relabelled change the domain counts; the pod's own
                # new toleration may let a NodeTaintsPolicy: Honor constraint count a node.
                ClusterEventWithHint(
                    ClusterEvent(
                        EventResource.POD,
                        ActionType.ADD
                        | ActionType.UPDATE_POD_LABEL
                        | ActionType.UPDATE_POD_TOLERATION
                        | ActionType.DELETE,
                    ),
                    self.is_schedulable_after_pod_change,
                ),
                node_event,
            ]
        return [
            # Assigned pods appearing, disappearing or relabelled change the domain counts.
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
                ),
                self.is_schedulable_after_assigned_pod_change,
            ),
            # The pod's own relabelling may change what it counts (selectors built from matchLabelKeys
            # or defaults), and a new toleration may let a NodeTaintsPolicy: Honor constraint count a node.
            ClusterEventWithHint(
                ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL),
                self.is_schedulable_after_target_pod_change,
            ),
            node_event,
        ]

    def _hard_constraints_for_hint(self, pod: Pod) -> list[Constraint] | None:
        """None when they cannot be computed (no snapshot yet): the hint then says Queue."""
        if self.handle.snapshot is None:
            return None
        return self._constraints(pod, DO_NOT_SCHEDULE)

    def _involved(self, pod: Pod, *others: Pod | None) -> bool:
        """``involvedInTopologySpreading`` of each pod of an event: in the pending pod's namespace and
        counted by the hints (assigned; nominated since 1.36); before 1.37 the pending pod itself too."""
        return all(
            p is None
            or (not self.features.target_pod_events and p.uid == pod.uid)
            or (p.namespace == pod.namespace and counted_by_hints(self.features, p))
            for p in others
        )

    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """Before 1.37: one hint for every pod's Add, relabelling, new toleration and Delete."""
        pods = as_objects(Pod, old, new)
        if pods is None:
            return QueueingHint.QUEUE  # not a pod event: upstream's conversion error means Queue
        old_pod, new_pod = pods
        if old_pod is not None and new_pod is not None and new_pod.uid == pod.uid:
            return self.is_schedulable_after_target_pod_change(pod, old_pod, new_pod)  # the pod itself is involved
        return self.is_schedulable_after_assigned_pod_change(pod, old_pod, new_pod)

    def is_schedulable_after_assigned_pod_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        if pods is None:
            return QueueingHint.QUEUE  # not a pod event: upstream's conversion error means Queue
        old_pod, new_pod = pods
        if not self._involved(pod, old_pod, new_pod):
            return QueueingHint.QUEUE_SKIP
        constraints = self._hard_constraints_for_hint(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if new_pod is not None and old_pod is not None:
            return _after_label_change(old_pod, new_pod, constraints)
        changed = new_pod or old_pod
        if changed is not None and any(c.selector.matches(changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_target_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        old_pod, new_pod = pods or (None, None)
        if old_pod is None or new_pod is None:
            return QueueingHint.QUEUE  # not a pod update: upstream's conversion error means Queue
        constraints = self._hard_constraints_for_hint(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if pod_tolerations_changed(new_pod, old_pod) and any(c.node_taints_policy == "Honor" for c in constraints):
            return QueueingHint.QUEUE
        return _after_label_change(old_pod, new_pod, constraints)

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        constraints = self._hard_constraints_for_hint(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        nodes = as_objects(Node, old, new)
        if nodes is None:
            return QueueingHint.QUEUE  # not a node event: upstream's conversion error means Queue
        old_node, new_node = nodes
        if new_node is not None and old_node is not None:
            old_match = node_has_all_keys(old_node.labels, constraints)
            new_match = node_has_all_keys(new_node.labels, constraints)
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match and (
                any(old_node.labels.get(c.topology_key) != new_node.labels.get(c.topology_key) for c in constraints)
                or node_taints_changed(new_node, old_node)
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new_node is not None:
            return QueueingHint.QUEUE if node_has_all_keys(new_node.labels, constraints) else QueueingHint.QUEUE_SKIP
        if old_node is not None:
            return QueueingHint.QUEUE if node_has_all_keys(old_node.labels, constraints) else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP  # neither node: upstream's Delete branch with nothing that matched

    # -- PreFilter / Filter -------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, cal_pre_filter_state(pod, constraints, self.handle.current()))
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_remove, node_info, -1)

    def _update_with_pod(self, state: CycleState, pod: Pod, other: Pod, info: NodeInfo, delta: int) -> Status | None:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState) or other.namespace != pod.namespace:
            return None
        node = info.node
        if not node_has_all_keys(node.labels, stored.constraints):
            return None
        required = RequiredNodeAffinity.of(pod)
        for i, c in enumerate(stored.constraints):
            if c.selector.matches(other.labels) and c.match_node_inclusion_policies(pod, node, required):
                stored.update(i, node.labels[c.topology_key], delta)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            return _no_pre_filter_state()
        return _check_skew(stored, node_info)

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None]:
        stored = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(stored, PreFilterState):
            error = _no_pre_filter_state()
            return lambda _info: error
        return partial(_check_skew, stored)

    # -- Score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = self.handle.current()
        all_nodes = snapshot.node_infos()
        if not nodes or not all_nodes:
            return Status(Code.SKIP)
        constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status(Code.SKIP)
        # Only the built-in System defaults let a node lack some topology keys (hostname-only nodes).
        require_all = bool(pod.spread_constraints) or not self.system_defaulted
        state.write(
            PRE_SCORE_STATE_KEY,
            scoring.init_pre_score_state(pod, constraints, nodes, snapshot, require_all),
        )
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return scoring.score(state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState), node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        return scoring.score_nodes(state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState), nodes)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        stored = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(stored, scoring.PreScoreState):
            scoring.normalize(stored, scores, nodes)
        return None


def _no_pre_filter_state() -> Status:
    # Go's %q: upstream says reading "PreFilterPodTopologySpread" from cycleState: not found
    return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


def _check_skew(stored: PreFilterState, node_info: NodeInfo) -> Status | None:
    """Filter on one node: skew = matchNum + selfMatch - minMatch, with selfMatch - minMatch
    precomputed per constraint (``stored.checks`` is read per call: add_pod/remove_pod replace it)."""
    labels = node_info.node.labels
    for key, counts, self_minus_min, max_skew in stored.checks:
        value = labels.get(key)
        if value is None:
            return _MISSING_LABEL
        if counts.get(value, 0) + self_minus_min > max_skew:
            return _SKEW
    return None
