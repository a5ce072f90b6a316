"""Constraints as the plugin uses them: defaults resolved, matchLabelKeys merged, policies applied.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/common.go`` and ``helper/spread.go``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.api.labels import Operator, Requirement, Selector, make_selector
from scheduler.api.objects import Node, Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, HONOR, IGNORE, SCHEDULE_ANYWAY, SpreadConstraint
from scheduler.api.taints import find_untolerated
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper.spread import default_selector
from scheduler.plugins.nodeaffinity.node_affinity import RequiredNodeAffinity
from scheduler.plugins.tainttoleration.taint_toleration import FILTER_EFFECTS

__all__ = [
    "HOSTNAME_KEY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "Constraint",
    "node_has_all_keys",
    "pod_constraints",
]

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"

# ``defaultingType: System``: soft hostname (maxSkew 3) and zone (maxSkew 5) spreading.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[SpreadConstraint, ...] = (
    SpreadConstraint(3, HOSTNAME_KEY, SCHEDULE_ANYWAY, make_selector([])),
    SpreadConstraint(5, ZONE_KEY, SCHEDULE_ANYWAY, make_selector([])),
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """``topologySpreadConstraint``: the internal form with every default applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def match_node_inclusion_policies(self, pod: Pod, node: Node, required: RequiredNodeAffinity | None) -> bool:
        """Whether ``node`` counts as a domain member (``matchNodeInclusionPolicies``).

        ``required`` is None when the pod has no required node affinity at all (every node passes).
        """
        if self.node_affinity_policy == HONOR and required is not None and not required.matches(node):
            return False
        return not (
            self.node_taints_policy == HONOR
            and node.taints
            and find_untolerated(node.taints, pod.tolerations, FILTER_EFFECTS) is not None
        )


def _convert(c: SpreadConstraint, pod_labels: Mapping[str, str], selector: Selector | None = None) -> Constraint:
    sel = c.selector if selector is None else selector
    if selector is None and c.match_label_keys and not sel.nothing:
        extra = tuple(
            Requirement(key, Operator.IN, frozenset((pod_labels[key],)))
            for key in c.match_label_keys
            if key in pod_labels
        )
        if extra:
            sel = sel.and_requirements(extra)
    return Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        selector=sel,
        min_domains=c.min_domains if c.min_domains is not None else 1,
        node_affinity_policy=c.node_affinity_policy or HONOR,
        node_taints_policy=c.node_taints_policy or IGNORE,
    )


def pod_constraints(
    pod: Pod,
    action: str,
    defaults: Sequence[SpreadConstraint],
    snapshot: Snapshot,
) -> list[Constraint]:
    """The pod's constraints for one action (DoNotSchedule or ScheduleAnyway).

    Explicit constraints win outright; otherwise the configured defaults apply with a selector
    deduced from the pod's Services and controller, and none apply when that selector is empty.
    """
    if pod.spread_constraints:
        return [_convert(c, pod.labels) for c in pod.spread_constraints if c.when_unsatisfiable == action]
    wanted = [c for c in defaults if c.when_unsatisfiable == action]
    if not wanted:
        return []
    selector = default_selector(pod, snapshot)
    if selector.empty:
        return []
    return [_convert(c, pod.labels, selector) for c in wanted]


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node carries every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


