"""In-memory stand-ins for the scheduler's two write seams (Binder, Recorder) and a hand-driven clock.

Nothing here sleeps: a test moves ``FakeClock`` by hand, and a held bind waits on an
``asyncio.Event`` the test sets when it wants the binding to land.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.api.objects import Pod

# How long a test waits for something the code under test should do at once: a bug fails in seconds.
WAIT_SECONDS = 5.0

__all__ = ["WAIT_SECONDS", "Condition", "Event", "FakeBinder", "FakeClock", "FakeRecorder"]


class FakeClock:
    """Any ``clock=`` seam (``Scheduler``, the queue, leader election, caches with a TTL): returns ``now``
    until the test calls ``advance`` or sets ``now``."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeBinder:
    """Records every ``bind`` call; raises scripted errors per pod key, in order, instead of binding.

    ``hold``, when given, makes every call wait until the event is set (a binding in flight).
    ``api`` models the API server's side: it may raise (e.g. ``PodGoneError`` for a deleted pod).
    """

    calls: list[tuple[str, str]] = field(default_factory=list)
    binds: list[tuple[str, str]] = field(default_factory=list)
    bound_pods: list[Pod] = field(default_factory=list)
    failures: dict[str, list[Exception]] = field(default_factory=dict)
    hold: asyncio.Event | None = None
    api: Callable[[Pod, str], None] | None = None
    _called: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def fail(self, key: str, *errors: Exception) -> None:
        self.failures.setdefault(key, []).extend(errors)

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.calls.append((pod.key, node_name))
        self._called.set()
        if self.hold is not None:
            await self.hold.wait()
        errors = self.failures.get(pod.key)
        if errors:
            raise errors.pop(0)
        if self.api is not None:
            self.api(pod, node_name)
        self.binds.append((pod.key, node_name))
        self.bound_pods.append(pod)

    def calls_for(self, key: str) -> list[str]:
        return [node for k, node in self.calls if k == key]

    async def wait_for_calls(self, count: int, timeout: float = WAIT_SECONDS) -> None:
        """Until ``bind`` has been entered ``count`` times (woken by each call, no polling); a call
        that never comes fails the test after ``timeout`` seconds, not at pytest's global limit."""
        try:
            async with asyncio.timeout(timeout):
                while len(self.calls) < count:
                    self._called.clear()
                    await self._called.wait()
        except TimeoutError:
            raise AssertionError(f"bind was entered {len(self.calls)} times, not {count}, within {timeout}s") from None


@dataclass(frozen=True, slots=True)
class Condition:
    pod: str
    reason: str
    message: str
    nominated: str | None = None  # status.nominatedNodeName written with it (None: untouched)


@dataclass(frozen=True, slots=True)
class Event:
    pod: str
    type: str
    reason: str
    action: str
    note: str


@dataclass
class FakeRecorder:
    """Records PodScheduled=False writes and Events, in the order the scheduler made them."""

    conditions: list[Condition] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    nominations: list[tuple[str, str]] = field(default_factory=list)  # (pod, node): status.nominatedNodeName alone

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        self.conditions.append(Condition(pod.key, reason, message, nominated_node_name))

    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        self.nominations.append((pod.key, node_name))

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        self.events.append(Event(pod.key, event_type, reason, action, note))

    def conditions_for(self, key: str) -> list[Condition]:
        return [c for c in self.conditions if c.pod == key]

    def events_for(self, key: str, reason: str | None = None) -> list[Event]:
        return [e for e in self.events if e.pod == key and (reason is None or e.reason == reason)]

    def writes_for(self, key: str) -> int:
        return len(self.conditions_for(key)) + len(self.events_for(key))
