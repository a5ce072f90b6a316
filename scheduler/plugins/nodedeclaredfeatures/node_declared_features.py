"""NodeDeclaredFeatures: a pod whose spec needs a node feature fits only nodes that declare it.

Upstream: ``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go`` at
v1.36.3 and v1.37.2, in the default profile from 1.36 (gate NodeDeclaredFeatures, beta on; GA in
1.37). What a spec needs is ``scheduler.api.declaredfeatures``, narrowed to the features the minor's
component-helpers registry infers (``Features.declared_features_inferred``). 1.37's skip for a pod
whose resize is deferred belongs to InPlacePodVerticalScalingSchedulerPreemption (alpha, off).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Node, Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    another_pods_update,
    as_objects,
    target_pod_resource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names

__all__ = ["ERR_REASON_UNSATISFIED_REQUIREMENTS", "NodeDeclaredFeatures"]

NAME = names.NODE_DECLARED_FEATURES
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


class NodeDeclaredFeatures:
    """PreFilter (the pod's requirements, Skip when none), Filter (a subset of the node's features)."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features
        # Upstream's plugin does nothing when its gate is off (a profile may still enable it).
        self.enabled = features.enable_node_declared_features
        self.inferred = features.declared_features_inferred

    def requirements(self, pod: Pod) -> frozenset[str]:
        """``InferForPodScheduling``: the features of the minor's registry the spec needs."""
        return pod.feature_uses & self.inferred

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.FEATURES_SIGNER_NAME, ",".join(sorted(self.requirements(pod))))], None

    def sign_pod(self, pod: Pod) -> Hashable:
        return self.requirements(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                self.is_schedulable_after_node_change,
            ),
            # The pod's own update (1.36: any Pod update, others skipped by UID; 1.37: TargetPod).
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE),
                self.is_schedulable_after_pod_update,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        nodes = as_objects(Node, old, new)
        old_node, new_node = nodes if nodes is not None else (None, None)
        if new_node is None:
            return QueueingHint.QUEUE
        if old_node is not None and old_node.declared_features == new_node.declared_features:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        old_pod, new_pod = pods if pods is not None else (None, None)
        if old_pod is None or new_pod is None:
            return QueueingHint.QUEUE
        if another_pods_update(self.features, pod, new_pod) or self.requirements(old_pod) == self.requirements(new_pod):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not self.enabled:
            return None, Status(Code.SKIP)
        required = self.requirements(pod)
        if not required:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, required)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not self.enabled:
            return None
        required = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(required, frozenset):
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')
        if required <= set(node_info.node.declared_features):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSATISFIED_REQUIREMENTS,))
