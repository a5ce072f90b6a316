"""The node tree: nodes grouped by zone, listed zone by zone (upstream ``backend/cache/node_tree.go``)."""

from __future__ import annotations

from scheduler.api.objects import Node, NodeName
from scheduler.plugins.helper.node import zone_key

__all__ = ["NodeTree"]


class NodeTree:
    """Nodes grouped by zone; ``ordered()`` interleaves zones round-robin like ``nodeTree.list()``."""

    def __init__(self) -> None:
        self._zones: dict[str, list[NodeName]] = {}
        self._zone_of: dict[NodeName, str] = {}
        self._ordered: list[NodeName] | None = None

    def add(self, node: Node) -> None:
        if node.name in self._zone_of:
            return
        zone = zone_key(node)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone
        self._ordered = None

    def remove(self, name: NodeName) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        self._ordered = None

    def update(self, old: Node, new: Node) -> bool:
        """Move the node if its zone changed; True when that changed the order."""
        if zone_key(old) == zone_key(new):
            return False
        self.remove(old.name)
        self.add(new)
        return True

    def ordered(self) -> list[NodeName]:
        if self._ordered is None:
            out: list[NodeName] = []
            lists = list(self._zones.values())
            depth = max((len(names) for names in lists), default=0)
            for i in range(depth):
                out.extend(names[i] for names in lists if i < len(names))
            self._ordered = out
        return self._ordered
