"""DefaultPreemption, accepted in a configuration and never preempting.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``, a PostFilter
that evicts lower-priority pods. This scheduler evicts nothing (README: deliberate differences), but
a configuration written for kube-scheduler names it (enabled, disabled, or with
``DefaultPreemptionArgs``), so it is a known plugin: it is not in our default profile, and where
a configuration enables it, its PostFilter finds nothing to do and adds nothing to the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.objects import NodeName, Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, NominatingInfo
from scheduler.framework.status import Code, Status
from scheduler.plugins import names

__all__ = ["DefaultPreemption"]


class DefaultPreemption:
    NAME = names.DEFAULT_PREEMPTION

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        # DefaultPreemptionArgs (minCandidateNodesPercentage, minCandidateNodesAbsolute) are accepted and unused.
        self.handle = handle

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        return None, Status(Code.UNSCHEDULABLE)
