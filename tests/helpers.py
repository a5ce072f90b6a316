"""The one test harness: run the real pipeline (config → frameworks → cache → algorithm) on
builder-made objects, or drive one plugin through its extension points.

Expected strings are spelled out here as literals (not imported from the code under test), so a
drift of a reason string in the scheduler makes the tests fail.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Node, Pod, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config, parse_config
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.profile import build_frameworks
from scheduler.schedule_one import Attempt, SchedulingAlgorithm
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
FOO = {"foo": "bar"}

# Plugin names.
PTS = "PodTopologySpread"
TT = "TaintToleration"
NA = "NodeAffinity"
NU = "NodeUnschedulable"
NN = "NodeName"
IPA = "InterPodAffinity"

# Reason strings, exactly as upstream v1.35.4 prints them.
SPREAD = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
UNTOLERATED = "node(s) had untolerated taint(s)"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = "pod affinity terms conflict"
UNSCHEDULABLE_NODE = "node(s) were unschedulable"
NODE_NAME_MISMATCH = "node(s) didn't match the requested node name"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

NodeLike = NodeBuilder | Node
PodLike = PodBuilder | Pod


def as_node(n: NodeLike) -> Node:
    return n.build() if isinstance(n, NodeBuilder) else n


def as_pod(p: PodLike) -> Pod:
    return p.build() if isinstance(p, PodBuilder) else p


def exists(*keys: str) -> dict[str, Any]:
    """A labelSelector ``{matchExpressions: [key Exists, ...]}`` (upstream tests' ``fooSelector``)."""
    return {"matchExpressions": [{"key": k, "operator": "Exists"} for k in keys]}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """One matchExpression / NodeSelectorRequirement."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(*expressions: dict[str, Any], fields: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A NodeSelectorTerm from matchExpressions (and optional matchFields)."""
    out: dict[str, Any] = {}
    if expressions:
        out["matchExpressions"] = list(expressions)
    if fields:
        out["matchFields"] = list(fields)
    return out


def name_in(name: str) -> dict[str, Any]:
    """``matchFields: metadata.name In [name]``."""
    return {"key": "metadata.name", "operator": "In", "values": [name]}


def make_cache(
    nodes: Iterable[NodeLike] = (),
    pods: Iterable[PodLike] = (),
    objects: Iterable[Mapping[str, Any]] = (),
) -> Cache:
    cache = Cache()
    for n in nodes:
        cache.add_node(as_node(n))
    for p in pods:
        cache.add_pod(as_pod(p))
    for obj in objects:
        selecting = parse_selecting_object(obj)
        assert selecting is not None, obj
        cache.upsert_selecting_object(selecting)
    return cache


def config_with(plugin_config: Sequence[Mapping[str, Any]] = (), **profile: Any) -> dict[str, Any]:
    """A KubeSchedulerConfiguration of our one profile, with pluginConfig args and profile fields."""
    prof: dict[str, Any] = {"schedulerName": "spread-scheduler", **profile}
    if plugin_config:
        prof["pluginConfig"] = [dict(pc) for pc in plugin_config]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [prof]}


# DynamicResources' PostFilter message, which ends every FitError message of our default profile
# (upstream's too) for a pod without resource claims, through 1.36 (the default of ``load_config``
# is 1.35). From 1.37 there is none: ``simulate``'s default minor is the newest.
NO_CLAIMS = "no new claims to deallocate"


def preemption_not_helpful(num_nodes: int, *, no_victims: int = 0) -> str:
    """DefaultPreemption's part of the message (it follows ``NO_CLAIMS`` after ", ") when no node
    can help: ``no_victims`` nodes have no lower-priority pod, the rest are UnschedulableAndUnresolvable."""
    counts = []
    if no_victims:
        counts.append(f"{no_victims} No preemption victims found for incoming pod")
    if num_nodes - no_victims:
        counts.append(f"{num_nodes - no_victims} Preemption is not helpful for scheduling")
    return f"preemption: 0/{num_nodes} nodes are available: {', '.join(counts)}."


