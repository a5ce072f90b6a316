"""The scoring half of NodeResourcesFit: which resources, which strategy, and how a node's
requested/allocatable pair is read (``noderesources/resource_allocation.go``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.api.names import label_key_errors
from scheduler.api.objects import Pod
from scheduler.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name, request_value
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper.shape_score import int_arg, parse_shape
from scheduler.plugins.noderesources.dra_scoring import DRAScoreState
from scheduler.plugins.noderesources.least_allocated import least_resource_scorer
from scheduler.plugins.noderesources.most_allocated import most_resource_scorer
from scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    requested_to_capacity_ratio_scorer,
)

__all__ = ["FitArgs", "ResourceAllocationScorer", "Scorer", "parse_fit_args"]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
DEFAULT_RESOURCES = ((CPU, 1), (MEMORY, 1))


@dataclass(frozen=True, slots=True)
class FitArgs:
    """``NodeResourcesFitArgs`` after v1 defaulting."""

    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()


def _str_list(raw: object, path: str, errors: list[str]) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        errors.append(f"{path}: must be a list of strings")
        return []
    return raw


def _mapping(raw: object, path: str, errors: list[str]) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.append(f"{path}: must be an object")
        return {}
    return raw


def parse_fit_args(args: Mapping[str, Any]) -> FitArgs:
    """Defaults and validation as ``SetDefaults_NodeResourcesFitArgs``/``ValidateNodeResourcesFitArgs``;
    raises ``ValueError`` naming every bad field."""
    errors: list[str] = []
    ignored = _str_list(args.get("ignoredResources"), "ignoredResources", errors)
    for i, name in enumerate(ignored):
        errors.extend(str(e) for e in label_key_errors(name, f"ignoredResources[{i}]"))
    groups = _str_list(args.get("ignoredResourceGroups"), "ignoredResourceGroups", errors)
    for i, group in enumerate(groups):
        if "/" in group:
            errors.append(
                f"ignoredResourceGroups[{i}]: Invalid value: \"{group}\": resource group name can't contain '/'"
            )
        errors.extend(str(e) for e in label_key_errors(group, f"ignoredResourceGroups[{i}]"))
    strategy, resources, shape = LEAST_ALLOCATED, list(DEFAULT_RESOURCES), []
    if args.get("scoringStrategy") is not None:
        raw = _mapping(args.get("scoringStrategy"), "scoringStrategy", errors)
        strategy = str(raw.get("type") or "")
        if strategy not in STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in STRATEGIES)
            errors.append(f'scoringStrategy.type: Unsupported value: "{strategy}": supported values: {supported}')
        raw_resources = raw.get("resources") or []
        if not isinstance(raw_resources, list):
            errors.append("scoringStrategy.resources: must be a list")
            raw_resources = []
        if raw_resources:
            resources = []
            for i, item in enumerate(raw_resources):
                spec = _mapping(item, f"scoringStrategy.resources[{i}]", errors)
                name = str(spec.get("name") or "")
                weight = int_arg(spec.get("weight"), f"scoringStrategy.resources[{i}].weight", errors) or 1
                if not 0 < weight <= 100:
                    errors.append(
                        f"scoringStrategy.resources[{i}].weight: Invalid value: {weight}: "
                        f"resource weight of {name} not in valid range (0, 100]"
                    )
                resources.append((name, weight))
        ratio = raw.get("requestedToCapacityRatio")
        if ratio is not None:
            shape = parse_shape(
                _mapping(ratio, "scoringStrategy.requestedToCapacityRatio", errors).get("shape"),
                "scoringStrategy.shape",
                errors,
            )
        elif strategy == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream dereferences the missing shape and panics; we refuse the config instead.
            errors.append("scoringStrategy.requestedToCapacityRatio: Required value: a shape is needed for this type")
    if errors:
        raise ValueError("; ".join(errors))
    return FitArgs(frozenset(ignored), frozenset(groups), strategy, tuple(resources), tuple(shape))


Scorer = Callable[[Sequence[int], Sequence[int]], int]
"""``(requested, allocatable) -> score``, both aligned with the configured resources."""


class ResourceAllocationScorer:
    """Reads each configured resource's (allocatable, requested-with-this-pod) pair and scores it.

    ``use_requested`` is upstream's field of the same name: the pod's and the node's plain requests
    (BalancedAllocation) instead of the requests with the per-container non-zero defaults (Fit).
    """

    def __init__(self, names: Sequence[str], scorer: Scorer, *, use_requested: bool = False) -> None:
        self.names = tuple(names)
        self.scorer = scorer
        self.use_requested = use_requested

    @classmethod
    def for_strategy(cls, args: FitArgs) -> ResourceAllocationScorer:
        """NodeResourcesFit's scorer (fit.go ``nodeResourceStrategyTypeMap``)."""
        weights = [weight for _, weight in args.resources]
        scorer: Scorer
        if args.strategy == MOST_ALLOCATED:
            scorer = most_resource_scorer(weights)
        elif args.strategy == REQUESTED_TO_CAPACITY_RATIO:
            scorer = requested_to_capacity_ratio_scorer(weights, args.shape)
        else:
            scorer = least_resource_scorer(weights)
        return cls([name for name, _ in args.resources], scorer)

    def pod_requests(self, pod: Pod) -> list[int]:
        """``calculatePodResourceRequestList``. Fit's scorer (built without feature flags upstream) reads
        the spec's container requests with the per-container defaults; with ``use_requested``
        (BalancedAllocation, built with 1.35's flags) the plain requests with pod-level requests and
        resize status counted, which is ``effective_requests``."""
        source: Mapping[str, Fraction] = (
            pod.resources.effective_requests if self.use_requested else pod.resources.score_requests
        )
        return [request_value(name, source.get(name, Fraction(0))) for name in self.names]

    @staticmethod
    def is_best_effort(pod_requests: Sequence[int]) -> bool:
        """``isBestEffortPod``: nothing requested of any configured resource."""
        return not any(pod_requests)

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int], dra: DRAScoreState | None = None) -> int:
        requested, _, allocatable = self.node_requests(node_info, pod_requests, dra)
        return self.scorer(requested, allocatable)

    def node_requests(
        self, node_info: NodeInfo, pod_requests: Sequence[int], dra: DRAScoreState | None = None
    ) -> tuple[list[int], list[int], list[int]]:
        """Per configured resource: requested with the pod, allocated without it, allocatable (1.36's
        ``calculateNodeAllocatableRequest``; a resource the node does not offer stays 0 in all three).
        ``dra``: PreScore's reading of the devices, for extended resources a DeviceClass backs."""
        requested = [0] * len(self.names)
        allocated = [0] * len(self.names)
        allocatable = [0] * len(self.names)
        for i, name in enumerate(self.names):
            alloc, req = self._allocatable_requested(node_info, name, pod_requests[i], dra)
            if alloc:
                allocatable[i], requested[i], allocated[i] = alloc, req, req - pod_requests[i]
        return requested, allocated, allocatable

    def _allocatable_requested(
        self, info: NodeInfo, name: str, pod_request: int, dra: DRAScoreState | None = None
    ) -> tuple[int, int]:
        """``calculateResourceAllocatableRequest``: cpu/memory count the node's non-zero totals; an
        extended resource the node offers none of is counted in devices where a class backs it."""
        alloc = info.node.allocatable
        if name == CPU:
            used = info.requested_milli_cpu if self.use_requested else info.non0_cpu
            return alloc.milli_cpu, used + pod_request
        if name == MEMORY:
            used = info.requested_memory if self.use_requested else info.non0_mem
            return alloc.memory, used + pod_request
        if name == EPHEMERAL_STORAGE:
            return alloc.ephemeral_storage, info.requested_ephemeral_storage + pod_request
        if pod_request == 0 and is_scalar_resource_name(name):
            return 0, 0
        if dra is not None and not alloc.scalar.get(name):
            devices, held = dra.allocatable_allocated(info.node, name)
            if devices > 0:
                return devices, held + pod_request
        if name in alloc.scalar:
            return alloc.scalar[name], info.requested_scalar.get(name, 0) + pod_request
        return 0, 0
