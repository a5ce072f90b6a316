"""One rebalancing move, judged by our own scheduling cycle: a workload's skews as the Filter counts
them, the replacement an eviction makes the owner create, and whether the cycle puts it somewhere
that helps. Pure; ``scheduler.spread.rebalance`` searches with these, and the property test's brute
force judges every other order of moves with the very same ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import Pod, PodKey
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.volumes import ResourceClaimStatus
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.plugins.podtopologyspread.common import Constraint
from scheduler.plugins.podtopologyspread.counting import eligibility_key
from scheduler.schedule_one import Attempt, SchedulingAlgorithm
from scheduler.spread.steps import Steps, every, finish, never
from scheduler.spread.workload import counts_of, spread_constraints_of

__all__ = [
    "STATEFUL_SET",
    "Counts",
    "Move",
    "PlanMovedError",
    "Spec",
    "Working",
    "better",
    "measure",
    "over",
    "replacement_name",
    "replacement_of",
    "schedule_replacement",
    "spec_steps",
    "tied_top",
    "try_move",
    "workload_spec",
]

STATEFUL_SET = "StatefulSet"  # recreates an evicted pod under its own name, with its own volumes


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
    skews_after: tuple[int, ...] = ()  # every constraint's skew after the move, hard ones first


@dataclass(frozen=True, slots=True)
class Spec:
    """A workload's constraints, hard first (each group in the pod's order), and what counting needs."""

    rep: Pod
    hard: tuple[Constraint, ...]
    soft: tuple[Constraint, ...]
    require_all_keys: bool

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return self.hard + self.soft


def workload_spec(pods: Sequence[Pod], framework: Framework, cache: Cache) -> Spec | str | None:
    """The workload's constraints (its pods' own, or the profile's defaults); None without any; a
    message when its pods disagree (a StatefulSet mid-rollout): counting one set for all would lie."""
    return finish(spec_steps(pods, framework, cache))


def spec_steps(
    pods: Sequence[Pod], framework: Framework, cache: Cache, due: Callable[[], bool] = never
) -> Steps[Spec | str | None]:
    """``workload_spec`` in slices (a walk over every pod of the workload)."""
    tick = every(due)
    specs: dict[Hashable, Spec] = {}
    for pod in pods:
        if tick():
            yield
        hard, soft, require_all = spread_constraints_of(pod, framework, cache)
        specs.setdefault(
            (hard, soft, require_all, eligibility_key(pod, hard + soft)), Spec(pod, hard, soft, require_all)
        )
    if len(specs) > 1:
        return f"its {len(pods)} pods carry {len(specs)} different sets of spread constraints (a rollout?)"
    spec = next(iter(specs.values()), None)
    return spec if spec is not None and spec.constraints else None


@dataclass(frozen=True, slots=True)
class Counts:
    """Per constraint: the skew, pods per eligible domain, node -> domain."""

    skews: tuple[int, ...]
    counts: tuple[dict[str, int], ...]
    domain_of: tuple[dict[str, str], ...]

    def where(self, node: str) -> tuple[str | None, ...]:
        return tuple(d.get(node) for d in self.domain_of)

    def moved(self, spec: Spec, pod: Pod, from_node: str, to_node: str) -> tuple[int, ...]:
        """The skews once ``pod`` (counted now on ``from_node``) is on ``to_node`` instead: the same
        counts with one pod taken from a domain and one added to another (the domains and every other
        pod stay), and each constraint's global minimum as the Filter takes it (``min_match_num``:
        0 while a hard constraint has fewer domains than its minDomains)."""
        out = []
        hard = len(spec.hard)
        for i, c in enumerate(spec.constraints):
            bucket = dict(self.counts[i])
            if not c.selector.empty and c.selector.matches(pod.labels):  # an empty selector counts nothing
                for node, step in ((from_node, -1), (to_node, 1)):
                    domain = self.domain_of[i].get(node)
                    if domain is not None:
                        bucket[domain] += step
            if not bucket:
                out.append(0)
                continue
            floor = 0 if i < hard and len(bucket) < c.min_domains else min(bucket.values())
            out.append(max(bucket.values()) - floor)
        return tuple(out)


def measure(spec: Spec, cache: Cache) -> Counts:
    """The skews as the Filter (hard) and Score (soft) count: ``domain_counts``, as ``skew`` reports."""
    counts, minima, domain_of = counts_of(spec.rep, spec.hard, spec.soft, cache, require_all_keys=spec.require_all_keys)
    skews = tuple(max(b.values()) - m if b else 0 for b, m in zip(counts, minima, strict=True))
    return Counts(skews, tuple(counts), tuple(domain_of))


def over(spec: Spec, skews: Sequence[int]) -> list[int]:
    """The constraints above their maxSkew, in order."""
    return [i for i, c in enumerate(spec.constraints) if skews[i] > c.max_skew]


def better(new: Sequence[int], old: Sequence[int]) -> bool:
    """No constraint worse and one better: so also lexicographically lower, hard ones first."""
    return all(n <= o for n, o in zip(new, old, strict=True)) and tuple(new) != tuple(old)


def replacement_of(pod: Pod, name: str) -> Pod:
    """What the owner creates for an evicted pod: the same template (labels, spec, owner), pending,
    under ``name``."""
    uid = f"{pod.uid}-replacement"
    raw: dict[str, Any] = dict(pod.raw)
    meta = raw.get("metadata")
    raw["metadata"] = {**(meta if isinstance(meta, Mapping) else {}), "name": name, "uid": uid}
    spec = raw.get("spec")
    raw["spec"] = {k: v for k, v in (spec if isinstance(spec, Mapping) else {}).items() if k != "nodeName"}
    raw["status"] = {"phase": "Pending"}
    return dataclasses.replace(
        pod,
        name=name,
        uid=uid,
        node_name="",
        nominated_node_name="",
        phase="Pending",
        terminating=False,
        resource_version="",
        start_time=None,
        preempted_by_scheduler=False,
        resource_claim_statuses=(),
        raw=raw,
    )


def schedule_replacement(
    algorithm: SchedulingAlgorithm, framework: Framework, cache: Cache, replacement: Pod
) -> Attempt:
    """Our cycle for ``replacement`` with the claims kube-controller-manager would generate for it
    first: for each ``spec.resourceClaims`` entry naming a ResourceClaimTemplate the cache holds, a claim
    of the template's requests, not allocated, owned by the replacement and named in its status (the
    victim's own claim stays as it is, its devices taken: the plan never counts on them). The claims
    are in the cache's storage for the cycle only; the attempt's pod is the replacement with them."""
    storage = cache.storage
    claims: list[ResourceClaim] = []
    statuses: list[ResourceClaimStatus] = []
    for entry in replacement.resource_claims:
        if entry.resource_claim_template_name is None:
            continue
        template = storage.resource_claim_template(replacement.namespace, entry.resource_claim_template_name)
        name = f"{replacement.name}-{entry.name}"
        # No template: the controller cannot make the claim either, and the replacement waits for it.
        if template is None or storage.resource_claim(replacement.namespace, name) is not None:
            continue
        claims.append(
            ResourceClaim(
                namespace=replacement.namespace,
                name=name,
                uid=f"{replacement.uid}-{entry.name}",
                annotations=dict(template.annotations),
                controller_uid=replacement.uid,
                devices=template.devices,
            )
        )
        statuses.append(ResourceClaimStatus(entry.name, name))
    if not claims:
        return algorithm.schedule_pod(framework, cache, replacement)
    with_claims = dataclasses.replace(replacement, resource_claim_statuses=tuple(statuses))
    for claim in claims:
        storage.upsert(claim)
    try:
        return algorithm.schedule_pod(framework, cache, with_claims)
    finally:
        for claim in claims:
            storage.remove(claim)


def replacement_name(victim: Pod, step: int) -> str:
    """A StatefulSet recreates the pod under its name; a ReplicaSet's gets a new one."""
    controller = victim.controller
    return victim.name if controller is not None and controller.kind == STATEFUL_SET else f"{victim.name}-r{step}"


