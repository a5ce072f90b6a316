"""One pod's scheduling: the algorithm (``schedulePod``), then the cycles around it (``schedule_one.go``).

The algorithm is pure. Everything the live scheduler, ``simulate``, the benchmarks and the conformance harness decide
goes through ``SchedulingAlgorithm.schedule_pod``; the result keeps enough detail (every node's
filter verdict, every plugin's raw and normalized score) to explain the decision afterwards.

Scheduler extenders are remote, so the algorithm is written once as a generator that *yields* each
extender call it needs (``ExtenderFilterCall``, ``ExtenderPrioritizeCall``) and is sent the answer
(or the exception). ``schedule_pod`` drives it without I/O (a profile without extenders never
yields); ``schedule_pod_async`` awaits the extenders. The decisions stay here, pure.

``ScheduleOne`` runs the cycles around it: pop, decide, assume/Reserve/Permit, bind in a task,
handle failures. It writes only through the ``Binder`` and ``Recorder`` seams, so the live
scheduler and ``simulate`` run the very same cycles.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import random
import time
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from structlog.typing import FilteringBoundLogger

from scheduler.api.objects import NodeName, Pod, PodKey
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.errors import BindConflictError, PodGoneError
from scheduler.eventhandlers import EventHandlers
from scheduler.framework import events as ev
from scheduler.framework.batch import OpportunisticBatch
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import (
    EXTENDER_NAME,
    EXTENDER_SCORE_SCALE,
    Extender,
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
    extenders_binding,
)
from scheduler.framework.interface import (
    CLEAR_NOMINATED_NODE,
    NominatingInfo,
    NominatingMode,
    Recorder,
    Snapshot,
    nominating_mode,
)
from scheduler.framework.pods_in_pre_bind import PodsInPreBind
from scheduler.framework.preemption import PREEMPTION_OUTCOME_KEY, PreemptionOutcome
from scheduler.framework.runtime import Framework, PluginScores
from scheduler.framework.status import Code, Status
from scheduler.framework.types import ERR_NO_NODES_AVAILABLE, Diagnosis, FitError, NodeInfo, NodeToStatus
from scheduler.logs import enabled, kobj
from scheduler.plugins.dynamicresources.plugin.claimwrites import ClaimDeallocation
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.names import DYNAMIC_RESOURCES

__all__ = [
    "Attempt",
    "ExtenderCall",
    "ExtenderFilterCall",
    "ExtenderPrioritizeCall",
    "NoProgress",
    "Progress",
    "ScheduleOne",
    "SchedulerStats",
    "SchedulingAlgorithm",
    "num_feasible_nodes_to_find",
    "run_extender_call",
]

log = structlog.get_logger("spread-scheduler")

EVENT_NOTE_LIMIT = 1024
INVALID_POD_REJECTOR = "PodValidation"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring: all below 100, else an adaptive share."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = num_all_nodes * pct // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(frozen=True, slots=True)
class ExtenderFilterCall:
    """Ask one extender to filter ``nodes``; answered with an ``ExtenderFilterResult`` or the exception."""

    extender: Extender
    pod: Pod
    nodes: list[NodeInfo]


@dataclass(frozen=True, slots=True)
class ExtenderPrioritizeCall:
    """Ask these extenders to score ``nodes``, concurrently; answered with one list or exception each."""

    extenders: list[Extender]
    pod: Pod
    nodes: list[NodeInfo]


ExtenderCall = ExtenderFilterCall | ExtenderPrioritizeCall
Steps = Generator[ExtenderCall, object, "Status | None"]


async def run_extender_call(call: ExtenderCall) -> object:
    """The I/O of one step: exceptions are returned, never raised, so the algorithm decides."""
    if isinstance(call, ExtenderFilterCall):
        try:
            return await call.extender.filter(call.pod, call.nodes)
        except Exception as exc:  # whatever went wrong is the extender's error, never the loop's
            return exc
    return await asyncio.gather(
        *(ext.prioritize(call.pod, call.nodes) for ext in call.extenders), return_exceptions=True
    )


class ExtendersNeedAsyncError(RuntimeError):
    """``schedule_pod`` met a profile with extenders: those calls need ``schedule_pod_async``."""


@dataclass(slots=True, weakref_slot=True)
class Attempt:
    """The outcome of one scheduling cycle, with what it takes to explain it.

    ``status`` is Success with ``host`` set, or the failure: Unschedulable(AndUnresolvable) with a
    ``fit_error``, or Error. ``message`` is the text for the PodScheduled condition and the Event.
    """

    pod: Pod
    status: Status
    host: str | None = None
    message: str = ""
    fit_error: FitError | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    feasible_nodes: list[NodeInfo] = field(default_factory=list, repr=False)
    scored_nodes: list[NodeName] = field(default_factory=list)
    scores: list[PluginScores] = field(default_factory=list)
    totals: dict[NodeName, int] = field(default_factory=dict)
    evaluated_nodes: int = 0
    # Set by ``for_binding`` only: how many nodes passed Filter, where the list itself is not kept.
    feasible_count: int = 0
    # Opportunistic batching (``scheduler.framework.batch``): the hint offered, whether the pod was
    # placed on it without scoring, and the scored nodes it did not take, best first (stored for the
    # next pod when it was signable).
    hint: NodeName | None = None
    batched: bool = False
    other_nodes: list[NodeName] = field(default_factory=list)
    state: CycleState = field(default_factory=CycleState)
    # What a preemption PostFilter decided (the nominated node and its victims), when one ran.
    preemption: PreemptionOutcome | None = None

    @property
    def feasible(self) -> list[NodeName]:
        """Names of the nodes that passed Filter (and the extenders), in the order examined."""
        return [info.name for info in self.feasible_nodes]

    @property
    def succeeded(self) -> bool:
        return self.status.is_success()

    def for_binding(self) -> Attempt:
        """What the binding cycle keeps of a placed pod's attempt, while its Binding is in flight.

        Upstream's bindingCycle gets the CycleState and a ScheduleResult (host and node counts), not
        the scores. Ours kept the whole attempt: a score row per plugin for every scored node, about
        100 KiB a pod at 2,000 nodes, and bindings wait on the API by thousands while the loop places
        pods faster (a 10,000-pod burst held over 1 GiB). Only explanation needs scores, and it reads
        them from the attempt the observers got. Kept: what PreBind/Bind/PostBind, Unreserve and the
        failure handler read (the state, the rejecting plugins), and the counts the bound line logs;
        not the rejected nodes' statuses nor the feasible list (at 500 nodes 3.3 and 1.7 KB a pod).
        """
        diagnosis = self.diagnosis
        return Attempt(
            self.pod,
            self.status,
            host=self.host,
            message=self.message,
            fit_error=self.fit_error,
            diagnosis=Diagnosis(
                unschedulable_plugins=diagnosis.unschedulable_plugins, pending_plugins=diagnosis.pending_plugins
            ),
            evaluated_nodes=self.evaluated_nodes,
            feasible_count=len(self.feasible_nodes),
            hint=self.hint,
            batched=self.batched,
            state=self.state,
        )


class SchedulingAlgorithm:
    """Holds what persists between cycles: the rotating start index and the tie-breaking RNG."""

    def __init__(self, rng: random.Random | None = None, plugin_metrics_sample_percent: int = 10) -> None:
        self.rng = rng or random.Random()
        self.next_start_node_index = 0
        self.plugin_metrics_sample_percent = plugin_metrics_sample_percent
        self._sampler = random.Random(0)  # its own stream: sampling must not change tie-breaking

    def schedule_pod(self, fwk: Framework, snapshot: Snapshot, pod: Pod, cycle: int | None = None) -> Attempt:
        """One cycle without I/O; raises ``ExtendersNeedAsyncError`` if an extender must be asked.

        ``cycle`` is the queue's scheduling cycle count: given, and with the profile's batching state
        set (``Framework.batch``), the cycle takes part in opportunistic batching; without it the pod
        is computed afresh and no state is read or written.
        """
        steps = self._schedule(fwk, snapshot, pod, cycle)
        try:
            call = next(steps)
        except StopIteration as done:
            attempt: Attempt = done.value
            return attempt
        steps.close()
        raise ExtendersNeedAsyncError(f"extender {call_name(call)} must be called: use schedule_pod_async")

    async def schedule_pod_async(
        self, fwk: Framework, snapshot: Snapshot, pod: Pod, cycle: int | None = None
    ) -> Attempt:
        """One cycle, awaiting the extenders it needs (none: no await happens at all)."""
        steps = self._schedule(fwk, snapshot, pod, cycle)
        reply: object = None
        while True:
            try:
                call = steps.send(reply)
            except StopIteration as done:
                attempt: Attempt = done.value
                return attempt
            reply = await run_extender_call(call)

    def _schedule(
        self, fwk: Framework, snapshot: Snapshot, pod: Pod, cycle: int | None
    ) -> Generator[ExtenderCall, object, Attempt]:
        state = CycleState()
        state.record_plugin_metrics = self._sampler.randrange(100) < self.plugin_metrics_sample_percent
        fwk.handle.snapshot = snapshot
        all_nodes = snapshot.node_infos()
        if pod.errors:
            # The API server would have refused this pod; say which field, never guess.
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"invalid pod: {pod.error_message}",))
            return Attempt(pod, status, message=status.message(), state=state)
        if not all_nodes:
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NO_NODES_AVAILABLE,))
            return Attempt(pod, status, message=ERR_NO_NODES_AVAILABLE, state=state)

        attempt = Attempt(pod, Status(Code.SUCCESS), state=state)
        batch = fwk.batch if cycle is not None else None
        found = yield from self._find_nodes_that_fit(fwk, state, pod, all_nodes, attempt, batch, cycle)
        if isinstance(found, Status):
            attempt.status, attempt.message = found, found.message()
            return attempt
        signature = found
        if not attempt.feasible_nodes:
            fit = FitError(pod, len(all_nodes), attempt.diagnosis)
            # Upstream wraps every FitError as Unschedulable, whatever the per-node codes were.
            attempt.status = Status(Code.UNSCHEDULABLE, (str(fit),))
            attempt.fit_error, attempt.message = fit, str(fit)
            return attempt
        if len(attempt.feasible_nodes) == 1:
            attempt.host = attempt.feasible_nodes[0].name
            attempt.batched = attempt.host == attempt.hint and not pod.nominated_node_name
            if batch is not None and cycle is not None:
                batch.store_schedule_results(signature, attempt.hint, attempt.host, [], cycle)
            return attempt

        error = yield from self._prioritize(fwk, state, pod, attempt.feasible_nodes, attempt)
        if error is not None:
            attempt.status, attempt.message = error, error.message()
            return attempt
        attempt.host = self._select_host(attempt)
        attempt.other_nodes = self._others_sorted(attempt, attempt.host)
        if batch is not None and cycle is not None:
            raw = functools.partial(self._raw_scores, fwk, attempt) if batch.rescore else None
            batch.store_schedule_results(
                signature, attempt.hint, attempt.host, attempt.other_nodes, cycle, raw, attempt.totals
            )
        return attempt

    def _find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        all_nodes: Sequence[NodeInfo],
        attempt: Attempt,
        batch: OpportunisticBatch | None,
        cycle: int | None,
    ) -> Generator[ExtenderCall, object, Status | bytes | None]:
        """The feasible nodes go to ``attempt``; returns the error Status, or else the pod's batching
        signature (None: not signed, or batching not in play)."""
        nodes_all = list(all_nodes)
        diagnosis = attempt.diagnosis
        result, status, plugins = fwk.run_pre_filter_plugins(state, pod, nodes_all)
        diagnosis.unschedulable_plugins |= plugins
        if status is not None:
            if not status.is_rejected():
                return status
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            return None

        signature: bytes | None = None
        if batch is not None and cycle is not None:
            # Asked even when the pod has a nominated node (which then goes first): the hint is
            # popped either way, as upstream does.
            attempt.hint, signature = batch.get_node_hint(fwk, state, pod, cycle, fwk.handle.current())

        # status.nominatedNodeName (set by a preemption), else batching's hint, is tried alone first,
        # whatever PreFilter allowed; if it fits, it is the single feasible node and no other node is
        # evaluated (upstream's evaluateNominatedNode). If it does not, its verdict stays in the
        # diagnosis (the message counts it, and the rotating start index moves past it) and the full
        # search follows.
        statuses = diagnosis.node_to_status
        first = pod.nominated_node_name or attempt.hint
        nominated = fwk.handle.current().get(first) if first else None
        if nominated is not None:
            nominated_status = fwk.run_filter_plugins_with_nominated_pods(state, pod, nominated)
            if nominated_status is None:
                # Upstream runs the extenders on it too, logs (and ignores) their error, and falls back
                # to the full search when they reject it; their verdicts on it are not kept.
                passed = yield from find_nodes_that_pass_extenders(fwk.extenders, pod, [nominated], Diagnosis())
                if not isinstance(passed, Status) and passed:
                    attempt.feasible_nodes.append(nominated)
                    attempt.evaluated_nodes = 1
                    return signature
            elif nominated_status.is_rejected():  # an Error is logged and ignored upstream
                statuses[nominated.name] = nominated_status
                diagnosis.add_plugin_status(nominated_status)

        candidates: list[NodeInfo] = nodes_all
        if result is not None and result.node_names is not None:
            # Names the snapshot does not hold are dropped; the rest keep the node tree's order.
            allowed = result.node_names
            candidates = [info for info in nodes_all if info.name in allowed]
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(diagnosis.unschedulable_plugins))}]",),
            )

        num = len(candidates)
        if num == 0:
            self.next_start_node_index = (self.next_start_node_index + len(statuses)) % len(nodes_all)
            return signature
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, num)
        if not fwk.has_extender_filters_or_scoring():
            to_find = 1
        feasible = attempt.feasible_nodes
        start = self.next_start_node_index % num
        in_turn = itertools.chain(candidates[start:], candidates[:start])
        processed, error = fwk.filter_in_turn(state, pod, len(nodes_all), in_turn, to_find, feasible, diagnosis)
        if error is not None:
            return error
        # Upstream counts the feasible nodes and every node with a status (a failed nominated node too).
        self.next_start_node_index = (self.next_start_node_index + len(feasible) + len(statuses)) % len(nodes_all)
        attempt.evaluated_nodes = processed
        if not fwk.extenders or not feasible:
            return signature
        passed = yield from find_nodes_that_pass_extenders(fwk.extenders, pod, feasible, diagnosis)
        if isinstance(passed, Status):
            return passed
        if len(passed) != len(feasible):
            # Extenders have no queueing hints: any cluster event may help the pod (#122019).
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        attempt.feasible_nodes = passed
        return signature

    def _prioritize(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo], attempt: Attempt
    ) -> Steps:
        attempt.scored_nodes = [n.name for n in nodes]
        if not fwk.has_score_plugins() and not fwk.extenders:
            attempt.totals = dict.fromkeys(attempt.scored_nodes, 1)
            return None
        status = fwk.run_pre_score_plugins(state, pod, nodes)
        if status is not None:
            return status
        scores, status = fwk.run_score_plugins(state, pod, nodes)
        attempt.scores = scores
        if status is not None:
            return status
        totals = [0] * len(nodes)
        prioritizers = [e for e in fwk.extenders if e.is_interested(pod) and e.is_prioritizer()]
        if prioritizers:
            replies = yield ExtenderPrioritizeCall(prioritizers, pod, list(nodes))
            assert isinstance(replies, list), replies
            for extender, reply in zip(prioritizers, replies, strict=True):
                if isinstance(reply, BaseException) or not isinstance(reply, list):
                    # Upstream ignores every Prioritize error, ignorable or not: others decide.
                    log.info(
                        "Failed to run extender's priority function. No score given by this extender.",
                        v=5,
                        error=str(reply),
                        pod=kobj(pod.key),
                        extender=extender.name,
                    )
                    continue
                scores.append(extender_scores(extender, reply, attempt.scored_nodes))
        # Per node, the weighted sum over plugins (column sums: one zip instead of a loop per score).
        columns = [s.normalized if s.weight == 1 else [v * s.weight for v in s.normalized] for s in scores]
        if columns:
            totals = [sum(column) for column in zip(*columns, strict=True)]
        attempt.totals = dict(zip(attempt.scored_nodes, totals, strict=True))
        return None

    @staticmethod
    def _raw_scores(fwk: Framework, attempt: Attempt) -> dict[NodeName, Mapping[str, int]]:
        """Each scored node's raw score per Score plugin (upstream's ``RawScores``: no extender's)."""
        plugins = [s for s in attempt.scores if s.plugin in fwk.weights]
        return {name: {s.plugin: s.raw[i] for s in plugins} for i, name in enumerate(attempt.scored_nodes)}

    @staticmethod
    def _others_sorted(attempt: Attempt, host: NodeName) -> list[NodeName]:
        """The scored nodes but ``host``, best total first (``newSortedNodeScores`` after its first
        Pop). Upstream breaks ties by its heap's layout over a parallel search's order, i.e. in no
        fixed order; ours keeps the order the nodes were examined in."""
        totals = attempt.totals
        # reverse=True keeps equal totals in examination order, as the negated key did.
        return sorted((name for name in attempt.scored_nodes if name != host), key=totals.__getitem__, reverse=True)

    def _select_host(self, attempt: Attempt) -> NodeName:
        """Uniformly at random among the nodes with the highest total (1.33/1.34 ``selectHost``)."""
        best = max(attempt.totals.values())
        top = [name for name in attempt.scored_nodes if attempt.totals[name] == best]
        return top[0] if len(top) == 1 else self.rng.choice(top)


