"""Rebalancing: the fewest evictions that bring a workload's topology spread back within maxSkew, each
one only where our own scheduling cycle puts the replacement somewhere better. Pure: the cache in,
plans out; ``scheduler.kube`` carries them out (a batch of evictions at a time, within the disruption
budget, each batch checked by ``check_batch``).

Rules (docs/rebalance.md has the reasoning and examples):

- A *workload* is the pods of one controller owner (ReplicaSet, ReplicationController, StatefulSet)
  whose schedulerName names one of our profiles. Pods without a controller are no workload.
- Opt-in: ``spread-scheduler.io/rebalance`` on the pod template (so on every pod), parsed as
  Kubernetes parses booleans; absent, the cluster-wide default. Every pod must opt in (a rollout
  that adds the annotation takes effect once it is done); a bad value on any pod skips the workload.
- Constraints: the pods' own, or their profile's defaults (System or List), as PodTopologySpread
  resolves them; hard ones first, then soft, each in the pod's order. Counted by ``domain_counts``,
  the Filter's own counting, so the skew here is the skew the Filter and ``skew`` see.
- Nothing moves while a move may be in flight: a pod of the workload terminating, pending, assumed
  (binding) or not Ready. A new leader after a failover so never stacks a second eviction.
- Nothing moves while a PodDisruptionBudget covering a pod of the workload allows 0 disruptions
  (the Eviction API would answer 429); a budget with an invalid selector covers nothing, as for the
  Eviction API and the disruption controller.
- A move: evicting one pod. Our scheduling cycle (``SchedulingAlgorithm.schedule_pod``, the pod's
  profile, its own RNG) runs for its replacement (the pod copied, no node, a new name; a
  StatefulSet's keeps the name) on the cache with the pod gone. The move counts only if the
  replacement is placed and **every node the cycle could pick** (all nodes tied at the top score:
  the live cycle picks one at random) leaves no constraint's skew higher and one lower
  (``moves.better``: hard constraints first, so also lexicographically lower). A replacement that
  would not land in the emptier domain (a taint it does not tolerate, affinity, resources) is
  therefore never planned for. ``to_node`` is the first of the tied nodes by name.
- The fewest such moves that bring every constraint within its maxSkew (``search``): greedy from
  the most crowded domain in deletion-cost order (the doubled-up host loses first), checked
  against a lower bound and, where they differ, a bounded search of every order. Where no sequence
  gets there, the moves that lower the skews as far as they go; at most ``MAX_PLANNED`` moves ahead.
  ``max_moves`` truncates the plan.
- A kept plan's next batch (``check_batch``, ``scheduler.spread.batch``): its first moves, as many as
  the disruption budget allows (a PodDisruptionBudget's ``disruptionsAllowed``, else 25% of the
  pods, at least one; a StatefulSet one); the rules above hold now, the pods are where the plan
  found them, and with all of them gone our cycles land their replacements, one after the other,
  in the planned domains, lowering the skews.

The caller's cache is used as the working state and restored before returning (the pod put back,
the replacements forgotten), also on an exception, and at each yield of ``plan_steps`` (planning in
slices between the scheduler's cycles): no cycle and no watch event sees the intermediate state.
Restoring re-adds a pod as every watch update of a pod does (the node's pods in a new order, a new
NodeInfo generation).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.schedule_one import ExtendersNeedAsyncError, SchedulingAlgorithm
from scheduler.spread.batch import disruption_budget, place_batch
from scheduler.spread.moves import (
    STATEFUL_SET,
    Counts,
    Move,
    Spec,
    measure,
    over,
    replacement_of,
    spec_steps,
    workload_spec,
)
from scheduler.spread.search import MAX_CYCLES, MAX_PLANNED, search_steps
from scheduler.spread.steps import Steps, finish, never
from scheduler.spread.workload import Workload, workload_of

__all__ = [
    "REBALANCED_KINDS",
    "REBALANCE_ANNOTATION",
    "Move",
    "Plan",
    "Skew",
    "check_batch",
    "plan_rebalance",
    "plan_steps",
    "plan_workload",
    "pod_ready",
    "rebalance_opt_in",
    "replacement_of",
]

REBALANCE_ANNOTATION = "spread-scheduler.io/rebalance"
# Controllers that recreate an evicted pod (a StatefulSet under the same name).
REBALANCED_KINDS = ("ReplicaSet", "ReplicationController", STATEFUL_SET)
# Go's strconv.ParseBool, which Kubernetes uses for boolean annotations and flags.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
MAX_SHOWN = 80  # characters of a bad annotation value quoted in a message (a value may be long)

WITHIN_SKEW = "within-skew"
PLANNED = "planned"
NO_IMPROVING_MOVE = "no-improving-move"
NOT_OPTED_IN = "not-opted-in"
BAD_ANNOTATION = "bad-annotation"
IN_FLIGHT = "in-flight"
PDB = "pdb"
MIXED_CONSTRAINTS = "mixed-constraints"
EXTENDERS = "extenders"
STALE = "stale"  # a kept plan's next batch no longer holds (check_batch): plan again
__all__ += [
    "BAD_ANNOTATION",
    "EXTENDERS",
    "IN_FLIGHT",
    "MIXED_CONSTRAINTS",
    "NOT_OPTED_IN",
    "NO_IMPROVING_MOVE",
    "PDB",
    "PLANNED",
    "STALE",
    "WITHIN_SKEW",
]


@dataclass(frozen=True, slots=True)
class Skew:
    """One constraint of the workload and its skew before any move."""

    topology_key: str
    max_skew: int
    hard: bool
    skew: int


@dataclass(frozen=True, slots=True)
class Plan:
    workload: Workload
    moves: tuple[Move, ...]  # in order; empty unless reason is "planned"
    reason: str  # machine-readable: one of the reason constants above
    message: str  # one human line
    skews: tuple[Skew, ...] = ()  # the constraints, hard first, with their skew now


def rebalance_opt_in(pod: Pod, default: bool) -> bool | str:
    """Whether the pod's template opts in; a one-line message for a value that is not a boolean."""
    meta = pod.raw.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(REBALANCE_ANNOTATION) if isinstance(annotations, Mapping) else None
    if value is None:
        return default
    if isinstance(value, str):
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    shown = json.dumps(value, default=str)[:MAX_SHOWN]
    return f'metadata.annotations["{REBALANCE_ANNOTATION}"]: invalid value {shown}: want "true" or "false"'


