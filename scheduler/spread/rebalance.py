"""STUB of s40-plan's planner (its interface only), deleted when s40-plan is merged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.spread.deletion_cost import Workload

REBALANCE_ANNOTATION = "spread-scheduler.io/rebalance"


def rebalance_opt_in(pod: Pod, default: bool) -> bool | str:
    meta = pod.raw.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(REBALANCE_ANNOTATION) if isinstance(annotations, Mapping) else None
    if value is None:
        return default
    if value in ("true", "false"):
        return bool(value == "true")
    return f'annotation {REBALANCE_ANNOTATION}: invalid value "{value}" (want "true" or "false")'


@dataclass(frozen=True, slots=True)
class Move:
    pod: PodKey
    from_node: str
    to_node: str
    topology_key: str
    from_domain: str
    to_domain: str
    skew_before: int
    skew_after: int


@dataclass(frozen=True, slots=True)
class Plan:
    workload: Workload
    moves: tuple[Move, ...]
    reason: str
    message: str


def plan_workload(cache: Cache, framework: Framework, workload: Workload, *, max_moves: int | None = None) -> Plan:
    return Plan(workload, (), "within-skew", "stub")


def plan_rebalance(
    cache: Cache, frameworks: Mapping[str, Framework], *, default: bool, namespace: str | None = None
) -> list[Plan]:
    return []
