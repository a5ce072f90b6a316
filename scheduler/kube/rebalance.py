"""Rebalancing, the writing half: evict one pod at a time of an opted-in workload whose skew is above
its maxSkew, when ``scheduler.spread.rebalance`` (the planner: our own scheduling cycle on the
cache, the pod gone and its replacement pending) places the replacement in a domain that lowers it.

Beside the deletion-cost keeper, on the same marking (``scheduler.kube.workload_marks``): cache
changes mark workloads; after the debounce each marked workload is planned, and only the **first
move** of a plan is carried out, through the Eviction API (``POST pods/{name}/eviction``, so
PodDisruptionBudgets are respected) on the one write path (``ApiWriter``: fenced by the Lease,
rate-limited, transient failures retried). Then the workload waits:

- **in flight**: nothing more for a workload while its evicted pod is not gone (an in-memory record,
  for the moment before the informer sees the eviction), a pod of it waits to be scheduled, or (the
  planner's "in-flight") a pod of it is terminating or not Ready. Everything but the in-memory record
  is read from the cache, so a new leader after a failover or a SIGKILL sees a move in flight too.
- **cool-down**: ``MOVE_SETTLE`` after each move; ``NO_MOVE_COOLDOWN`` after a plan with no
  improving move (lifted when a node appears or changes labels or taints: a domain may have come
  back); a workload whose moves did not bring the skew the planner promised ``MAX_MISSES`` times in
  a row stops for ``NO_MOVE_COOLDOWN``; at most as many moves per ``MOVE_WINDOW`` as it has pods.
- a 429 from a PodDisruptionBudget: ``PDB_RETRY`` and plan again; a ``RebalanceBlocked`` Event at
  most once per ``NO_MOVE_COOLDOWN``. 404: the pod is gone, its deletion marks the workload again.
  Other errors back off, doubling from ``FAILURE_BACKOFF`` to ``NO_MOVE_COOLDOWN``.

Every move gets a ``Rebalanced`` Event on the workload (its ReplicaSet), and metrics (moves by
result, skipped plans by reason, each workload's skew per topology key). docs/rebalance.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from scheduler.api.objects import Node, Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.errors import BindConflictError, DisruptionBudgetError, NotLeadingError, PodGoneError
from scheduler.framework.runtime import Framework
from scheduler.kube.fence import always
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.workload_marks import DEBOUNCE, MAX_DELAY, WorkloadMarker
from scheduler.kube.writes import ApiRecorder, ApiWriter
from scheduler.spread.deletion_cost import Workload, workload_of
from scheduler.spread.moves import measure, workload_spec
from scheduler.spread.rebalance import (
    IN_FLIGHT,
    NO_IMPROVING_MOVE,
    PDB,
    PLANNED,
    REBALANCED_KINDS,
    WITHIN_SKEW,
    Move,
    Plan,
    plan_workload,
    rebalance_opt_in,
)

__all__ = [
    "FAILURE_BACKOFF",
    "MAX_MISSES",
    "MOVE_SETTLE",
    "MOVE_WINDOW",
    "NO_MOVE_COOLDOWN",
    "PDB_RETRY",
    "ApiEvictor",
    "Rebalancer",
]

log = structlog.get_logger("spread-scheduler")

# After a move, this long before the workload is planned again, on top of its replacement being
# bound and Ready: the controllers' caches (the ReplicaSet's, the disruption controller's) catch up.
MOVE_SETTLE = 10.0
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


@dataclass(slots=True)
class _State:
    """What the rebalancer remembers of one workload between plans."""

    not_before: float = 0.0
    no_move: bool = False  # the wait is a no-improving-move cool-down (a changed node lifts it)
    in_flight: PodKey | None = None  # evicted, its deletion not seen yet
    moves: list[float] = field(default_factory=list)  # when the moves of the current window were sent
    last_move: Move | None = None
    misses: int = 0
    failures: int = 0
    told: dict[str, float] = field(default_factory=dict)  # Event reason -> when last posted


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
    """Plans the marked workloads and carries out the first move of each plan (see the module)."""

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
        planner: Callable[..., Plan] = plan_workload,
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
        self._clock = clock
        self._states: dict[Workload, _State] = {}
        self._deferred: set[Workload] = set()
        self.evicted = 0

    # -- the event handlers' side -------------------------------------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        super().pod_changed(old, new)
        if old is not None and new is None and (workload := workload_of(old, REBALANCED_KINDS)) is not None:
            state = self._states.get(workload)
            if state is not None and state.in_flight == old.key:
                state.in_flight = None  # its deletion is seen: the cache tells the rest

    def node_changed(self, old: Node | None, new: Node | None) -> None:
        super().node_changed(old, new)
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
        dues = [s.not_before for w in self._deferred if (s := self._states.get(w)) is not None]
        return max(0.0, min(dues) - self._clock()) if dues else None

    async def sync_once(self) -> None:
        """Plan every marked workload (and those whose wait is over); at most one eviction each."""
        now = self._clock()
        due = {w for w in self._deferred if (s := self._states.get(w)) is None or s.not_before <= now}
        self._deferred -= due
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

    def _skip(self, reason: str) -> None:
        self._metrics.rebalance_skipped.labels(reason).inc()

    def _wait(self, workload: Workload, state: _State, seconds: float, *, no_move: bool = False) -> None:
        state.not_before, state.no_move = self._clock() + seconds, no_move
        self._deferred.add(workload)

    async def _serve(self, workload: Workload, waiting: list[Pod]) -> None:
        pods = self._pods(workload)
        if not pods:
            self._states.pop(workload, None)
            self._deferred.discard(workload)
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
        if state.in_flight is not None:
            self._skip(IN_FLIGHT)  # evicted, its deletion not seen yet: the cache cannot tell
            return
        if state.not_before > now:
            self._skip("cool-down")
            self._deferred.add(workload)
            return
        state.moves = [t for t in state.moves if t > now - MOVE_WINDOW]
        if len(state.moves) >= len(pods):
            self._skip("move-limit")
            self._wait(workload, state, state.moves[0] + MOVE_WINDOW - now)
            return
        plan = self._planner(self._cache, framework, workload, max_moves=1, pending=waiting, placed=pods)
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
        await self._carry_out(workload, state, move, pods[0])

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
        if plan.reason == NO_IMPROVING_MOVE:
            state.last_move = None
            self._wait(workload, state, NO_MOVE_COOLDOWN, no_move=True)
        elif plan.reason == PDB:
            self._wait(workload, state, PDB_RETRY)
            await self._tell(workload, pod, state, BLOCKED, plan.message)
        elif plan.reason == WITHIN_SKEW:
            state.last_move, state.misses = None, 0

    async def _carry_out(self, workload: Workload, state: _State, move: Move, member: Pod) -> None:
        pod = self._cache.pod(move.pod)
        if pod is None:
            return  # gone meanwhile: its deletion marks the workload again
        try:
            await self._evictor.evict(pod)
        except NotLeadingError:
            raise
        except DisruptionBudgetError as exc:
            self._metrics.rebalance_moves.labels("pdb-blocked").inc()
            log.warning("rebalance blocked by a PodDisruptionBudget", pod=pod.key, err=str(exc))
            self._wait(workload, state, PDB_RETRY)
            await self._tell(workload, member, state, BLOCKED, f"not moving pod {pod.name}: {exc}")
            return
        except (PodGoneError, BindConflictError) as exc:  # 404, or 409: another pod of that name now
            self._metrics.rebalance_moves.labels("gone").inc()
            log.info("rebalance: the pod to move is gone", pod=pod.key, err=str(exc))
            return
        except Exception as exc:  # an outage after the retries, a refusal (RBAC): back off
            self._metrics.rebalance_moves.labels("failed").inc()
            state.failures += 1
            backoff = min(NO_MOVE_COOLDOWN, FAILURE_BACKOFF * 2 ** (state.failures - 1))
            log.warning("rebalance eviction failed", pod=pod.key, err=str(exc), retry_in=backoff)
            self._wait(workload, state, backoff)
            return
        self.evicted += 1
        self._metrics.rebalance_moves.labels("evicted").inc()
        state.in_flight, state.last_move, state.failures = pod.key, move, 0
        state.moves.append(self._clock())
        self._wait(workload, state, MOVE_SETTLE)
        note = move_note(move)
        log.info("rebalanced", namespace=workload.namespace, workload=workload.name, move=note)
        await self._event(workload, member, "Normal", MOVED, note, pod)

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
