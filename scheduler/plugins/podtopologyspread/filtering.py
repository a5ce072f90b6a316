"""PodTopologySpread PreFilter/Filter: hard (DoNotSchedule) constraints.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.objects import Pod
from scheduler.framework.interface import Snapshot
from scheduler.plugins.podtopologyspread.common import Constraint, eligible_domains, zero_counts

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
    self_match: list[int] = field(default_factory=list)
    # Per constraint (topology key, counts, self_match - min_match, maxSkew): all Filter needs per node.
    checks: list[tuple[str, dict[str, int], int, int]] = field(default_factory=list)

    @classmethod
    def build(cls, constraints: list[Constraint], matches: list[dict[str, int]], pod: Pod) -> PreFilterState:
        state = cls(constraints, matches, [min(m.values(), default=MAX_INT32) for m in matches])
        state.self_match = [1 if c.selector.matches(pod.labels) else 0 for c in constraints]
        state.prepare()
        return state

    def prepare(self) -> None:
        self.checks = [
            (
                c.topology_key,
                self.tp_value_to_match_num[i],
                self.self_match[i] - min_match_num(self, i, c.min_domains),
                c.max_skew,
            )
            for i, c in enumerate(self.constraints)
        ]

    def clone(self) -> PreFilterState:
        copy = PreFilterState(
            self.constraints, [dict(m) for m in self.tp_value_to_match_num], list(self.min_counts), self.self_match
        )
        copy.prepare()
        return copy

    def update(self, i: int, value: str, delta: int) -> None:
        """``updateWithPod``: move one domain's count; domains are never removed."""
        counts = self.tp_value_to_match_num[i]
        counts[value] = counts.get(value, 0) + delta
        self.min_counts[i] = min(counts.values(), default=MAX_INT32)
        self.prepare()


def min_match_num(state: PreFilterState, i: int, min_domains: int) -> int:
    """The global minimum of constraint ``i``; 0 while fewer than ``minDomains`` domains exist."""
    if len(state.tp_value_to_match_num[i]) < min_domains:
        return 0
    return state.min_counts[i]


def cal_pre_filter_state(pod: Pod, constraints: list[Constraint], snapshot: Snapshot) -> PreFilterState:
    """Count matching pods per domain over every snapshot node that carries all the keys.

    Domains come from the cache's node index of eligibility, counts from its incremental pod index:
    the work is O(domains + nodes holding matching pods), never a scan of every pod.
    """
    eligible = eligible_domains(pod, constraints, snapshot, require_all_keys=True)
    zeros = zero_counts(pod, constraints, snapshot)
    matches: list[dict[str, int]] = []
    for c, domain_of, zero in zip(constraints, eligible, zeros, strict=True):
        bucket = zero.copy()
        if not c.selector.empty:  # an empty selector counts 0 everywhere (upstream's early return)
            for node, count in snapshot.count_matching(pod.namespace, c.selector).items():
                value = domain_of.get(node)
                if value is not None:
                    bucket[value] += count
        matches.append(bucket)
    return PreFilterState.build(constraints, matches, pod)
