"""In-memory stand-ins for the two I/O seams (Binder, Recorder) and a hand-driven clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.objects import Pod


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeBinder:
    """Records every bind; ``fail_next`` makes the next bind of a pod raise the given errors in order."""

    binds: list[tuple[str, str]] = field(default_factory=list)
    fail_next: dict[str, list[Exception]] = field(default_factory=dict)

    async def bind(self, pod: Pod, node_name: str) -> None:
        errors = self.fail_next.get(pod.key)
        if errors:
            raise errors.pop(0)
        self.binds.append((pod.key, node_name))


@dataclass
class FakeRecorder:
    conditions: list[tuple[str, str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    async def set_unschedulable(self, pod: Pod, reason: str, message: str) -> None:
        self.conditions.append((pod.key, reason, message))

    async def event(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append((pod.key, event_type, reason, note))

    def reasons(self, key: str) -> list[str]:
        return [reason for k, _, reason, _ in self.events if k == key]
