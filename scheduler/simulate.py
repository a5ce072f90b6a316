"""``spread-scheduler simulate``: schedule the pending pods of a file of objects, and explain each decision.

Pure apart from reading the file and calling the configured extenders: the same Cache, Framework
and algorithm as the live scheduler.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scheduler.api.objects import SELECTING_KINDS, Node, Pod, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.config import SchedulerConfig
from scheduler.framework.extender import Extender
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.kube.extender import close_extenders, http_extenders
from scheduler.profile import build_frameworks
from scheduler.schedule_one import Attempt, SchedulingAlgorithm

__all__ = ["Simulation", "attempt_to_json", "iter_objects", "load_objects", "render_table"]


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


class Simulation:
    """A cache filled from objects, and the pending pods of known profiles scheduled one by one."""

    def __init__(
        self, config: SchedulerConfig, seed: int | None = None, extenders: Sequence[Extender] | None = None
    ) -> None:
        self.cache = Cache()
        # The configured extenders are called for real (HTTP), as the live scheduler would.
        self._owns_extenders = extenders is None
        self.extenders: list[Extender] = list(http_extenders(config.extenders) if extenders is None else extenders)
        self.frameworks: dict[str, Framework] = build_frameworks(config, extenders=self.extenders)
        self.algorithm = SchedulingAlgorithm(random.Random(seed))
        self.pending: list[Pod] = []
        self.problems: list[Problem] = []

    def add_objects(self, objects: Iterable[Mapping[str, Any]]) -> None:
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                node = Node.from_dict(obj)
                if node.errors and not node.name:
                    self.problems.append(Problem("Node", "; ".join(str(e) for e in node.errors)))
                    continue
                self.cache.add_node(node)
            elif kind == "Pod":
                pod = Pod.from_dict(obj)
                if pod.terminal:
                    continue
                if pod.assigned:
                    self.cache.add_pod(pod)
                elif pod.scheduler_name in self.frameworks:
                    self.pending.append(pod)
            elif isinstance(kind, str) and kind in SELECTING_KINDS:  # a YAML kind may be a list
                selecting = parse_selecting_object(obj)
                if selecting is not None:
                    self.cache.upsert_selecting_object(selecting)

    def queue_order(self) -> list[Pod]:
        """QueueSort (PrioritySort): priority first, then creation time, then file order."""
        indexed = list(enumerate(self.pending))
        indexed.sort(key=lambda item: (-item[1].priority, item[1].created, item[0]))
        return [pod for _, pod in indexed]

    def run(self) -> list[Attempt]:
        """Schedule every pending pod in queue order; with extenders, an event loop runs their calls."""
        if self.extenders:
            return asyncio.run(self.run_async())
        attempts: list[Attempt] = []
        for pod in self.queue_order():
            attempt = self._before_cycle(pod)
            if attempt is None:
                attempt = self.algorithm.schedule_pod(self.frameworks[pod.scheduler_name], self.cache, pod)
            attempts.append(self._after_cycle(attempt))
        return attempts

    async def run_async(self) -> list[Attempt]:
        """``run`` inside a running event loop (``explain``); closes the extender clients it made."""
        attempts: list[Attempt] = []
        try:
            for pod in self.queue_order():
                attempt = self._before_cycle(pod)
                if attempt is None:
                    fwk = self.frameworks[pod.scheduler_name]
                    attempt = await self.algorithm.schedule_pod_async(fwk, self.cache, pod)
                attempts.append(self._after_cycle(attempt))
        finally:
            if self._owns_extenders:
                await close_extenders(self.extenders)
        return attempts

    def _before_cycle(self, pod: Pod) -> Attempt | None:
        """The outcome of a pod that gets no cycle (gated, or being deleted), else None."""
        fwk = self.frameworks[pod.scheduler_name]
        gate = fwk.run_pre_enqueue_plugins(pod)
        if gate is not None:
            return Attempt(pod, gate, message=gate.message())
        if pod.terminating:
            # Upstream pops a pod that is being deleted and skips it (skipPodSchedule): no cycle.
            message = f"skip schedule deleting pod: {pod.key}"
            return Attempt(pod, Status(Code.SKIP, (message,)), message=message)
        return None

    def _after_cycle(self, attempt: Attempt) -> Attempt:
        """Reserve and assume a placed pod, so it counts for the pods after it."""
        if attempt.host is not None and attempt.status.is_success():
            fwk = self.frameworks[attempt.pod.scheduler_name]
            status = fwk.run_reserve_plugins_reserve(attempt.state, attempt.pod, attempt.host)
            if status is None:
                self.cache.assume_pod(attempt.pod, attempt.host)
            else:
                attempt.status, attempt.host, attempt.message = status, None, status.message()
        return attempt


def _filter_json(status: Status | None) -> dict[str, str] | None:
    if status is None:
        return None
    return {"plugin": status.plugin, "reason": status.message()}


def attempt_to_json(attempt: Attempt, cache: Cache) -> dict[str, Any]:
    """The documented JSON shape: per node the filter verdict, per plugin raw/normalized, and the total."""
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
        "message": attempt.message
        if attempt.host is None
        else f"Successfully assigned {attempt.pod.key} to {attempt.host}",
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