# Default-profile plugins the spec's worked vectors (section 10) leave out: they give totals of the
# three mission plugins only, on nodes without capacity to speak of and pods whose images no node
# holds (ImageLocality is not a resource plugin, but is left out for the same reason), and
# DynamicResources' Score column (0 for every pod it lets through) is noise in them.
RESOURCE_PLUGINS = (
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DynamicResources",
)


def without_resource_plugins(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``config`` (default: ours) with ``RESOURCE_PLUGINS`` disabled in every profile.

    The spec's vectors give totals of the three mission plugins only, on nodes without capacity;
    resource tests build their frameworks with ``framework(config, resources=True)``.
    """
    doc = copy.deepcopy(dict(config)) if config is not None else config_with()
    for prof in doc.get("profiles") or []:
        multi = prof.setdefault("plugins", {}).setdefault("multiPoint", {})
        disabled = multi.setdefault("disabled", [])
        named = {d.get("name") for d in disabled}
        disabled.extend({"name": n} for n in RESOURCE_PLUGINS if n not in named)
    return doc


def framework(config: Mapping[str, Any] | None = None, *, resources: bool = False) -> Framework:
    if resources:
        cfg = load_config(None) if config is None else parse_config(dict(config))
    else:
        cfg = parse_config(without_resource_plugins(config))
    return build_frameworks(cfg)["spread-scheduler"]


@dataclass
class Run:
    """One scheduling attempt and convenient views of it."""

    attempt: Attempt
    cache: Cache

    @property
    def host(self) -> str | None:
        return self.attempt.host

    @property
    def feasible(self) -> set[str]:
        return set(self.attempt.feasible)

    @property
    def message(self) -> str:
        return self.attempt.message

    @property
    def code(self) -> Code:
        return self.attempt.status.code

    @property
    def rejectors(self) -> set[str]:
        return set(self.attempt.diagnosis.unschedulable_plugins)

    def status(self, node: str) -> Status | None:
        """The node's explicit Filter status (absent nodes share ``absent_nodes_status``)."""
        return self.attempt.diagnosis.node_to_status.get(node)

    def reason(self, node: str) -> str | None:
        """The node's Filter reason; a node PreFilter left out gets the shared ``absent_nodes_status``."""
        status = self.status(node)
        if status is None and node not in self.feasible:
            status = self.attempt.diagnosis.absent_nodes_status
        return None if status is None else status.message()

    def reasons(self) -> dict[str, tuple[str, Code, str]]:
        """node -> (reason message, code, plugin) for every node with an explicit status."""
        return {name: (st.message(), st.code, st.plugin) for name, st in self.attempt.diagnosis.node_to_status.items()}

    @property
    def scored_plugins(self) -> list[str]:
        return [s.plugin for s in self.attempt.scores]

    def raw(self, plugin: str) -> dict[str, int]:
        for s in self.attempt.scores:
            if s.plugin == plugin:
                return dict(zip(self.attempt.scored_nodes, s.raw, strict=True))
        raise KeyError(f"{plugin} did not score; scored: {self.scored_plugins}")

    def normalized(self, plugin: str) -> dict[str, int]:
        for s in self.attempt.scores:
            if s.plugin == plugin:
                return dict(zip(self.attempt.scored_nodes, s.normalized, strict=True))
        raise KeyError(f"{plugin} did not score; scored: {self.scored_plugins}")

    @property
    def totals(self) -> dict[str, int]:
        return dict(self.attempt.totals)


def schedule(
    nodes: Iterable[NodeLike],
    pods: Iterable[PodLike],
    pending: PodLike,
    config: Mapping[str, Any] | None = None,
    seed: int = 0,
    *,
    objects: Iterable[Mapping[str, Any]] = (),
) -> Run:
    """One cycle of the real pipeline: config → framework → cache → ``schedule_pod``."""
    cache = make_cache(nodes, pods, objects)
    fwk = framework(config)
    attempt = SchedulingAlgorithm(random.Random(seed)).schedule_pod(fwk, cache, as_pod(pending))
    return Run(attempt, cache)


def hosts_over_seeds(
    nodes: Sequence[NodeLike],
    pods: Sequence[PodLike],
    pending: PodLike,
    config: Mapping[str, Any] | None = None,
    seeds: Iterable[int] = range(16),
    *,
    objects: Sequence[Mapping[str, Any]] = (),
) -> set[str | None]:
    return {schedule(nodes, pods, pending, config, seed, objects=objects).host for seed in seeds}


def cluster_a() -> tuple[list[NodeBuilder], list[PodBuilder]]:
    """Spec section 10, cluster A: node1/node2 in zoneA, node3/node4 in zoneB; foo=bar pods p1..p3."""
    nodes = [make_node(f"node{i}").zone("zoneA" if i <= 2 else "zoneB") for i in range(1, 5)]
    pods = [make_pod(f"p{i}").labels(FOO).node(f"node{i}") for i in range(1, 4)]
    return nodes, pods


def incoming(labels: Mapping[str, str] | None = None, name: str = "incoming") -> PodBuilder:
    return make_pod(name).labels(dict(FOO if labels is None else labels))


# -- driving one plugin through its extension points -------------------------------------------


def plugin_handle(cache: Cache) -> Handle:
    return Handle(snapshot=cache)


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def message_of(status: Status | None) -> str:
    return "" if status is None else status.message()


def pre_filter_then_filter(plugin: Any, pod: Pod, info: NodeInfo) -> tuple[Status | None, Status | None]:
    """PreFilter, then Filter on ``info`` with the same CycleState when PreFilter succeeded (as upstream's
    plugin tests): (PreFilter's refusal, None) or (None, Filter's status)."""
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [info])
    if pre is not None:
        return pre, None
    return None, plugin.filter(state, pod, info)


