"""How many nodes hold each image, kept as nodes come, change and go (upstream's cache ``imageStates``)."""

from __future__ import annotations

from collections import Counter

from scheduler.api.objects import Node

__all__ = ["ImageStates"]


class ImageStates:
    """Per image name, the number of nodes whose ``status.images`` lists it.

    Upstream keeps the set of node names per image and reads its length (``ImageStateSummary.NumNodes``);
    a node lists each name at most once in ``Node.images``, so a count is the same number. An image on
    no node is dropped, so ``len()`` is the number of distinct images in the cluster, as upstream's.
    """

    __slots__ = ("_num_nodes",)

    def __init__(self) -> None:
        self._num_nodes: Counter[str] = Counter()

    def add_node(self, node: Node) -> None:
        for name in node.images:
            self._num_nodes[name] += 1

    def remove_node(self, node: Node) -> None:
        for name in node.images:
            left = self._num_nodes[name] - 1
            if left > 0:
                self._num_nodes[name] = left
            else:
                del self._num_nodes[name]

    def update_node(self, old: Node, new: Node) -> None:
        if old.images == new.images:  # the usual status heartbeat: nothing to recount
            return
        self.remove_node(old)
        self.add_node(new)

    def num_nodes(self, name: str) -> int:
        return self._num_nodes.get(name, 0)

    def counts(self) -> dict[str, int]:
        """A copy of every count (for tests and debugging)."""
        return dict(self._num_nodes)

    def __len__(self) -> int:
        return len(self._num_nodes)
