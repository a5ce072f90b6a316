"""Errors the I/O layer maps API failures to, so the core never sees ``ApiException``.

SchedulerIOError
├── PodGoneError            the pod no longer exists (404): never requeue it
├── BindConflictError       someone else bound it, or it is terminating (409): never requeue it
├── DisruptionBudgetError   an eviction a PodDisruptionBudget refuses (429 with its cause): not retried
└── TransientAPIError  429, 5xx, connection trouble, after retries: requeue with backoff
    └── NotLeadingError  not sent: the leader is no longer sure of its lease (fencing)
"""

from __future__ import annotations

__all__ = [
    "BindConflictError",
    "DisruptionBudgetError",
    "NotLeadingError",
    "PodGoneError",
    "SchedulerIOError",
    "TransientAPIError",
]


class SchedulerIOError(Exception):
    """Base of every API failure the scheduler knows how to handle."""


class PodGoneError(SchedulerIOError):
    """The pod was deleted while we worked on it."""


class BindConflictError(SchedulerIOError):
    """The pod is already bound (to another node, or by another scheduler) or cannot be bound any more."""


class DisruptionBudgetError(SchedulerIOError):
    """An eviction refused by a PodDisruptionBudget: the server's 429 carries a ``DisruptionBudget``
    cause. Not throttling: retrying at once only asks again; the caller waits and plans again."""


class TransientAPIError(SchedulerIOError):
    """The API could not be reached or refused for now; retried already, worth another attempt later."""

    def __init__(self, message: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        # The server's Retry-After (seconds): API Priority and Fairness sends it with its 429s.
        self.retry_after = retry_after


class NotLeadingError(TransientAPIError):
    """A write not sent because this process may have lost the leader lease: the pod goes back to
    the queue (for whichever replica leads next), and the process is about to step down."""
