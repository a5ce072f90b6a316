"""A workload's skew per topology key, now: what the rebalancer's gauge shows so alerting can see a
spread decay before a constraint is broken. Pure: pods and the cache in, numbers out.

The counting is the scheduler's (``podtopologyspread.counting.domain_counts``): for a hard
constraint the Filter's domains and global minimum (minDomains included), for a soft one Score's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.api.objects import Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.plugins import names
from scheduler.plugins.podtopologyspread.common import pod_constraints
from scheduler.plugins.podtopologyspread.counting import domain_counts
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["Skew", "workload_skews"]


@dataclass(frozen=True, slots=True)
class Skew:
    """One topology key of a workload: the largest domain count minus the global minimum, and the
    constraint's maxSkew (of two constraints on one key, the one furthest above its maxSkew)."""

    topology_key: str
    skew: int
    max_skew: int


def workload_skews(pods: Sequence[Pod], cache: Cache, framework: Framework) -> list[Skew]:
    """The skews of the workload whose pods are ``pods`` (one template: the first pod's constraints,
    its own or its profile's defaults), by topology key; [] without constraints."""
    if not pods:
        return []
    pod = pods[0]
    plugin = framework.plugins.get(names.POD_TOPOLOGY_SPREAD)
    if not isinstance(plugin, PodTopologySpread):
        return []
    # Only the built-in System defaults let a node lack some of the keys (as deletion_cost reads them).
    require_all = bool(pod.spread_constraints) or not plugin.system_defaulted
    worst: dict[str, Skew] = {}
    for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        constraints = pod_constraints(pod, action, plugin.default_constraints, cache)
        if not constraints:
            continue
        counts, minima, _ = domain_counts(pod, action, constraints, cache, require_all_keys=require_all)
        for c, bucket, minimum in zip(constraints, counts, minima, strict=True):
            skew = Skew(c.topology_key, max(bucket.values()) - minimum if bucket else 0, c.max_skew)
            held = worst.get(c.topology_key)
            if held is None or skew.skew - skew.max_skew > held.skew - held.max_skew:
                worst[c.topology_key] = skew
    return [worst[k] for k in sorted(worst)]
