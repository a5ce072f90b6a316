"""Node topology helpers several parts share (``component-helpers/node/topology``)."""

from __future__ import annotations

from scheduler.api.objects import Node

__all__ = ["REGION_LABELS", "ZONE_LABELS", "zone_key"]

ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def zone_key(node: Node) -> str:
    """``utilnode.GetZoneKey``: ``region:\\x00:zone``, or "" for a node with neither label."""
    region = next((node.labels[k] for k in REGION_LABELS if k in node.labels), "")
    zone = next((node.labels[k] for k in ZONE_LABELS if k in node.labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"
