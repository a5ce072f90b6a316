"""InterPodAffinity PreScore/Score/NormalizeScore: preferred terms both ways, and existing pods'
required affinity weighted by ``hardPodAffinityWeight``.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.objects import Pod
from scheduler.api.podaffinity import PodAffinity, WeightedAffinityTerm
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins.interpodaffinity.filtering import domain_counts, merge_namespace_selector

__all__ = ["PreScoreState", "ScoreMap", "normalize", "pre_score_state", "score"]

ScoreMap = dict[str, dict[str, int]]
"""topology key -> topology value -> summed weight (upstream's ``scoreMap``)."""


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """Computed at PreScore, read by Score and NormalizeScore; read-only, so ``clone`` is ``self``."""

    topology_score: ScoreMap

    def clone(self) -> PreScoreState:
        return self


def _signed(affinity: PodAffinity) -> list[tuple[WeightedAffinityTerm, int]]:
    """Preferred affinity terms add their weight, preferred anti-affinity terms subtract it."""
    return [(w, 1) for w in affinity.preferred_affinity_terms] + [
        (w, -1) for w in affinity.preferred_anti_affinity_terms
    ]


def _matching_terms(
    theirs: PodAffinity, pod: Pod, namespace_labels: Mapping[str, str] | None, hard_pod_affinity_weight: int
) -> tuple[tuple[str, int], ...]:
    """(topology key, weight) of each of an existing pod's terms that matches the incoming pod: its
    required affinity at ``hardPodAffinityWeight``, its preferred terms, anti-affinity negative."""
    out: list[tuple[str, int]] = []
    if hard_pod_affinity_weight > 0:
        for t in theirs.required_affinity_terms:
            if t.matches(pod.namespace, pod.labels, namespace_labels):
                out.append((t.topology_key, hard_pod_affinity_weight))
    for weighted, sign in _signed(theirs):
        if weighted.term.matches(pod.namespace, pod.labels, namespace_labels):
            out.append((weighted.term.topology_key, weighted.weight * sign))
    return tuple(out)


def pre_score_state(
    pod: Pod,
    snapshot: Snapshot,
    *,
    hard_pod_affinity_weight: int,
    ignore_preferred_terms_of_existing_pods: bool,
) -> PreScoreState | None:
    """``PreScore``'s topology scores; None when the plugin has nothing to say (Skip).

    Upstream visits every existing pod (only those with affinity when the incoming pod has no
    preferred terms) and sums both directions per domain. The same sums here: the incoming pod's
    terms from the cache's per-selector counts, and the existing pods' terms over the pods that have
    some, decided once per distinct set of terms (pods of one template share one)."""
    affinity = pod.pod_affinity
    has_constraints = bool(affinity.preferred_affinity_terms or affinity.preferred_anti_affinity_terms)
    # Optionally ignore existing pods' preferences when the incoming pod has none of its own.
    if ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None
    scores: ScoreMap = {}
    for weighted, sign in _signed(affinity):
        term = merge_namespace_selector(weighted.term, snapshot)
        counted = domain_counts(term, snapshot)
        if counted:  # a domain is touched, even where the sum stays 0 (upstream's non-empty scoreMap)
            values = scores.setdefault(term.topology_key, {})
            for domain, count in counted.items():
                values[domain] = values.get(domain, 0) + weighted.weight * sign * count
    namespace_labels = snapshot.namespace_labels(pod.namespace)
    matching: dict[int, tuple[tuple[str, int], ...]] = {}
    for info in snapshot.have_pods_with_affinity_node_infos():
        labels = info.node.labels
        for existing in info.pods_with_affinity.values():
            theirs = existing.pod_affinity
            terms = matching.get(id(theirs))
            if terms is None:
                terms = _matching_terms(theirs, pod, namespace_labels, hard_pod_affinity_weight)
                matching[id(theirs)] = terms
            for key, weight in terms:  # a domain is touched, even where the sum stays 0
                value = labels.get(key)
                if value is not None:
                    domains = scores.get(key)
                    if domains is None:
                        domains = scores[key] = {}
                    domains[value] = domains.get(value, 0) + weight
    if not scores:
        return None
    return PreScoreState(scores)


def score(state: PreScoreState, node_info: NodeInfo) -> int:
    """The summed weights of the node's domains: positive for affinity, negative for anti-affinity."""
    labels = node_info.node.labels
    total = 0
    for key, values in state.topology_score.items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def normalize(state: PreScoreState, scores: list[int]) -> None:
    """``MaxNodeScore * (score - min) / (max - min)`` in float64, truncated; all 0 when max == min."""
    if not state.topology_score or not scores:
        return
    low, high = min(scores), max(scores)
    diff = high - low
    for i, value in enumerate(scores):
        f_score = float(MAX_NODE_SCORE) * (float(value - low) / float(diff)) if diff > 0 else 0.0
        scores[i] = int(f_score)
