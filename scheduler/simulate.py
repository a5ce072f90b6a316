"""``spread-scheduler simulate``: schedule the pending pods of a file of objects, and explain each decision.

The live ``Scheduler`` itself, with an in-memory Binder and Recorder: the same handlers, queue,
cycles and algorithm, so ``simulate`` cannot decide differently from ``run``. Pure apart from
reading the file and the extenders the caller passes in.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import DEFAULT_SCHEDULER_NAME, SELECTING_KINDS, Node, Pod, PodKey
from scheduler.api.priorityclass import PriorityClass, PriorityClasses, admit_pod
from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.storage_objects import STORAGE_KINDS, key_of
from scheduler.boundedyaml import load_all, read_text
from scheduler.config import SchedulerConfig
from scheduler.eventhandlers import EventHandlers
from scheduler.framework.extender import Extender
from scheduler.framework.interface import PodNominator
from scheduler.framework.preemption import PreemptionOutcome
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.helper.volumes import claim_name_of
from scheduler.plugins.names import DEFAULT_PREEMPTION
from scheduler.profile import queue_sort_key
from scheduler.schedule_one import Attempt
from scheduler.scheduler import Scheduler

__all__ = [
    "History",
    "MemoryBinder",
    "MemoryPreemption",
    "MemoryRecorder",
    "MemoryVolumeBinder",
    "Preemption",
    "Simulation",
    "attempt_to_json",
    "iter_objects",
    "load_objects",
    "parse_objects",
    "rank_nodes",
    "rename_scheduler",
    "render_table",
    "replay_objects",
]

# The kinds ``add_objects`` reads; any other kind is reported as unused.
USED_KINDS = frozenset(
    {"Node", "Pod", "Namespace", "PodDisruptionBudget", "PriorityClass", *SELECTING_KINDS, *STORAGE_KINDS}
)


def iter_objects(doc: object) -> Iterator[Mapping[str, Any]]:
    """Objects of a document: a ``List`` (or any ``*List``) is flattened, others are yielded as they are."""
    if isinstance(doc, Mapping):
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
            for item in doc["items"]:
                yield from iter_objects(item)
        else:
            yield doc
    elif isinstance(doc, list):
        for item in doc:
            yield from iter_objects(item)


def load_objects(path: str | Path, stdin: TextIO | None = None) -> list[Mapping[str, Any]]:
    """Every object of a multi-document YAML/JSON file (``kubectl get -o yaml`` output included); ``-``
    with ``stdin``: of what it holds. Raises ``ReadError`` (one line) for a file that cannot be read
    or is not YAML within ``scheduler.boundedyaml``'s bounds."""
    return parse_objects(read_text(path, stdin))


def parse_objects(text: str) -> list[Mapping[str, Any]]:
    """Every object of a multi-document YAML/JSON text (``ReadError`` as ``load_objects``)."""
    return [obj for doc in load_all(text) if doc is not None for obj in iter_objects(doc)]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def rename_scheduler(
    objects: Iterable[Mapping[str, Any]], names: Iterable[str], profile: str
) -> list[Mapping[str, Any]]:
    """Pending pods whose schedulerName is one of ``names`` as if they named ``profile`` (``--scheduler-name``).

    A bound pod keeps its name: it counts on its node whoever placed it.
    """
    renamed = set(names)
    out: list[Mapping[str, Any]] = []
    for obj in objects:
        spec = _spec(obj)
        pending = obj.get("kind") == "Pod" and not spec.get("nodeName")
        if pending and spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) in renamed:
            out.append({**obj, "spec": {**spec, "schedulerName": profile}})
        else:
            out.append(obj)
    return out


def replay_objects(
    objects: Iterable[Mapping[str, Any]], namespace: str, name: str, config: SchedulerConfig
) -> list[Mapping[str, Any]]:
    """The cluster as the scheduler would see it when deciding NAMESPACE/NAME next (``explain``, ``simulate
    --pod``): that pod pending, every other pod only if it is bound (a pending one holds no room), everything
    else as listed. A bound pod is re-decided as if it were not bound yet; a pod naming no profile is decided
    with the first one. Raises ``LookupError`` when there is no such pod."""
    objects = list(objects)
    pod = next((o for o in objects if o.get("kind") == "Pod" and _key(o) == (namespace, name)), None)
    if pod is None:
        raise LookupError(f"pod {namespace}/{name} not found")
    others = [o for o in objects if o is not pod and (o.get("kind") != "Pod" or _spec(o).get("nodeName"))]
    spec = {k: v for k, v in _spec(pod).items() if k != "nodeName"}
    if spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) not in {p.scheduler_name for p in config.profiles}:
        spec["schedulerName"] = config.profiles[0].scheduler_name  # explain with our profile anyway
    return [*others, {**pod, "spec": spec}]