def pod_ready(pod: Pod) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True (a pod without one is not Ready)."""
    status = pod.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _pods_of(cache: Cache, workload: Workload) -> list[Pod]:
    return sorted(
        (p for p in cache.pods() if p.namespace == workload.namespace and workload_of(p, REBALANCED_KINDS) == workload),
        key=lambda p: p.key,
    )


def _in_flight(pods: Sequence[Pod], pending: Sequence[Pod], cache: Cache) -> str | None:
    """Why a move may be in flight: a pod of the workload pending, binding, terminating, not Ready."""
    for pod in pending:
        return f"pod {pod.key} is pending: waiting for it to be placed and Ready"
    for pod in pods:
        if pod.terminating:
            return f"pod {pod.key} is terminating: waiting for it to go"
        if cache.is_assumed(pod.key):
            return f"pod {pod.key} is being bound: waiting for it to be Ready"
        if not pod_ready(pod):
            return f"pod {pod.key} is not Ready: waiting for it"
    return None


def _skews(spec: Spec, skews: Sequence[int]) -> tuple[Skew, ...]:
    hard = len(spec.hard)
    return tuple(Skew(c.topology_key, c.max_skew, i < hard, skews[i]) for i, c in enumerate(spec.constraints))


def _describe(spec: Spec, skews: Sequence[int]) -> str:
    return ", ".join(
        f"{c.topology_key} skew {s} (maxSkew {c.max_skew})" for c, s in zip(spec.constraints, skews, strict=True)
    )


def _members(cache: Cache, framework: Framework, workload: Workload, placed: Iterable[Pod] | None) -> list[Pod]:
    candidates = _pods_of(cache, workload) if placed is None else sorted(placed, key=lambda p: p.key)
    return [
        p
        for p in candidates
        if p.scheduler_name == framework.profile_name
        and p.namespace == workload.namespace
        and workload_of(p, REBALANCED_KINDS) == workload
    ]


def _waiting(workload: Workload, pending: Iterable[Pod]) -> list[Pod]:
    return [p for p in pending if p.namespace == workload.namespace and workload_of(p, REBALANCED_KINDS) == workload]


def plan_workload(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    *,
    max_moves: int | None = None,
    pending: Iterable[Pod] = (),
    max_cycles: int = MAX_CYCLES,
    placed: Iterable[Pod] | None = None,
) -> Plan:
    """The plan for one workload (opt-in is the caller's: see ``plan_rebalance``). ``pending`` are the
    scheduler's pending pods (the cache holds only placed ones); one of this workload's means a move
    is in flight. ``placed``: the workload's placed pods where the caller keeps them (the controller
    does), so that a plan costs the workload, not a walk over every pod of the cluster."""
    steps = plan_steps(cache, framework, workload, pending=pending, max_cycles=max_cycles, placed=placed)
    return _truncated(finish(steps), max_moves)


def plan_steps(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    *,
    pending: Iterable[Pod] = (),
    max_cycles: int = MAX_CYCLES,
    placed: Iterable[Pod] | None = None,
    due: Callable[[], bool] = never,
    max_planned: int = MAX_PLANNED,
) -> Steps[Plan]:
    """``plan_workload`` as a generator that yields between scheduling cycles once ``due()`` (its
    slice of CPU spent), the cache as it found it each time (see ``scheduler.spread.search``).
    ``max_planned``: the moves a plan looks ahead at most."""
    pods = _members(cache, framework, workload, placed)
    return _plan(cache, framework, workload, pods, _waiting(workload, pending), max_cycles, due, max_planned)


def _truncated(plan: Plan, max_moves: int | None) -> Plan:
    if max_moves is None or len(plan.moves) <= max_moves:
        return plan
    moves = plan.moves[:max_moves]
    left = len(plan.moves) - len(moves)
    verb = "moves leave" if len(moves) > 1 else "move leaves"
    described = ", ".join(
        f"{s.topology_key} skew {after} (maxSkew {s.max_skew})"
        for s, after in zip(plan.skews, moves[-1].skews_after, strict=True)
    )
    return dataclasses.replace(plan, moves=moves, message=f"{len(moves)} {verb} {described}; {left} more planned")


def _prelude(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    pods: Sequence[Pod],
    pending: Sequence[Pod],
    due: Callable[[], bool] = never,
) -> Steps[Plan | tuple[Spec, Counts, tuple[Skew, ...]]]:
    """The rules before any cycle: in flight, constraints, within skew, a budget; or what to plan on.
    Each a walk over the workload's pods: a slice may end between them."""
    flight = _in_flight(pods, pending, cache)
    if flight is not None:
        return Plan(workload, (), IN_FLIGHT, flight)
    if due():
        yield
    spec = yield from spec_steps(pods, framework, cache, due)
    if spec is None:
        return Plan(workload, (), WITHIN_SKEW, "no spread constraints")
    if isinstance(spec, str):
        return Plan(workload, (), MIXED_CONSTRAINTS, spec)
    now = measure(spec, cache)
    skews = _skews(spec, now.skews)
    if not over(spec, now.skews):
        return Plan(workload, (), WITHIN_SKEW, _describe(spec, now.skews), skews)
    budget = disruption_budget(workload.kind, pods, cache)
    if budget.allowed < 1:  # the Eviction API would answer 429
        return Plan(workload, (), PDB, budget.source, skews)
    return spec, now, skews


