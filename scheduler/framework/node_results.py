"""Per-node results of signed plugins, kept per pod signature and reused while a node is unchanged.

Upstream 1.35 signs pods (``SignPod``) so that opportunistic batching can hand a pod the previous
pod's whole result (``scheduler.framework.batch``, with upstream's signatures). Per plugin, we sign
pods the same way for a narrower reuse that never changes a decision (``SignPlugin.sign_pod``, each
covering everything its plugin reads): a signed plugin's Filter status and Score on one node
depend only on the pod's signature, the plugin's arguments and that NodeInfo, so a pod signed like
an earlier one reuses those results on every node whose generation has not moved since. Pods of one
Deployment share a signature; after each placement only the chosen node's results are computed
again. PodTopologySpread is not signed (its answers depend on pods across the cluster) and runs on
every node as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["NodeResults"]

# Signatures remembered at once; the least recently used is dropped beyond this.
MAX_SIGNATURES = 32


class NodeResults:
    """signature -> node generation -> result.

    A generation names one state of one NodeInfo in this process (``NodeInfo.generation``), so it
    is the whole key: a changed node is a new key, and Score looks up all its nodes with one ``map``
    over their generations. Keys of states that are gone stay until the table is emptied."""

    def __init__(self, max_signatures: int = MAX_SIGNATURES) -> None:
        self._tables: OrderedDict[Hashable, dict[int, object]] = OrderedDict()
        self._max = max_signatures

    def table(self, signature: Hashable, node_count: int) -> dict[int, object]:
        """The results kept for ``signature``; emptied when changed or deleted nodes have made it
        outgrow the cluster (a node's old states are then dropped with the rest)."""
        table = self._tables.get(signature)
        if table is None:
            table = self._tables[signature] = {}
            if len(self._tables) > self._max:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(signature)
            if len(table) > 2 * node_count + 64:
                table.clear()
        return table

    def __len__(self) -> int:
        return len(self._tables)
