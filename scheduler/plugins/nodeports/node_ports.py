"""NodePorts: a pod's hostPorts must be free on the node (``plugins/nodeports/node_ports.go``)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.resources import HostPort
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    as_objects,
    assigned_pod_resource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names

__all__ = ["ERR_REASON", "NodePorts", "fits_ports"]

NAME = names.NODE_PORTS
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"
_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON,), NAME)


def _conflicts(want: HostPort, in_use: Collection[HostPort]) -> bool:
    """``HostPortInfo.CheckConflict``: 0.0.0.0 clashes with any IP on the same protocol/port."""
    if want.ip == BIND_ALL:
        return any(used.protocol == want.protocol and used.port == want.port for used in in_use)
    return HostPort(BIND_ALL, want.protocol, want.port) in in_use or want in in_use


def fits_ports(wanted: Sequence[HostPort], in_use: Collection[HostPort]) -> bool:
    """No wanted port conflicts with one in use (a node's ``used_ports``, or any set of ports)."""
    return not any(_conflicts(port, in_use) for port in wanted)


class NodePorts:
    """PreFilter, Filter and EnqueueExtensions."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.HOST_PORTS_SIGNER_NAME, signers.host_ports_signer(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A deleted pod frees its host ports.
            ClusterEventWithHint(
                ClusterEvent(assigned_pod_resource(self.features), ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            # A new node has every port free (no hint: always worth a try).
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        objs = as_objects(Pod, old, None)
        if objs is None or objs[0] is None:
            return QueueingHint.QUEUE
        deleted = objs[0]
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        ports = deleted.resources.host_ports
        if not ports:
            return QueueingHint.QUEUE_SKIP
        if fits_ports(pod.resources.host_ports, set(ports)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.resources.host_ports

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = pod.resources.host_ports
        if not ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(wanted, tuple):
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return None if fits_ports(wanted, node_info.used_ports) else _CONFLICT
