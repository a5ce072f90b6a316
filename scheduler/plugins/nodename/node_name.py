"""NodeName: a pod that names a node (``spec.nodeName``) fits only that node.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``.
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
from scheduler.framework.types import NodeInfo
from scheduler.plugins import names

__all__ = ["ERR_REASON", "NodeName"]

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