def call_name(call: ExtenderCall) -> str:
    if isinstance(call, ExtenderFilterCall):
        return call.extender.name
    return ", ".join(e.name for e in call.extenders)


def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender], pod: Pod, feasible: list[NodeInfo], diagnosis: Diagnosis
) -> Generator[ExtenderCall, object, list[NodeInfo] | Status]:
    """``findNodesThatPassExtenders``: each interested filter narrows the previous one's result.

    Rejected nodes get the extender's message as their status (UnschedulableAndUnresolvable wins
    over Unschedulable for a node in both maps). An ignorable extender's error is skipped; any
    other error fails the attempt with an Error status.
    """
    for extender in extenders:
        if not feasible:
            break
        if not extender.is_filter() or not extender.is_interested(pod):
            continue  # a non-filter extender's Filter returns its input unchanged
        reply = yield ExtenderFilterCall(extender, pod, list(feasible))
        by_name: dict[str, NodeInfo] = {info.name: info for info in feasible}
        if isinstance(reply, ExtenderFilterResult):
            unknown = next((name for name in reply.node_names if name not in by_name), None)
            if unknown is not None:
                reply = ExtenderError(
                    f"extender {extender.name!r} claims a filtered node {unknown!r} which is not found in the "
                    "input node list"
                )
        if not isinstance(reply, ExtenderFilterResult):
            message = str(reply) or type(reply).__name__
            if extender.is_ignorable():
                log.info(
                    "Skipping extender as it returned error and has ignorable flag set",
                    extender=extender.name,
                    err=message,
                )
                continue
            return Status.as_error(message)
        statuses = diagnosis.node_to_status
        for name, msg in reply.failed_and_unresolvable_nodes.items():
            statuses[NodeName(name)] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), extender.name)
        for name, msg in reply.failed_nodes.items():
            if name not in reply.failed_and_unresolvable_nodes:
                statuses[NodeName(name)] = Status(Code.UNSCHEDULABLE, (msg,), extender.name)
        feasible = [by_name[name] for name in reply.node_names]
    return feasible


