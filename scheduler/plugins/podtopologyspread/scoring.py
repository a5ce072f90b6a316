"""PodTopologySpread PreScore/Score/NormalizeScore: soft (ScheduleAnyway) constraints.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import NodeName, Pod
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins.podtopologyspread.common import (
    HOSTNAME_KEY,
    Constraint,
    eligible_domains,
)

__all__ = [
    "PreScoreState",
    "init_pre_score_state",
    "normalize",
    "score_for_count",
    "topology_normalizing_weight",
]


def topology_normalizing_weight(size: int) -> float:
    """``ln(size + 2)``: more domains make each matching pod weigh more."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """One constraint's contribution: ``count * weight + (maxSkew - 1)``."""
    return count * weight + (max_skew - 1)


@dataclass(slots=True)
class PreScoreState:
    constraints: list[Constraint]
    ignored_nodes: set[NodeName] = field(default_factory=set)
    topology_value_to_pod_counts: list[dict[str, int]] = field(default_factory=list)
    topology_normalizing_weight: list[float] = field(default_factory=list)
    per_node_counts: list[Mapping[NodeName, int] | None] = field(default_factory=list)
    # Per constraint, all Score reads per node: (topology key, per-domain counts or None for the
    # hostname key, per-node counts or None, normalizing weight, maxSkew - 1).
    terms: list[tuple[str, dict[str, int] | None, Mapping[NodeName, int] | None, float, int]] = field(
        default_factory=list
    )

    def clone(self) -> PreScoreState:
        return self

    def prepare(self) -> list[tuple[str, dict[str, int] | None, Mapping[NodeName, int] | None, float, int]]:
        """Fill ``terms`` from the fields above."""
        self.terms = [
            (
                c.topology_key,
                None if c.topology_key == HOSTNAME_KEY else self.topology_value_to_pod_counts[i],
                self.per_node_counts[i],
                self.topology_normalizing_weight[i],
                c.max_skew - 1,
            )
            for i, c in enumerate(self.constraints)
        ]
        return self.terms


def init_pre_score_state(
    pod: Pod,
    constraints: list[Constraint],
    filtered: Sequence[NodeInfo],
    snapshot: Snapshot,
    require_all_topologies: bool,
) -> PreScoreState:
    state = PreScoreState(constraints)
    value_counts: list[dict[str, int]] = [{} for _ in constraints]
    # This visits every filtered node of every cycle: ``node_has_all_keys`` as one set comparison.
    keys = frozenset(c.topology_key for c in constraints) if require_all_topologies else frozenset()
    domains = [(value_counts[i], c.topology_key) for i, c in enumerate(constraints) if c.topology_key != HOSTNAME_KEY]
    ignored = state.ignored_nodes
    if not domains:  # hostname constraints only: just the nodes that lack a key
        if keys:
            ignored.update([info.name for info in filtered if not info.node.labels.keys() >= keys])
    else:
        for info in filtered:
            labels = info.node.labels
            if keys and not labels.keys() >= keys:
                ignored.add(info.name)
                continue
            for counts, key in domains:
                counts.setdefault(labels.get(key, ""), 0)
    for i, c in enumerate(constraints):
        size = len(value_counts[i])
        if c.topology_key == HOSTNAME_KEY:
            size = len(filtered) - len(state.ignored_nodes)
        state.topology_normalizing_weight.append(topology_normalizing_weight(size))

    state.per_node_counts = [
        None if c.selector.empty else snapshot.count_matching(pod.namespace, c.selector) for c in constraints
    ]
    if any(c.topology_key != HOSTNAME_KEY for c in constraints):
        # Which node counts for which domain is a node index the cache keeps; only nodes that hold
        # matching pods are visited here (the pod index is sparse), not every node.
        eligible = eligible_domains(
            pod, constraints, snapshot, require_all_keys=require_all_topologies, skip_hostname=True
        )
        for i, c in enumerate(constraints):
            per_node = state.per_node_counts[i]
            if c.topology_key == HOSTNAME_KEY or per_node is None:
                continue
            bucket, domain_of = value_counts[i], eligible[i]
            for node, count in per_node.items():
                value = domain_of.get(node)
                if value is not None and value in bucket:  # domains without a feasible node stay out
                    bucket[value] += count
    state.topology_value_to_pod_counts = value_counts
    state.prepare()
    return state


def score(state: PreScoreState, info: NodeInfo) -> int:
    return score_nodes(state, (info,))[0]


def score_nodes(state: PreScoreState, nodes: Sequence[NodeInfo]) -> list[int]:
    """Each node's score. ``score_for_count`` and Go's ``math.Round`` are inlined (the same
    operations in the same order, so the same float; the sum is never negative): this runs for
    every scored node of every cycle."""
    terms = state.terms if state.terms or not state.constraints else state.prepare()
    ignored = state.ignored_nodes
    floor = math.floor
    if not ignored and len(terms) == 1 and terms[0][1] is None:
        # One hostname constraint (the usual soft spread), as one comprehension: the same float
        # operations (0.0 + x is x for the non-negative x here).
        key, _, per_node, weight, skew_minus_one = terms[0]
        counts: Mapping[NodeName, int] = per_node if per_node is not None else {}
        return [
            floor(counts.get(info.name, 0) * weight + skew_minus_one + 0.5) if key in info.node.labels else 0
            for info in nodes
        ]
    out: list[int] = []
    for info in nodes:
        if info.name in ignored:
            out.append(0)
            continue
        labels = info.node.labels
        total = 0.0
        for key, domain_counts, per_node, weight, skew_minus_one in terms:
            value = labels.get(key)
            if value is None:
                continue
            if domain_counts is None:  # the hostname key: the node is its own domain
                count = per_node.get(info.name, 0) if per_node is not None else 0
            else:
                count = domain_counts[value]
            total += count * weight + skew_minus_one
        out.append(floor(total + 0.5))
    return out


def normalize(state: PreScoreState, scores: list[int], nodes: Sequence[NodeInfo]) -> None:
    """Fewest matching pods → 100; ignored nodes → 0; ``100*(max+min-s)//max``."""
    ignored = state.ignored_nodes
    if not ignored:  # the usual case, as comprehensions (this runs over every scored node of every cycle)
        lowest, highest = min(scores, default=2**63 - 1), max(scores, default=0)
        if highest == 0:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        else:
            scores[:] = [MAX_NODE_SCORE * (highest + lowest - s) // highest for s in scores]
        return
    considered = [s for s, n in zip(scores, nodes, strict=True) if n.name not in ignored]
    lowest = min(considered, default=2**63 - 1)
    highest = max(considered, default=0)
    for i, node in enumerate(nodes):
        if node.name in ignored:
            scores[i] = 0
        elif highest == 0:
            scores[i] = MAX_NODE_SCORE
        else:
            scores[i] = MAX_NODE_SCORE * (highest + lowest - scores[i]) // highest
