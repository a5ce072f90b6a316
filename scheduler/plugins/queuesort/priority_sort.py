"""PrioritySort: higher ``spec.priority`` first, then the earlier queue timestamp.

Upstream: ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.interface import Handle
from scheduler.plugins import names

__all__ = ["PrioritySort"]


class PrioritySort:
    NAME = names.PRIORITY_SORT

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle

    def less(self, a: Pod, a_timestamp: float, b: Pod, b_timestamp: float) -> bool:
        if a.priority != b.priority:
            return a.priority > b.priority
        return a_timestamp < b_timestamp

    def sort_key(self, pod: Pod, timestamp: float) -> tuple[int, float]:
        """The same order as ``less``, as a key for heaps and ``sorted``."""
        return (-pod.priority, timestamp)
