"""Moves in parallel within the disruption budget: how many of a workload's pods may be evicted at
once, and a batch of a kept plan's moves checked as one. Pure; ``scheduler.spread.rebalance``
checks a batch with these (``check_batch``), the controller sends it.

- **The budget** is what the Eviction API would allow now: the tightest ``status.disruptionsAllowed``
  of the PodDisruptionBudgets covering a pod of the workload (covering as the Eviction API decides
  it). Without one, ``DEFAULT_UNAVAILABLE_PERCENT`` of its pods rounded down, at least one (a
  Deployment's default ``maxUnavailable``: what its owner already accepts at every rollout); a
  StatefulSet one pod (its own rolling update's default, and ``OrderedReady`` recreates its pods
  one at a time anyway). docs/rebalance.md says why.
- **A batch** is the first moves of a plan, as many as the budget allows. It is checked as the
  API server and the ReplicaSet will carry it out: every victim gone at once, then the replacements
  placed one after the other by our own cycle on the cache so changed. A replacement counts only
  if the node our cycle picks (the first of those tied at the top score, as the plan picks) lies in
  a domain the batch plans for (the planned domains of the moves' constraints, as a multiset: the
  replacements of one template are alike, whichever comes first takes a free slot); the batch only
  if it leaves no skew higher and one lower, also with any one replacement on another of its tied
  nodes (the live cycle picks one at random: the rule a single move is held to).
  A batch whose replacement ``j`` lands elsewhere is cut to its first ``j`` moves (at least one) and
  checked again with only those victims gone: what is evicted is always what was checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.spread.moves import (
    STATEFUL_SET,
    Counts,
    Move,
    Spec,
    Working,
    better,
    measure,
    replacement_name,
    replacement_of,
    schedule_replacement,
    tied_top,
)
from scheduler.spread.steps import Steps, never

__all__ = [
    "DEFAULT_UNAVAILABLE_PERCENT",
    "Budget",
    "Placed",
    "covers",
    "disruption_budget",
    "place_batch",
]

# Without a PodDisruptionBudget: the share of a workload's pods evicted at once, rounded down and at
# least one. A Deployment's default rollingUpdate.maxUnavailable (the deployment controller rounds
# it down, and takes 1 where both it and maxSurge come to 0).
DEFAULT_UNAVAILABLE_PERCENT = 25


@dataclass(frozen=True, slots=True)
class Budget:
    """How many of the workload's pods may be evicted now, and whence (one line)."""

    allowed: int
    source: str
    pdb: bool  # a PodDisruptionBudget's (else the default)


def covers(pdb: PodDisruptionBudget, pods: Sequence[Pod]) -> bool:
    """The budget covers a pod, as the Eviction API decides it (``getPodDisruptionBudgets``,
    pkg/registry/core/pod/storage/eviction.go): same namespace, the selector matches; an invalid
    selector matches nothing, an empty one every pod (unlike preemption's
    ``PodDisruptionBudget.matches``)."""
    return any(p.namespace == pdb.namespace and pdb.selector.matches(p.labels) for p in pods)


def disruption_budget(kind: str, pods: Sequence[Pod], cache: Cache) -> Budget:
    """The evictions the workload's pods may take now (``kind``: its controller's)."""
    budgets = [b for b in sorted(cache.pod_disruption_budgets(), key=lambda b: b.key) if covers(b, pods)]
    if budgets:
        tightest = min(budgets, key=lambda b: b.disruptions_allowed)  # the first by name among equals
        allowed = max(tightest.disruptions_allowed, 0)
        return Budget(allowed, f"PodDisruptionBudget {tightest.key} allows {allowed} disruptions", True)
    if kind == STATEFUL_SET:
        return Budget(1, "no PodDisruptionBudget: a StatefulSet's pods one at a time", False)
    allowed = max(1, len(pods) * DEFAULT_UNAVAILABLE_PERCENT // 100)
    return Budget(allowed, f"no PodDisruptionBudget: {DEFAULT_UNAVAILABLE_PERCENT}% of {len(pods)} pods", False)


@dataclass(frozen=True, slots=True)
class Placed:
    """A batch checked: how many of its moves (a prefix) landed where planned, why the next did not
    (empty when all did), every constraint's skew with those moves made, and the node our cycle
    picked for each replacement."""

    landed: int
    why: str
    skews: tuple[int, ...]
    nodes: tuple[str, ...] = ()


def place_batch(
    spec: Spec,
    moves: Sequence[Move],
    victims: Sequence[Pod],
    now: Counts,
    cache: Cache,
    framework: Framework,
    algorithm: SchedulingAlgorithm,
    due: Callable[[], bool] = never,
) -> Steps[Placed]:
    """Every victim off the cache, then each replacement placed by our cycle in turn (see the
    module); yields between cycles once ``due()``, the batch off the cache meanwhile
    (``PlanMovedError`` on resuming when a victim changed). The cache is left as found."""
    index = {c.topology_key: i for i, c in reversed(list(enumerate(spec.constraints)))}
    slots = Counter((index[m.topology_key], m.to_domain) for m in moves)
    others: list[tuple[int, Pod, str, str]] = []  # (step, replacement, our pick, another tied node)
    working = Working(cache)
    try:
        for victim in victims:
            working.take(victim)
        for step, (move, victim) in enumerate(zip(moves, victims, strict=True)):
            if due():
                working.suspend()
                yield
                working.resume()
            replacement = replacement_of(victim, replacement_name(victim, step + 1))
            attempt = schedule_replacement(algorithm, framework, cache, replacement)
            if not attempt.succeeded or attempt.host is None:
                return Placed(step, f"the replacement of {move.pod} would not be placed: {attempt.message}", ())
            top = tied_top(attempt)
            slot = _slot(slots, now, top[0])
            if slot is None:
                return Placed(step, f"the replacement of {move.pod} would land in {_where(spec, now, top[0])}", ())
            slots[slot] -= 1
            working.put(replacement, top[0])
            others += [(step, replacement, top[0], n) for n in top[1:] if now.where(n) != now.where(top[0])]
        after = measure(spec, cache)
        if not better(after.skews, now.skews):
            return Placed(0, f"the batch leaves the skews at {list(after.skews)}, from {list(now.skews)}", ())
        for step, replacement, ours, other in others:
            if not better(after.moved(spec, replacement, ours, other), now.skews):
                where = _where(spec, now, other)
                return Placed(step, f"a replacement could land in {where}, which does not lower the skews", ())
        return Placed(len(moves), "", after.skews, tuple(working.nodes))
    finally:
        working.restore()


def _where(spec: Spec, now: Counts, node: str) -> str:
    return ", ".join(f"{c.topology_key}={d}" for c, d in zip(spec.constraints, now.where(node), strict=True))


def _slot(slots: Counter[tuple[int, str]], now: Counts, node: str) -> tuple[int, str] | None:
    """The first free planned slot (constraint, domain) a replacement on ``node`` takes."""
    where = now.where(node)
    return next(((i, d) for (i, d), left in slots.items() if left > 0 and where[i] == d), None)
