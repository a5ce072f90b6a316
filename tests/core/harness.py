"""Run the real pipeline (config → frameworks → cache → algorithm) on builder-made objects."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Node, Pod, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config, parse_config
from scheduler.framework.runtime import Framework
from scheduler.profile import build_frameworks
from scheduler.schedule_one import Attempt, SchedulingAlgorithm
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod
from tests.helpers import without_resource_plugins

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
FOO = {"foo": "bar"}


@dataclass
class Result:
    attempt: Attempt

    @property
    def host(self) -> str | None:
        return self.attempt.host

    @property
    def feasible(self) -> set[str]:
        return set(self.attempt.feasible)

    @property
    def message(self) -> str:
        return self.attempt.message

    def reason(self, node: str) -> str | None:
        status = self.attempt.diagnosis.node_to_status.get(node)  # type: ignore[call-overload]
        if status is None:
            status = None if node in self.feasible else self.attempt.diagnosis.absent_nodes_status
        return None if status is None else status.message()

    def plugin(self, node: str) -> str | None:
        status = self.attempt.diagnosis.node_to_status.get(node)  # type: ignore[call-overload]
        return None if status is None else status.plugin

    def scores(self, plugin: str) -> dict[str, tuple[int, int]]:
        """node -> (raw, normalized) for one plugin."""
        for s in self.attempt.scores:
            if s.plugin == plugin:
                return {n: (r, v) for n, r, v in zip(self.attempt.scored_nodes, s.raw, s.normalized, strict=True)}
        return {}

    def normalized(self, plugin: str) -> dict[str, int]:
        return {n: v for n, (_, v) in self.scores(plugin).items()}

    def raw(self, plugin: str) -> dict[str, int]:
        return {n: r for n, (r, _) in self.scores(plugin).items()}

    @property
    def rejectors(self) -> set[str]:
        return set(self.attempt.diagnosis.unschedulable_plugins)


def framework(config: dict[str, Any] | None = None, *, resources: bool = False) -> Framework:
    """Our profile; NodePorts/NodeResourcesFit off unless ``resources`` (see ``tests.helpers``)."""
    if resources:
        cfg = load_config(None) if config is None else parse_config(config)
    else:
        cfg = parse_config(without_resource_plugins(config))
    return build_frameworks(cfg)["spread-scheduler"]


def schedule(
    nodes: Iterable[NodeBuilder | dict[str, Any]],
    pods: Iterable[PodBuilder | dict[str, Any]],
    pending: PodBuilder | dict[str, Any],
    *,
    objects: Iterable[dict[str, Any]] = (),
    config: dict[str, Any] | None = None,
    seed: int = 0,
) -> Result:
    cache = Cache()
    for n in nodes:
        cache.add_node(Node.from_dict(n.dict() if isinstance(n, NodeBuilder) else n))
    for p in pods:
        cache.add_pod(Pod.from_dict(p.dict() if isinstance(p, PodBuilder) else p))
    for obj in objects:
        selecting = parse_selecting_object(obj)
        assert selecting is not None
        cache.upsert_selecting_object(selecting)
    pod = Pod.from_dict(pending.dict() if isinstance(pending, PodBuilder) else pending)
    fwk = framework(config)
    return Result(SchedulingAlgorithm(random.Random(seed)).schedule_pod(fwk, cache, pod))


def cluster_a() -> tuple[list[NodeBuilder], list[PodBuilder]]:
    """Spec section 10, cluster A: node1/node2 in zoneA, node3/node4 in zoneB; foo=bar pods on node1..node3."""
    nodes = [make_node(f"node{i}").zone("zoneA" if i <= 2 else "zoneB") for i in range(1, 5)]
    pods = [make_pod(f"p{i}").labels(FOO).node(f"node{i}") for i in range(1, 4)]
    return nodes, pods


def incoming(name: str = "incoming", labels: dict[str, str] | None = None) -> PodBuilder:
    return make_pod(name).labels(FOO if labels is None else labels)