class PlanMovedError(Exception):
    """The cache changed under a plan that yielded (``Working.resume``): it cannot go on."""


@dataclass(slots=True)
class Working:
    """The caller's cache with moves applied; ``restore`` undoes them all, last first. ``suspend``
    takes them off the cache while planning yields to the scheduling loop (which must never see
    them) and ``resume`` puts them back; while suspended, ``undo`` and ``restore`` only forget them.
    A move is a victim taken off and its replacement put on (``apply``); a batch takes every victim
    off first and puts the replacements on one by one (``take``, ``put``)."""

    cache: Cache
    removed: list[Pod] = field(default_factory=list)
    placed: list[Pod] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    suspended: bool = False

    def apply(self, victim: Pod, replacement: Pod, node: str) -> None:
        self.take(victim)
        self.put(replacement, node)

    def take(self, victim: Pod) -> None:
        self.cache.remove_pod(victim)
        self.removed.append(victim)

    def put(self, replacement: Pod, node: str) -> None:
        self.cache.assume_pod(replacement, node)
        self.placed.append(replacement)
        self.nodes.append(node)

    def undo(self) -> None:
        """Undo the last ``apply``."""
        replacement, victim = self.placed.pop(), self.removed.pop()
        self.nodes.pop()
        if not self.suspended:
            self.cache.forget_pod(replacement)
            self.cache.add_pod(victim)

    def restore(self) -> None:
        if not self.suspended:
            self._off()
        self.removed, self.placed, self.nodes = [], [], []
        self.suspended = False

    def suspend(self) -> None:
        self._off()
        self.suspended = True

    def _off(self) -> None:
        """The replacements forgotten and the victims back, last first (the caller's cache as it was)."""
        for replacement in reversed(self.placed):
            self.cache.forget_pod(replacement)
        for victim in reversed(self.removed):
            self.cache.add_pod(victim)

    def resume(self) -> None:
        """Put the moves back; ``PlanMovedError`` (and still suspended) when the cache changed under
        them: a planned pod gone, replaced, moved, relabelled or terminating, or a pod under a
        replacement's name (``assume_pod`` would take its place, ``forget_pod`` then drop it). A pod
        updated otherwise (its status, a deletion cost) is taken as it is now."""
        victims = {victim.key for victim in self.removed}
        for k, victim in enumerate(self.removed):
            now = self.cache.pod(victim.key)
            if now is None or (now.uid, now.node_name, now.terminating) != (
                victim.uid,
                victim.node_name,
                victim.terminating,
            ):
                raise PlanMovedError(f"pod {victim.key} changed while planning waited")
            if dict(now.labels) != dict(victim.labels):
                raise PlanMovedError(f"pod {victim.key} changed while planning waited")
            self.removed[k] = now
        for replacement in self.placed:
            if replacement.key not in victims and self.cache.pod(replacement.key) is not None:
                raise PlanMovedError(f"a pod {replacement.key} appeared while planning waited")
        self.suspended = False
        for victim in self.removed:
            self.cache.remove_pod(victim)
        for replacement, node in zip(self.placed, self.nodes, strict=True):
            self.cache.assume_pod(replacement, node)