def _plan(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    pods: Sequence[Pod],
    pending: Sequence[Pod],
    max_cycles: int = MAX_CYCLES,
    due: Callable[[], bool] = never,
    max_planned: int = MAX_PLANNED,
) -> Steps[Plan]:
    before = yield from _prelude(cache, framework, workload, pods, pending, due)
    if isinstance(before, Plan):
        return before
    spec, now, skews = before
    if due():
        yield
    # Its own RNG and start index: planning never moves the live cycle's tie-breaks.
    algorithm = SchedulingAlgorithm(random.Random(0))
    try:
        found = yield from search_steps(spec, list(pods), cache, framework, algorithm, max_cycles, due, max_planned)
    except ExtendersNeedAsyncError as exc:
        return Plan(workload, (), EXTENDERS, f"the profile asks an extender ({exc}): not planned", skews)
    if not found.moves:
        message = f"{_describe(spec, now.skews)}; no move helps: {found.why}"
        return Plan(workload, (), NO_IMPROVING_MOVE, message, skews)
    final = found.moves[-1].skews_after
    if found.capped:
        left = "; more to plan after these"
    elif over(spec, final):
        left = "; no further move helps"
    else:
        left = ""
    verb = "moves leave" if len(found.moves) > 1 else "move leaves"
    message = f"{len(found.moves)} {verb} {_describe(spec, final)}{left}"
    return Plan(workload, tuple(found.moves), PLANNED, message, skews)


