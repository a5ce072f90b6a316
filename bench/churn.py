"""Node churn for the in-process benchmark, the same on both sides (issue #22).

A real cluster writes every node's status every few minutes (5,000 nodes: about 17 updates/s) and
now and then changes a node's labels or taints. While the measured pods are scheduled, before each
pod, each side applies the updates due by its own elapsed time, through its cache:

- status updates at ``17 * nodes / 5000`` per second: update k goes to node ``(k * 7919) % nodes``
  (in the workload's node order) and changes nothing the scheduler reads (kubelet's heartbeat);
- label/taint changes at ``changes_per_s`` (default 1/s): change j goes to node
  ``(j * 104729) % nodes``; an even j sets the label ``bench.spread-scheduler.io/churn=<j>``, an odd
  j adds the PreferNoSchedule taint ``bench.spread-scheduler.io/churn`` if the node lacks it and
  removes it otherwise.

e2e/controlplane/cmd/schedbench implements the same rules for kube-scheduler (``-status-per-s``,
``-changes-per-s``); a slower side gets more updates per pod, as it would in a cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.taints import Taint
from scheduler.backend.cache.cache import Cache

__all__ = ["CHURN_KEY", "Churn", "status_rate"]

CHURN_KEY = "bench.spread-scheduler.io/churn"
STATUS_STRIDE = 7919
CHANGE_STRIDE = 104729


def status_rate(nodes: int) -> float:
    """Kubelet status writes per second for a cluster of ``nodes`` (17/s per 5,000 nodes)."""
    return 17.0 * nodes / 5000


@dataclass
class Churn:
    """Applies the updates due at ``elapsed`` seconds to ``cache``; counts what it applied."""

    names: Sequence[str]
    status_per_s: float
    changes_per_s: float
    status_updates: int = 0
    changes: int = 0
    _version: int = field(default=10**9)

    def apply_due(self, cache: Cache, elapsed: float) -> None:
        while self.status_updates < int(elapsed * self.status_per_s):
            self.update(cache, self.names[self.status_updates * STATUS_STRIDE % len(self.names)], None)
            self.status_updates += 1
        while self.changes < int(elapsed * self.changes_per_s):
            self.update(cache, self.names[self.changes * CHANGE_STRIDE % len(self.names)], self.changes)
            self.changes += 1

    def update(self, cache: Cache, name: str, change: int | None) -> None:
        """One update of node ``name``: a status write (``change`` None) or label/taint change ``change``."""
        info = cache.get(name)
        if info is None:
            return
        old = info.node
        self._version += 1
        new = dataclasses.replace(old, resource_version=str(self._version))
        if change is not None and change % 2 == 0:
            new = dataclasses.replace(new, labels={**old.labels, CHURN_KEY: str(change)})
        elif change is not None:
            kept = tuple(t for t in old.taints if t.key != CHURN_KEY)
            taints = kept if len(kept) != len(old.taints) else (*kept, Taint(CHURN_KEY, "", "PreferNoSchedule"))
            new = dataclasses.replace(new, taints=taints)
        cache.update_node(old, new)
