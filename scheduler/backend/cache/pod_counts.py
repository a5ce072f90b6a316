"""Pods matching a selector, per node, kept incrementally so no cycle rescans every pod."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Mapping

from scheduler.api.labels import Selector
from scheduler.api.objects import NodeName, Pod, PodKey

__all__ = ["PodCountIndex"]

_Key = tuple[str, Selector, bool]  # (namespace, selector, terminating pods counted too)


class PodCountIndex:
    """Per (namespace, selector): how many pods on each node match, terminating ones left out
    (PodTopologySpread, SelectorSpread) or counted too (InterPodAffinity, as upstream's
    ``NodeInfo.Pods``): two kinds of entry over one record of the pods.

    An entry is built once by one scan of the namespace's pods and then kept current by
    ``add``/``remove``. Entries are evicted least-recently-used beyond ``max_entries``, which
    bounds both memory and the cost of each pod event (every entry of the pod's namespace is
    checked once).
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self._pods: dict[str, dict[PodKey, tuple[Mapping[str, str], NodeName, bool]]] = {}
        self._entries: OrderedDict[_Key, Counter[NodeName]] = OrderedDict()
        self._by_namespace: dict[str, set[tuple[Selector, bool]]] = {}
        self._max = max_entries

    def add(self, pod: Pod, node: NodeName) -> None:
        self._pods.setdefault(pod.namespace, {})[pod.key] = (pod.labels, node, pod.terminating)
        for selector, terminating in self._by_namespace.get(pod.namespace, ()):
            if (terminating or not pod.terminating) and selector.matches(pod.labels):
                self._entries[(pod.namespace, selector, terminating)][node] += 1

    def remove(self, pod: Pod) -> None:
        pods = self._pods.get(pod.namespace)
        if pods is None or pod.key not in pods:
            return
        labels, node, pod_terminating = pods.pop(pod.key)
        for selector, terminating in self._by_namespace.get(pod.namespace, ()):
            if (terminating or not pod_terminating) and selector.matches(labels):
                counter = self._entries[(pod.namespace, selector, terminating)]
                counter[node] -= 1
                if counter[node] <= 0:
                    del counter[node]

    def counts(self, namespace: str, selector: Selector, *, terminating: bool = False) -> Counter[NodeName]:
        """Matching pods per node; ``terminating`` counts pods being deleted too."""
        key = (namespace, selector, terminating)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        entry = Counter()
        if not selector.nothing:
            for labels, node, pod_terminating in self._pods.get(namespace, {}).values():
                if (terminating or not pod_terminating) and selector.matches(labels):
                    entry[node] += 1
        self._entries[key] = entry
        self._by_namespace.setdefault(namespace, set()).add((selector, terminating))
        if len(self._entries) > self._max:
            (old_ns, old_sel, old_terminating), _ = self._entries.popitem(last=False)
            self._by_namespace[old_ns].discard((old_sel, old_terminating))
        return entry
