"""The search for the fewest moves: greedy first, then iterative deepening when greedy may not be the
fewest, bounded by scheduling cycles. Pure; works on the caller's cache through ``Working`` and
leaves it as found.

Greedy takes, for the first constraint above its maxSkew, a pod of its most crowded domain in
deletion-cost order, and the first such move our cycle says helps. It is often the fewest, but not
always: when several domains share the largest count and one of them holds pods that cannot move
(another workload's), no single move from a crowded domain lowers the skew, while moving from a
middle domain earlier (raising the minimum instead) would have. So greedy's length is checked
against a lower bound (``lower_bound``: per constraint, the fewest moves any placement could take,
water-filling its counts) and, where they differ, every sequence of moves shorter than greedy's is
searched (when greedy stops short of maxSkew: deeper and deeper, until the search's tree ends before
its depth does, or every pod has moved once), most promising pods first, failures memoized per
state. No fixed depth: where greedy is stuck after one move, the way out may take several moves
that greedy never tries (a pod moved within a zone to raise the emptiest host first). The search
stops after ``MAX_CYCLES`` scheduling cycles and keeps greedy's plan: the fewest moves are
guaranteed within that budget (the property test's brute force checks it), a plan that only lowers
the skews beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.spread.deletion_cost import workload_costs
from scheduler.spread.moves import STATEFUL_SET, Counts, Move, Spec, Working, measure, over, try_move

__all__ = ["MAX_CYCLES", "MAX_TRIES_PER_MOVE", "Result", "lower_bound", "search"]

# Scheduling cycles greedy tries per move: bounds its time on a domain spanning many nodes.
MAX_TRIES_PER_MOVE = 16
# Scheduling cycles the deeper search may spend on one workload (each is one cycle over every node).
MAX_CYCLES = 512


def _bound(counts: Sequence[int], max_skew: int) -> int:
    """The fewest moves that can bring ``counts`` within ``max_skew``: a move takes one pod from a
    domain and adds one to another, so ending within [L, L + max_skew] takes at least the larger of
    the pods above L + max_skew and the places below L, for the best level L."""
    if not counts:
        return 0
    best = None
    for level in range(min(counts), max(counts) + 1):
        above = sum(max(0, c - level - max_skew) for c in counts)
        below = sum(max(0, level - c) for c in counts)
        moves = max(above, below)
        best = moves if best is None else min(best, moves)
    return best or 0


def lower_bound(spec: Spec, now: Counts) -> int:
    """No sequence of moves brings every constraint within its maxSkew in fewer moves."""
    return max(
        (_bound(list(now.counts[i].values()), c.max_skew) for i, c in enumerate(spec.constraints)),
        default=0,
    )


@dataclass(slots=True)
class Result:
    moves: list[Move] = field(default_factory=list)
    why: str = ""  # why greedy found no (further) move: its first candidate's reason
    cycles: int = 0
    exhaustive: bool = True  # the fewest moves within the search's reach: no budget ran out


@dataclass(slots=True)
class _Search:
    spec: Spec
    cache: Cache
    framework: Framework
    algorithm: SchedulingAlgorithm
    working: Working
    max_cycles: int = MAX_CYCLES
    cycles: int = 0
    # A state -> the most moves left it failed with; inf: no sequence from it, however long.
    failed: dict[Hashable, float] = field(default_factory=dict)
    cut: bool = False  # a branch of this depth's search ended at the depth: a deeper one may succeed

    def _crowded_first(self, i: int, now: Counts, pods: Sequence[Pod], limit: int | None) -> list[Pod]:
        """The pods by their domain's count under constraint ``i`` (most crowded first, pods counted in
        no domain last), then deletion-cost order; one per node where pods are alike."""
        c, bucket, domain_of = self.spec.constraints[i], now.counts[i], now.domain_of[i]
        rank: dict[str, int] = {}
        for p in pods:
            domain = domain_of.get(self.cache.pod_node(p.key) or "")
            counted = domain is not None and c.selector.matches(p.labels)
            rank[p.key] = bucket.get(domain, 0) if counted and domain is not None else -1
        costs = workload_costs(pods, self.cache, {self.framework.profile_name: self.framework})
        ordered = sorted(pods, key=lambda p: (-rank[p.key], costs.get(p.key, 0), -p.created, p.name))
        out: list[Pod] = []
        seen: set[str] = set()
        for p in ordered:
            node = self.cache.pod_node(p.key) or ""
            alike = p.controller is None or p.controller.kind != STATEFUL_SET  # its pods differ (volumes, names)
            if alike and node in seen:
                continue
            seen.add(node)
            out.append(p)
        return out if limit is None else out[:limit]

    def _try(self, i: int, victim: Pod, now: Counts, step: int) -> tuple[Move | None, Pod | None, str]:
        self.cycles += 1
        tried = try_move(self.spec, i, victim, now, self.cache, self.framework, self.algorithm, step)
        return tried.move, tried.replacement, tried.why

    def greedy(self, pods: list[Pod]) -> Result:
        """Moves from the most crowded domain, the first that helps each time; undone before returning."""
        result = Result()
        movable = list(pods)
        now = measure(self.spec, self.cache)
        while over_now := over(self.spec, now.skews):
            found = False
            for i in over_now:
                top = max(now.counts[i].values(), default=0)
                for victim in self._crowded_first(i, now, movable, MAX_TRIES_PER_MOVE):
                    node = self.cache.pod_node(victim.key) or ""
                    domain = now.domain_of[i].get(node)
                    if domain is None or now.counts[i].get(domain) != top:
                        break  # greedy moves from the most crowded domain only
                    move, replacement, why = self._try(i, victim, now, len(result.moves) + 1)
                    if move is None or replacement is None:
                        topology_key = self.spec.constraints[i].topology_key
                        result.why = result.why or f"moving {victim.key} ({topology_key}): {why}"
                        continue
                    self.working.apply(victim, replacement, move.to_node)
                    result.moves.append(move)
                    movable.remove(victim)
                    found = True
                    break
                if found:
                    break
            if not found:
                break
            result.why = ""
            now = measure(self.spec, self.cache)
        self.working.restore()
        return result

    def _key(self, movable: Sequence[Pod]) -> Hashable:
        nodes = tuple(
            sorted(
                (self.cache.pod_node(p.key) or "", p.name if p.controller and p.controller.kind == STATEFUL_SET else "")
                for p in movable
            )
        )
        placed = tuple(sorted(self.cache.pod_node(p.key) or "" for p in self.working.placed))
        return nodes, placed

    def within(self, movable: list[Pod], left: int, path: list[Move]) -> list[Move] | None:
        """A sequence of at most ``left`` moves after ``path`` that brings every constraint within
        its maxSkew; None if there is none (or the budget ran out)."""
        now = measure(self.spec, self.cache)
        over_now = over(self.spec, now.skews)
        if not over_now:
            return list(path)
        if left < max(1, lower_bound(self.spec, now)):
            self.cut = True
            return None
        if self.cycles >= self.max_cycles:
            return None
        key = self._key(movable)
        searched = self.failed.get(key, -1)
        if left <= searched:
            self.cut = self.cut or searched != math.inf
            return None
        outer, self.cut = self.cut, False
        i = over_now[0]
        for victim in self._crowded_first(i, now, movable, None):
            if self.cycles >= self.max_cycles:
                return None
            move, replacement, _ = self._try(i, victim, now, len(path) + 1)
            if move is None or replacement is None:
                continue
            self.working.apply(victim, replacement, move.to_node)
            try:
                found = self.within([p for p in movable if p is not victim], left - 1, [*path, move])
            finally:
                self.working.undo()
            if found is not None:
                return found
        self.failed[key] = left if self.cut else math.inf
        self.cut = outer or self.cut
        return None


def search(
    spec: Spec,
    pods: list[Pod],
    cache: Cache,
    framework: Framework,
    algorithm: SchedulingAlgorithm,
    max_cycles: int = MAX_CYCLES,
) -> Result:
    """The fewest moves our cycle says help, greedy's where the search finds none shorter (within
    ``max_cycles`` scheduling cycles of search)."""
    s = _Search(spec, cache, framework, algorithm, Working(cache), max_cycles)
    try:
        greedy = s.greedy(pods)
        final = greedy.moves[-1].skews_after if greedy.moves else measure(spec, cache).skews
        reached = not over(spec, final)
        bound = lower_bound(spec, measure(spec, cache))
        if reached and len(greedy.moves) <= bound:
            greedy.cycles = s.cycles
            return greedy  # as few as any placement could do
        # Each pod moves at most once in a sequence (a replacement is not moved again).
        deepest = len(greedy.moves) - 1 if reached else len(pods)
        for depth in range(max(bound, 1), deepest + 1):
            s.cut = False
            found = s.within(list(pods), depth, [])
            if found is not None:
                return Result(found, "", s.cycles, True)
            if s.cycles >= max_cycles or not s.cut:
                break  # the budget is spent, or no sequence is longer than this depth's
        greedy.cycles, greedy.exhaustive = s.cycles, s.cycles < max_cycles
        return greedy
    finally:
        s.working.restore()
