"""A pending pod with what the queue knows of its attempts (upstream ``framework.QueuedPodInfo``).

A module of its own because every part of the queue reads it: the heaps order it, the backoff
counts come from it, the hints read its rejectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.objects import Pod, PodKey

__all__ = ["QueuedPodInfo"]


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pod: Pod
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""

    @property
    def key(self) -> PodKey:
        return self.pod.key

    @property
    def rejectors(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins
