"""The scheduler-extender seam (upstream ``fwk.Extender``, ``k8s.io/kube-scheduler/extender/v1``).

Pure: a Protocol, the result types, and the one async helper that asks binders in turn. The HTTP
client lives in ``scheduler.kube.extender``; tests plug in fakes. Extenders are shared by every profile,
as upstream's ``extenders:`` list is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from scheduler.api.objects import Pod
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo

__all__ = [
    "EXTENDER_NAME",
    "EXTENDER_SCORE_SCALE",
    "MAX_EXTENDER_PRIORITY",
    "Extender",
    "ExtenderError",
    "ExtenderFilterResult",
    "HostPriority",
    "extenders_binding",
]

log = structlog.get_logger("spread-scheduler")

# ``framework.ExtenderName``: the pseudo plugin put into UnschedulablePlugins when an extender
# removed nodes; registered for every cluster event, since extenders have no queueing hints (#122019).
EXTENDER_NAME = "Extender"
MAX_EXTENDER_PRIORITY = 10
# ``MaxNodeScore / MaxExtenderPriority`` in Go's integer arithmetic: an extender's 0..10 becomes 0..100.
EXTENDER_SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


class ExtenderError(Exception):
    """An extender call failed: transport error, timeout, non-200 answer, bad JSON, or its ``Error``."""


@dataclass(frozen=True, slots=True)
class ExtenderFilterResult:
    """``ExtenderFilterResult``: the nodes that passed (names), and why others failed."""

    node_names: Sequence[str]
    failed_nodes: Mapping[str, str] = field(default_factory=dict)
    failed_and_unresolvable_nodes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostPriority:
    host: str
    score: int


class Extender(Protocol):
    """What the scheduling and binding cycles ask of one configured extender."""

    @property
    def name(self) -> str:
        """The urlPrefix: how upstream names an extender in logs."""
        ...

    @property
    def weight(self) -> int: ...

    def is_ignorable(self) -> bool: ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def is_interested(self, pod: Pod) -> bool:
        """True unless managedResources is set and the pod requests none of them."""
        ...

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult:
        """Raises ``ExtenderError``; the result's names must come from ``nodes``."""
        ...

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[HostPriority]:
        """Scores 0..MAX_EXTENDER_PRIORITY, meant to be multiplied by ``weight``; raises ``ExtenderError``."""
        ...

    async def bind(self, pod: Pod, node_name: str) -> None:
        """Raises ``ExtenderError`` when the extender could not bind."""
        ...


async def extenders_binding(extenders: Sequence[Extender], pod: Pod, node_name: str) -> tuple[bool, str | None]:
    """``extendersBinding``: the first interested binder binds; (handled, error message or None).

    An ignorable binder's failure passes the pod to the next binder and finally to the Bind plugins;
    any other failure is the binding cycle's error.
    """
    for extender in extenders:
        if not extender.is_binder() or not extender.is_interested(pod):
            continue
        try:
            await extender.bind(pod, node_name)
        except Exception as exc:  # an extender's failure must never crash the binding cycle
            if extender.is_ignorable():
                log.info(
                    "Skipping extender in bind as it returned error and has ignorable flag set",
                    extender=extender.name,
                    err=str(exc),
                )
                continue
            return True, str(exc)
        return True, None
    return False, None
