"""NodeName: a pod that names a node (``spec.nodeName``) fits only that node.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``. From 1.37 it also has a
PreFilter that narrows such a pod's nodes to the named one (``NodeNameWithPreFilter``), and runs
before NodeUnschedulable (``scheduler.config.default_plugins``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names

__all__ = ["ERR_REASON", "NodeName", "NodeNameWithPreFilter"]

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    NAME = names.NODE_NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.NODE_NAME_SIGNER_NAME, signers.spec_field(pod, "nodeName") or "")], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only the arrival of the named node can help. Upstream registers no hint for it, so the
        # default one (always Queue) decides.
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.node_name

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.node_name or pod.node_name == node_info.name:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON,))


class NodeNameWithPreFilter(NodeName):
    """1.37's NodeName: the other nodes become unresolvable at PreFilter, so none is a preemption target."""

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if pod.node_name:
            return PreFilterResult(frozenset({pod.node_name})), None
        return None, None
