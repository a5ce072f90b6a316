"""The driver: the live ``Scheduler`` on objects from a file, with the in-memory writers.

The same handlers, queue, cycles and algorithm as ``run``, so ``simulate`` cannot decide differently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import SELECTING_KINDS, Node, Pod, PodKey
from scheduler.api.priorityclass import PriorityClass, PriorityClasses, admit_pod
from scheduler.backend.cache.storage_objects import STORAGE_KINDS, key_of, parse_storage_object
from scheduler.config import SchedulerConfig
from scheduler.framework.extender import Extender
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.helper.volumes import claim_name_of
from scheduler.plugins.names import DEFAULT_PREEMPTION, DYNAMIC_RESOURCES
from scheduler.profile import queue_sort_key
from scheduler.schedule_one import Attempt
from scheduler.scheduler import Scheduler
from scheduler.simulate.writers import (
    MemoryBinder,
    MemoryClaimWriter,
    MemoryPreemption,
    MemoryRecorder,
    MemoryVolumeBinder,
    Preemption,
)

# The kinds ``add_objects`` reads; any other kind is reported as unused.
USED_KINDS = frozenset(
    {"Node", "Pod", "Namespace", "PodDisruptionBudget", "PriorityClass", *SELECTING_KINDS, *STORAGE_KINDS}
)


@dataclass(slots=True)
class Problem:
    """An object the simulation could not use (``skipped``) or uses in a way worth a warning, with the
    reason (printed, never fatal)."""

    what: str
    message: str
    skipped: bool = True


@dataclass(slots=True)
class History:
    """What a pod's last cycle does not show once preemption is applied: the cycles before it, and
    which preemptor evicted each victim. Empty without ``apply_preemption``."""

    earlier: dict[PodKey, list[Attempt]] = field(default_factory=dict)
    preempted_by: dict[PodKey, PodKey] = field(default_factory=dict)


class _SimulatedClock:
    """The queue's clock: frozen within a round (no backoff expires, so each pod gets one attempt),
    moved past the longest backoff between rounds."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _next_version(version: str) -> str:
    """The resourceVersion a write would give: a newer integer; otherwise "" (always an update)."""
    return str(int(version) + 1) if version.isdigit() else ""


