"""Rebalancing, the writing half: evict pods of an opted-in workload whose skew is above its
maxSkew, when ``scheduler.spread.rebalance`` (the planner: our own scheduling cycle on the cache,
the pods gone and their replacements pending) places the replacements in domains that lower it.

Beside the deletion-cost keeper, on the same marking (``scheduler.kube.controllers.workload_marks``): cache
changes mark workloads; after the debounce each marked workload is served with **one batch**
(the kept plan's next moves, as many as its disruption budget allows: ``scheduler.spread.batch``),
through the Eviction API (``POST pods/{name}/eviction``, so PodDisruptionBudgets are respected) on
the one write path (``ApiWriter``: fenced by the Lease, rate-limited, transient failures retried).

- **plan once**: a workload is planned in slices of ``PLAN_SLICE`` on the loop (``plan_steps``
  yields between scheduling cycles), and the plan is kept; each batch is the kept plan's next
  moves, checked as one with every victim gone (``check_batch``, in slices too). The plan is made
  again when its next move no longer holds, or when the world it was made on changed: a node came,
  went or changed labels, taints or unschedulable; a pod of the workload, or one its constraints
  count, came, went, changed node or labels, or began terminating, other than the batch's own.
  Other pods' events, status and annotation updates leave it kept. The evictions of a batch go one
  after the other; a 429, a failure or a change of that world between two ends the batch there.

Then the workload waits:

- **in flight**: nothing more for a workload while its batch is in flight: an in-memory record of
  the evictions, checked against the cache at every look (an evicted pod still there under its UID,
  or fewer pods of the workload that were not there at the batch bound and Ready than it evicted),
  and held at most
  ``MOVE_TIMEOUT`` (then logged, counted as ``timed-out``, planned again); nor while (the planner's
  "in-flight", read from the cache alone, so a new leader after a failover or a SIGKILL sees it
  too) a pod of it waits to be scheduled, is terminating or is not Ready. A workload held either way
  is looked at again on its pods' events and, without one, after ``MOVE_TIMEOUT``.
- **cool-down**: ``MOVE_SETTLE`` after each batch; ``NO_MOVE_COOLDOWN`` after a plan with no
  improving move (lifted when a node appears or changes labels or taints: a domain may have come
  back); a workload whose moves did not bring the skew the planner promised ``MAX_MISSES`` times in
  a row stops for ``NO_MOVE_COOLDOWN``; at most as many moves per ``MOVE_WINDOW`` as it has pods.
- a 429 from a PodDisruptionBudget on a batch's first eviction: ``PDB_RETRY`` and plan again; a
  ``RebalanceBlocked`` Event at most once per ``NO_MOVE_COOLDOWN``. 404 (gone) or 409 (another pod
  of that name): not a move; the deletion marks the workload again, and it is looked at again after
  ``FAILURE_BACKOFF`` anyway.
  Other errors back off, doubling from ``FAILURE_BACKOFF`` to ``NO_MOVE_COOLDOWN``; a workload whose
  planning raises is logged and looked at again after ``FAILURE_BACKOFF``, the others go on.

Every move gets a ``Rebalanced`` Event on the workload (its ReplicaSet), and metrics (moves by
result, skipped plans by reason, each workload's skew per topology key). docs/rebalance.md.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from scheduler.api.objects import Node, Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.errors import BindConflictError, DisruptionBudgetError, NotLeadingError, PodGoneError
from scheduler.framework.runtime import Framework
from scheduler.kube.controllers.workload_marks import DEBOUNCE, MAX_DELAY, WorkloadMarker
from scheduler.kube.fence import always
from scheduler.kube.gc_pauses import GC_PAUSES
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.record import ApiRecorder
from scheduler.kube.writes import ApiWriter
from scheduler.spread.moves import PlanMovedError, measure, workload_spec
from scheduler.spread.rebalance import (
    IN_FLIGHT,
    NO_IMPROVING_MOVE,
    PDB,
    PLANNED,
    REBALANCED_KINDS,
    STALE,
    WITHIN_SKEW,
    Move,
    Plan,
    check_batch,
    plan_steps,
    pod_ready,
    rebalance_opt_in,
)
from scheduler.spread.search import Steps
from scheduler.spread.workload import Workload, workload_of

__all__ = [
    "FAILURE_BACKOFF",
    "MAX_MISSES",
    "MOVE_SETTLE",
    "MOVE_TIMEOUT",
    "MOVE_WINDOW",
    "NO_MOVE_COOLDOWN",
    "PDB_RETRY",
    "PLAN_SLICE",
    "ApiEvictor",
    "Rebalancer",
]

log = structlog.get_logger("spread-scheduler")

# After a move, this long before the workload is planned again, on top of its replacement being
# bound and Ready: the controllers' caches (the ReplicaSet's, the disruption controller's) catch up.
MOVE_SETTLE = 10.0
# The longest a move is in flight by our own record: a replacement that is never created (the
# ReplicaSet scaled down, its controller down) or never Ready holds the workload no longer.
MOVE_TIMEOUT = 300.0
# After a plan that found no improving move (or a workload that stopped converging): the cluster
# must change for a plan to change; a node that appears or is relabelled or retainted lifts it.
NO_MOVE_COOLDOWN = 300.0
# A PodDisruptionBudget that allows no disruption: look again this often (kubectl drain retries
# every 5 s; a budget frees up when a pod becomes Ready, which marks the workload anyway).
PDB_RETRY = 30.0
# An eviction that failed otherwise (RBAC, an outage after the retries): doubling from this.
FAILURE_BACKOFF = 10.0
# A workload whose replacement twice in a row did not land where the planner said stops.
MAX_MISSES = 2
# At most as many moves per window as the workload has pods: beyond that it is a loop, not a fix.
MOVE_WINDOW = 600.0
# Planning runs on the scheduling loop in slices of about this much wall time (a slice ends after
# the scheduling cycle it is in), then yields so the loop's own cycles and watch events run.
PLAN_SLICE = 0.02
# A slice past this (the bound issue #48 set for a cycle's delay) is logged with what it spent: its
# own CPU, the collector's pauses, and the rest (the machine not running the process).
SLOW_SLICE = 0.1

MOVED = "Rebalanced"
BLOCKED = "RebalanceBlocked"
STOPPED = "RebalanceStopped"
BAD_ANNOTATION = "RebalanceBadAnnotation"


class Evictor(Protocol):
    async def evict(self, pod: Pod) -> None: ...


class ApiEvictor:
    """``POST pods/{name}/eviction`` (policy/v1 Eviction), with the pod's UID as a precondition: a
    pod of the same name created since (a StatefulSet's) is never evicted by mistake (409)."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer  # the one write path: limiter, fence, retries

    async def evict(self, pod: Pod) -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
        }
        if pod.uid:
            body["deleteOptions"] = {"preconditions": {"uid": pod.uid}}
        await self._writer.post_to_pod(f"evicting {pod.key}", pod, "eviction", body)