@dataclass(slots=True)
class Problem:
    """An object the simulation could not use (``skipped``) or uses in a way worth a warning, with the
    reason (printed, never fatal)."""

    what: str
    message: str
    skipped: bool = True


class MemoryBinder:
    """The Binder of a dry run: remembers each Binding instead of posting it."""

    def __init__(self) -> None:
        self.bindings: dict[PodKey, str] = {}

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings[pod.key] = node_name


class MemoryVolumeBinder:
    """VolumeBinding's PreBind in a dry run: the writes are remembered and applied to the cache at
    once, as if the PV controller (and, for a claim to provision, a provisioner creating a PV on the
    selected node) had answered: each claim ends bound, so the next pods see the volumes taken."""

    def __init__(self, handlers: EventHandlers) -> None:
        self._handlers = handlers
        # Each pod's writes, in order: "bind PV <pv> -> <claim>", "select node <claim> -> <node>".
        self.by_pod: dict[PodKey, list[str]] = {}

    async def bind_pod_volumes(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolumeClaim, PersistentVolume]],
        provisions: Sequence[PersistentVolumeClaim],
        timeout: float,
    ) -> None:
        done = self.by_pod.setdefault(pod.key, [])
        for claim, pv in bindings:
            done.append(f"bind PV {pv.name} -> {claim.key}")
            self._apply(pv.raw, {"phase": "Bound"})
            self._bind_claim(claim, pv.name)
        for claim in provisions:
            done.append(f"select node {claim.key} -> {node_name}")
            name = f"pvc-{claim.uid or claim.namespace + '-' + claim.name}"
            spec: dict[str, Any] = {
                "capacity": {"storage": _requested_storage(claim)},
                "accessModes": sorted(claim.access_modes),
                "storageClassName": claim.storage_class,
                "claimRef": {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid},
            }
            hostname = self._hostname(node_name)
            if hostname is not None:  # a node without the label: a PV any node can use
                expr = {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}
                spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
            self._apply({"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}, {"phase": "Bound"})
            self._bind_claim(claim, name)

    def _hostname(self, node_name: str) -> str | None:
        """The node's hostname label, which a local provisioner pins its PV to (not the node's name:
        the two may differ)."""
        info = self._handlers.cache.get(node_name)
        return None if info is None else info.node.labels.get(HOSTNAME_LABEL)

    def _bind_claim(self, claim: PersistentVolumeClaim, volume: str) -> None:
        raw = dict(claim.raw)
        meta = dict(raw.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
        spec = {**(raw.get("spec") or {}), "volumeName": volume}
        self._apply({**raw, "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}, {"phase": "Bound"})

    def _apply(self, raw: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        obj = {**raw, "status": status}
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        obj["metadata"] = meta
        self._handlers.on_storage_object("MODIFIED", obj)


HOSTNAME_LABEL = "kubernetes.io/hostname"


def _requested_storage(claim: PersistentVolumeClaim) -> str:
    spec = claim.raw.get("spec")
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    value = requests.get("storage") if isinstance(requests, Mapping) else None
    return str(value) if value is not None else "0"


class MemoryRecorder:
    """The Recorder of a dry run: keeps the conditions and Events the scheduler would write."""

    def __init__(self) -> None:
        self.conditions: dict[PodKey, tuple[str, str]] = {}
        self.nominations: dict[PodKey, str] = {}  # status.nominatedNodeName writes ("": cleared)
        self.events: list[tuple[PodKey, str, str, str]] = []  # (pod, type, reason, note)

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        self.conditions[pod.key] = (reason, message)
        if nominated_node_name is not None:
            self.nominations[pod.key] = nominated_node_name

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        self.events.append((pod.key, event_type, reason, note))


@dataclass(frozen=True, slots=True)
class Preemption:
    """One decision to carry out: ``victims`` leave, the pods of lower priority nominated to ``node``
    lose their nomination (upstream's ``prepareCandidate``), and ``preemptor`` is nominated there."""

    preemptor: Pod
    node: str
    victims: tuple[Pod, ...]
    lower_nominated: tuple[Pod, ...] = ()


class MemoryPreemption:
    """The PreemptionSink of a dry run: remembers each decision (preemptor -> node and victims) and
    keeps it for ``Simulation`` to carry out after the round, as the watch would report the writes."""

    def __init__(self, nominator: PodNominator | None = None) -> None:
        self.decisions: dict[PodKey, tuple[str, list[PodKey]]] = {}
        self.nominator = nominator
        self.pending: list[Preemption] = []

    def prepare_candidate(self, preemptor: Pod, node_name: str, victims: Sequence[Pod]) -> Status | None:
        self.decisions[preemptor.key] = (node_name, [v.key for v in victims])
        nominated = self.nominator.nominated_pods_for_node(node_name) if self.nominator is not None else ()
        lower = tuple(p for p in nominated if p.priority < preemptor.priority)  # getLowerPriorityNominatedPods
        self.pending.append(Preemption(preemptor, node_name, tuple(victims), lower))
        return None

    def is_pod_running_preemption(self, pod: Pod) -> bool:
        return False  # decisions are carried out between rounds, before any retry of the preemptor

    def take(self) -> list[Preemption]:
        """The decisions not carried out yet, oldest first; they are forgotten here."""
        pending, self.pending = self.pending, []
        return pending


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
        parsed = STORAGE_KINDS[kind].from_dict(obj)
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

        # A pod placed with claims: its binding cycle (VolumeBinding's PreBind writes, answered at once
        # by MemoryVolumeBinder) ends before the next pod's cycle, so that pod sees the claims bound,
        # as each pod's binding completing in turn would show them (the oracle's world too).
        bind_now = [False]

        def attempted(attempt: Attempt, _seconds: float) -> None:
            results.setdefault(attempt.pod.key, []).append(attempt)
            if attempt.host is not None and any(claim_name_of(attempt.pod, v) for v in attempt.pod.volumes):
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


def _filter_json(status: Status | None) -> dict[str, str] | None:
    if status is None:
        return None
    return {"plugin": status.plugin, "reason": status.message(), "code": str(status.code)}


def attempt_to_json(
    attempt: Attempt, cache: Cache, top: int | None = None, history: History | None = None
) -> dict[str, Any]:
    """The documented JSON shape: the outcome, per node the filter verdict (with its status code), per
    plugin raw/normalized, and the total; the plugins that rejected the pod (``FitError.Diagnosis``).

    With ``top``, only the ``top`` best nodes (``rank_nodes``), best first, and ``omittedNodes``.
    With ``history`` (preemption applied), the pod's earlier cycles (``earlierCycles``), the latest
    preemption decision among all its cycles, and who evicted it (``preemptedBy``).
    """
    nodes: dict[str, Any] = {}
    diagnosis = attempt.diagnosis
    index = {name: i for i, name in enumerate(attempt.scored_nodes)}
    feasible = set(attempt.feasible)
    for info in cache.node_infos():
        name = info.name
        status = diagnosis.node_to_status.get(name)
        if status is None and name not in feasible:
            status = diagnosis.absent_nodes_status
        entry: dict[str, Any] = {"filter": _filter_json(status), "scores": {}, "total": None}
        if status is None and name not in feasible:
            entry["filter"] = None
            entry["evaluated"] = False
        if name in index:
            i = index[name]
            entry["scores"] = {s.plugin: {"raw": s.raw[i], "normalized": s.normalized[i]} for s in attempt.scores}
            entry["total"] = attempt.totals.get(name)
        nodes[name] = entry
    omitted = None
    if top is not None:
        ranked = rank_nodes(nodes, attempt.host)
        omitted = max(0, len(ranked) - top)
        nodes = {name: nodes[name] for name in ranked[:top]}
    data: dict[str, Any] = {
        "pod": attempt.pod.key,
        "node": attempt.host,
        "code": "Success" if attempt.host is not None else str(attempt.status.code),
        "message": attempt.message
        if attempt.host is None
        else f"Successfully assigned {attempt.pod.key} to {attempt.host}",
        # Empty unless the pod fit no node: the rejecting plugins, and those of them that said Pending.
        "unschedulablePlugins": sorted(diagnosis.unschedulable_plugins) if attempt.fit_error else [],
        "pendingPlugins": sorted(diagnosis.pending_plugins) if attempt.fit_error else [],
        # Opportunistic batching: placed on the previous pod's runner-up without scoring.
        "batched": attempt.batched,
        "nodes": nodes,
    }
    if omitted is not None:
        data["omittedNodes"] = omitted
    earlier = history.earlier.get(attempt.pod.key, []) if history is not None else []
    preemption = latest_preemption([*earlier, attempt])
    if preemption is not None:
        # DefaultPreemption ran: where the pod would wait, and whom it would evict (issue #19).
        data["nominatedNode"] = preemption.nominated_node
        data["victims"] = [victim.key for victim in preemption.victims]
    if earlier:
        # Applied preemption: the cycles before this last one, oldest first, in the same shape.
        data["earlierCycles"] = [
            {k: v for k, v in attempt_to_json(a, cache, top).items() if k != "pod"} for a in earlier
        ]
    if history is not None and attempt.pod.key in history.preempted_by:
        data["preemptedBy"] = history.preempted_by[attempt.pod.key]
    return data


def latest_preemption(attempts: Sequence[Attempt]) -> PreemptionOutcome | None:
    """DefaultPreemption's decision in the latest of ``attempts`` where it ran."""
    return next((a.preemption for a in reversed(attempts) if a.preemption is not None), None)


def rank_nodes(nodes: Mapping[str, Mapping[str, Any]], host: str | None) -> list[str]:
    """Node names best first (``--top``): the chosen node, the other feasible nodes by total (highest
    first), then nodes refused as ``Unschedulable`` (preemption could help), then as
    ``UnschedulableAndUnresolvable``, then the nodes the search did not reach; ties by name."""

    def rank(name: str) -> tuple[int, float, str]:
        entry = nodes[name]
        filt = entry["filter"]
        if name == host:
            group = 0
        elif entry.get("evaluated") is False:
            group = 4
        elif filt is None:
            group = 1
        else:
            group = 2 if filt["code"] == str(Code.UNSCHEDULABLE) else 3
        total = entry["total"]
        return group, -(total if total is not None else float("-inf")), name

    return sorted(nodes, key=rank)


def to_json(attempts: list[Attempt], cache: Cache, top: int | None = None, history: History | None = None) -> str:
    results = [attempt_to_json(a, cache, top, history) for a in attempts]
    return json.dumps({"results": results}, indent=2, sort_keys=False)


def preemption_line(node: str | None, victims: Sequence[str]) -> str:
    """The table's line for DefaultPreemption's decision."""
    if node is None:
        return "preemption: no node (preemption would not help)"
    return f"preemption: nominated to {node}, evicting {', '.join(victims)}"


def _outcome(data: Mapping[str, Any]) -> str:
    return f"-> {data['node']}" if data["node"] else f"UNSCHEDULABLE: {data['message']}"


def render_table(attempts: list[Attempt], cache: Cache, top: int | None = None, history: History | None = None) -> str:
    """A terminal view: the decision per pod, then one row per node with its verdict and scores
    (with ``top``, the best ``top`` nodes, best first, and a line counting the others). With applied
    preemption, a line per earlier cycle (its outcome and decision) and a line for an evicted pod."""
    lines: list[str] = []
    for attempt in attempts:
        data = attempt_to_json(attempt, cache, top, history)
        lines.append(f"pod {data['pod']}: {_outcome(data)}")
        earlier = data.get("earlierCycles", [])
        for i, cycle in enumerate(earlier, start=1):
            lines.append(f"  cycle {i}: {_outcome(cycle)}")
            if "nominatedNode" in cycle:
                lines.append("    " + preemption_line(cycle["nominatedNode"], cycle["victims"]))
        if earlier:
            lines.append(f"  cycle {len(earlier) + 1}: {_outcome(data)}")
        if attempt.preemption is not None:
            lines.append("  " + preemption_line(attempt.preemption.nominated_node, data["victims"]))
        if "preemptedBy" in data:
            lines.append(f"  preempted by {data['preemptedBy']}: deleted from {data['node']}")
        plugins = [s.plugin for s in attempt.scores]
        header = ["NODE", "FILTER"] + [f"{p} (x{s.weight})" for p, s in zip(plugins, attempt.scores, strict=True)]
        header.append("TOTAL")
        rows = [header]
        for name, entry in data["nodes"].items():
            filt = entry["filter"]
            verdict = (
                "not evaluated"
                if entry.get("evaluated") is False
                else ("ok" if filt is None else f"{filt['plugin']}: {filt['reason']}")
            )
            row = [name + (" *" if name == attempt.host else ""), verdict]
            for p in plugins:
                score = entry["scores"].get(p)
                row.append("" if score is None else f"{score['normalized']} (raw {score['raw']})")
            total = entry["total"]
            row.append("" if total is None else str(total))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if data.get("omittedNodes"):
            lines.append(f"  ... {data['omittedNodes']} more node(s) not shown (--top {top})")
        lines.append("")
    return "\n".join(lines)
