"""Pods per domain for a workload's constraints, as the plugin counts them: one count for every reader.

The spread report (``scheduler.skew``) and spread keeping after placement (``scheduler.spread``)
both read the cluster through this, so neither has a count of its own that could drift from the
Filter's and Score's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from scheduler.api.objects import Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, HONOR
from scheduler.framework.interface import Snapshot
from scheduler.plugins.podtopologyspread.common import Constraint, eligible_domains, required_affinity_or_none
from scheduler.plugins.podtopologyspread.filtering import cal_pre_filter_state, min_match_num

__all__ = ["domain_counts", "eligibility_key"]


def eligibility_key(pod: Pod, constraints: Sequence[Constraint]) -> Hashable:
    """What a pod's eligible domains depend on besides the nodes (as the plugin's memo key)."""
    required = required_affinity_or_none(pod)
    honor_affinity = required is not None and any(c.node_affinity_policy == HONOR for c in constraints)
    honor_taints = any(c.node_taints_policy == HONOR for c in constraints)
    return (
        required.key if honor_affinity and required is not None else None,
        pod.tolerations if honor_taints else None,
    )


def domain_counts(
    pod: Pod, action: str, constraints: Sequence[Constraint], cache: Snapshot, *, require_all_keys: bool
) -> tuple[list[dict[str, int]], list[int], list[dict[str, str]]]:
    """Per constraint of ``pod`` (all of one ``action``): matching pods per eligible domain (empty
    domains at 0), the global minimum, and node -> domain for the eligible nodes.

    ``require_all_keys`` is False only under the built-in System defaults, which let a node lack
    some of the keys (Score's rule); hard constraints always require every key.
    """
    constraints = list(constraints)
    if action == DO_NOT_SCHEDULE:
        # The Filter's own state: the same domains, counts and minDomains rule as a new replica sees.
        state = cal_pre_filter_state(pod, constraints, cache)
        domain_of = eligible_domains(pod, constraints, cache, require_all_keys=True)
        minima = [min_match_num(state, i, c.min_domains) for i, c in enumerate(constraints)]
        return [dict(m) for m in state.tp_value_to_match_num], minima, domain_of
    # ScheduleAnyway: Score's counting over every node rather than the feasible ones of one cycle; a
    # node without the key is in no domain (Score gives such nodes the domain "" under System defaulting).
    all_domains = eligible_domains(pod, constraints, cache, require_all_keys=require_all_keys)
    domain_of = [
        {n: v for n, v in d.items() if (info := cache.get(n)) is not None and c.topology_key in info.node.labels}
        for c, d in zip(constraints, all_domains, strict=True)
    ]
    counts: list[dict[str, int]] = []
    for c, mapping in zip(constraints, domain_of, strict=True):
        bucket = dict.fromkeys(mapping.values(), 0)
        if not c.selector.empty:  # an empty selector counts 0 everywhere, as in the plugin
            for node, count in cache.count_matching(pod.namespace, c.selector).items():
                value = mapping.get(node)
                if value is not None:
                    bucket[value] += count
        counts.append(bucket)
    return counts, [min(b.values(), default=0) for b in counts], domain_of
