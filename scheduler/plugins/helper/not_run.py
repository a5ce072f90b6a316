"""What the refusing stand-ins for upstream plugins we do not run yet share.

A stand-in carries its upstream plugin's name and sits at upstream's place in the default profile.
Its PreFilter skips every pod the upstream plugin would not act on (the same decision as without
it) and refuses the rest as UnschedulableAndUnresolvable, naming the pod field and the plugin: a
pod that opts in is never placed where kube-scheduler might refuse it (DESIGN.md, invariant 5).
Disabling a stand-in in a profile is disabling the upstream plugin: the field is then ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins.helper.volumes import sign_volumes

__all__ = ["SKIP", "VolumeStandIn", "refusal", "volume_field"]

SKIP = Status(Code.SKIP)


def refusal(field: str, plugin: str, consequence: str = "") -> Status:
    """``<field> needs the <plugin> plugin, which spread-scheduler does not run yet`` (or ``: <consequence>``)."""
    tail = f": {consequence}" if consequence else ", which spread-scheduler does not run yet"
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"{field} needs the {plugin} plugin{tail}",))


def volume_field(pod: Pod, sources: Iterable[str]) -> str | None:
    """``spec.volumes[i].<source> (volume "<name>")`` for the first volume using one of ``sources``."""
    wanted = frozenset(sources)
    for i, volume in enumerate(pod.volumes):
        used = volume.sources & wanted
        if used:
            return f'spec.volumes[{i}].{min(used)} (volume "{volume.name}")'
    return None


class VolumeStandIn:
    """A volume plugin's stand-in: refuses a pod with a volume of one of ``SOURCES``, skips the rest."""

    NAME: str
    SOURCES: frozenset[str]

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        return sign_volumes(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # spec.volumes is immutable and nothing else changes this refusal: only the periodic flush
        # retries such a pod.
        return []

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        field = volume_field(pod, self.SOURCES)
        if field is None:
            return None, SKIP
        return None, refusal(field, self.NAME)