def check_batch(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    moves: Sequence[Move],
    *,
    pending: Iterable[Pod] = (),
    placed: Iterable[Pod] | None = None,
    due: Callable[[], bool] = never,
) -> Steps[Plan]:
    """The next batch of a kept plan: its first moves, as many as the disruption budget allows now
    (``scheduler.spread.batch``), checked as one on the cache as it is: the rules hold (nothing in
    flight, above maxSkew, a budget above 0), every pod is where the plan found it, and with all of
    them gone our cycle lands their replacements in the planned domains, lowering the skews. PLANNED
    with the moves that hold (a prefix, cut and checked again where a replacement would land
    elsewhere); STALE when not even the first does. In slices, as ``plan_steps``."""
    pods = _members(cache, framework, workload, placed)
    before = yield from _prelude(cache, framework, workload, pods, _waiting(workload, pending), due)
    if isinstance(before, Plan):
        return before
    spec, now, skews = before
    budget = disruption_budget(workload.kind, pods, cache)
    by_key = {p.key: p for p in pods}
    victims: list[Pod] = []
    for move in moves[: budget.allowed]:
        victim = by_key.get(move.pod)
        if victim is None or cache.pod_node(victim.key) != move.from_node:
            if not victims:
                return Plan(workload, (), STALE, f"pod {move.pod} is no longer on node {move.from_node}", skews)
            break
        victims.append(victim)
    algorithm = SchedulingAlgorithm(random.Random(0))
    size, why = len(victims), ""
    while size:
        try:
            found = yield from place_batch(spec, moves[:size], victims[:size], now, cache, framework, algorithm, due)
        except ExtendersNeedAsyncError as exc:
            return Plan(workload, (), EXTENDERS, f"the profile asks an extender ({exc}): not planned", skews)
        if found.landed == size:
            verb = "moves leave" if size > 1 else "move leaves"
            message = f"{size} {verb} {_describe(spec, found.skews)} ({budget.source})"
            landed = tuple(
                dataclasses.replace(m, to_node=node, to_domain=now.domain_of[_index(spec, m)].get(node, m.to_domain))
                for m, node in zip(moves, found.nodes, strict=False)
            )
            return Plan(workload, landed, PLANNED, message, skews)
        why = found.why
        size = 0 if size == 1 else max(1, found.landed)  # what landed, alone (at least the first move)
    return Plan(workload, (), STALE, why, skews)


def _index(spec: Spec, move: Move) -> int:
    """The constraint a move is for (the first of its topology key)."""
    return next(i for i, c in enumerate(spec.constraints) if c.topology_key == move.topology_key)


def plan_rebalance(
    cache: Cache,
    frameworks: Mapping[str, Framework],
    *,
    default: bool,
    namespace: str | None = None,
    pending: Iterable[Pod] = (),
    max_moves: int | None = None,
    max_cycles: int = MAX_CYCLES,
) -> list[Plan]:
    """A plan for every workload of ours with spread constraints and placed pods, sorted by
    namespace, kind and name (not opted in and a bad annotation are plans that say so)."""
    groups: dict[Workload, tuple[list[Pod], list[Pod]]] = {}
    for which, source in ((0, cache.pods()), (1, pending)):
        for pod in source:
            if pod.scheduler_name not in frameworks or (namespace is not None and pod.namespace != namespace):
                continue
            workload = workload_of(pod, REBALANCED_KINDS)
            if workload is not None:
                groups.setdefault(workload, ([], []))[which].append(pod)
    plans: list[Plan] = []
    for workload in sorted(groups):
        placed, waiting = groups[workload]
        placed.sort(key=lambda p: p.key)
        everyone = placed + waiting
        framework = frameworks[everyone[0].scheduler_name]
        if not placed or workload_spec(placed, framework, cache) is None:
            continue  # nothing placed yet, or nothing to spread
        verdicts = [rebalance_opt_in(p, default) for p in everyone]
        bad = next((v for v in verdicts if isinstance(v, str)), None)
        if bad is not None:
            plans.append(Plan(workload, (), BAD_ANNOTATION, bad))
        elif not all(verdicts):
            plans.append(Plan(workload, (), NOT_OPTED_IN, f'{REBALANCE_ANNOTATION} is not "true" on its pods'))
        else:
            plan = finish(_plan(cache, framework, workload, placed, waiting, max_cycles))
            plans.append(_truncated(plan, max_moves))
    return plans