def score_nodes(plugin: Any, cache: Cache, pod: Pod, candidates: Sequence[str]) -> tuple[list[int], list[int]]:
    """PreScore → Score → NormalizeScore on ``candidates``; returns (raw, normalized)."""
    state = CycleState()
    infos = [cache.get(n) for n in candidates]
    assert all(i is not None for i in infos)
    nodes = [i for i in infos if i is not None]
    status = plugin.pre_score(state, pod, nodes)
    assert status is None or status.is_success(), message_of(status)
    raw = [plugin.score(state, pod, n) for n in nodes]
    normalized = list(raw)
    status = plugin.normalize_score(state, pod, normalized, nodes)
    assert status is None or status.is_success(), message_of(status)
    return raw, normalized


def command_failed(stderr: str) -> str:
    """The ``err`` of the one klog ``"command failed"`` line in ``stderr`` (kube-scheduler's and ours):
    quoted on one line, or in an ``err=<`` block when it has several lines."""
    block = re.search(r'"command failed" err=<\n(.*)\n >', stderr, re.S)
    if block:
        return "\n".join(line.removeprefix("\t") for line in block.group(1).split("\n"))
    line = re.search(r'^E\d{4} [\d:.]+ +\d+ [^]]+\] "command failed" err=(".*")$', stderr, re.M)
    assert line, stderr
    try:
        text: str = json.loads(line.group(1))  # our quoting; Go's %q agrees with it on what configs hold
    except ValueError:
        text = line.group(1)[1:-1].encode().decode("unicode_escape")
    return text


def each_field_replaced(obj: Any, junk: Sequence[object]) -> Iterable[Any]:
    """Copies of ``obj`` with one field (a leaf or a container, at any depth) replaced by one of
    ``junk``: every field by every value, for parsers that must report rather than raise."""
    for path in _field_paths(obj):
        for value in junk:
            out = copy.deepcopy(obj)
            target = out
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = value
            yield out


def _field_paths(obj: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_field_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_field_paths(v, (*prefix, i)))
    return out
