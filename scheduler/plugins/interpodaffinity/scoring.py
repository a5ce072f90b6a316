"""InterPodAffinity PreScore/Score/NormalizeScore: preferred terms both ways, and existing pods'
required affinity weighted by ``hardPodAffinityWeight``.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.api.objects import Node, Pod
from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins.interpodaffinity.filtering import merge_namespace_selector

__all__ = ["PreScoreState", "ScoreMap", "normalize", "pre_score_state", "score"]

ScoreMap = dict[str, dict[str, int]]
"""topology key -> topology value -> summed weight (upstream's ``scoreMap``)."""


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """Computed at PreScore, read by Score and NormalizeScore; read-only, so ``clone`` is ``self``."""

    topology_score: ScoreMap

    def clone(self) -> PreScoreState:
        return self


def _process_term(
    scores: ScoreMap,
    term: AffinityTerm,
    weight: int,
    pod: Pod,
    namespace_labels: Mapping[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    """Add ``weight * multiplier`` to the node's domain of ``term`` when ``pod`` matches it.

    The domain's entry is created even when the sum stays 0: a touched domain keeps the plugin from
    being skipped, as upstream's non-empty ``scoreMap`` does.
    """
    if term.matches(pod.namespace, pod.labels, namespace_labels):
        value = node.labels.get(term.topology_key)
        if value is not None:
            values = scores.setdefault(term.topology_key, {})
            values[value] = values.get(value, 0) + weight * multiplier


def _process_terms(
    scores: ScoreMap,
    terms: Iterable[WeightedAffinityTerm],
    pod: Pod,
    namespace_labels: Mapping[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    for t in terms:
        _process_term(scores, t.term, t.weight, pod, namespace_labels, node, multiplier)


def pre_score_state(
    pod: Pod,
    snapshot: Snapshot,
    *,
    hard_pod_affinity_weight: int,
    ignore_preferred_terms_of_existing_pods: bool,
) -> PreScoreState | None:
    """``PreScore``'s topology scores; None when the plugin has nothing to say (Skip)."""
    affinity = pod.pod_affinity
    has_constraints = bool(affinity.preferred_affinity_terms or affinity.preferred_anti_affinity_terms)
    # Optionally ignore existing pods' preferences when the incoming pod has none of its own.
    if ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None
    # Unless the pod has preferred terms, only nodes (and pods) with affinity can contribute.
    nodes: Sequence[NodeInfo] = (
        snapshot.node_infos() if has_constraints else snapshot.have_pods_with_affinity_node_infos()
    )
    preferred = tuple(
        WeightedAffinityTerm(merge_namespace_selector(t.term, snapshot), t.weight)
        for t in affinity.preferred_affinity_terms
    )
    preferred_anti = tuple(
        WeightedAffinityTerm(merge_namespace_selector(t.term, snapshot), t.weight)
        for t in affinity.preferred_anti_affinity_terms
    )
    namespace_labels = snapshot.namespace_labels(pod.namespace)
    scores: ScoreMap = {}
    for info in nodes:
        node = info.node
        if not node.labels:
            continue
        existing_pods = info.pods if has_constraints else info.pods_with_affinity
        for existing in existing_pods.values():
            # The incoming pod's terms against the existing pod (namespace selectors already merged).
            _process_terms(scores, preferred, existing, None, node, 1)
            _process_terms(scores, preferred_anti, existing, None, node, -1)
            # The existing pod's terms against the incoming pod, with its namespace's labels.
            theirs = existing.pod_affinity
            if hard_pod_affinity_weight > 0:
                for t in theirs.required_affinity_terms:
                    _process_term(scores, t, hard_pod_affinity_weight, pod, namespace_labels, node, 1)
            _process_terms(scores, theirs.preferred_affinity_terms, pod, namespace_labels, node, 1)
            _process_terms(scores, theirs.preferred_anti_affinity_terms, pod, namespace_labels, node, -1)
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
