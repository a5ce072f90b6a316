"""Rebalancing: the fewest evictions that bring a workload's topology spread back within maxSkew, each
one only where our own scheduling cycle puts the replacement somewhere better. Pure: the cache in,
plans out; ``scheduler.kube`` carries them out (one eviction at a time, replanning after each).

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
- A move: a pod from the most crowded domain of the first constraint above its maxSkew, taken in
  deletion-cost order (so a doubled-up host loses it first); our scheduling cycle
  (``SchedulingAlgorithm.schedule_pod`` with the pod's profile) runs for its replacement (the pod
  copied, no node, a new name) on the cache with the pod gone. The move is kept only if the
  replacement is placed and **every node the cycle could pick** (all nodes tied at the top score:
  the live cycle picks one at random) gives a skew vector no worse on any constraint and better on
  at least one. A replacement that would not land in the emptier domain (a taint it does not
  tolerate, affinity, resources) is therefore never planned for. The move's ``to_node`` is the first
  of the tied nodes by name. If no pod of that domain gives such a move, the next constraint above
  its maxSkew is tried. The first move found is applied to the working state and the next planned.
- Each move lowers the sum of the skews, so planning ends; ``max_moves`` stops it earlier.

The caller's cache is used as the working state and restored before returning (the pod put back,
the replacements forgotten), also on an exception: the scheduler's loop runs planning between its
cycles, so no watch event sees the intermediate state. Restoring re-adds a pod as a watch update
does; nothing reads the order of a node's pods.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod, PodKey
from scheduler.api.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.plugins.podtopologyspread.common import Constraint
from scheduler.plugins.podtopologyspread.counting import domain_counts, eligibility_key
from scheduler.schedule_one import ExtendersNeedAsyncError, SchedulingAlgorithm
from scheduler.spread.deletion_cost import Workload, spread_constraints_of, workload_costs, workload_of

__all__ = [
    "REBALANCED_KINDS",
    "REBALANCE_ANNOTATION",
    "Move",
    "Plan",
    "Skew",
    "plan_rebalance",
    "plan_workload",
    "pod_ready",
    "rebalance_opt_in",
    "replacement_of",
]

REBALANCE_ANNOTATION = "spread-scheduler.io/rebalance"
# Controllers that recreate an evicted pod (a StatefulSet under the same name).
REBALANCED_KINDS = ("ReplicaSet", "ReplicationController", "StatefulSet")
# Go's strconv.ParseBool, which Kubernetes uses for boolean annotations and flags.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
MAX_SHOWN = 80  # characters of a bad annotation value quoted in a message (a value may be long)
# Scheduling cycles tried per move at most: bounds the time planning holds the scheduler's loop on a
# workload whose crowded domain spans many nodes (pods on one node are tried once).
MAX_TRIES_PER_MOVE = 16

WITHIN_SKEW = "within-skew"
PLANNED = "planned"
NO_IMPROVING_MOVE = "no-improving-move"
NOT_OPTED_IN = "not-opted-in"
BAD_ANNOTATION = "bad-annotation"
IN_FLIGHT = "in-flight"
PDB = "pdb"
MIXED_CONSTRAINTS = "mixed-constraints"
EXTENDERS = "extenders"
__all__ += [
    "BAD_ANNOTATION",
    "EXTENDERS",
    "IN_FLIGHT",
    "MIXED_CONSTRAINTS",
    "NOT_OPTED_IN",
    "NO_IMPROVING_MOVE",
    "PDB",
    "PLANNED",
    "WITHIN_SKEW",
]


@dataclass(frozen=True, slots=True)
class Move:
    pod: PodKey  # the pod to evict
    from_node: str
    to_node: str  # where our scheduling cycle places its replacement
    topology_key: str  # the constraint the move is for
    from_domain: str
    to_domain: str
    skew_before: int  # that constraint's skew before / after the move
    skew_after: int
    skews_after: tuple[int, ...] = ()  # every constraint's skew after the move, in ``Plan.skews`` order


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


def replacement_of(pod: Pod, name: str) -> Pod:
    """What the owner creates for an evicted pod: the same template (labels, spec, owner), pending,
    under ``name`` (a StatefulSet reuses the pod's own)."""
    raw: dict[str, Any] = dict(pod.raw)
    meta = raw.get("metadata")
    raw["metadata"] = {**(meta if isinstance(meta, Mapping) else {}), "name": name, "uid": f"{pod.uid}-replacement"}
    spec = raw.get("spec")
    raw["spec"] = {k: v for k, v in (spec if isinstance(spec, Mapping) else {}).items() if k != "nodeName"}
    raw["status"] = {"phase": "Pending"}
    return dataclasses.replace(
        pod,
        name=name,
        uid=f"{pod.uid}-replacement",
        node_name="",
        nominated_node_name="",
        phase="Pending",
        terminating=False,
        resource_version="",
        start_time=None,
        preempted_by_scheduler=False,
        raw=raw,
    )


# -- the workload's constraints and skews ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Spec:
    """A workload's constraints, hard first, and what counting them needs."""

    rep: Pod
    hard: tuple[Constraint, ...]
    soft: tuple[Constraint, ...]
    require_all_keys: bool

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return self.hard + self.soft


@dataclass(frozen=True, slots=True)
class _Counts:
    skews: tuple[int, ...]
    counts: tuple[dict[str, int], ...]
    domain_of: tuple[dict[str, str], ...]


def _measure(spec: _Spec, cache: Cache) -> _Counts:
    skews: list[int] = []
    counts: list[dict[str, int]] = []
    domain_of: list[dict[str, str]] = []
    for action, cs in ((DO_NOT_SCHEDULE, spec.hard), (SCHEDULE_ANYWAY, spec.soft)):
        if not cs:
            continue
        c_counts, minima, c_domains = domain_counts(spec.rep, action, cs, cache, require_all_keys=spec.require_all_keys)
        skews += [max(b.values()) - m if b else 0 for b, m in zip(c_counts, minima, strict=True)]
        counts += c_counts
        domain_of += c_domains
    return _Counts(tuple(skews), tuple(counts), tuple(domain_of))


def _over(spec: _Spec, skews: Sequence[int]) -> list[int]:
    return [i for i, c in enumerate(spec.constraints) if skews[i] > c.max_skew]


def _better(new: Sequence[int], old: Sequence[int]) -> bool:
    """No constraint worse, one better (so the vector is lexicographically lower, hard ones first)."""
    return all(n <= o for n, o in zip(new, old, strict=True)) and tuple(new) != tuple(old)


# -- planning --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Working:
    """The caller's cache with the planned moves applied; ``restore`` undoes them."""

    cache: Cache
    removed: list[Pod] = dataclasses.field(default_factory=list)
    placed: list[Pod] = dataclasses.field(default_factory=list)

    def apply(self, victim: Pod, replacement: Pod, node: str) -> None:
        self.cache.remove_pod(victim)
        self.removed.append(victim)
        self.cache.assume_pod(replacement, node)
        self.placed.append(replacement)

    def restore(self) -> None:
        for pod in reversed(self.placed):
            self.cache.forget_pod(pod)
        for pod in reversed(self.removed):
            self.cache.add_pod(pod)
        self.placed.clear()
        self.removed.clear()


def _candidates(
    spec: _Spec, i: int, now: _Counts, pods: Sequence[Pod], cache: Cache, framework: Framework
) -> list[Pod]:
    """The workload's pods in constraint ``i``'s most crowded domains, deletion-cost order (lowest
    first: the youngest pod of the most crowded host), one pod per node where pods are alike."""
    c, bucket, domain_of = spec.constraints[i], now.counts[i], now.domain_of[i]
    top = max(bucket.values(), default=0)
    crowded = []
    for p in pods:
        domain = domain_of.get(cache.pod_node(p.key) or "")
        if domain is not None and bucket.get(domain) == top and c.selector.matches(p.labels):
            crowded.append(p)
    costs = workload_costs(crowded, cache, {framework.profile_name: framework})
    crowded.sort(key=lambda p: (costs.get(p.key, 0), -p.created, p.name))
    out: list[Pod] = []
    seen: set[str] = set()
    for p in crowded:
        node = cache.pod_node(p.key) or ""
        alike = p.controller is None or p.controller.kind != "StatefulSet"  # its pods differ (volumes, names)
        if alike and node in seen:
            continue
        seen.add(node)
        out.append(p)
    return out[:MAX_TRIES_PER_MOVE]


@dataclass(frozen=True, slots=True)
class _Tried:
    move: Move | None
    why: str  # why not, when ``move`` is None


def _try(
    spec: _Spec,
    i: int,
    victim: Pod,
    now: _Counts,
    working: _Working,
    framework: Framework,
    algorithm: SchedulingAlgorithm,
    step: int,
) -> _Tried:
    cache = working.cache
    from_node = cache.pod_node(victim.key) or ""
    controller = victim.controller
    name = victim.name if controller is not None and controller.kind == "StatefulSet" else f"{victim.name}-r{step}"
    replacement = replacement_of(victim, name)
    cache.remove_pod(victim)
    try:
        attempt = algorithm.schedule_pod(framework, cache, replacement)
        if not attempt.succeeded or attempt.host is None:
            return _Tried(None, f"its replacement would not be placed: {attempt.message}")
        best = max(attempt.totals.values(), default=0)
        top = sorted({str(n) for n in attempt.scored_nodes if attempt.totals.get(n) == best} or {attempt.host})
        outcomes: dict[tuple[str | None, ...], _Counts] = {}
        for node in top:
            where = tuple(d.get(node) for d in now.domain_of)
            if where in outcomes:
                continue
            cache.assume_pod(replacement, node)
            try:
                outcomes[where] = _measure(spec, cache)
            finally:
                cache.forget_pod(replacement)
        for where, after in outcomes.items():
            if not _better(after.skews, now.skews):
                landing = spec.constraints[i].topology_key + "=" + str(where[i])
                return _Tried(None, f"its replacement could land in {landing}, which does not lower the skew")
    finally:
        cache.add_pod(victim)
    to_node = top[0]
    after = outcomes[tuple(d.get(to_node) for d in now.domain_of)]
    c = spec.constraints[i]
    move = Move(
        pod=victim.key,
        from_node=from_node,
        to_node=to_node,
        topology_key=c.topology_key,
        from_domain=now.domain_of[i].get(from_node, ""),
        to_domain=now.domain_of[i].get(to_node, ""),
        skew_before=now.skews[i],
        skew_after=after.skews[i],
        skews_after=after.skews,
    )
    working.apply(victim, replacement, to_node)
    return _Tried(move, "")


def _pods_of(cache: Cache, workload: Workload) -> list[Pod]:
    return sorted(
        (p for p in cache.pods() if p.namespace == workload.namespace and workload_of(p, REBALANCED_KINDS) == workload),
        key=lambda p: p.key,
    )


def _blocked(pods: Sequence[Pod], pending: Sequence[Pod], cache: Cache) -> tuple[str, str] | None:
    """Why nothing may move now: a move in flight, or a budget that allows no disruption."""
    for pod in pending:
        return IN_FLIGHT, f"pod {pod.key} is pending: waiting for it to be placed and Ready"
    for pod in pods:
        if pod.terminating:
            return IN_FLIGHT, f"pod {pod.key} is terminating: waiting for it to go"
        if cache.is_assumed(pod.key):
            return IN_FLIGHT, f"pod {pod.key} is being bound: waiting for it to be Ready"
        if not pod_ready(pod):
            return IN_FLIGHT, f"pod {pod.key} is not Ready: waiting for it"
    return None


def _budget(pods: Sequence[Pod], cache: Cache) -> str | None:
    for pdb in sorted(cache.pod_disruption_budgets(), key=lambda b: b.key):
        if pdb.disruptions_allowed < 1 and any(pdb.matches(p.namespace, p.labels) for p in pods):
            return f"PodDisruptionBudget {pdb.key} allows {max(pdb.disruptions_allowed, 0)} disruptions"
    return None


def _spec_of(pods: Sequence[Pod], framework: Framework, cache: Cache) -> _Spec | str | None:
    """The workload's constraints; None without any; a message when its pods disagree."""
    specs: dict[Hashable, _Spec] = {}
    for pod in pods:
        hard, soft, require_all = spread_constraints_of(pod, framework, cache)
        key = (hard, soft, require_all, eligibility_key(pod, hard + soft))
        specs.setdefault(key, _Spec(pod, hard, soft, require_all))
    if len(specs) > 1:
        return f"its {len(pods)} pods carry {len(specs)} different sets of spread constraints (a rollout?)"
    spec = next(iter(specs.values()), None)
    return spec if spec is not None and spec.constraints else None


def _skews(spec: _Spec, skews: Sequence[int]) -> tuple[Skew, ...]:
    hard = len(spec.hard)
    return tuple(Skew(c.topology_key, c.max_skew, i < hard, skews[i]) for i, c in enumerate(spec.constraints))


def _describe(spec: _Spec, skews: Sequence[int]) -> str:
    return ", ".join(
        f"{c.topology_key} skew {s} (maxSkew {c.max_skew})" for c, s in zip(spec.constraints, skews, strict=True)
    )


def plan_workload(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    *,
    max_moves: int | None = None,
    pending: Iterable[Pod] = (),
) -> Plan:
    """The plan for one workload (opt-in is the caller's: see ``plan_rebalance``). ``pending`` are the
    scheduler's pending pods (the cache holds only placed ones); those of this workload mean a move
    is in flight."""
    pods = [p for p in _pods_of(cache, workload) if p.scheduler_name == framework.profile_name]
    waiting = [p for p in pending if p.namespace == workload.namespace and workload_of(p, REBALANCED_KINDS) == workload]
    return _plan(cache, framework, workload, pods, waiting, max_moves)


def _plan(
    cache: Cache,
    framework: Framework,
    workload: Workload,
    pods: Sequence[Pod],
    pending: Sequence[Pod],
    max_moves: int | None,
) -> Plan:
    blocked = _blocked(pods, pending, cache)
    if blocked is not None:
        return Plan(workload, (), *blocked)
    spec = _spec_of(pods, framework, cache)
    if spec is None:
        return Plan(workload, (), WITHIN_SKEW, "no spread constraints")
    if isinstance(spec, str):
        return Plan(workload, (), MIXED_CONSTRAINTS, spec)
    now = _measure(spec, cache)
    skews = _skews(spec, now.skews)
    if not _over(spec, now.skews):
        return Plan(workload, (), WITHIN_SKEW, _describe(spec, now.skews), skews)
    budget = _budget(pods, cache)
    if budget is not None:
        return Plan(workload, (), PDB, budget, skews)
    # Its own RNG and start index: planning never moves the live cycle's tie-breaks.
    algorithm = SchedulingAlgorithm(random.Random(0))
    working = _Working(cache)
    moves: list[Move] = []
    why = ""
    try:
        movable = list(pods)
        while max_moves is None or len(moves) < max_moves:
            over = _over(spec, now.skews)
            if not over:
                break
            found: Move | None = None
            for i in over:
                for victim in _candidates(spec, i, now, movable, cache, framework):
                    tried = _try(spec, i, victim, now, working, framework, algorithm, len(moves) + 1)
                    if tried.move is not None:
                        found = tried.move
                        break
                    why = why or f"moving {victim.key} ({spec.constraints[i].topology_key}): {tried.why}"
                if found is not None:
                    break
            if found is None:
                break
            moves.append(found)
            movable = [p for p in movable if p.key != found.pod]  # a replacement does not exist yet
            now = _measure(spec, cache)
    except ExtendersNeedAsyncError as exc:
        return Plan(workload, (), EXTENDERS, f"the profile asks an extender ({exc}): not planned", skews)
    finally:
        working.restore()
    final = moves[-1].skews_after if moves else now.skews
    if not moves:
        return Plan(workload, (), NO_IMPROVING_MOVE, f"{_describe(spec, final)}: no move helps: {why}", skews)
    left = (
        ""
        if not _over(spec, final)
        else "; no further move helps"
        if max_moves is None or len(moves) < max_moves
        else "; more may follow"
    )
    message = f"{len(moves)} move{'s' if len(moves) > 1 else ''} leave {_describe(spec, final)}{left}"
    return Plan(workload, tuple(moves), PLANNED, message, skews)


def plan_rebalance(
    cache: Cache,
    frameworks: Mapping[str, Framework],
    *,
    default: bool,
    namespace: str | None = None,
    pending: Iterable[Pod] = (),
    max_moves: int | None = None,
) -> list[Plan]:
    """A plan for every workload of ours with spread constraints, sorted by namespace, kind and name:
    not opted in, a bad annotation and no constraints say so (the last are left out)."""
    groups: dict[Workload, tuple[list[Pod], list[Pod]]] = {}
    for which, source in ((0, cache.pods()), (1, pending)):
        for pod in source:
            if pod.scheduler_name not in frameworks or (namespace is not None and pod.namespace != namespace):
                continue
            workload = workload_of(pod, REBALANCED_KINDS)
            if workload is not None:
                groups.setdefault(workload, ([], []))[which].append(pod)
    plans: list[Plan] = []
    for workload in sorted(groups, key=lambda w: (w.namespace, w.kind, w.name)):
        placed, waiting = groups[workload]
        placed.sort(key=lambda p: p.key)
        everyone = placed + waiting
        framework = frameworks[everyone[0].scheduler_name]
        if not placed or _spec_of(placed, framework, cache) is None:
            continue  # nothing placed yet, or nothing to spread
        verdicts = [rebalance_opt_in(p, default) for p in everyone]
        bad = next((v for v in verdicts if isinstance(v, str)), None)
        if bad is not None:
            plans.append(Plan(workload, (), BAD_ANNOTATION, bad))
        elif not all(verdicts):
            plans.append(Plan(workload, (), NOT_OPTED_IN, f'{REBALANCE_ANNOTATION} is not "true" on its pods'))
        else:
            plans.append(_plan(cache, framework, workload, placed, waiting, max_moves))
    return plans
