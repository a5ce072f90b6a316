"""The pods whose PreBind is running in this scheduler (upstream's ``runtime/pods_in_prebind_map.go``).

From 1.36 a preemption does not delete a victim that is still in PreBind here: it cancels that
binding cycle, whose pod goes back to the queue ("in kube-scheduler memory"). A pod can be cancelled
until its PreBind has finished (``mark_prebound``); after that only a deletion preempts it. One
event loop runs both sides, so no lock is needed where upstream takes one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["PodInPreBind", "PodsInPreBind"]


class PodInPreBind:
    """One pod in PreBind: ``cancel`` stops its binding cycle; ``cause`` says who did; ``left`` is set
    once the binding cycle has left PreBind, and, when cancelled, has put the pod back in the queue."""

    __slots__ = ("_cancel", "canceled", "cause", "finished", "left")

    def __init__(self, cancel: Callable[[], object]) -> None:
        self._cancel = cancel
        self.canceled = False
        self.finished = False
        self.cause = ""
        self.left = asyncio.Event()

    def cancel_pod(self, message: str) -> bool:
        """Cancel the PreBind unless it has finished; True when the pod is (or already was) cancelled."""
        if self.finished:
            return False
        if not self.canceled:
            self.cause = message
            self._cancel()
        self.canceled = True
        return True

    def mark_prebound(self) -> bool:
        """PreBind is over: no cancelling from now on. False when it was cancelled first."""
        if self.canceled:
            return False
        self.finished = True
        return True


class PodsInPreBind:
    """By pod UID, shared by every profile (upstream makes one map in ``scheduler.New``)."""

    def __init__(self) -> None:
        self._pods: dict[str, PodInPreBind] = {}

    def add(self, uid: str, cancel: Callable[[], object]) -> PodInPreBind:
        entry = PodInPreBind(cancel)
        self._pods[uid] = entry
        return entry

    def get(self, uid: str) -> PodInPreBind | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        entry = self._pods.pop(uid, None)
        if entry is not None:
            entry.left.set()

    def __len__(self) -> int:
        return len(self._pods)
