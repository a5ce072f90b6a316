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

Every phase is bounded and costs the workload's pods once, not once per move: the deletion-cost
order is taken once, on the cache as found (a deletion in that order leaves the other pods' costs
as they are), and the pods are indexed by domain once, so a move costs its scheduling cycles and
the few candidates it looks at. Greedy stops after ``MAX_PLANNED`` moves or ``GREEDY_CYCLES``
cycles (the plan's first moves; the next plan, made on the world they leave, goes on from there).

The search is a generator: between scheduling cycles it yields whenever ``due()`` says its slice of
CPU is spent, with the moves taken off the cache (``Working.suspend``), so the scheduling loop runs
its cycles in between on the cache as it is. The caller notices a change that matters while it
yields and closes the generator instead of going on.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.spread.deletion_cost import cost_steps
from scheduler.spread.moves import STATEFUL_SET, Counts, Move, Spec, Working, measure, over, try_move
from scheduler.spread.steps import Steps, every, finish, never

__all__ = [
    "GREEDY_CYCLES",
    "MAX_CYCLES",
    "MAX_PLANNED",
    "MAX_TRIES_PER_MOVE",
    "Result",
    "Steps",
    "finish",
    "lower_bound",
    "never",
    "search_steps",
]

# Scheduling cycles greedy tries per move: bounds its time on a domain spanning many nodes.
MAX_TRIES_PER_MOVE = 16
# Scheduling cycles the deeper search may spend on one workload (each is one cycle over every node).
MAX_CYCLES = 512
# The moves one plan looks ahead: a plan is carried out a batch at a time, each after the last one's
# replacements are Ready, so a longer plan would be made for a world long gone by its end.
MAX_PLANNED = 100
# Scheduling cycles greedy may spend on one plan (a move takes one where it works at once).
GREEDY_CYCLES = 4 * MAX_PLANNED  # (four a move for another max_planned)


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
    capped: bool = False  # greedy stopped at MAX_PLANNED moves or GREEDY_CYCLES: more may follow


@dataclass(frozen=True, slots=True)
class _Entry:
    """A movable pod as the candidates order it: deletion cost, youngest, name; and its node."""

    order: tuple[int, float, str]
    pod: Pod
    node: str


def _index(
    spec: Spec,
    pods: Sequence[Pod],
    cache: Cache,
    costs: Mapping[PodKey, int],
    now: Counts,
    due: Callable[[], bool] = never,
) -> Steps[list[dict[str | None, list[_Entry]]]]:
    """Per constraint: the pods by the domain they count in (None: in none), each list in
    deletion-cost order; taken once per plan (the pods that have not moved keep their nodes)."""
    tick = every(due)
    entries = []
    for p in pods:
        if tick():
            yield
        node = cache.pod_node(p.key) or ""
        entries.append(_Entry((costs.get(p.key, 0), -p.created, p.name), p, node))
    entries.sort(key=lambda e: e.order)
    out: list[dict[str | None, list[_Entry]]] = []
    for i, c in enumerate(spec.constraints):
        by_domain: dict[str | None, list[_Entry]] = {}
        for e in entries:
            if tick():
                yield
            domain = now.domain_of[i].get(e.node)
            counted = domain is not None and c.selector.matches(e.pod.labels)
            by_domain.setdefault(domain if counted else None, []).append(e)
        out.append(by_domain)
    return out


@dataclass(slots=True)
class _Search:
    spec: Spec
    cache: Cache
    framework: Framework
    algorithm: SchedulingAlgorithm
    working: Working
    pods: list[Pod]
    index: list[dict[str | None, list[_Entry]]]
    max_cycles: int = MAX_CYCLES
    due: Callable[[], bool] = never
    max_planned: int = MAX_PLANNED
    greedy_cycles: int = GREEDY_CYCLES
    cycles: int = 0
    # A state -> the most moves left it failed with; inf: no sequence from it, however long.
    failed: dict[Hashable, float] = field(default_factory=dict)
    cut: bool = False  # a branch of this depth's search ended at the depth: a deeper one may succeed

    def _crowded_first(self, i: int, now: Counts, gone: set[PodKey]) -> Iterator[tuple[int, Pod, str]]:
        """The movable pods (not in ``gone``) with their domain's count under constraint ``i``, most
        crowded first (pods counted in no domain last, as -1), then deletion-cost order; one per node
        where pods are alike. Lazy: a move usually takes the first few."""
        bucket, index = now.counts[i], self.index[i]
        levels: dict[int, list[list[_Entry]]] = {}
        for domain, entries in index.items():
            rank = -1 if domain is None else bucket.get(domain, 0)
            levels.setdefault(rank, []).append(entries)
        seen: set[str] = set()
        for rank in sorted(levels, reverse=True):
            lists = levels[rank]
            merged: Iterable[_Entry] = lists[0] if len(lists) == 1 else heapq.merge(*lists, key=lambda e: e.order)
            for e in merged:
                p = e.pod
                if p.key in gone:
                    continue
                alike = p.controller is None or p.controller.kind != STATEFUL_SET  # its pods differ (volumes, names)
                if alike and e.node in seen:
                    continue
                seen.add(e.node)
                yield rank, p, e.node

    def _pause(self) -> Steps[None]:
        """Yield to the caller if this slice is spent, the moves off the cache meanwhile."""
        if not self.due():
            return
        self.working.suspend()
        yield  # GeneratorExit here: the moves stay off; undo and restore only forget them
        self.working.resume()

    def _try(self, i: int, victim: Pod, now: Counts, step: int) -> Steps[tuple[Move | None, Pod | None, str]]:
        yield from self._pause()
        self.cycles += 1
        tried = try_move(self.spec, i, victim, now, self.cache, self.framework, self.algorithm, step)
        return tried.move, tried.replacement, tried.why

    def greedy(self) -> Steps[Result]:
        """Moves from the most crowded domain, the first that helps each time; undone before returning."""
        result = Result()
        gone: set[PodKey] = set()
        now = measure(self.spec, self.cache)
        while over_now := over(self.spec, now.skews):
            if len(result.moves) >= self.max_planned or self.cycles >= self.greedy_cycles:
                result.capped = True
                break
            found = False
            for i in over_now:
                top = max(now.counts[i].values(), default=0)
                tries = 0
                for rank, victim, _node in self._crowded_first(i, now, gone):
                    if rank != top or tries >= MAX_TRIES_PER_MOVE:
                        break  # greedy moves from the most crowded domain only
                    tries += 1
                    move, replacement, why = yield from self._try(i, victim, now, len(result.moves) + 1)
                    if move is None or replacement is None:
                        topology_key = self.spec.constraints[i].topology_key
                        result.why = result.why or f"moving {victim.key} ({topology_key}): {why}"
                        continue
                    self.working.apply(victim, replacement, move.to_node)
                    result.moves.append(move)
                    gone.add(victim.key)
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

    def _key(self, gone: set[PodKey]) -> Hashable:
        nodes = tuple(
            sorted(
                (self.cache.pod_node(p.key) or "", p.name if p.controller and p.controller.kind == STATEFUL_SET else "")
                for p in self.pods
                if p.key not in gone
            )
        )
        placed = tuple(sorted(self.cache.pod_node(p.key) or "" for p in self.working.placed))
        return nodes, placed

    def within(self, gone: set[PodKey], left: int, path: list[Move]) -> Steps[list[Move] | None]:
        """A sequence of at most ``left`` moves after ``path`` (the pods in ``gone`` moved) that
        brings every constraint within its maxSkew; None if there is none (or the budget ran out)."""
        now = measure(self.spec, self.cache)
        over_now = over(self.spec, now.skews)
        if not over_now:
            return list(path)
        if left < max(1, lower_bound(self.spec, now)):
            self.cut = True
            return None
        if self.cycles >= self.max_cycles:
            return None
        key = self._key(gone)
        searched = self.failed.get(key, -1)
        if left <= searched:
            self.cut = self.cut or searched != math.inf
            return None
        outer, self.cut = self.cut, False
        i = over_now[0]
        for _rank, victim, _node in self._crowded_first(i, now, gone):
            if self.cycles >= self.max_cycles:
                return None
            move, replacement, _ = yield from self._try(i, victim, now, len(path) + 1)
            if move is None or replacement is None:
                continue
            self.working.apply(victim, replacement, move.to_node)
            gone.add(victim.key)
            try:
                found = yield from self.within(gone, left - 1, [*path, move])
            finally:
                gone.discard(victim.key)
                self.working.undo()
            if found is not None:
                return found
        self.failed[key] = left if self.cut else math.inf
        self.cut = outer or self.cut
        return None


def search_steps(
    spec: Spec,
    pods: list[Pod],
    cache: Cache,
    framework: Framework,
    algorithm: SchedulingAlgorithm,
    max_cycles: int = MAX_CYCLES,
    due: Callable[[], bool] = never,
    max_planned: int = MAX_PLANNED,
) -> Steps[Result]:
    """The fewest moves our cycle says help, greedy's where the search finds none shorter (within
    ``max_cycles`` scheduling cycles of search); yields between cycles once ``due()``. Greedy stops
    after ``max_planned`` moves (or four cycles a move)."""
    now = measure(spec, cache)
    if due():
        yield  # nothing applied yet: the cache is the caller's as it is
    costs = yield from cost_steps(pods, cache, {framework.profile_name: framework}, due)
    if due():
        yield
    index = yield from _index(spec, pods, cache, costs, now, due)
    s = _Search(spec, cache, framework, algorithm, Working(cache), list(pods), index, max_cycles, due)
    s.max_planned, s.greedy_cycles = max_planned, 4 * max_planned
    try:
        greedy = yield from s.greedy()
        final = greedy.moves[-1].skews_after if greedy.moves else now.skews
        reached = not over(spec, final)
        bound = lower_bound(spec, now)
        if greedy.capped or (reached and len(greedy.moves) <= bound):
            greedy.cycles = s.cycles
            return greedy  # as few as any placement could do (or the first moves of a long plan)
        # Each pod moves at most once in a sequence (a replacement is not moved again).
        deepest = len(greedy.moves) - 1 if reached else len(pods)
        for depth in range(max(bound, 1), deepest + 1):
            s.cut = False
            found = yield from s.within(set(), depth, [])
            if found is not None:
                return Result(found, "", s.cycles, True)
            if s.cycles >= max_cycles or not s.cut:
                break  # the budget is spent, or no sequence is longer than this depth's
        greedy.cycles, greedy.exhaustive = s.cycles, s.cycles < max_cycles
        return greedy
    finally:
        s.working.restore()
