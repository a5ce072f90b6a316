"""SelectorSpread: the legacy spreading priority, opt-in (never in the default profile).

Upstream: ``pkg/scheduler/framework/plugins/selectorspread/selector_spread.go`` as of v1.27.16, the
last release that shipped it (removed in 1.28; PodTopologySpread's System defaults replaced it, and
1.27 already refused it in a ``kubescheduler.config.k8s.io/v1`` configuration; we accept it there).

Score counts, per node, the pods of the incoming pod's namespace (not being deleted) that match the
selector deduced from the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the
pod; NormalizeScore turns fewer pods into a higher score and, when nodes carry zone labels, gives
2/3 of the weight to the zone's count. Pods with explicit topology spread constraints are left
alone (every node scores 0). It never rejects a pod, so it registers no events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import Selector
from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState, StateKeyError
from scheduler.framework.interface import Handle
from scheduler.framework.status import Status, StatusError
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins import names
from scheduler.plugins.helper.node import zone_key
from scheduler.plugins.helper.spread import default_selector

__all__ = ["PRE_SCORE_STATE_KEY", "ZONE_WEIGHTING", "PreScoreState", "SelectorSpread", "selector_spread_scores"]

NAME = names.SELECTOR_SPREAD
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Upstream: "When zone information is present, give 2/3 of the weighting to zone spreading, 1/3 to
# node spreading" (with its own "TODO: Any way to justify this weighting?").
ZONE_WEIGHTING = 2.0 / 3.0


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The selector deduced at PreScore from the objects that select the pod; read-only."""

    selector: Selector

    def clone(self) -> PreScoreState:
        return self


def skip_selector_spread(pod: Pod) -> bool:
    """Explicit constraints only: PodTopologySpread's *default* constraints do not count here."""
    return bool(pod.spread_constraints)


def selector_spread_scores(counts: Sequence[int], zones: Sequence[str]) -> list[int]:
    """Upstream's NormalizeScore: ``100*(maxNode-count)/maxNode`` blended 1/3 : 2/3 with the zone score.

    ``zones[i]`` is node i's ``utilnode.GetZoneKey`` ("" for no zone). Float64 arithmetic in
    upstream's operation order, then truncation toward zero, so the integers match Go's.
    """
    counts_by_zone: dict[str, int] = {}
    for count, zone in zip(counts, zones, strict=True):
        if zone:
            # A zero count still registers the zone: "have zones" means any scored node has one.
            counts_by_zone[zone] = counts_by_zone.get(zone, 0) + count
    max_by_node = max(counts, default=0)
    max_by_zone = max(counts_by_zone.values(), default=0)
    max_score = float(MAX_NODE_SCORE)
    out: list[int] = []
    for count, zone in zip(counts, zones, strict=True):
        f_score = max_score
        if max_by_node > 0:
            f_score = max_score * (float(max_by_node - count) / float(max_by_node))
        if counts_by_zone and zone:
            zone_score = max_score
            if max_by_zone > 0:
                zone_score = max_score * (float(max_by_zone - counts_by_zone[zone]) / float(max_by_zone))
            f_score = (f_score * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
        out.append(int(f_score))
    return out


class SelectorSpread:
    """PreScore, Score (+Normalize). Reads Services/RCs/RSs/StatefulSets through the snapshot."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if skip_selector_spread(pod):
            return None
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(default_selector(pod, self.handle.current())))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The number of matching pods on the node; NormalizeScore turns it into a score."""
        if skip_selector_spread(pod):
            return 0
        try:
            pre = state.read(PRE_SCORE_STATE_KEY, PreScoreState)
        except StateKeyError:
            # Go's %q: reading "PreScoreSelectorSpread" from cycleState: not found
            raise StatusError(Status.as_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')) from None
        return count_matching_pods(pod.namespace, pre.selector, node_info, self.handle)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        if skip_selector_spread(pod):
            return None
        scores[:] = selector_spread_scores(scores, [zone_key(n.node) for n in nodes])
        return None


def count_matching_pods(namespace: str, selector: Selector, node_info: NodeInfo, handle: Handle) -> int:
    """``countMatchingPods``: same-namespace pods not being deleted that match; 0 for an empty selector.

    The cache keeps these counts per (namespace, selector) incrementally, terminating pods excluded
    (upstream: "Ignore pods being deleted for spreading purposes").
    """
    if not node_info.pods or selector.empty:
        return 0
    return handle.current().count_matching(namespace, selector).get(node_info.name, 0)