@dataclass(frozen=True, slots=True)
class _Flight:
    """A batch sent: the evicted pods, the workload's pods when it was sent (any other pod of the
    workload is a replacement; a StatefulSet's keeps the name, so a pod is its key and UID)."""

    pods: frozenset[tuple[PodKey, str]]
    before: frozenset[tuple[PodKey, str]]
    since: float


def _who(pod: Pod) -> tuple[PodKey, str]:
    return pod.key, pod.uid


@dataclass(slots=True)
class _State:
    """What the rebalancer remembers of one workload between plans."""

    not_before: float = 0.0
    no_move: bool = False  # the wait is a no-improving-move cool-down (a changed node lifts it)
    in_flight: _Flight | None = None  # the last batch, until the cache shows it done (or MOVE_TIMEOUT)
    moves: list[float] = field(default_factory=list)  # when the moves of the current window were sent
    last_move: Move | None = None
    misses: int = 0
    plan: list[Move] = field(default_factory=list)  # the kept plan's moves still to make
    planned_at: tuple[int, int] = (-1, -1)  # (world, the rebalancer's node world) the plan was made on
    world: int = 0  # bumped by each change of the workload's pods (or counted pods) that a plan depends on
    moving: set[PodKey] = field(default_factory=set)  # the pods of the batch being made: its own events
    expected: int = 0  # replacements of the batch not seen yet: the next pods created are its own
    known: frozenset[PodKey] = frozenset()  # the workload's pods when the batch began: any other is new
    failures: int = 0
    told: dict[str, float] = field(default_factory=dict)  # Event reason -> when last posted


