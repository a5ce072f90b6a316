"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside activeQ until they are gone.

Upstream: ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    another_pods_update,
    as_objects,
    target_pod_resource,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.plugins import names

__all__ = ["SchedulingGates"]


class SchedulingGates:
    NAME = names.SCHEDULING_GATES

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.features = features

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",),
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only removing the last gate of the pod itself releases it.
        return [
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_update_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        if pods is None or pods[1] is None:
            return QueueingHint.QUEUE  # not a pod update: upstream's conversion error means Queue
        return QueueingHint.QUEUE_SKIP if another_pods_update(self.features, pod, pods[1]) else QueueingHint.QUEUE
