"""NodeResourcesBalancedAllocation: favour nodes whose resources would be used evenly with the pod.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` (feature
defaults: InPlacePodVerticalScaling and PodLevelResources on). A scored extended resource a
DeviceClass backs is counted in devices where the node offers none (``dra_scoring``, 1.36+).
Until 1.35 the score is the balance with the pod; from 1.36 (#135573, no gate) it is the change in
balance the pod makes. No NormalizeScore and no
EnqueueExtensions upstream, so none here.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins import names
from scheduler.plugins.noderesources.dra_scoring import DRAScoreState, DRAScoring
from scheduler.plugins.noderesources.fit import DRA_SIGNATURE_DISABLED, delegated_to_dra
from scheduler.plugins.noderesources.resource_allocation import DEFAULT_RESOURCES, ResourceAllocationScorer

__all__ = [
    "BalancedAllocation",
    "balanced_change_scorer",
    "balanced_resource_scorer",
    "parse_balanced_allocation_args",
]

NAME = names.NODE_RESOURCES_BALANCED_ALLOCATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The pod's requests, aligned with the configured resources; computed at PreScore, read by Score."""

    pod_requests: tuple[int, ...]
    dra: DRAScoreState | None = None  # the devices behind DRA-backed extended resources (1.36+)

    def clone(self) -> PreScoreState:
        return self


def parse_balanced_allocation_args(args: Mapping[str, Any]) -> tuple[str, ...]:
    """The resource names, after ``SetDefaults_NodeResourcesBalancedAllocationArgs`` (no list: cpu and
    memory; a weight of 0 or none: 1) and ``ValidateNodeResourcesBalancedAllocationArgs`` (names
    unique, every weight exactly 1). Raises ``ValueError`` naming every bad field."""
    errors: list[str] = []
    raw = args.get("resources")
    if raw is None or raw == []:
        return tuple(name for name, _ in DEFAULT_RESOURCES)
    if not isinstance(raw, list):
        raise ValueError(f"resources: must be a list, got {type(raw).__name__}")
    seen: set[str] = set()
    resources: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            errors.append(f"resources[{i}]: must be an object, got {type(item).__name__}")
            continue
        name = item.get("name") or ""
        if not isinstance(name, str):
            errors.append(f"resources[{i}].name: must be a string, got {type(name).__name__}")
            continue
        weight = item.get("weight") or 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            errors.append(f"resources[{i}].weight: must be an integer, got {weight!r}")
            continue
        if name in seen:
            errors.append(f'resources[{i}].name: Duplicate value: "{name}"')
        seen.add(name)
        if (weight or 1) != 1:
            errors.append(f"resources[{i}].weight: Invalid value: {weight}: must be 1")
        resources.append(name)
    if errors:
        raise ValueError("; ".join(errors))
    return tuple(resources)


def balanced_resource_scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``(1 - std) * MaxNodeScore`` truncated, where std is the standard deviation of the fractions
    requested/allocatable (each capped at 1) of the resources the node offers: 0..100.

    Two fractions take upstream's shortcut ``|f1 - f2| / 2``; fewer than two give std 0. The float
    operations are upstream's, in upstream's order, so the truncation lands on the same integer.
    """
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_change_scorer(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """1.36's ``balancedResourceScorer``: ``MaxNodeScore/2 + (MaxNodeScore/2 + with - without)/2``.

    ``with`` and ``without`` are the 1.35 scores with and without the pod, both in [50, 100] (a
    standard deviation of fractions in [0, 1] is at most 0.5), so the division never meets a negative
    number and Go's truncation is Python's floor: 50 when the pod unbalances the node most, 100 when
    it balances it most, 75 when it changes nothing.
    """
    with_pod = balanced_resource_scorer(requested, allocatable)
    without_pod = balanced_resource_scorer(allocated, allocatable)
    return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without_pod) // 2


class BalancedAllocation:
    """PreScore and Score; signed (the score reads only the pod's requests and the one NodeInfo)."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        resources = parse_balanced_allocation_args(args)
        self.scorer = ResourceAllocationScorer(resources, balanced_resource_scorer, use_requested=True)
        self.handle = handle
        self.features = features
        self.dra = (
            DRAScoring(features.minor, consumable_capacity=features.enabled("DRAConsumableCapacity"))
            if features.enable_dra_extended_resource
            else None
        )

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        if delegated_to_dra(self.handle, pod, enabled=self.features.enable_dra_extended_resource):
            return (), DRA_SIGNATURE_DISABLED
        return [(signers.RESOURCES_SIGNER_NAME, signers.resources_signer(pod))], None

    def sign_pod(self, pod: Pod) -> Hashable:
        # Upstream signs the pod's whole request; Score reads only the configured resources of it.
        return tuple(self.scorer.pod_requests(pod))

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self.scorer.pod_requests(pod)
        if self.scorer.is_best_effort(requests):
            # A pod that requests nothing would score every node alike and pile onto the emptiest
            # ones, so it is not scored at all (kubernetes#129138).
            return Status(Code.SKIP)
        dra = self.dra.pre_score(self.handle, self.scorer.names) if self.dra is not None else None
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(tuple(requests), dra))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        stored = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(stored, PreScoreState):
            requests: Sequence[int] = stored.pod_requests
            dra = stored.dra
        else:  # PreScore disabled: compute here, skipping best-effort pods as PreScore would
            requests = self.scorer.pod_requests(pod)
            if self.scorer.is_best_effort(requests):
                return 0
            dra = self.dra.pre_score(self.handle, self.scorer.names) if self.dra is not None else None
        if self.features.balanced_allocation_scores_change:
            return balanced_change_scorer(*self.scorer.node_requests(node_info, requests, dra))
        return self.scorer.score(node_info, requests, dra)
