"""``spread-scheduler simulate``: schedule the pending pods of a file of objects, and explain each decision.

The live ``Scheduler`` itself, with an in-memory Binder and Recorder: the same handlers, queue,
cycles and algorithm, so ``simulate`` cannot decide differently from ``run``. Pure apart from
reading the file and the extenders the caller passes in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import yaml

from scheduler.api.objects import SELECTING_KINDS, Node, Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.config import SchedulerConfig
from scheduler.framework.extender import Extender
from scheduler.framework.status import Code, Status
from scheduler.profile import queue_sort_key
from scheduler.schedule_one import Attempt
from scheduler.scheduler import Scheduler

__all__ = [
    "MemoryBinder",
    "MemoryRecorder",
    "Simulation",
    "attempt_to_json",
    "iter_objects",
    "load_objects",
    "render_table",
]


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


def load_objects(path: str | Path) -> list[Mapping[str, Any]]:
    """Every object of a multi-document YAML/JSON file (``kubectl get -o yaml`` output included)."""
    text = Path(path).read_text()
    return [obj for doc in yaml.safe_load_all(text) if doc is not None for obj in iter_objects(doc)]


@dataclass(slots=True)
class Problem:
    """An object the simulation could not use, with the reason (printed, never fatal)."""

    what: str
    message: str


class MemoryBinder:
    """The Binder of a dry run: remembers each Binding instead of posting it."""

    def __init__(self) -> None:
        self.bindings: dict[PodKey, str] = {}

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings[pod.key] = node_name


class MemoryRecorder:
    """The Recorder of a dry run: keeps the conditions and Events the scheduler would write."""

    def __init__(self) -> None:
        self.conditions: dict[PodKey, tuple[str, str]] = {}
        self.events: list[tuple[PodKey, str, str, str]] = []  # (pod, type, reason, note)

    async def set_unschedulable(self, pod: Pod, reason: str, message: str) -> None:
        self.conditions[pod.key] = (reason, message)

    async def event(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append((pod.key, event_type, reason, note))


class Simulation:
    """The live ``Scheduler`` on objects from a file, with an in-memory Binder and Recorder.

    Every pending pod of a known profile gets one attempt, in queue order: the queue's QueueSort
    with creation time as the arrival time (then file order). Each placement is assumed, so it
    counts for the pods after it, exactly as in the live loop before the watch confirms it.
    Extenders are called for real (filter, prioritize), but a dry run never binds through them.
    """

    def __init__(self, config: SchedulerConfig, seed: int | None = None, extenders: Sequence[Extender] = ()) -> None:
        self.binder = MemoryBinder()
        self.recorder = MemoryRecorder()
        self.scheduler = Scheduler(
            config,
            self.binder,
            self.recorder,
            clock=_frozen_clock,  # no backoff ever expires: each pod gets its one attempt
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
        self.algorithm = self.scheduler.algorithm
        self.pending: list[Pod] = []
        self._pending_index: dict[PodKey, int] = {}
        self.problems: list[Problem] = []

    def add_objects(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Nodes, bound pods, namespaces and spreading inputs go to the cache now; pending pods wait for ``run``."""
        handlers = self.scheduler.handlers
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                node = Node.from_dict(obj)
                if node.errors and not node.name:
                    self.problems.append(Problem("Node", "; ".join(str(e) for e in node.errors)))
                    continue
                handlers.node_event(None, node)
            elif kind == "Pod":
                pod = Pod.from_dict(obj)
                if pod.terminal:
                    continue
                if pod.assigned:
                    handlers.pod_event(None, pod)
                elif pod.scheduler_name in self.frameworks:
                    self._add_pending(pod)
            elif isinstance(kind, str) and kind in SELECTING_KINDS:  # a YAML kind may be a list
                handlers.on_selecting_object(None, obj)
            elif kind == "Namespace":
                handlers.on_namespace(None, obj)

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
        results: dict[PodKey, Attempt] = {}

        def attempted(attempt: Attempt, _seconds: float) -> None:
            results.setdefault(attempt.pod.key, attempt)

        def skipped(pod: Pod, message: str) -> None:
            results.setdefault(pod.key, Attempt(pod, Status(Code.SKIP, (message,)), message=message))

        sched.attempt_observers.append(attempted)
        sched.cycles.skip_observers.append(skipped)
        for pod in order:  # arrival order: equal queue timestamps keep it among equal priorities
            sched.handlers.pod_event(None, pod)
        while await sched.schedule_one_async() if sched.extenders else sched.schedule_one():
            pass
        await sched.drain()
        sched.attempt_observers.remove(attempted)
        sched.cycles.skip_observers.remove(skipped)
        for pod in order:
            if pod.key not in results:  # never popped: held back by a PreEnqueue plugin
                gate = self.frameworks[pod.scheduler_name].run_pre_enqueue_plugins(pod)
                status = gate if gate is not None else Status(Code.UNSCHEDULABLE, ("not attempted",))
                results[pod.key] = Attempt(pod, status, message=status.message())
        return [results[pod.key] for pod in order]


def _frozen_clock() -> float:
    return 0.0


def _filter_json(status: Status | None) -> dict[str, str] | None:
    if status is None:
        return None
    return {"plugin": status.plugin, "reason": status.message(), "code": str(status.code)}


def attempt_to_json(attempt: Attempt, cache: Cache) -> dict[str, Any]:
    """The documented JSON shape: the outcome, per node the filter verdict (with its status code), per
    plugin raw/normalized, and the total; the plugins that rejected the pod (``FitError.Diagnosis``)."""
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
    return {
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


def to_json(attempts: list[Attempt], cache: Cache) -> str:
    return json.dumps({"results": [attempt_to_json(a, cache) for a in attempts]}, indent=2, sort_keys=False)


def render_table(attempts: list[Attempt], cache: Cache) -> str:
    """A terminal view: the decision per pod, then one row per node with its verdict and scores."""
    lines: list[str] = []
    for attempt in attempts:
        data = attempt_to_json(attempt, cache)
        head = f"pod {data['pod']}: "
        head += f"-> {attempt.host}" if attempt.host else f"UNSCHEDULABLE: {attempt.message}"
        lines.append(head)
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
        lines.append("")
    return "\n".join(lines)