@dataclass(frozen=True, slots=True)
class _Clocks:
    """The clocks a planning slice is read by: the wall, the loop thread's CPU, the process's CPU (every
    thread's) and the collector's pauses. The wall less the process's CPU is the time the machine ran
    something else; the process's less the thread's, our other threads (the secure server's)."""

    wall: float
    thread: float
    process: float
    gc: float

    @classmethod
    def now(cls) -> _Clocks:
        return cls(time.perf_counter(), time.thread_time(), time.process_time(), GC_PAUSES.total())

    def since(self, begun: _Clocks) -> _Clocks:
        return _Clocks(
            self.wall - begun.wall, self.thread - begun.thread, self.process - begun.process, self.gc - begun.gc
        )


def _ms(seconds: float) -> float:
    return round(max(seconds, 0.0) * 1000, 1)


async def _turn() -> None:
    """Let the loop run what waits: two passes, since a timer or an I/O that is due only schedules
    its task's step in one pass, which runs in the next."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def _reshaped(old: Pod, new: Pod) -> bool:
    """A pod update a plan depends on: its node, labels, terminating or ended (not its status or
    annotations: a deletion cost written, a readiness probe)."""
    return (
        old.node_name != new.node_name
        or dict(old.labels) != dict(new.labels)
        or old.terminating != new.terminating
        or old.terminal != new.terminal
    )


def _node_reshaped(old: Node, new: Node) -> bool:
    return dict(old.labels) != dict(new.labels) or old.taints != new.taints or old.unschedulable != new.unschedulable


def _own_move(state: _State, old: Pod | None, new: Pod | None) -> bool:
    """Whether a pod event is the batch's own: an evicted pod going, its replacement coming (the
    first pods created while the batch is made, one per eviction), and their updates until the batch
    is done."""
    if not state.moving:
        return False
    # A new pod: its first event here is its ADDED, or the update of the pod our cycle assumed.
    if new is not None and new.key not in state.moving and new.key not in state.known:
        if state.expected < 1:
            return False  # one new pod more than evictions: not the batch's
        state.expected -= 1
        state.moving.add(new.key)
        return True
    pod = new if new is not None else old
    return pod is not None and pod.key in state.moving


def _reference(workload: Workload, pod: Pod) -> dict[str, Any]:
    """The ObjectReference of the pod's controller (the ReplicaSet), for its Events."""
    owner = pod.controller
    return {
        "apiVersion": owner.api_version if owner is not None else "apps/v1",
        "kind": workload.kind,
        "namespace": workload.namespace,
        "name": workload.name,
        "uid": workload.uid,
    }


def move_note(move: Move) -> str:
    name = move.pod.rpartition("/")[2]
    return (
        f"moved pod {name} from {move.topology_key}={move.from_domain} (node {move.from_node}) to "
        f"{move.topology_key}={move.to_domain} (node {move.to_node}): skew {move.skew_before} -> {move.skew_after}"
    )