class Simulation:
    """The live ``Scheduler`` on objects from a file, with an in-memory Binder and Recorder.

    Every pending pod of a known profile gets one attempt, in queue order: the queue's QueueSort
    with creation time as the arrival time (then file order). Each placement is assumed, so it
    counts for the pods after it, exactly as in the live loop before the watch confirms it.
    Extenders are called for real (filter, prioritize), but a dry run never binds through them.

    With ``apply_preemption`` (the ``simulate`` and ``explain`` commands), DefaultPreemption's
    decisions are carried out after each round as the live writes would be: the victims are deleted,
    lower-priority nominations on the node cleared, the preemptor's ``status.nominatedNodeName`` set;
    then the pods those changes requeue (the queue's hints decide, as upstream) get one more attempt
    in a new round, once their backoff is over. Each round deletes at least one pod, so it ends.
    Without it, a decision is only shown (one cycle per pod: what the differential oracle compares).
    """

    def __init__(
        self,
        config: SchedulerConfig,
        seed: int | None = None,
        extenders: Sequence[Extender] = (),
        *,
        apply_preemption: bool = False,
    ) -> None:
        self.binder = MemoryBinder()
        self.recorder = MemoryRecorder()
        self.clock = _SimulatedClock()
        self.apply_preemption = apply_preemption
        self.max_backoff = config.pod_max_backoff_seconds
        self.scheduler = Scheduler(
            config,
            self.binder,
            self.recorder,
            clock=self.clock,
            rng=random.Random(seed),
            extenders=extenders,
            bind_through_extenders=False,
        )
        self.scheduler.cycles.max_attempts = 1
        # The result is the output: only what went wrong is logged, and to stderr.
        self.scheduler.cycles.log = structlog.wrap_logger(
            structlog.PrintLogger(sys.stderr), wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING)
        )
        self.cache = self.scheduler.cache
        self.frameworks = self.scheduler.frameworks
        self.volume_binder = MemoryVolumeBinder(self.scheduler.handlers)
        self.scheduler.use_volume_binder(self.volume_binder)
        self.claim_writer = MemoryClaimWriter(self.scheduler.handlers)
        self.scheduler.use_claim_writer(self.claim_writer)
        # No driver meets binding conditions in a dry run: a pod whose devices have them is shown bound,
        # where it goes once they are met, not held for the plugin's bindingTimeout.
        for fwk in self.frameworks.values():
            dra = fwk.plugins.get(DYNAMIC_RESOURCES)
            if isinstance(dra, StructuredDynamicResources):
                dra.wait_for_binding_conditions = False
        # DefaultPreemption decides where its decision has somewhere to go; its random offset is seeded.
        self.preemption = MemoryPreemption(self.scheduler.queue)
        offsets = random.Random(seed)
        for fwk in self.frameworks.values():
            fwk.handle.preemption = self.preemption
            plugin = fwk.plugins.get(DEFAULT_PREEMPTION)
            if isinstance(plugin, DefaultPreemption):
                plugin.offset_rand = offsets.randrange
        self.algorithm = self.scheduler.algorithm
        self.pending: list[Pod] = []
        self._pending_index: dict[PodKey, int] = {}
        self.problems: list[Problem] = []
        self.unused_kinds: Counter[str] = Counter()  # objects of kinds the scheduler does not read
        self.unmatched: list[Pod] = []  # pending pods whose schedulerName names no profile
        self.history = History()
        self.priority_classes: list[PriorityClass] = []

    def add_objects(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Nodes, bound pods, namespaces and spreading inputs go to the cache now; pending pods wait for ``run``.

        PriorityClasses come first, wherever they are listed: each pod is admitted with them.
        """
        objects = list(objects)
        handlers = self.scheduler.handlers
        for obj in objects:
            if obj.get("kind") == "PriorityClass":
                pc = PriorityClass.from_dict(obj)
                if pc.errors:
                    what = f"PriorityClass {pc.name}" if pc.name else "PriorityClass"
                    self.problems.append(Problem(what, "; ".join(str(e) for e in pc.errors)))
                else:
                    self.priority_classes.append(pc)
        classes = PriorityClasses(self.priority_classes)
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                node = Node.from_dict(obj, whole=handlers.whole_nodes)
                if node.errors and not node.name:
                    self.problems.append(Problem("Node", "; ".join(str(e) for e in node.errors)))
                    continue
                handlers.node_event(None, node)
            elif kind == "Pod":
                self._add_pod(obj, classes)
            elif isinstance(kind, str) and kind in SELECTING_KINDS:  # a YAML kind may be a list
                handlers.on_selecting_object(None, obj)
            elif kind == "Namespace":
                handlers.on_namespace(None, obj)
            elif kind == "PodDisruptionBudget":
                self._add_pdb(obj)
            elif isinstance(kind, str) and kind in STORAGE_KINDS:
                self._add_storage_object(kind, obj)
            elif kind != "PriorityClass":
                self.unused_kinds[kind if isinstance(kind, str) and kind else "(no kind)"] += 1

    def _add_pod(self, obj: Mapping[str, Any], classes: PriorityClasses) -> None:
        """A pod as the API server holds it: its priority from its PriorityClass (admission). A pending
        pod admission refuses gets the reason as an invalid field (its result says it); a bound one
        is left out with a warning, as is one whose priority is not an int32."""
        admitted, refusal = admit_pod(obj, classes)
        pod = Pod.from_dict(admitted)
        if pod.terminal:
            return
        if pod.assigned:
            errors = [refusal] if refusal else [e for e in pod.errors if e.path == "spec.priority"]
            if errors:
                self.problems.append(Problem(f"Pod {pod.key}", "; ".join(str(e) for e in errors)))
                return
            self.scheduler.handlers.pod_event(None, pod)
        elif pod.scheduler_name in self.frameworks:
            if refusal is not None:
                pod = dataclasses.replace(pod, errors=(*pod.errors, refusal))
            self._add_pending(pod)
        else:
            self.unmatched.append(pod)

    def _add_pdb(self, obj: Mapping[str, Any]) -> None:
        """A PDB with invalid fields is kept as the live scheduler keeps it, with a warning here
        instead of the log line; a malformed selector makes it cover no pod, which kube-controller-
        manager reports in a ``NoPods`` event ("Failed to get pods: ...")."""
        pdb = PodDisruptionBudget.from_dict(obj)
        if not (pdb.name and pdb.errors):
            self.scheduler.handlers.on_pdb(None, obj)
            return
        selector = [str(e) for e in pdb.errors if e.path.startswith("spec.selector")]
        others = [str(e) for e in pdb.errors if not e.path.startswith("spec.selector")]
        parts = [f"Failed to get pods: {'; '.join(selector)} (it covers no pod)"] if selector else []
        parts += others
        self.problems.append(Problem(f"PodDisruptionBudget {pdb.key}", "; ".join(parts), skipped=False))
        self.cache.upsert_pdb(pdb)

    def _add_storage_object(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A storage object the API server would refuse is kept as the live scheduler keeps it (the
        volume plugins name its fields in the pods' results), with a warning here; one without a
        name cannot be looked up and is left out."""
        parsed = parse_storage_object(kind, obj, self.scheduler.handlers.minor)
        if parsed.errors:
            what = f"{kind} {key_of(parsed)}" if parsed.name else kind
            problems = "; ".join(str(e) for e in parsed.errors)
            self.problems.append(Problem(what, problems, skipped=not parsed.name))
        if parsed.name:
            self.scheduler.handlers.on_storage_object(None, obj)

    def _add_pending(self, pod: Pod) -> None:
        """A pod listed twice is one pod: the later object replaces the earlier, as a watch update would."""
        i = self._pending_index.setdefault(pod.key, len(self.pending))
        if i < len(self.pending):
            self.pending[i] = pod
        else:
            self.pending.append(pod)

    def queue_order(self) -> list[Pod]:
        """The order the queue pops them: QueueSort, creation time as arrival time, then file order."""
        sort_key = queue_sort_key(self.frameworks)
        indexed = sorted(enumerate(self.pending), key=lambda item: (item[1].created, item[0]))
        by_arrival = [pod for _, pod in indexed]
        return sorted(by_arrival, key=lambda pod: sort_key(pod, 0.0))

    def run(self) -> list[Attempt]:
        """Schedule every pending pod once, in queue order; one Attempt per pod, in that order."""
        return asyncio.run(self.run_async())

    async def run_async(self) -> list[Attempt]:
        """``run`` inside a running event loop (``explain``)."""
        sched = self.scheduler
        order = self.queue_order()
        results: dict[PodKey, list[Attempt]] = {}

        # A pod placed with claims: its binding cycle (VolumeBinding's and DynamicResources' PreBind
        # writes, answered at once by the memory writers) ends before the next pod's cycle, so that pod
        # sees the claims bound and allocated, as each pod's binding completing in turn would show
        # them (the oracle's world too).
        bind_now = [False]

        def attempted(attempt: Attempt, _seconds: float) -> None:
            results.setdefault(attempt.pod.key, []).append(attempt)
            pod = attempt.pod
            if attempt.host is not None and (pod.resource_claims or any(claim_name_of(pod, v) for v in pod.volumes)):
                bind_now[0] = True

        def skipped(pod: Pod, message: str) -> None:
            results.setdefault(pod.key, []).append(Attempt(pod, Status(Code.SKIP, (message,)), message=message))

        sched.attempt_observers.append(attempted)
        sched.cycles.skip_observers.append(skipped)
        for pod in order:  # arrival order: equal queue timestamps keep it among equal priorities
            sched.handlers.pod_event(None, pod)
        rounds = 1
        while True:
            while await sched.schedule_one_async() if sched.extenders else sched.schedule_one():
                if bind_now[0]:
                    bind_now[0] = False
                    await sched.drain()
            await sched.drain()
            preemptions = self.preemption.take()
            if not (self.apply_preemption and preemptions):
                break
            # A later round: backoffs are over, and each pod may be tried once more.
            rounds += 1
            sched.cycles.max_attempts = rounds
            self.clock.now += self.max_backoff + 1.0
            for preemption in preemptions:
                self._carry_out(preemption)
        sched.attempt_observers.remove(attempted)
        sched.cycles.skip_observers.remove(skipped)
        for pod in order:
            if pod.key not in results:  # never popped: held back by a PreEnqueue plugin
                gate = self.frameworks[pod.scheduler_name].run_pre_enqueue_plugins(pod)
                status = gate if gate is not None else Status(Code.UNSCHEDULABLE, ("not attempted",))
                results[pod.key] = [Attempt(pod, status, message=status.message())]
        for pod in order:
            if len(results[pod.key]) > 1:
                self.history.earlier[pod.key] = results[pod.key][:-1]
        return [results[pod.key][-1] for pod in order]

    def _carry_out(self, preemption: Preemption) -> None:
        """The writes of one decision, in upstream's order, as watch events: each victim deleted, each
        lower-priority nomination cleared (only a written one: upstream patches no other), then the
        preemptor's ``status.nominatedNodeName`` (the failure handler's patch)."""
        handlers = self.scheduler.handlers
        preemptor = preemption.preemptor.key
        for victim in preemption.victims:
            self.history.preempted_by.setdefault(victim.key, preemptor)
            handlers.pod_event("DELETED", victim)
        for nominated in preemption.lower_nominated:
            latest = handlers.pending.get(nominated.key)
            if latest is not None and latest.nominated_node_name:
                handlers.pod_event(None, _with_nomination(latest, ""))
        latest = handlers.pending.get(preemptor)
        if latest is not None and not latest.node_name and latest.nominated_node_name != preemption.node:
            handlers.pod_event(None, _with_nomination(latest, preemption.node))


def _with_nomination(pod: Pod, node: str) -> Pod:
    """``pod`` as the watch reports it after a status patch of ``nominatedNodeName``."""
    return dataclasses.replace(pod, nominated_node_name=node, resource_version=_next_version(pod.resource_version))