class DomainIndex:
    """Per constraint: node name -> domain value for every node that counts as a domain member, and
    each domain with at least one member at 0 (what PreFilter starts counting from).

    Depends on nodes, and on the pod's affinity/tolerations only where a policy says Honor; a node
    index, so pods of one workload share it and one node update costs one node's checks.
    """

    def __init__(
        self,
        pod: Pod,
        constraints: Sequence[Constraint],
        required: RequiredNodeAffinity | None,
        *,
        require_all_keys: bool,
        skip_hostname: bool,
    ) -> None:
        self._pod = pod
        self._constraints = tuple(constraints)
        self._required = required
        self._require_all_keys = require_all_keys
        self._skip_hostname = skip_hostname
        self.domain_of: list[dict[str, str]] = [{} for _ in constraints]
        self.zeros: list[dict[str, int]] = [{} for _ in constraints]
        self._members: list[dict[str, int]] = [{} for _ in constraints]

    def put(self, info: NodeInfo) -> None:
        node = info.node
        labels = node.labels
        has_keys = not self._require_all_keys or node_has_all_keys(labels, self._constraints)
        for i, c in enumerate(self._constraints):
            value: str | None = None
            if (
                has_keys
                and not (self._skip_hostname and c.topology_key == HOSTNAME_KEY)
                and c.match_node_inclusion_policies(self._pod, node, self._required)
            ):
                value = labels.get(c.topology_key, "")
            old = self.domain_of[i].get(info.name)
            if value == old:
                continue  # most updates (a heartbeat, another label) leave the node where it was
            if old is not None:
                self._leave(i, info.name, old)
            if value is not None:
                self.domain_of[i][info.name] = value
                members = self._members[i]
                if value not in members:
                    members[value] = 0
                    self.zeros[i][value] = 0
                members[value] += 1

    def _leave(self, i: int, name: str, value: str) -> None:
        del self.domain_of[i][name]
        members = self._members[i]
        members[value] -= 1
        if not members[value]:
            del members[value]
            del self.zeros[i][value]

    def drop(self, name: str) -> None:
        for i, domain_of in enumerate(self.domain_of):
            value = domain_of.get(name)
            if value is not None:
                self._leave(i, name, value)


def domain_index(
    pod: Pod,
    constraints: Sequence[Constraint],
    snapshot: Snapshot,
    *,
    require_all_keys: bool,
    skip_hostname: bool = False,
) -> DomainIndex:
    """The snapshot's DomainIndex for these constraints and this pod's Honor-relevant fields."""
    required = required_affinity_or_none(pod)
    key = _eligibility_key(pod, constraints, required, require_all_keys, skip_hostname)
    return snapshot.node_index(
        key,
        lambda: DomainIndex(pod, constraints, required, require_all_keys=require_all_keys, skip_hostname=skip_hostname),
    )


def eligible_domains(
    pod: Pod,
    constraints: Sequence[Constraint],
    snapshot: Snapshot,
    *,
    require_all_keys: bool,
    skip_hostname: bool = False,
) -> list[dict[str, str]]:
    """Per constraint: node name -> domain value, for every node that counts as a domain member."""
    index = domain_index(pod, constraints, snapshot, require_all_keys=require_all_keys, skip_hostname=skip_hostname)
    return index.domain_of


def zero_counts(pod: Pod, constraints: Sequence[Constraint], snapshot: Snapshot) -> list[dict[str, int]]:
    """Per constraint, every eligible domain (all keys required) at 0: PreFilter copies these instead
    of rebuilding them from every node's domain each cycle (half a millisecond per hostname
    constraint at 5000 nodes)."""
    return domain_index(pod, constraints, snapshot, require_all_keys=True).zeros


def _eligibility_key(
    pod: Pod,
    constraints: Sequence[Constraint],
    required: RequiredNodeAffinity | None,
    require_all_keys: bool,
    skip_hostname: bool,
) -> tuple[object, ...]:
    """What domain eligibility depends on besides the nodes: affinity and tolerations only where a
    constraint's policy says Honor."""
    honor_affinity = required is not None and any(c.node_affinity_policy == HONOR for c in constraints)
    honor_taints = any(c.node_taints_policy == HONOR for c in constraints)
    return (
        "PodTopologySpread",
        tuple((c.topology_key, c.node_affinity_policy, c.node_taints_policy) for c in constraints),
        require_all_keys,
        skip_hostname,
        required.key if honor_affinity and required is not None else None,
        pod.tolerations if honor_taints else None,
    )


def required_affinity_or_none(pod: Pod) -> RequiredNodeAffinity | None:
    """The pod's required node affinity, or None when it has none (every node passes)."""
    if not pod.node_selector and pod.required_affinity is None:
        return None
    return RequiredNodeAffinity.of(pod)


__all__ += ["DO_NOT_SCHEDULE", "SCHEDULE_ANYWAY", "required_affinity_or_none", "zero_counts"]