class Rebalancer(WorkloadMarker):
    """Plans the marked workloads once and carries out their plans a batch at a time (see the module)."""

    def __init__(
        self,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        evictor: Evictor,
        recorder: ApiRecorder,
        metrics: SchedulerMetrics,
        *,
        default: bool = False,
        pending: Callable[[], Iterable[Pod]] = tuple,
        fence: Callable[[], bool] = always,
        planner: Callable[..., Steps[Plan]] = plan_steps,
        checker: Callable[..., Steps[Plan]] = check_batch,
        clock: Callable[[], float] = time.monotonic,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
    ) -> None:
        super().__init__(cache, frameworks, fence, debounce, max_delay, REBALANCED_KINDS)
        self._evictor = evictor
        self._recorder = recorder
        self._metrics = metrics
        self._default = default
        self._pending = pending  # the pods waiting to be scheduled (the event handlers' pending)
        self._planner = planner
        self._checker = checker
        self._node_world = 0  # bumped by each node change a plan depends on
        self._clock = clock
        self._states: dict[Workload, _State] = {}
        self._deferred: dict[Workload, float] = {}  # served again at that time without a mark
        self.evicted = 0

    # -- the event handlers' side -------------------------------------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        super().pod_changed(old, new)
        if old is not None and new is not None and not _reshaped(old, new):
            return  # a status or an annotation (a deletion cost): no plan depends on it
        pod = new if new is not None else old
        assert pod is not None
        own = workload_of(pod, REBALANCED_KINDS)
        state = self._states.get(own) if own is not None else None
        if state is not None and not _own_move(state, old, new):
            state.world += 1
        for other, selectors in self._selectors.get(pod.namespace, {}).items():
            held = self._states.get(other)
            if other != own and held is not None and any(s.matches(pod.labels) for s in selectors):
                held.world += 1  # a pod its constraints count: the counts the plan was made on moved

    def node_changed(self, old: Node | None, new: Node | None) -> None:
        super().node_changed(old, new)
        if old is None or new is None or _node_reshaped(old, new):
            self._node_world += 1  # a node came, went or moved domains: kept plans are made again
        if new is None or (old is not None and dict(old.labels) == dict(new.labels) and old.taints == new.taints):
            return
        # A node appeared or moved domains (a zone back, a taint lifted): a plan that found no
        # move may find one now; an empty domain holds no pod whose event would say so.
        for state in self._states.values():
            if state.no_move:
                state.not_before, state.no_move = 0.0, False
        self._mark_all()

    # -- the serving side ---------------------------------------------------------------------

    def _idle_timeout(self) -> float | None:
        return max(0.0, min(self._deferred.values()) - self._clock()) if self._deferred else None

    async def sync_once(self) -> None:
        """Plan every marked workload (and those whose wait is over); at most one batch each."""
        now = self._clock()
        due = {w for w, at in self._deferred.items() if at <= now}
        for workload in due:
            del self._deferred[workload]
        batch, self.dirty = self.dirty | due, set()
        pending: dict[Workload, list[Pod]] = {}
        for pod in self._pending():
            if (owner := workload_of(pod, REBALANCED_KINDS)) is not None:
                pending.setdefault(owner, []).append(pod)
        for workload in sorted(batch):
            try:
                await self._serve(workload, pending.get(workload, []))
            except NotLeadingError:
                self.dirty |= batch  # the rest waits for a replica sure of the Lease
                self._wake.set()
                return
            except Exception:  # one workload's failure (a bug) must not end the loop for all of them
                self._skip("error")
                log.exception("rebalance: planning failed", namespace=workload.namespace, workload=workload.name)
                self._defer(workload, self._clock() + FAILURE_BACKOFF)

    def _skip(self, reason: str) -> None:
        self._metrics.rebalance_skipped.labels(reason).inc()

    def _wait(self, workload: Workload, state: _State, seconds: float, *, no_move: bool = False) -> None:
        state.not_before, state.no_move = self._clock() + seconds, no_move
        self._defer(workload, state.not_before)

    def _defer(self, workload: Workload, at: float) -> None:
        """Serve the workload again at ``at`` (or earlier) without a mark; a mark before serves it too."""
        self._deferred[workload] = min(at, self._deferred.get(workload, at))

    async def _serve(self, workload: Workload, waiting: list[Pod]) -> None:
        pods = self._pods(workload)
        if not pods:
            self._states.pop(workload, None)
            self._deferred.pop(workload, None)
            self._metrics.set_skews(workload.namespace, workload.name, {})
            return
        framework = self._frameworks[pods[0].scheduler_name]
        state = self._states.setdefault(workload, _State())
        # Every pod must opt in (a rollout that adds the annotation counts once it is done).
        verdicts = [rebalance_opt_in(p, self._default) for p in (*pods, *waiting)]
        bad = next((v for v in verdicts if isinstance(v, str)), None)
        self._gauge(workload, pods, framework)  # every workload's, opted in or not
        if bad is not None or not all(verdicts):
            self._skip("bad-annotation" if bad is not None else "not-opted-in")
            if bad is not None:
                await self._tell(workload, pods[0], state, BAD_ANNOTATION, bad)
            return
        now = self._clock()
        if state.in_flight is not None and self._flying(workload, state.in_flight, pods, now):
            self._skip(IN_FLIGHT)
            self._defer(workload, state.in_flight.since + MOVE_TIMEOUT)
            return
        if state.in_flight is not None:
            state.in_flight, state.moving = None, set()  # the batch is done: its pods' events are news again
            state.expected = 0
        if state.not_before > now:
            self._skip("cool-down")
            self._defer(workload, state.not_before)
            return
        state.moves = [t for t in state.moves if t > now - MOVE_WINDOW]
        if len(state.moves) >= len(pods):
            self._skip("move-limit")
            self._wait(workload, state, state.moves[0] + MOVE_WINDOW - now)
            return
        plan = await self._kept(workload, state, framework, waiting, pods)
        if plan is None:
            plan = await self._plan(workload, state, framework, waiting, pods)
            if plan is None:
                return  # the world changed while it was planned: marked again
            if plan.reason == PLANNED and plan.moves:
                plan = await self._kept(workload, state, framework, waiting, pods, fresh=True)
                if plan is None:
                    return  # its first batch does not hold (or the world changed): looked at again
        if plan.reason != PLANNED or not plan.moves:
            await self._unplanned(workload, pods[0], state, plan)
            return
        move = plan.moves[0]
        last = state.last_move
        if last is not None and last.topology_key == move.topology_key and move.skew_before > last.skew_after:
            state.misses += 1  # the replacement did not land where the planner said
        else:
            state.misses = 0
        if state.misses >= MAX_MISSES:
            self._skip("not-converging")
            state.last_move, state.misses = None, 0
            self._wait(workload, state, NO_MOVE_COOLDOWN, no_move=True)
            note = f"stopped: {MAX_MISSES} moves in a row left the skew above what the plan expected"
            await self._tell(workload, pods[0], state, STOPPED, note)
            return
        await self._carry_out(workload, state, plan.moves, pods)

    async def _kept(
        self,
        workload: Workload,
        state: _State,
        framework: Framework,
        waiting: list[Pod],
        pods: list[Pod],
        *,
        fresh: bool = False,
    ) -> Plan | None:
        """The kept plan's next batch, checked as one on the cache as it is (``check_batch``, in
        slices); None when there is no plan to keep (none, made on another world, or its first move
        no longer holds), or the world changed while it was checked (marked again). ``fresh``: the
        plan was made just now (a first batch that does not hold is looked at again later)."""
        if not state.plan or state.planned_at != (state.world, self._node_world):
            state.plan = []
            return None

        def check(due: Callable[[], bool]) -> Steps[Plan]:
            return self._checker(self._cache, framework, workload, state.plan, pending=waiting, placed=pods, due=due)

        plan = await self._sliced(workload, state, check)
        if plan is None:
            return None
        if plan.reason == STALE:
            self._metrics.rebalance_plans.labels("stale").inc()
            log.info(
                "rebalance: planning again", namespace=workload.namespace, workload=workload.name, why=plan.message
            )
            state.plan = []
            if fresh:  # made on this very cache: its batch will not hold before the world changes
                self._defer(workload, self._clock() + FAILURE_BACKOFF)
            return None
        if plan.reason == PLANNED and not fresh:
            self._metrics.rebalance_plans.labels("kept").inc()
        elif plan.reason not in (PLANNED, IN_FLIGHT, PDB):
            state.plan = []  # within skew now, or the workload changed its constraints
        return plan

    async def _plan(
        self, workload: Workload, state: _State, framework: Framework, waiting: list[Pod], pods: list[Pod]
    ) -> Plan | None:
        """A plan made in slices of ``PLAN_SLICE`` on the loop; None if the workload's pods or a node
        changed meanwhile in a way the plan depends on (the workload is marked again)."""
        world = (state.world, self._node_world)

        def planned(due: Callable[[], bool]) -> Steps[Plan]:
            return self._planner(self._cache, framework, workload, pending=waiting, placed=pods, due=due)

        plan = await self._sliced(workload, state, planned)
        if plan is None:
            return None
        self._metrics.rebalance_plans.labels("computed").inc()
        if plan.reason == PLANNED:
            state.plan, state.planned_at = list(plan.moves), world
        return plan

    async def _sliced(
        self, workload: Workload, state: _State, make: Callable[[Callable[[], bool]], Steps[Plan]]
    ) -> Plan | None:
        """A planning generator (a plan, a batch's check) run in slices of ``PLAN_SLICE`` on the
        loop, each timed; None if the workload's pods or a node changed meanwhile in a way it
        depends on (the workload is marked again)."""
        world = (state.world, self._node_world)
        clock = time.perf_counter
        deadline = math.inf

        def due() -> bool:
            return clock() >= deadline

        steps = make(due)
        try:
            await _turn()  # after the look at its pods (opt-in, the skew gauge): the loop first
            if (state.world, self._node_world) != world:
                self._metrics.rebalance_plans.labels("interrupted").inc()
                self._mark(workload)
                return None
            while True:
                start, begun = clock(), _Clocks.now()
                deadline = start + PLAN_SLICE
                try:
                    next(steps)
                except StopIteration as done:
                    plan: Plan = done.value
                    return plan
                except PlanMovedError as exc:  # a pod it planned with changed, unseen by the marks
                    self._metrics.rebalance_plans.labels("interrupted").inc()
                    log.info(
                        "rebalance: planning again", namespace=workload.namespace, workload=workload.name, why=str(exc)
                    )
                    self._mark(workload)
                    return None
                finally:
                    self._slice_spent(workload, _Clocks.now().since(begun))
                await _turn()  # the loop's cycles and the watch events run here
                if (state.world, self._node_world) != world:
                    self._metrics.rebalance_plans.labels("interrupted").inc()
                    self._mark(workload)
                    return None
        finally:
            steps.close()

    def _slice_spent(self, workload: Workload, spent: _Clocks) -> None:
        """One slice's wall time and its own CPU (the loop thread's, less the collector's pauses) into
        the histograms; a slice past ``SLOW_SLICE`` logged with where its time went."""
        own = max(spent.thread - spent.gc, 0.0)
        self._metrics.rebalance_plan_slice.observe(spent.wall)
        self._metrics.rebalance_plan_slice_cpu.observe(own)
        if spent.wall > SLOW_SLICE:
            log.warning(
                "rebalance: slow planning slice",
                namespace=workload.namespace,
                workload=workload.name,
                wall_ms=_ms(spent.wall),
                cpu_ms=_ms(own),
                gc_ms=_ms(spent.gc),
                other_threads_ms=_ms(spent.process - spent.thread),
                not_running_ms=_ms(spent.wall - spent.process),
            )

    def _flying(self, workload: Workload, flight: _Flight, pods: list[Pod], now: float) -> bool:
        """Whether the batch is still in flight, by the cache: an evicted pod is there, or fewer
        replacements than evictions are bound and Ready yet; at most ``MOVE_TIMEOUT``, then it says so."""
        replaced = sum(
            1 for p in pods if _who(p) not in flight.before and pod_ready(p) and not self._cache.is_assumed(p.key)
        )
        if any(_who(p) in flight.pods for p in pods):
            left = "an evicted pod is still there"
        elif replaced >= len(flight.pods):
            return False
        elif replaced == 0:
            left = "no replacement is bound and Ready"
        else:
            left = f"{replaced} of {len(flight.pods)} replacements are bound and Ready"
        if now - flight.since < MOVE_TIMEOUT:
            return True
        self._metrics.rebalance_moves.labels("timed-out").inc()
        log.warning(
            "rebalance: a move did not finish in time; planning again",
            namespace=workload.namespace,
            workload=workload.name,
            pods=sorted(key for key, _ in flight.pods),
            waited=MOVE_TIMEOUT,
            why=left,
        )
        return False

    def _gauge(self, workload: Workload, pods: list[Pod], framework: Framework) -> None:
        """The workload's skews now, counted as the planner counts them, per topology key the
        constraint furthest above its maxSkew (none while its pods disagree: the last ones stay)."""
        spec = workload_spec(pods, framework, self._cache)
        if isinstance(spec, str):
            return
        worst: dict[str, tuple[int, int]] = {}
        if spec is not None:
            for c, skew in zip(spec.constraints, measure(spec, self._cache).skews, strict=True):
                held = worst.get(c.topology_key)
                if held is None or skew - c.max_skew > held[0] - held[1]:
                    worst[c.topology_key] = (skew, c.max_skew)
        self._metrics.set_skews(workload.namespace, workload.name, worst)

    async def _unplanned(self, workload: Workload, pod: Pod, state: _State, plan: Plan) -> None:
        self._skip(plan.reason)
        if plan.reason == IN_FLIGHT:  # its pods' events end it; a missed one does not hold it for ever
            self._defer(workload, self._clock() + MOVE_TIMEOUT)
        elif plan.reason == NO_IMPROVING_MOVE:
            state.last_move = None
            self._wait(workload, state, NO_MOVE_COOLDOWN, no_move=True)
        elif plan.reason == PDB:
            self._wait(workload, state, PDB_RETRY)
            await self._tell(workload, pod, state, BLOCKED, plan.message)
        elif plan.reason == WITHIN_SKEW:
            state.last_move, state.misses = None, 0

    async def _carry_out(self, workload: Workload, state: _State, moves: Sequence[Move], pods: list[Pod]) -> None:
        """Send a checked batch's evictions one after the other. A 429 (the API server's budget
        check, the final guard), a pod gone, another error, or the world changing between two
        evictions ends the batch there; what was sent is in flight, the rest stays in the plan."""
        member = pods[0]
        # Taken before the first request: the evicted pods' events (a pod without a grace period is
        # deleted by the eviction itself) and their replacements' may be handled before the answers.
        before = frozenset(map(_who, pods))
        state.known = frozenset(p.key for p in pods)
        world = (state.world, self._node_world)
        sent: list[tuple[Move, Pod]] = []
        ended = "sent"
        try:
            for move in moves:
                pod = self._cache.pod(move.pod)
                if pod is None or (sent and (state.world, self._node_world) != world):
                    ended = "changed"  # gone meanwhile, or the batch's world changed: checked again later
                    log.info(
                        "rebalance: the batch stops here; the rest is checked again with the next one",
                        namespace=workload.namespace,
                        workload=workload.name,
                        why="the pod is gone" if pod is None else "the workload or a node changed",
                        left=len(moves) - len(sent),
                    )
                    break
                state.moving.add(pod.key)  # its deletion, and the pods created meanwhile, are the batch's own
                state.expected += 1
                try:
                    await self._evictor.evict(pod)
                except BaseException:
                    state.moving.discard(pod.key)
                    state.expected -= 1
                    raise
                sent.append((move, pod))
                self._metrics.rebalance_moves.labels("evicted").inc()
        except NotLeadingError:
            ended = "not-leading"
            raise
        except DisruptionBudgetError as exc:
            ended = "pdb-blocked"
            self._metrics.rebalance_moves.labels("pdb-blocked").inc()
            log.warning("rebalance blocked by a PodDisruptionBudget", pod=moves[len(sent)].pod, err=str(exc))
            if not sent:
                self._wait(workload, state, PDB_RETRY)
                note = f"not moving pod {moves[0].pod.rpartition('/')[2]}: {exc}"
                await self._tell(workload, member, state, BLOCKED, note)
        except (PodGoneError, BindConflictError) as exc:  # 404, or 409: another pod of that name now
            ended, state.plan = "gone", []
            self._metrics.rebalance_moves.labels("gone").inc()
            log.info("rebalance: the pod to move is gone", pod=moves[len(sent)].pod, err=str(exc))
            if not sent:
                self._defer(workload, self._clock() + FAILURE_BACKOFF)  # should its deletion go unseen
        except Exception as exc:  # an outage after the retries, a refusal (RBAC): back off
            ended = "failed"
            self._metrics.rebalance_moves.labels("failed").inc()
            state.failures += 1
            backoff = min(NO_MOVE_COOLDOWN, FAILURE_BACKOFF * 2 ** (state.failures - 1))
            log.warning("rebalance eviction failed", pod=moves[len(sent)].pod, err=str(exc), retry_in=backoff)
            if not sent:
                self._wait(workload, state, backoff)
        finally:
            self._sent(workload, state, sent, before, ended)
        for move, pod in sent:
            note = move_note(move)
            log.info("rebalanced", namespace=workload.namespace, workload=workload.name, move=note)
            await self._event(workload, member, "Normal", MOVED, note, pod)

    def _sent(
        self, workload: Workload, state: _State, sent: list[tuple[Move, Pod]], before: frozenset[Any], ended: str
    ) -> None:
        """A batch's evictions on record: in flight until the cache shows them done, then the settle."""
        self._metrics.rebalance_batches.labels(ended).inc()
        if not sent:
            state.moving, state.expected = set(), 0
            return
        self._metrics.rebalance_batch_moves.observe(len(sent))
        self.evicted += len(sent)
        done = {move.pod for move, _ in sent}
        state.plan = [m for m in state.plan if m.pod not in done]
        now = self._clock()
        state.in_flight = _Flight(frozenset(_who(pod) for _, pod in sent), before, now)
        state.last_move, state.failures = sent[-1][0], 0
        state.moves.extend([now] * len(sent))
        self._wait(workload, state, MOVE_SETTLE)

    async def _tell(self, workload: Workload, pod: Pod, state: _State, reason: str, note: str) -> None:
        """A Warning Event on the workload, at most once per ``NO_MOVE_COOLDOWN`` for one reason."""
        now = self._clock()
        told = state.told.get(reason)
        if told is not None and now - told < NO_MOVE_COOLDOWN:
            return
        state.told[reason] = now
        log.warning("rebalance: " + reason, namespace=workload.namespace, workload=workload.name, note=note)
        await self._event(workload, pod, "Warning", reason, note)

    async def _event(
        self, workload: Workload, pod: Pod, event_type: str, reason: str, note: str, related: Pod | None = None
    ) -> None:
        try:
            await self._recorder.object_event(_reference(workload, pod), event_type, reason, "Rebalance", note, related)
        except NotLeadingError:
            raise
        except Exception as exc:  # an Event is best effort
            log.warning("rebalance event not posted", reason=reason, err=str(exc))
