"""InterPodAffinity PreFilter/Filter: required affinity and anti-affinity, both directions.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from scheduler.api.objects import Node, Pod
from scheduler.api.podaffinity import AffinityTerm
from scheduler.framework.interface import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins.names import INTER_POD_AFFINITY as NAME

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "PreFilterState",
    "TopologyPair",
    "cal_pre_filter_state",
    "domain_counts",
    "merge_namespace_selector",
    "pod_matches_all_affinity_terms",
    "pod_matches_any_affinity_term",
    "satisfy_existing_pods_anti_affinity",
    "satisfy_pod_affinity",
    "satisfy_pod_anti_affinity",
]

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
"""(topology key, value): upstream's ``topologyPair``."""


def merge_namespace_selector(term: AffinityTerm, snapshot: Snapshot) -> AffinityTerm:
    """``mergeAffinityTermNamespacesIfNotEmpty`` for a term of the incoming pod.

    The namespaces its ``namespaceSelector`` selects now are added to ``namespaces``. Upstream then
    sets the selector to ``Nothing()`` on a copy of the term (it is passed by value), so the stored
    term keeps its selector; matching with nil namespace labels afterwards therefore still accepts
    every namespace when the selector matches an empty label set (``NotIn``/``DoesNotExist`` only).
    We keep that behaviour for parity.
    """
    selector = term.namespace_selector
    if selector.empty or selector.nothing:  # Everything() is kept; Nothing() lists no namespace
        return term
    return replace(term, namespaces=term.namespaces | snapshot.namespaces_matching(selector))


def pod_matches_all_affinity_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """True iff ``pod`` matches every term (false for no terms). The incoming pod's namespace
    selectors were merged into its namespaces, so no namespace labels are looked up."""
    if not terms:
        return False
    return all(t.matches(pod.namespace, pod.labels, None) for t in terms)


