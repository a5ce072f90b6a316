"""The scheduler's cache: what is where, including assumed pods, kept incrementally. No I/O.

The cache is also the Snapshot a cycle reads. Scheduling cycles run synchronously on the event
loop, so no watch event can change the cache in the middle of one: the "snapshot" is a read-only
view of the live structures, never a copy.

Per-pod work stays independent of the number of pods in the cluster because PodTopologySpread's
"pods matching this selector, per node" is answered from ``PodCountIndex``, which is updated when a
pod is added or removed instead of being recomputed by scanning every pod. For the same reason the
NodeInfos holding pods with inter-pod affinity (any, and required anti-affinity) are kept as two
lists updated with each pod and node change (upstream's snapshot ``havePodsWithAffinityNodeInfoList``
and ``havePodsWithRequiredAntiAffinityNodeInfoList``). Likewise ImageLocality's
"nodes holding this image" comes from ``ImageStates``, updated as nodes are added, changed or removed.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.labels import Selector
from scheduler.api.objects import Namespace, Node, NodeName, Pod, PodKey, SelectingObject
from scheduler.api.resources import HostPort
from scheduler.backend.cache.image_states import ImageStates
from scheduler.backend.cache.node_tree import NodeTree
from scheduler.backend.cache.pod_counts import PodCountIndex
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.features import PER_CONTAINER_RULE, PodRequestsRule
from scheduler.framework.interface import NodeIndex
from scheduler.framework.types import NodeInfo

__all__ = ["Cache"]

IndexT = TypeVar("IndexT", bound=NodeIndex)
# Indexes kept (least recently used dropped beyond): each node change visits every one of them.
NODE_INDEXES = 256


class Cache:
    """Nodes, assigned and assumed pods, and the objects that select pods (for default spreading)."""

    def __init__(self, *, requests_rule: PodRequestsRule = PER_CONTAINER_RULE) -> None:
        # How every NodeInfo counts pods resized in place (``Features.pod_requests_rule``).
        self.requests_rule = requests_rule
        self._nodes: dict[NodeName, NodeInfo] = {}
        self._tree = NodeTree()
        self._infos: list[NodeInfo] | None = None
        self._pod_nodes: dict[PodKey, NodeName] = {}
        self._pods: dict[PodKey, Pod] = {}
        self._assumed: set[PodKey] = set()
        self._orphans: dict[NodeName, dict[PodKey, Pod]] = {}
        # And their used host ports: upstream keeps a removed node's NodeInfo while pods remain, so
        # a port freed there (``NodeInfo.used_ports`` is a set) stays free when the node returns.
        self._orphan_ports: dict[NodeName, set[HostPort]] = {}
        self._index = PodCountIndex()
        self._images = ImageStates()
        self._selecting: dict[str, dict[str, dict[str, SelectingObject]]] = {}
        self._indexes: OrderedDict[Hashable, NodeIndex] = OrderedDict()
        self._namespaces: dict[str, Namespace] = {}
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        # Nodes (in the cache, not orphans) with at least one pod on the matching NodeInfo list.
        self._have_affinity: dict[NodeName, NodeInfo] = {}
        self._have_required_anti_affinity: dict[NodeName, NodeInfo] = {}
        # PersistentVolumes, claims, StorageClasses and the CSI objects, as the volume plugins look them up.
        self.storage = StorageObjects()
        # ``namespace/claim`` -> uses by pods on nodes in the cache (upstream's snapshot ``usedPVCSet``
        # is the union of the nodes' PVCRefCounts; pods of a node not seen yet are not in it).
        self._used_pvcs: Counter[str] = Counter()

    # -- nodes ----------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        info = self._nodes.get(node.name)
        if info is not None:
            self.update_node(info.node, node)
            return
        info = NodeInfo(node, self._orphans.pop(node.name, {}), requests_rule=self.requests_rule)
        ports = self._orphan_ports.pop(node.name, None)
        if ports is not None:
            info.used_ports = ports
        self._nodes[node.name] = info
        self._used_pvcs.update(info.pvc_ref_counts)
        self._track(info)
        self._tree.add(node)
        self._images.add_node(node)
        self._infos = None
        for index in self._indexes.values():
            index.put(info)

    def update_node(self, old: Node, new: Node) -> None:
        info = self._nodes.get(new.name)
        if info is None:
            self.add_node(new)
            return
        counted = info.node  # the node as counted, whatever ``old`` says
        self._images.update_node(counted, new)
        info.set_node(new)
        if self._tree.update(counted, new):
            self._infos = None  # the zone changed: the order changes; otherwise the list stays valid
        for index in self._indexes.values():
            index.put(info)

    def remove_node(self, name: str) -> None:
        info = self._nodes.pop(NodeName(name), None)
        if info is None:
            return
        self._tree.remove(info.name)
        self._images.remove_node(info.node)
        if info.pods:  # pods outlive their node in the cache until their own delete arrives
            self._orphans[info.name] = info.pods
            self._orphan_ports[info.name] = set(info.used_ports)
        self._used_pvcs.subtract(info.pvc_ref_counts)
        self._used_pvcs = +self._used_pvcs
        self._have_affinity.pop(info.name, None)
        self._have_required_anti_affinity.pop(info.name, None)
        self._infos = None
        for index in self._indexes.values():
            index.drop(info.name)

    def _track(self, info: NodeInfo) -> None:
        """Keep ``info`` on (or off) the two affinity lists after its pods changed: O(1)."""
        for have, pods in (
            (self._have_affinity, info.pods_with_affinity),
            (self._have_required_anti_affinity, info.pods_with_required_anti_affinity),
        ):
            if pods:
                have[info.name] = info
            else:
                have.pop(info.name, None)

    def _count_pvcs(self, pod: Pod, sign: int) -> None:
        for volume in pod.volumes:
            if "persistentVolumeClaim" in volume.sources:
                key = f"{pod.namespace}/{volume.claim_name}"
                self._used_pvcs[key] += sign
                if self._used_pvcs[key] <= 0:
                    del self._used_pvcs[key]

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether a pod on a node of the cache uses claim ``namespace/name`` (``IsPVCUsedByPods``)."""
        return key in self._used_pvcs

    # -- pods -----------------------------------------------------------------------------

    def _place(self, pod: Pod, node: NodeName) -> None:
        self._pods[pod.key] = pod
        self._pod_nodes[pod.key] = node
        info = self._nodes.get(node)
        if info is not None:
            info.add_pod(pod)
            self._track(info)
            self._count_pvcs(pod, 1)
        else:
            self._orphans.setdefault(node, {})[pod.key] = pod
            self._orphan_ports.setdefault(node, set()).update(pod.resources.under(self.requests_rule).host_ports)
        self._index.add(pod, node)

    def _unplace(self, key: PodKey) -> Pod | None:
        pod = self._pods.pop(key, None)
        node = self._pod_nodes.pop(key, None)
        if pod is None or node is None:
            return None
        info = self._nodes.get(node)
        if info is not None:
            info.remove_pod(key)
            self._track(info)
            self._count_pvcs(pod, -1)
        else:
            self._orphans.get(node, {}).pop(key, None)
            self._orphan_ports.get(node, set()).difference_update(pod.resources.under(self.requests_rule).host_ports)
        self._index.remove(pod)
        return pod

    def add_pod(self, pod: Pod) -> None:
        """An assigned, non-terminal pod seen by the watch (confirms an assumed one)."""
        if not pod.node_name or pod.terminal:
            self.remove_pod(pod)
            return
        self._assumed.discard(pod.key)
        self._unplace(pod.key)
        self._place(pod, NodeName(pod.node_name))

    update_pod = add_pod

    def remove_pod(self, pod: Pod) -> None:
        self._assumed.discard(pod.key)
        self._unplace(pod.key)

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        """Count the pod on ``node_name`` from now on, before the API confirms the binding."""
        self._unplace(pod.key)
        self._place(pod, NodeName(node_name))
        self._assumed.add(pod.key)

    def forget_pod(self, pod: Pod) -> None:
        """Undo ``assume_pod`` after a failed binding; a watch-confirmed pod is left alone."""
        if pod.key in self._assumed:
            self._assumed.discard(pod.key)
            self._unplace(pod.key)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def pod(self, key: str) -> Pod | None:
        """The assigned or assumed pod under ``key``, as last seen."""
        return self._pods.get(PodKey(key))

    def pod_node(self, key: str) -> NodeName | None:
        return self._pod_nodes.get(PodKey(key))

    @property
    def pod_count(self) -> int:
        return len(self._pods)

    def pods(self) -> list[Pod]:
        """Every assigned or assumed pod (a copy: callers may change the cache while iterating)."""
        return list(self._pods.values())

    # -- selecting objects ------------------------------------------------------------------

    def upsert_selecting_object(self, obj: SelectingObject) -> None:
        self._selecting.setdefault(obj.kind, {}).setdefault(obj.namespace, {})[obj.name] = obj

    def remove_selecting_object(self, kind: str, namespace: str, name: str) -> None:
        self._selecting.get(kind, {}).get(namespace, {}).pop(name, None)

    # -- PodDisruptionBudgets (preemption) ----------------------------------------------------

    def upsert_pdb(self, pdb: PodDisruptionBudget) -> None:
        self._pdbs[pdb.key] = pdb

    def remove_pdb(self, namespace: str, name: str) -> None:
        self._pdbs.pop(f"{namespace}/{name}", None)

    # -- namespaces ---------------------------------------------------------------------------

    def upsert_namespace(self, namespace: Namespace) -> None:
        self._namespaces[namespace.name] = namespace

    def remove_namespace(self, name: str) -> None:
        self._namespaces.pop(name, None)

    # -- Snapshot -----------------------------------------------------------------------------

    def node_infos(self) -> Sequence[NodeInfo]:
        if self._infos is None:
            self._infos = [self._nodes[name] for name in self._tree.ordered()]
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        return self._nodes.get(NodeName(name))

    def count_matching(self, namespace: str, selector: Selector) -> Mapping[NodeName, int]:
        return self._index.counts(namespace, selector)

    def count_all_matching(self, namespace: str, selector: Selector) -> Mapping[NodeName, int]:
        return self._index.counts(namespace, selector, terminating=True)

    def image_num_nodes(self, name: str) -> int:
        return self._images.num_nodes(name)

    def image_counts(self) -> dict[str, int]:
        """Every image name on some node -> on how many (a copy; for tests and debugging)."""
        return self._images.counts()

    def node_index(self, key: Hashable, build: Callable[[], IndexT]) -> IndexT:
        """The index under ``key``, filled from every node on first use and kept current per node
        change after that: facts about nodes alone, shared by every pod that asks the same question."""
        hit = self._indexes.get(key)
        if hit is not None:
            self._indexes.move_to_end(key)
            return hit  # type: ignore[return-value]
        index = build()
        for info in self.node_infos():
            index.put(info)
        self._indexes[key] = index
        if len(self._indexes) > NODE_INDEXES:
            self._indexes.popitem(last=False)
        return index

    def have_pods_with_affinity_node_infos(self) -> Sequence[NodeInfo]:
        return list(self._have_affinity.values())

    def have_pods_with_required_anti_affinity_node_infos(self) -> Sequence[NodeInfo]:
        return list(self._have_required_anti_affinity.values())

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        namespace = self._namespaces.get(name)
        return None if namespace is None else namespace.labels

    def namespaces_matching(self, selector: Selector) -> frozenset[str]:
        return frozenset(name for name, ns in self._namespaces.items() if selector.matches(ns.labels))

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        return list(self._pdbs.values())

    def selecting_objects(self, kind: str, namespace: str) -> Iterable[SelectingObject]:
        return self._selecting.get(kind, {}).get(namespace, {}).values()

    def get_selecting_object(self, kind: str, namespace: str, name: str) -> SelectingObject | None:
        return self._selecting.get(kind, {}).get(namespace, {}).get(name)
