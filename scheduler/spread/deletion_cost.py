"""Spread-aware scale-down: the ``controller.kubernetes.io/pod-deletion-cost`` each pod of a
ReplicaSet should carry so that kube-controller-manager, deleting the lowest cost first, keeps the
topology spread. Pure: pods and the cache in, costs out; ``scheduler.kube.controllers.deletion_cost`` writes them.

The ReplicaSet controller ranks the pods it may delete (``ActivePodsWithRanks``, k8s.io/kubernetes
pkg/controller/controller_utils.go): unassigned first, then Pending < Unknown < Running, then not
Ready before Ready, **then the lower deletion cost**, then pods doubled up on a node, then the
youngest. A cost steers only pods equal in the first three, which is the steady state.

One constraint: a pod's *rank* is its place in its domain's count (the workload's other matching
pods at the bottom, then ours oldest first), and its cost is ``-rank``. Deleting lowest cost first
is deleting from the currently largest domain (a pod of rank r is deleted when its domain holds r),
so k deletions cut every domain down to one water level and touch no domain below it; ties at the
level give the same counts whichever goes first. That is the smallest skew any k deletions can
leave (checked against a brute force), and a deletion in that order leaves every other pod's rank,
so its cost, unchanged.

Several constraints combine lexicographically, hard (DoNotSchedule) ones first, each group in the
pod's order: the first constraint decides, the next breaks its ties, and so on. Inside a domain of
constraint i the pods are ordered by their ranks under constraints i+1.. (so the top of a zone is
the top of its most crowded host), and the ranks are packed into ``COST_BITS`` = 26 bits, most
significant first (26; 13+13; 10+8+8; 8+6+6+6; ...; a rank beyond its width saturates, leaving a tie
to the controller). Guarantees, as tests/properties/test_deletion_cost.py checks them: the first
constraint's skew is the optimum for every number of deletions (the order sorted by the first rank
is the one-constraint order, later ranks only choosing among its ties); when every domain of a later
constraint lies inside one domain of the earlier (hostname inside zone), the skews are the
lexicographic optimum for every number of deletions, and deletions in our order change no cost.

Why 26 bits and not an int32's 31: Karpenter reads the same annotation and weighs a pod at
1 + cost/2^27 + priority/2^25; at 0 or below the pod is free to disrupt, and a node holding only such
pods is deleted as empty, with no simulation of where they go: a zone's last node can go so
(sigs.k8s.io/karpenter v1.14.1 pkg/utils/disruption/disruption.go:48-69,
pkg/controllers/disruption/types.go:136-157). Every cost here is above -2^26, so a pod of priority 0
weighs more than 1/2, and only a priority below -2^24 makes it free (from -2^25 the priority
alone does). docs/install.md ("With an autoscaler") has the numbers.

A pod that counts in no domain of a constraint (its node lacks the key or is excluded by a Honor
policy, or it does not match the constraint's selector) takes the top rank there: deleting it
changes no count. A pod whose cost someone else set (the cost differs from our marker) is never
ranked or rewritten; it counts like a pod of another workload.

Those other pods sit at the bottom of every rank of their domain, so one more of them (a bare pod
labelled like the workload) shifts the rank of each of our pods there: an exact re-rank patches the
whole domain, and no encoding avoids that (each of our pods in the domain swaps places with a pod of
another domain at its level). The keeper therefore ranks with *held* counts of other pods
(``rank_workload``): a domain's count is taken again once it has drifted by more than
``FOREIGN_SLACK`` from the count the costs were made with (and, by the keeper, once a drift has
lasted a while). One pod of another workload coming and going patches nothing; meanwhile a
scale-down leaves a skew at most twice the drift above the optimum (checked by the property tests).
One exception: a domain where one of ours is the only pod counted now is taken at 0, so that pod
(its deletion would empty the domain) ranks 1 there and goes after every pod ranked higher; under
the first constraint no pod of the workload costs more. Its price: one patch when the last other
pod beside it goes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.plugins.podtopologyspread.common import Constraint
from scheduler.plugins.podtopologyspread.counting import eligibility_key
from scheduler.spread.steps import Steps, every, finish, never
from scheduler.spread.workload import counts_of, spread_constraints_of

__all__ = [
    "COST_ANNOTATION",
    "COST_BITS",
    "FOREIGN_SLACK",
    "MARKER_ANNOTATION",
    "CostChange",
    "Member",
    "Others",
    "Ranking",
    "cost_changes",
    "cost_steps",
    "held_others",
    "rank_costs",
    "rank_workload",
    "widths",
    "workload_costs",
]

# k8s.io/api core/v1 annotation_key_constants.go: PodDeletionCost.
COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
# Written beside every cost we set, with the same value: a cost without it, or with another value,
# was set by someone else and is never overwritten.
MARKER_ANNOTATION = "spread-scheduler.io/deletion-cost"
# Magnitude bits of a cost: costs are -1 .. -(2**26 - 1), above -2**27, where Karpenter (which reads
# the same annotation) counts a pod of priority 0 free to disrupt (see the module's docstring).
COST_BITS = 26
# How far a domain's count of other pods may drift from the one the costs were made with before it
# is taken again: one such pod coming or going patches nothing (see the module's docstring).
FOREIGN_SLACK = 1

# Per constraint: domain -> the pods counted there that are not members.
Others = tuple[Mapping[str, int], ...]


@dataclass(frozen=True, slots=True)
class Member:
    """A pod to rank: its key, its order among equals (older first: the youngest is on top), and
    per constraint the domain it counts in (None: it counts in none)."""

    key: str
    order: tuple[float, str]
    domains: tuple[str | None, ...]


def widths(n: int) -> list[int]:
    """Bits per constraint's rank in one cost (``COST_BITS``), the first constraint getting the remainder."""
    if n <= 0:
        return []
    base = COST_BITS // n
    return [COST_BITS - base * (n - 1)] + [base] * (n - 1)