def pod_matches_any_affinity_term(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """True iff ``pod`` matches some term (``podMatchesAnyAffinityTerms``): what conflicts with
    anti-affinity, where one term alone refuses a node."""
    return any(t.matches(pod.namespace, pod.labels, None) for t in terms)


def _add(counts: dict[TopologyPair, int], node: Node, key: str, value: int) -> None:
    """``topologyToMatchedTermCount.update``: entries that fall to zero are deleted."""
    tv = node.labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    total = counts.get(pair, 0) + value
    if total == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = total


@dataclass(slots=True)
class PreFilterState:
    """Computed at PreFilter, read at Filter; ``clone`` copies the three count maps AddPod/RemovePod move.

    - ``existing_anti_affinity_counts``: per topology pair, existing pods' required anti-affinity
      terms that match the incoming pod;
    - ``affinity_counts``: existing pods matching all of the incoming pod's required affinity terms;
    - ``anti_affinity_counts``: existing pods matching each of its required anti-affinity terms.
    """

    existing_anti_affinity_counts: dict[TopologyPair, int]
    affinity_counts: dict[TopologyPair, int]
    anti_affinity_counts: dict[TopologyPair, int]
    pod: Pod
    # The incoming pod's required terms with namespaceSelector merged (they never change).
    required_affinity_terms: tuple[AffinityTerm, ...]
    required_anti_affinity_terms: tuple[AffinityTerm, ...]
    # A copy of the incoming pod's namespace labels (None: namespace not in the cache).
    namespace_labels: Mapping[str, str] | None

    def clone(self) -> PreFilterState:
        return PreFilterState(
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
            self.pod,
            self.required_affinity_terms,
            self.required_anti_affinity_terms,
            self.namespace_labels,
        )

    def update_with_pod(self, other: Pod, node: Node, multiplier: int) -> None:
        """``updateWithPod``: count ``other`` on ``node`` in (+1) or out (-1)."""
        pod = self.pod
        for t in other.pod_affinity.required_anti_affinity_terms:
            if t.matches(pod.namespace, pod.labels, self.namespace_labels):
                _add(self.existing_anti_affinity_counts, node, t.topology_key, multiplier)
        if pod_matches_all_affinity_terms(self.required_affinity_terms, other):
            for t in self.required_affinity_terms:
                _add(self.affinity_counts, node, t.topology_key, multiplier)
        for t in self.required_anti_affinity_terms:
            if t.matches(other.namespace, other.labels, None):
                _add(self.anti_affinity_counts, node, t.topology_key, multiplier)


def _existing_anti_affinity_counts(
    pod: Pod, namespace_labels: Mapping[str, str] | None, nodes: Iterable[NodeInfo]
) -> dict[TopologyPair, int]:
    """``getExistingAntiAffinityCounts``: over the nodes holding pods with required anti-affinity only.

    Which of a pod's terms match the incoming pod is decided once per distinct set of terms (pods of
    one template share one, ``parse_pod_affinity``), not once per pod."""
    counts: dict[TopologyPair, int] = {}
    namespace, labels = pod.namespace, pod.labels
    matching_keys: dict[int, tuple[str, ...]] = {}
    for info in nodes:
        node_labels = info.node.labels
        for existing in info.pods_with_required_anti_affinity.values():
            theirs = existing.pod_affinity
            keys = matching_keys.get(id(theirs))
            if keys is None:
                keys = tuple(
                    t.topology_key
                    for t in theirs.required_anti_affinity_terms
                    if t.matches(namespace, labels, namespace_labels)
                )
                matching_keys[id(theirs)] = keys
            for key in keys:
                value = node_labels.get(key)
                if value is not None:
                    pair = (key, value)
                    counts[pair] = counts.get(pair, 0) + 1
    return counts


class LabelValues:
    """Node name -> its value of one label key, for the nodes that carry it: a node index the cache
    keeps current one node at a time."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.of: dict[str, str] = {}

    def put(self, info: NodeInfo) -> None:
        value = info.node.labels.get(self.key)
        if value is None:
            self.of.pop(info.name, None)
        else:
            self.of[info.name] = value

    def drop(self, name: str) -> None:
        self.of.pop(name, None)


def domain_counts(term: AffinityTerm, snapshot: Snapshot) -> dict[str, int]:
    """The existing pods an incoming pod's term matches (its namespace selector merged), summed per
    value of the term's topology key over the nodes of the snapshot that carry it. Read from the
    cache's per-selector counts; a term that selects every namespace (a namespace selector that
    matches an empty label set, see ``merge_namespace_selector``) has no such count and visits the pods."""
    key = term.topology_key
    out: dict[str, int] = {}
    if term.namespace_selector.matches({}):
        for info in snapshot.node_infos():
            value = info.node.labels.get(key)
            if value is not None:
                matching = sum(1 for p in info.pods.values() if term.matches(p.namespace, p.labels, None))
                if matching:
                    out[value] = out.get(value, 0) + matching
        return out
    value_of = snapshot.node_index((NAME, key), lambda: LabelValues(key)).of  # nodes in the cache only
    for namespace in term.namespaces:
        for name, count in snapshot.count_all_matching(namespace, term.selector).items():
            value = value_of.get(name)
            if value is not None:
                out[value] = out.get(value, 0) + count
    return out


def _incoming_affinity_anti_affinity_counts(
    affinity_terms: tuple[AffinityTerm, ...],
    anti_affinity_terms: tuple[AffinityTerm, ...],
    snapshot: Snapshot,
) -> tuple[dict[TopologyPair, int], dict[TopologyPair, int]]:
    """``getIncomingAffinityAntiAffinityCounts``: every pod on every node against the incoming pod's
    terms, each term counted per domain (``domain_counts``); several affinity terms (a pod must match
    all of them) visit the pods."""
    anti: dict[TopologyPair, int] = {}
    for t in anti_affinity_terms:
        for domain, count in domain_counts(t, snapshot).items():
            pair = (t.topology_key, domain)
            anti[pair] = anti.get(pair, 0) + count
    if len(affinity_terms) <= 1:
        return {(t.topology_key, d): c for t in affinity_terms for d, c in domain_counts(t, snapshot).items()}, anti
    affinity: dict[TopologyPair, int] = {}
    for info in snapshot.node_infos():
        node_labels = info.node.labels
        for existing in info.pods.values():
            if pod_matches_all_affinity_terms(affinity_terms, existing):
                for t in affinity_terms:
                    value = node_labels.get(t.topology_key)
                    if value is not None:
                        affinity[(t.topology_key, value)] = affinity.get((t.topology_key, value), 0) + 1
    return affinity, anti


def cal_pre_filter_state(pod: Pod, snapshot: Snapshot) -> PreFilterState:
    """The three counts of ``PreFilter`` over every node of ``snapshot``; the caller skips the plugin
    when there is nothing to check."""
    terms = pod.pod_affinity
    affinity_terms = tuple(merge_namespace_selector(t, snapshot) for t in terms.required_affinity_terms)
    anti_terms = tuple(merge_namespace_selector(t, snapshot) for t in terms.required_anti_affinity_terms)
    namespace_labels = snapshot.namespace_labels(pod.namespace)
    existing = _existing_anti_affinity_counts(
        pod, namespace_labels, snapshot.have_pods_with_required_anti_affinity_node_infos()
    )
    affinity, anti = _incoming_affinity_anti_affinity_counts(affinity_terms, anti_terms, snapshot)
    return PreFilterState(existing, affinity, anti, pod, affinity_terms, anti_terms, namespace_labels)


def satisfy_existing_pods_anti_affinity(state: PreFilterState, node_info: NodeInfo) -> bool:
    """No existing pod's anti-affinity term that matches the incoming pod covers this node's domains."""
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node_info.node.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def satisfy_pod_anti_affinity(state: PreFilterState, node_info: NodeInfo) -> bool:
    """No pod matching one of the incoming pod's anti-affinity terms is in this node's domain of it."""
    counts = state.anti_affinity_counts
    if counts:
        labels = node_info.node.labels
        for t in state.required_anti_affinity_terms:
            value = labels.get(t.topology_key)
            if value is not None and counts.get((t.topology_key, value), 0) > 0:
                return False
    return True


def satisfy_pod_affinity(state: PreFilterState, node_info: NodeInfo) -> bool:
    """Every affinity term has a matching pod in this node's domain; the node must carry every key."""
    pods_exist = True
    labels = node_info.node.labels
    for t in state.required_affinity_terms:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # all topology labels must exist on the node
        if state.affinity_counts.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # This pod may be the first of a series that has affinity to itself. So that such pods do not stay
    # pending forever: when no other pod in the cluster matches, the pod matches its own terms and the
    # node has all the topologies, the pod passes.
    return not state.affinity_counts and pod_matches_all_affinity_terms(state.required_affinity_terms, state.pod)
