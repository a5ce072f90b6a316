"""PodTopologySpread PreFilter/Filter: hard (DoNotSchedule) constraints.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.api.objects import Pod
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins.podtopologyspread.common import (
    Constraint,
    node_has_all_keys,
    required_affinity_or_none,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PreFilterState",
    "cal_pre_filter_state",
    "min_match_num",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = 2**31 - 1


@dataclass(slots=True)
class PreFilterState:
    """Per hard constraint: matching-pod count per domain value, and the smallest count.

    ``tp_value_to_match_num[i]`` holds every counted domain, empty ones included (they usually make
    the minimum 0). ``clone`` copies what ``add_pod``/``remove_pod`` mutate.
    """

    constraints: list[Constraint]
    tp_value_to_match_num: list[dict[str, int]]
    min_counts: list[int]

    @classmethod
    def build(cls, constraints: list[Constraint], matches: list[dict[str, int]]) -> PreFilterState:
        return cls(constraints, matches, [min(m.values(), default=MAX_INT32) for m in matches])

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [dict(m) for m in self.tp_value_to_match_num], list(self.min_counts))

    def update(self, i: int, value: str, delta: int) -> None:
        """``updateWithPod``: move one domain's count; domains are never removed."""
        counts = self.tp_value_to_match_num[i]
        counts[value] = counts.get(value, 0) + delta
        self.min_counts[i] = min(counts.values(), default=MAX_INT32)


def min_match_num(state: PreFilterState, i: int, min_domains: int) -> int:
    """The global minimum of constraint ``i``; 0 while fewer than ``minDomains`` domains exist."""
    if len(state.tp_value_to_match_num[i]) < min_domains:
        return 0
    return state.min_counts[i]


def cal_pre_filter_state(
    pod: Pod, constraints: list[Constraint], nodes: Sequence[NodeInfo], snapshot: Snapshot
) -> PreFilterState:
    """Count matching pods per domain over every snapshot node that carries all the keys.

    Counts come from the cache's incremental index, so this is O(nodes), not O(pods).
    """
    matches: list[dict[str, int]] = [{} for _ in constraints]
    required = required_affinity_or_none(pod)
    counts = [None if c.selector.empty else snapshot.count_matching(pod.namespace, c.selector) for c in constraints]
    keys = [c.topology_key for c in constraints]
    for info in nodes:
        node = info.node
        labels = node.labels
        if not node_has_all_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, node, required):
                continue
            per_node = counts[i]
            count = per_node.get(info.name, 0) if per_node is not None else 0
            value = labels[keys[i]]
            bucket = matches[i]
            bucket[value] = bucket.get(value, 0) + count
    return PreFilterState.build(constraints, matches)
