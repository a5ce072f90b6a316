"""What the refusing stand-ins for upstream plugins we do not run yet share.

A stand-in carries its upstream plugin's name and sits at upstream's place in the default profile.
Its PreFilter skips every pod the upstream plugin would not act on (the same decision as without
it) and refuses the rest as UnschedulableAndUnresolvable, naming the pod field and the plugin: a
pod that opts in is never placed where kube-scheduler might refuse it (DESIGN.md, invariant 5).
Disabling a stand-in in a profile is disabling the upstream plugin: the field is then ignored.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.api.objects import Pod
from scheduler.framework.status import Code, Status

__all__ = ["SKIP", "refusal", "volume_field"]

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
