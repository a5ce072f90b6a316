"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods that tolerate it.

Upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Node, Pod
from scheduler.api.taints import Effect, Taint, tolerates_any
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
from scheduler.framework.types import NodeInfo
from scheduler.plugins import names

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSCHEDULABLE,), names.NODE_UNSCHEDULABLE)
TAINT_NODE_UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", Effect.NO_SCHEDULE.value)


class NodeUnschedulable:
    NAME = names.NODE_UNSCHEDULABLE

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.TOLERATIONS_SIGNER_NAME, signers.tolerations_signer(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # An uncordoned (or new, schedulable) node may take the pod.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            # A toleration of node.kubernetes.io/unschedulable added to the pod itself.
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        nodes = as_objects(Node, old, new)
        new_node = nodes[1] if nodes is not None else None
        if nodes is None or new_node is None:
            return QueueingHint.QUEUE  # not a node event: upstream's conversion error means Queue
        old_node = nodes[0]
        # Queue when a node is added schedulable, or an update turns it from cordoned to schedulable.
        was_schedulable = old_node is not None and not old_node.unschedulable
        if not was_schedulable and not new_node.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        if pods is None or pods[1] is None:
            return QueueingHint.QUEUE  # not a pod update: upstream's conversion error means Queue
        new_pod = pods[1]
        if not another_pods_update(self.features, pod, new_pod) and tolerates_any(
            new_pod.tolerations, TAINT_NODE_UNSCHEDULABLE
        ):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.tolerations

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not node_info.node.unschedulable or tolerates_any(pod.tolerations, TAINT_NODE_UNSCHEDULABLE):
            return None
        return _UNSCHEDULABLE
