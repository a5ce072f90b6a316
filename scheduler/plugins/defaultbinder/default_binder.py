"""DefaultBinder: binds through the injected ``Binder`` (the API call lives in ``scheduler.kube``).

Upstream: ``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.logs import enabled, kobj
from scheduler.plugins import names

__all__ = ["DefaultBinder"]

log = structlog.get_logger("spread-scheduler")


class DefaultBinder:
    NAME = names.DEFAULT_BINDER

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        binder = self.handle.binder
        if binder is None:
            return Status(Code.SKIP)
        if enabled(3):
            log.info("Attempting to bind pod to node", v=3, pod=kobj(pod.key), node=node_name)
        # Errors propagate: the binding cycle tells "pod gone" and "already bound" from retriable ones.
        await binder.bind(pod, node_name)
        return None