def extender_scores(
    extender: Extender, priorities: Sequence[HostPriority], scored_nodes: Sequence[str]
) -> PluginScores:
    """One extender's Prioritize answer as a score row: raw 0..10 per node, normalized = raw * 10.

    Upstream adds ``score * weight * (MaxNodeScore / MaxExtenderPriority)`` per listed host; hosts
    that were not scored are dropped, a host listed twice counts twice, and nothing is range-checked.
    """
    index = {name: i for i, name in enumerate(scored_nodes)}
    raw = [0] * len(scored_nodes)
    for priority in priorities:
        i = index.get(priority.host)
        if i is not None:
            raw[i] += priority.score
    return PluginScores(extender.name, extender.weight, raw, [value * EXTENDER_SCORE_SCALE for value in raw])


# -- the cycles around the algorithm (``ScheduleOne``, ``schedulingCycle``, ``bindingCycle``) ------------


@dataclass(slots=True)
class SchedulerStats:
    attempts: dict[str, int]
    bound: int = 0
    bind_failures: int = 0


def truncate_note(message: str) -> str:
    """Events carry at most 1024 bytes: upstream keeps 1020 and appends " ..."."""
    data = message.encode()
    if len(data) <= EVENT_NOTE_LIMIT:
        return message
    return data[: EVENT_NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


class Progress(Protocol):
    """Where the scheduler says that it gets on (the live scheduler's health: ``scheduler.kube.progress``):
    whether the scheduling loop runs, each time it comes round, and each bind (a binding cycle's
    Binding, through an extender or the Bind plugins) as it starts and ends. Called on the
    scheduling loop; cheap, and never blocks."""

    def scheduling(self, running: bool) -> None: ...

    def came_round(self) -> None: ...

    def bind_started(self) -> None: ...

    def bind_finished(self) -> None: ...


class NoProgress:
    """Nobody listens (``simulate``, the tests)."""

    def scheduling(self, running: bool) -> None:
        return None

    def came_round(self) -> None:
        return None

    def bind_started(self) -> None:
        return None

    def bind_finished(self) -> None:
        return None


class ScheduleOne:
    """One pod at a time: pop, decide (the scheduling cycle), then bind in a task (the binding cycle).

    Writes go through the ``Binder`` (inside the Bind plugins) and the ``Recorder``; the binding
    cycle runs as a task "because of the assumption step" (the cache already counts the pod).
    """

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        handlers: EventHandlers,
        algorithm: SchedulingAlgorithm,
        recorder: Recorder,
        *,
        clock: Callable[[], float],
        bind_through_extenders: bool = True,
    ) -> None:
        self.frameworks = frameworks
        self.handlers = handlers
        self.cache = handlers.cache
        self.queue = handlers.queue
        self.clock = clock
        self.algorithm = algorithm
        self.recorder = recorder
        self.bind_through_extenders = bind_through_extenders
        self.stats = SchedulerStats(attempts={})
        self.attempt_observers: list[Callable[[Attempt, float], None]] = []  # (attempt, seconds)
        self.bound_observers: list[Callable[[QueuedPodInfo, float], None]] = []  # (pod info, now)
        self.skip_observers: list[Callable[[Pod, str], None]] = []  # (pod, message): popped, no cycle
        # (pod, node, message): a binding cycle failed after its scheduling cycle chose the node
        self.binding_failure_observers: list[Callable[[Pod, str, str], None]] = []
        self.max_attempts: int | None = None  # simulate: one attempt per pod; the live loop: no limit
        self.log: FilteringBoundLogger = log  # simulate keeps its output clean with a quieter logger
        self._reported: dict[PodKey, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # binding cycles: a stop waits for them
        self._reports: set[asyncio.Task[None]] = set()  # status patches and Events: best effort
        self.progress: Progress = NoProgress()
        # From 1.36, the pods whose PreBind is running, for preemption to cancel instead of deleting them.
        self.pods_in_pre_bind = PodsInPreBind()
        handlers.forgotten.append(self._forget_reported)
        # Each profile's DynamicResources, whose PostFilter and Unreserve leave claim writes in the
        # cycle state (they run synchronously) for the cycles here to send.
        self._dra: dict[str, StructuredDynamicResources] = {}
        for name, fwk in frameworks.items():
            dra = fwk.plugins.get(DYNAMIC_RESOURCES)
            if isinstance(dra, StructuredDynamicResources):
                self._dra[name] = dra
        for fwk in frameworks.values():
            fwk.handle.events = self  # the plugins' Events (DynamicResources' BindingConditionsPending)
            # Consecutive cycles run here, so batching's state lives from here on (upstream creates it
            # with the framework, OpportunisticBatching being on by default in 1.35).
            fwk.batch = OpportunisticBatch(clock, rescore=fwk.features.batch_rescores_last_node)

    def _forget_reported(self, key: PodKey) -> None:
        self._reported.pop(key, None)

    # -- the scheduling cycle ----------------------------------------------------------------

    def schedule_one(self) -> bool:
        """Pop one pod and decide it; the binding cycle continues as a task. False when idle."""
        popped = self._pop()
        if popped is None:
            return False
        if popped.fwk is not None:
            attempt = self.algorithm.schedule_pod(popped.fwk, self.cache, popped.qpi.pod, self.queue.scheduling_cycle)
            self._finish_cycle(popped, attempt)
        return True

    async def schedule_one_async(self) -> bool:
        """``schedule_one`` for profiles with extenders: their calls are awaited mid-cycle.

        The cache is the cycle's snapshot, so watch events (and re-list reconciles, and forgetting
        a pod whose binding failed) that arrive while an extender answers are held and applied right
        after the cycle, in order, as if they had arrived then.
        """
        popped = self._pop()
        if popped is None:
            return False
        if popped.fwk is not None:
            self.handlers.held.open()
            try:
                attempt = await self.algorithm.schedule_pod_async(
                    popped.fwk, self.cache, popped.qpi.pod, self.queue.scheduling_cycle
                )
                self._finish_cycle(popped, attempt)
            finally:
                self.handlers.held.close()
        return True

    def _pop(self) -> Popped | None:
        """The next pod, with its profile when it needs a cycle (``fwk`` None: popped, no cycle)."""
        qpi = self.queue.pop()
        if qpi is None:
            return None
        key = qpi.key
        pod = self.handlers.pending.get(key)
        if pod is None or self.cache.is_assumed(key):
            self.queue.done(key)
            return Popped(qpi, None, 0.0)
        qpi.pod = pod
        if self.max_attempts is not None and qpi.attempts > self.max_attempts:
            self.queue.done(key)  # the pod leaves the queue: it had its attempts
            return Popped(qpi, None, 0.0)
        if pod.terminating:
            # Upstream pops a pod that is being deleted and skips it (``skipPodSchedule``): no cycle.
            self.queue.done(key)
            message = f"skip schedule deleting pod: {key}"
            for observer in self.skip_observers:
                observer(pod, message)
            self._spawn(self.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", message), report=True)
            return Popped(qpi, None, 0.0)
        if enabled(3):
            self.log.info("Attempting to schedule pod", v=3, pod=kobj(key))
        return Popped(qpi, self.frameworks[pod.scheduler_name], time.perf_counter())

    def _finish_cycle(self, popped: Popped, attempt: Attempt) -> None:
        """Assume, Reserve and Permit a placed pod, then start its binding cycle; else handle the failure."""
        qpi, fwk = popped.qpi, popped.fwk
        assert fwk is not None
        pod, host = attempt.pod, attempt.host
        if host is None:
            # Every failure clears the pod's nomination, except where PostFilter ran: then its answer
            # decides (DefaultPreemption's node, Override "" when preemption cannot help, None: kept).
            nominating: NominatingInfo | None = CLEAR_NOMINATED_NODE
            if attempt.fit_error is not None and fwk.post_filter:
                nominating = self._post_filter(fwk, attempt, attempt.fit_error)
                self._deallocate(fwk, attempt)
            self._handle_failure(qpi, attempt.status, attempt.message, attempt, nominating)
            self._observe(attempt, popped.started)
            return
        # The cache holds a copy with spec.nodeName set, as upstream's assume: whoever sees it later
        # (the AssignedPodDelete of a forgotten pod, hints) sees a pod on its node. A nominated pod
        # no longer waits for room anywhere.
        self.cache.assume_pod(dataclasses.replace(pod, node_name=host), host)
        self.queue.delete_nominated_pod_if_exists(pod)
        status = fwk.run_reserve_plugins_reserve(attempt.state, pod, host)
        if status is None:
            status = fwk.run_permit_plugins(attempt.state, pod, host)
        if status is not None:
            fwk.run_reserve_plugins_unreserve(attempt.state, pod, host)
            self._unreserve_claims(fwk, attempt)
            self.cache.forget_pod(pod)
            attempt.status, attempt.host, attempt.message = status, None, status.message()
            self._handle_failure(qpi, status, status.message(), attempt, CLEAR_NOMINATED_NODE)
            self._observe(attempt, popped.started)
            return
        self.queue.done(qpi.key)
        self._observe(attempt, popped.started)
        self._spawn(self._binding_cycle(fwk, attempt.for_binding(), qpi, host))

    @staticmethod
    def _post_filter(fwk: Framework, attempt: Attempt, fit: FitError) -> NominatingInfo | None:
        """Run the PostFilter plugins on a pod that fits nowhere; their message ends the FitError's,
        their nomination goes to the failure handler (DefaultPreemption's, where the handle has a
        ``PreemptionSink`` to carry its decisions out: the API in ``run``, memory in ``simulate``).

        As upstream's scheduling cycle: the status stays Unschedulable whatever they answer (an Error
        is only logged there).
        """
        diagnosis = fit.diagnosis
        statuses = NodeToStatus(diagnosis.node_to_status, diagnosis.absent_nodes_status)
        nominating, status = fwk.run_post_filter_plugins(attempt.state, attempt.pod, statuses)
        outcome = attempt.state.get(PREEMPTION_OUTCOME_KEY)
        attempt.preemption = outcome if isinstance(outcome, PreemptionOutcome) else None
        fit.diagnosis.post_filter_msg = status.message()
        attempt.message = str(fit)
        attempt.status = Status(Code.UNSCHEDULABLE, (attempt.message,))
        return nominating

    def _deallocate(self, fwk: Framework, attempt: Attempt) -> None:
        """Send the deallocation DynamicResources' PostFilter decided, in a task: upstream's PostFilter
        makes the write itself, inside the scheduling cycle, which cannot wait here. A failure is
        logged as upstream logs a PostFilter's error; the pod stays unschedulable either way, and the
        claim's next change requeues it."""
        dra = self._dra.get(fwk.profile_name)
        deallocation = None if dra is None else dra.pending_deallocation(attempt.state)
        if dra is None or deallocation is None:
            return
        self._spawn(self._write_deallocation(dra, attempt.pod, deallocation))

    async def _write_deallocation(
        self, dra: StructuredDynamicResources, pod: Pod, deallocation: ClaimDeallocation
    ) -> None:
        try:
            await dra.write_deallocation(pod, deallocation)
        except Exception as exc:
            self.log.error(
                "Status after running PostFilter plugins for pod",
                pod=kobj(pod.key),
                status=str(exc) or type(exc).__name__,
            )

    def _unreserve_claims(self, fwk: Framework, attempt: Attempt) -> asyncio.Task[None] | None:
        """Send the ``reservedFor`` patches DynamicResources' Unreserve left, in a task (the binding
        cycle awaits it before the pod goes back to the queue, as upstream's Unreserve writes before
        returning)."""
        dra = self._dra.get(fwk.profile_name)
        claims = () if dra is None else dra.pending_unreserve(attempt.state)
        if dra is None or not claims:
            return None
        return self._spawn(dra.write_unreserve(attempt.pod, claims))

    def _observe(self, attempt: Attempt, started: float) -> None:
        result = "scheduled" if attempt.host else ("unschedulable" if attempt.status.is_rejected() else "error")
        self.stats.attempts[result] = self.stats.attempts.get(result, 0) + 1
        duration = time.perf_counter() - started
        for observer in self.attempt_observers:
            observer(attempt, duration)

    # -- the binding cycle -------------------------------------------------------------------

    async def _binding_cycle(self, fwk: Framework, attempt: Attempt, qpi: QueuedPodInfo, host: str) -> None:
        pod, state = attempt.pod, attempt.state
        try:
            status = await self._pre_bind(fwk, state, pod, host)
            if status is None and self.cache.get(host) is None:
                # The API server would accept a Binding to a node that no longer exists (it does not check)
                # and leave the pod stranded there: decide again instead.
                status = Status.as_error(f'node "{host}" was deleted before the pod was bound to it')
            if status is None:
                status = await self._bind(fwk, state, pod, host)
        except (PodGoneError, BindConflictError) as exc:
            # The pod is gone or someone else bound it: the watch will tell the truth, never retry.
            await _finished(self._undo_assume(fwk, attempt, host))
            self.stats.bind_failures += 1
            self.log.info("Failed to bind pod", v=1, pod=kobj(pod.key), node=host, err=str(exc), retry=False)
            return
        except Exception as exc:  # any other failure of the binding cycle is retried with backoff
            status = Status.as_error(f"binding rejected: {exc}")
        if status is not None:
            await _finished(self._undo_assume(fwk, attempt, host))
            self.stats.bind_failures += 1
            self.log.info("Failed to bind pod", v=1, pod=kobj(pod.key), node=host)
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
            for failure_observer in self.binding_failure_observers:
                failure_observer(pod, host, status.message())
            self._handle_failure(qpi, status, status.message(), attempt, CLEAR_NOMINATED_NODE)
            return
        if enabled(2):
            self.log.info(
                "Successfully bound pod to node",
                v=2,
                pod=kobj(pod.key),
                node=host,
                evaluatedNodes=attempt.evaluated_nodes,
                feasibleNodes=attempt.feasible_count,
            )
        fwk.run_post_bind_plugins(state, pod, host)
        if self.cache.get(host) is None:
            self.log.warning(
                "bound to a node that was deleted while the binding was in flight", pod=kobj(pod.key), node=host
            )
        self.stats.bound += 1
        bound_at = self.clock()
        for observer in self.bound_observers:
            observer(qpi, bound_at)
        self._reported.pop(pod.key, None)
        # Not awaited: the binding is done, and the Event waits behind its own rate limiter.
        self._spawn(
            self.recorder.event(pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.key} to {host}"),
            report=True,
        )

    async def _pre_bind(self, fwk: Framework, state: CycleState, pod: Pod, host: str) -> Status | None:
        """The binding cycle up to and through PreBind. With NominatedNodeNameForExpectation the
        pre-flights run first (an error fails the binding), and a pod whose PreBind has work gets
        ``status.nominatedNodeName`` = its node before PreBind runs, so that other components (cluster
        autoscalers, Karpenter) see it taken while it waits, say, for a volume; on success the API
        server clears it with the Binding (ClearingNominatedNodeNameAfterBinding), on failure the
        failure handler's nomination decides. From 1.36 a pod whose PreBind has work is also listed
        among the pods in PreBind meanwhile: a preemption that picks it as a victim cancels this
        binding cycle (the pod fails with an error and goes back to the queue) instead of deleting it."""
        features = fwk.features
        pre_flight: Status | None = None  # not run: upstream's nil status, a success
        if features.enabled("NominatedNodeNameForExpectation"):
            pre_flight = fwk.run_pre_bind_pre_flights(state, pod, host)
            if pre_flight.code is Code.ERROR or pre_flight.is_rejected():
                return pre_flight  # upstream takes an Unschedulable pre-flight for an error too
            # Or when a Permit plugin waits (WillWaitOnPermit): none of ours does.
            if pre_flight.is_success():
                await self._nominate_for_binding(pod, host)
        if (
            not features.pre_bind_victims_requeued
            or not pod.uid
            or (pre_flight is not None and not pre_flight.is_success())
        ):
            return await fwk.run_pre_bind_plugins(state, pod, host)
        task = asyncio.current_task()
        assert task is not None  # a binding cycle is a task of its own
        entry = self.pods_in_pre_bind.add(pod.uid, task.cancel)
        try:
            status = await fwk.run_pre_bind_plugins(state, pod, host, entry)
            if status is None and not entry.mark_prebound():
                # Cancelled, but a plugin swallowed the cancellation and returned: fail with the cause.
                if task.cancelling():
                    task.uncancel()
                status = Status.as_error(entry.cause)
            return status
        finally:
            self.pods_in_pre_bind.remove(pod.uid)

    async def _nominate_for_binding(self, pod: Pod, host: str) -> None:
        """``updatePod`` with Override ``host`` and no condition: written when the pod, as the cycle saw
        it, names another node (or none). A failed write is logged and the binding goes on."""
        if pod.nominated_node_name == host:
            return
        try:
            await self.recorder.set_nominated_node_name(pod, host)
        except Exception as exc:
            self.log.error(
                "Failed to update the nominated node name in the binding cycle",
                pod=kobj(pod.key),
                nominatedNodeName=host,
                err=str(exc) or type(exc).__name__,
            )

    async def _bind(self, fwk: Framework, state: CycleState, pod: Pod, host: str) -> Status | None:
        """Upstream's ``bind``: extenders that bind come first, then the Bind plugins. Reported to
        ``progress`` (not PreBind before it, whose wait for a volume can last ``bindTimeoutSeconds``)."""
        self.progress.bind_started()
        try:
            if self.bind_through_extenders:
                handled, error = await extenders_binding(fwk.extenders, pod, host)
                if handled:
                    return None if error is None else Status.as_error(error)
            status = await fwk.run_bind_plugins(state, pod, host)
        finally:
            self.progress.bind_finished()
        if status.is_success():
            return None
        if status.is_skip():
            return Status.as_error("no bind plugin bound the pod")
        return status

    def _undo_assume(self, fwk: Framework, attempt: Attempt, host: str) -> asyncio.Task[None] | None:
        """Unreserve and forget a pod whose binding failed, as if the assumed pod were deleted; the
        task sending Unreserve's claim patches, if any."""
        if self.handlers.held.hold(functools.partial(self._undo_assume_held, fwk, attempt, host)):
            return None
        fwk.run_reserve_plugins_unreserve(attempt.state, attempt.pod, host)
        unreserving = self._unreserve_claims(fwk, attempt)
        self.cache.forget_pod(attempt.pod)
        assumed = dataclasses.replace(attempt.pod, node_name=host)
        self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None)
        return unreserving

    def _undo_assume_held(self, fwk: Framework, attempt: Attempt, host: str) -> None:
        """``_undo_assume`` once the held changes are applied (its patches' task runs on unawaited)."""
        self._undo_assume(fwk, attempt, host)

    # -- failures ----------------------------------------------------------------------------

    def _handle_failure(
        self, qpi: QueuedPodInfo, status: Status, message: str, attempt: Attempt, nominating: NominatingInfo | None
    ) -> None:
        """``handleSchedulingFailure``: requeue with the rejectors, hand ``nominating`` to the queue's
        nominator, then report (once per distinct message)."""
        key = qpi.key
        rejected = status.is_rejected()
        self._log_failure(attempt, message)
        if rejected:
            qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(attempt.diagnosis.pending_plugins)
            if attempt.pod.errors:
                # No plugin's event can fix an invalid spec: only the pod's update or the 5-minute flush.
                qpi.unschedulable_plugins.add(INVALID_POD_REJECTOR)
        current = self.handlers.pending.get(key)
        if current is None:  # deleted or bound meanwhile: nothing to requeue or report
            self.queue.done(key)
            self.queue.delete_nominated_pod_if_exists(qpi.pod)  # upstream's AddNominatedPod finds it gone
            return
        self.queue.add_unschedulable_if_not_present(qpi, error=not qpi.rejectors)
        # Before the next cycle, not when the status patch comes back (upstream: "a race condition").
        self.queue.add_nominated_pod(current, nominating)
        reason = "Unschedulable" if rejected else "SchedulerError"
        # status.nominatedNodeName goes in the same patch, only when Override changes it (updatePod).
        nominated: str | None = None
        if (
            nominating is not None
            and nominating_mode(nominating) is NominatingMode.OVERRIDE
            and current.nominated_node_name != nominating.nominated_node_name
        ):
            nominated = nominating.nominated_node_name
        if self._reported.get(key) == message and nominated is None:
            return  # the same message was posted already: do not flood the API
        self._reported[key] = message
        self._spawn(self._report_failure(current, reason, message, nominated), report=True)

    def _log_failure(self, attempt: Attempt, message: str) -> None:
        """Upstream's lines: a pod that fits nowhere waits (V(2)); any other failure is an error, retried."""
        pod = kobj(attempt.pod.key)
        if message == ERR_NO_NODES_AVAILABLE:
            self.log.info("Unable to schedule pod; no nodes are registered to the cluster; waiting", v=2, pod=pod)
        elif attempt.fit_error is not None or (attempt.pod.errors and attempt.host is None):
            self.log.info("Unable to schedule pod; no fit; waiting", v=2, pod=pod, err=message)
        else:
            self.log.error("Error scheduling pod; retrying", pod=pod, err=message)

    async def _report_failure(self, pod: Pod, reason: str, message: str, nominated: str | None = None) -> None:
        await self.recorder.set_unschedulable(pod, reason, message, nominated)
        await self.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(message))

    # -- background writes -------------------------------------------------------------------

    def eventf(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None:
        """A plugin's Event (``EventRecorder``), sent in the background as the scheduler's own."""
        self._spawn(self.recorder.event(pod, event_type, reason, action, note), report=True)

    def _spawn(self, coro: Coroutine[Any, Any, None], *, report: bool = False) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        tasks = self._reports if report else self._tasks
        tasks.add(task)
        task.add_done_callback(functools.partial(self._task_done, tasks))
        return task

    def _task_done(self, tasks: set[asyncio.Task[None]], task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.error("background write failed", err=str(task.exception()))

    async def drain(self, report_grace: float | None = None) -> None:
        """Wait for every binding cycle in flight, then for the reports (PodScheduled=False patches
        and Events). With ``report_grace`` (a stop), the reports get that many seconds and the rest
        are dropped: thousands of them can wait behind the event rate limiter, a stop must end within
        the pod's termination grace period, and the next leader reports its own failures again, as
        kube-scheduler's event broadcaster drops what it has not sent when it shuts down."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if not self._reports:
            return
        if report_grace is None:
            while self._reports:
                await asyncio.gather(*list(self._reports), return_exceptions=True)
            return
        _done, late = await asyncio.wait(list(self._reports), timeout=report_grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        if late:
            self.log.info("dropped reports on stop", v=2, count=len(late))


async def _finished(task: asyncio.Task[None] | None) -> None:
    """Wait for ``task`` (its failure is logged where it was spawned)."""
    if task is not None:
        await asyncio.wait({task})


@dataclass(slots=True)
class Popped:
    """A popped pod; ``fwk`` is None when it needs no cycle (gone, assumed, or being deleted)."""

    qpi: QueuedPodInfo
    fwk: Framework | None
    started: float