def rank_costs(members: Sequence[Member], others: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """Costs (-1 .. -(2**COST_BITS - 1)) for ``members``; ``others[i][domain]`` counts the pods of constraint i's
    domain that are not members (other workloads' matching pods, pods whose cost is not ours)."""
    n = len(others)
    bits = widths(n)
    keys: dict[str, tuple[Any, ...]] = {m.key: m.order for m in members}
    ranks: dict[str, list[int]] = {m.key: [0] * n for m in members}
    for i in reversed(range(n)):
        cap = (1 << bits[i]) - 1
        by_domain: defaultdict[str, list[Member]] = defaultdict(list)
        for m in members:
            domain = m.domains[i]
            if domain is None:
                ranks[m.key][i] = cap  # counts nowhere: deleting it changes no count
            else:
                by_domain[domain].append(m)
        for domain, in_domain in by_domain.items():
            below = others[i].get(domain, 0)
            in_domain.sort(key=lambda m: keys[m.key])
            for position, m in enumerate(in_domain, 1):
                ranks[m.key][i] = min(cap, below + position)
        for m in members:
            keys[m.key] = (ranks[m.key][i], *keys[m.key])
    costs: dict[str, int] = {}
    for m in members:
        value, shift = 0, COST_BITS
        for i in range(n):
            shift -= bits[i]
            value |= ranks[m.key][i] << shift
        costs[m.key] = -value
    return costs


def _annotations(pod: Pod) -> Mapping[str, object]:
    meta = pod.raw.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def cost_in_force(pod: Pod) -> tuple[str | None, bool]:
    """The pod's deletion cost as written (None: unset) and whether it is ours to change (unset, or
    equal to our marker)."""
    annotations = _annotations(pod)
    cost, marker = annotations.get(COST_ANNOTATION), annotations.get(MARKER_ANNOTATION)
    text = cost if isinstance(cost, str) else None
    if cost is None:
        return None, True
    return text, text is not None and marker == text


@dataclass(slots=True)
class _Group:
    rep: Pod
    hard: tuple[Constraint, ...]
    soft: tuple[Constraint, ...]
    require_all_keys: bool
    pods: list[Pod]


def workload_costs(pods: Iterable[Pod], cache: Cache, frameworks: Mapping[str, Framework]) -> dict[PodKey, int]:
    """The costs one workload's pods should carry: every pod that is ours, bound (not merely
    assumed), not terminating, with spread constraints (its own or its profile's defaults), and
    whose cost is not someone else's. Pods of one template share their constraints; should they
    not, each set of pods that does is ranked on its own."""
    return finish(cost_steps(pods, cache, frameworks))


def cost_steps(
    pods: Iterable[Pod], cache: Cache, frameworks: Mapping[str, Framework], due: Callable[[], bool] = never
) -> Steps[dict[PodKey, int]]:
    """``workload_costs`` in slices: the planner ranks a workload of thousands of pods on the
    scheduling loop, yielding between chunks of pods once ``due()``."""
    ranking = yield from _rank_steps(pods, cache, frameworks, {}, due)
    return ranking.costs


@dataclass(frozen=True, slots=True)
class Ranking:
    """``rank_workload``'s answer: the costs, the counts of other pods they were made with (per set
    of pods ranked together: to hold next time), and whether any of those is not the count now."""

    costs: dict[PodKey, int]
    held: dict[Hashable, Others]
    drifted: bool


def rank_workload(
    pods: Iterable[Pod], cache: Cache, frameworks: Mapping[str, Framework], held: Mapping[Hashable, Others]
) -> Ranking:
    """``workload_costs`` ranked with the counts of other pods ``held`` from the last ranking while
    they are within ``FOREIGN_SLACK`` of the counts now (``held_others``)."""
    return finish(_rank_steps(pods, cache, frameworks, held, never))


def _rank_steps(
    pods: Iterable[Pod],
    cache: Cache,
    frameworks: Mapping[str, Framework],
    held: Mapping[Hashable, Others],
    due: Callable[[], bool],
) -> Steps[Ranking]:
    tick = every(due)
    groups: dict[Hashable, _Group] = {}
    for pod in pods:
        if tick():
            yield
        framework = frameworks.get(pod.scheduler_name)
        if (
            framework is None
            or not pod.assigned
            or pod.terminating
            or pod.terminal
            or cache.is_assumed(pod.key)
            or not cost_in_force(pod)[1]
        ):
            continue
        hard, soft, require_all = spread_constraints_of(pod, framework, cache)
        if not hard and not soft:
            continue
        key = (pod.namespace, hard, soft, require_all, eligibility_key(pod, hard + soft))
        group = groups.get(key)
        if group is None:
            groups[key] = _Group(pod, hard, soft, require_all, [pod])
        else:
            group.pods.append(pod)
    out: dict[PodKey, int] = {}
    used: dict[Hashable, Others] = {}
    drifted = False
    for group_key, group in groups.items():
        costs, now, used[group_key] = yield from _group_costs(group, cache, held.get(group_key), tick)
        drifted = drifted or tuple(now) != used[group_key]
        out.update(costs)
    return Ranking(out, used, drifted)


def held_others(
    now: Sequence[Mapping[str, int]],
    held: Others | None,
    slack: int = FOREIGN_SLACK,
    lone: Sequence[Collection[str]] = (),
) -> Others:
    """Per constraint and domain, the held count while it is within ``slack`` of the count ``now``,
    else (or for a domain not held) the count now. A domain of ``lone[i]`` (one member counts there)
    whose count now is 0 takes 0: its pod is the domain's last and must rank 1, deleted last."""
    if held is None or len(held) != len(now):
        return tuple(now)
    out: list[Mapping[str, int]] = []
    for i, (counts, before) in enumerate(zip(now, held, strict=True)):
        alone = lone[i] if i < len(lone) else ()
        out.append(
            {
                d: before[d] if d in before and abs(before[d] - n) <= slack and not (n == 0 and d in alone) else n
                for d, n in counts.items()
            }
        )
    return tuple(out)


def _group_costs(
    group: _Group, cache: Cache, held: Others | None, tick: Callable[[], bool]
) -> Steps[tuple[dict[PodKey, int], Others, Others]]:
    constraints = group.hard + group.soft
    counts, _, domain_of = counts_of(group.rep, group.hard, group.soft, cache, require_all_keys=group.require_all_keys)
    members: list[Member] = []
    others = [dict(c) for c in counts]
    ours: list[Counter[str]] = [Counter() for _ in constraints]
    for pod in group.pods:
        if tick():
            yield
        node = cache.pod_node(pod.key) or ""
        domains: list[str | None] = []
        for i, c in enumerate(constraints):
            domain = domain_of[i].get(node) if c.selector.matches(pod.labels) else None
            domains.append(domain)
            if domain is not None:
                others[i][domain] = max(0, others[i].get(domain, 0) - 1)
                ours[i][domain] += 1
        members.append(Member(pod.key, (pod.created, pod.name), tuple(domains)))
    used = held_others(others, held, lone=[{d for d, n in c.items() if n == 1} for c in ours])
    return {PodKey(k): v for k, v in rank_costs(members, used).items()}, tuple(others), used


@dataclass(frozen=True, slots=True)
class CostChange:
    """A pod whose cost must be (re)written, with the value (as the annotation's text)."""

    pod: Pod
    value: str


def cost_changes(pods: Iterable[Pod], desired: Mapping[PodKey, int]) -> list[CostChange]:
    """The pods whose cost in force differs from ``desired`` and is ours to change (unset, or ours)."""
    out: list[CostChange] = []
    for pod in pods:
        want = desired.get(pod.key)
        if want is None:
            continue
        current, ours = cost_in_force(pod)
        text = str(want)
        if ours and (current != text or _annotations(pod).get(MARKER_ANNOTATION) != text):
            out.append(CostChange(pod, text))
    return out
