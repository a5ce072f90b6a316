"""Status codes and the Status a plugin returns (``kube-scheduler/framework/interface.go``).

Plugins return ``None`` for Success on the hot paths (Filter is called once per node), so a
``Status`` object exists only when something is worth saying.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["REJECTED_CODES", "Code", "Status", "StatusError", "is_rejected"]


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

REJECTED_CODES = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@dataclass(frozen=True, slots=True)
class Status:
    """A non-trivial outcome: code, reasons, the plugin that said it, and an error text for Error."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: str | None = None

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> Status:
        return cls(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def as_error(cls, message: str) -> Status:
        return cls(Code.ERROR, (), "", message)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin, self.error)

    def message(self) -> str:
        """Reasons joined by ``", "``, the error text first (``Status.Message()``)."""
        parts = ([self.error] if self.error else []) + list(self.reasons)
        return ", ".join(parts)

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_rejected(self) -> bool:
        return self.code in REJECTED_CODES

    def __bool__(self) -> bool:
        raise TypeError("Status has no truth value: use is_success(), is_rejected() or compare code")


def is_rejected(status: Status | None) -> bool:
    return status is not None and status.code in REJECTED_CODES


class StatusError(Exception):
    """Raised by a plugin's Score when it fails; the framework turns it into an Error status."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status
