"""The refusal a plugin gives for what spread-scheduler does not do (yet).

DynamicResources refuses every pod with a resource claim, VolumeBinding a claim still to be bound:
UnschedulableAndUnresolvable, naming the pod field and the plugin, so a pod that opts in is never
placed where kube-scheduler might decide otherwise (DESIGN.md, invariant 5).
"""

from __future__ import annotations

from scheduler.framework.status import Code, Status

__all__ = ["SKIP", "refusal"]

SKIP = Status(Code.SKIP)


def refusal(field: str, plugin: str, consequence: str = "") -> Status:
    """``<field> needs the <plugin> plugin, which spread-scheduler does not run yet`` (or ``: <consequence>``)."""
    tail = f": {consequence}" if consequence else ", which spread-scheduler does not run yet"
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"{field} needs the {plugin} plugin{tail}",))