def tied_top(attempt: Attempt) -> list[str]:
    """The nodes a placed pod's cycle could pick, by name: every node tied at the top score (the
    live cycle picks one of them at random)."""
    best = max(attempt.totals.values(), default=0)
    return sorted({str(n) for n in attempt.scored_nodes if attempt.totals.get(n) == best} or {str(attempt.host)})


@dataclass(frozen=True, slots=True)
class Tried:
    """A move and the replacement that makes it (None and why not, when it does not help)."""

    move: Move | None
    replacement: Pod | None
    why: str


def try_move(
    spec: Spec,
    i: int,
    victim: Pod,
    now: Counts,
    cache: Cache,
    framework: Framework,
    algorithm: SchedulingAlgorithm,
    step: int,
) -> Tried:
    """Evicting ``victim`` for constraint ``i``: our cycle places its replacement on the cache without
    it. A move only if every node tied at the top score (the live cycle picks one at random) leaves
    the skews ``better``; ``to_node`` is the first of them by name. ``now``: the counts with the
    victim in place. The cache is left as found."""
    from_node = cache.pod_node(victim.key) or ""
    replacement = replacement_of(victim, replacement_name(victim, step))
    cache.remove_pod(victim)
    try:
        attempt = schedule_replacement(algorithm, framework, cache, replacement)
    finally:
        cache.add_pod(victim)
    if not attempt.succeeded or attempt.host is None:
        return Tried(None, None, f"its replacement would not be placed: {attempt.message}")
    top = tied_top(attempt)
    outcomes: dict[tuple[str | None, ...], tuple[int, ...]] = {}
    for node in top:
        where = now.where(node)
        if where not in outcomes:  # the counts depend on the domains only, not on the node
            outcomes[where] = now.moved(spec, victim, from_node, node)
    for where, skews in outcomes.items():
        if not better(skews, now.skews):
            landing = ", ".join(f"{c.topology_key}={w}" for c, w in zip(spec.constraints, where, strict=True))
            return Tried(None, None, f"its replacement could land in {landing}, which does not lower the skews")
    to_node = top[0]
    after = outcomes[now.where(to_node)]
    move = Move(
        pod=victim.key,
        from_node=from_node,
        to_node=to_node,
        topology_key=spec.constraints[i].topology_key,
        from_domain=now.domain_of[i].get(from_node, ""),
        to_domain=now.domain_of[i].get(to_node, ""),
        skew_before=now.skews[i],
        skew_after=after[i],
        skews_after=after,
    )
    return Tried(move, replacement, "")
