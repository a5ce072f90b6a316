"""NodeInfo, PreFilterResult, Diagnosis and FitError (``pkg/scheduler/framework/types.go``)."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.objects import Node, NodeName, Pod, PodKey
from scheduler.api.resources import HostPort
from scheduler.features import PER_CONTAINER_RULE, PodRequestsRule
from scheduler.framework.status import Code, Status

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NO_NODE_AVAILABLE_MSG",
    "Diagnosis",
    "FitError",
    "NodeInfo",
    "NodeToStatus",
    "PreFilterResult",
]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"

# One sequence for every NodeInfo of the process: a generation names one state of one NodeInfo, so a
# node deleted and created again (a new NodeInfo) can never repeat an old generation.
_generations = itertools.count(1)


@dataclass(slots=True, eq=False)
class NodeInfo:
    """A node and the pods the cache places on it (bound, assumed, of any scheduler; never terminal),
    with the totals NodeResourcesFit and NodePorts read, kept as pods come and go."""

    node: Node
    pods: dict[PodKey, Pod] = field(default_factory=dict)
    # How pods resized in place count here, by minor (``Features.pod_requests_rule``).
    requests_rule: PodRequestsRule = field(default=PER_CONTAINER_RULE, kw_only=True)
    requested_milli_cpu: int = 0
    requested_memory: int = 0
    requested_ephemeral_storage: int = 0
    requested_scalar: Counter[str] = field(default_factory=Counter)
    non0_cpu: int = 0
    non0_mem: int = 0
    # A set, as upstream's ``HostPortInfo``: of two pods holding one port, removing either frees it
    # (preemption's dry run and a pod's delete then let a third pod take the port).
    used_ports: set[HostPort] = field(default_factory=set)
    # Upstream's ``PodsWithAffinity`` (podAffinity or podAntiAffinity set) and
    # ``PodsWithRequiredAntiAffinity``: the subsets of ``pods`` InterPodAffinity visits when the
    # incoming pod has no terms of its own, so a cycle never walks every pod of the cluster.
    pods_with_affinity: dict[PodKey, Pod] = field(default_factory=dict)
    pods_with_required_anti_affinity: dict[PodKey, Pod] = field(default_factory=dict)
    # Upstream's ``PVCRefCounts``: ``namespace/claim`` -> how many of ``pods`` use that claim through a
    # ``persistentVolumeClaim`` volume (VolumeRestrictions' ReadWriteOncePod check reads the union).
    pvc_ref_counts: Counter[str] = field(default_factory=Counter)
    # Changes whenever anything above does (upstream's NodeInfo.Generation): results memoized per
    # node (``scheduler.framework.node_results``) are valid while it stays the same.
    generation: int = field(default_factory=lambda: next(_generations))
    # The node's name, as a plain attribute: read per node per cycle, a property showed in profiles.
    name: NodeName = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.node.name
        for pod in self.pods.values():
            self._count(pod, 1)

    def set_node(self, node: Node) -> None:
        """A new version of the node object (labels, taints, allocatable, ...)."""
        self.node = node
        self.name = node.name
        self.generation = next(_generations)

    def snapshot(self) -> NodeInfo:
        """A copy to add pods to without touching this one (upstream's ``NodeInfo.Snapshot``), with
        a generation of its own: nothing remembered for this node answers for the copy."""
        clone = copy.copy(self)
        clone.pods = dict(self.pods)
        clone.requested_scalar = Counter(self.requested_scalar)
        clone.used_ports = set(self.used_ports)
        clone.pods_with_affinity = dict(self.pods_with_affinity)
        clone.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        clone.pvc_ref_counts = Counter(self.pvc_ref_counts)
        clone.generation = next(_generations)
        return clone

    def add_pod(self, pod: Pod) -> None:
        """Count ``pod`` here (replacing an earlier version of it)."""
        self.remove_pod(pod.key)
        self.pods[pod.key] = pod
        self._count(pod, 1)

    def remove_pod(self, key: PodKey) -> Pod | None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self._count(pod, -1)
        return pod

    def _count(self, pod: Pod, sign: int) -> None:
        self.generation = next(_generations)
        affinity = pod.pod_affinity
        if affinity.declared:
            if sign > 0:
                self.pods_with_affinity[pod.key] = pod
            else:
                self.pods_with_affinity.pop(pod.key, None)
        if affinity.has_required_anti_affinity:
            if sign > 0:
                self.pods_with_required_anti_affinity[pod.key] = pod
            else:
                self.pods_with_required_anti_affinity.pop(pod.key, None)
        for volume in pod.volumes:
            if "persistentVolumeClaim" in volume.sources:
                key = f"{pod.namespace}/{volume.claim_name}"
                self.pvc_ref_counts[key] += sign
                if self.pvc_ref_counts[key] <= 0:
                    del self.pvc_ref_counts[key]
        res = pod.resources.under(self.requests_rule)
        usage = res.usage
        self.requested_milli_cpu += sign * usage.milli_cpu
        self.requested_memory += sign * usage.memory
        self.requested_ephemeral_storage += sign * usage.ephemeral_storage
        for name, amount in usage.scalar.items():
            self.requested_scalar[name] += sign * amount
        self.non0_cpu += sign * res.non0_cpu
        self.non0_mem += sign * res.non0_mem
        if sign > 0:
            self.used_ports.update(res.host_ports)
        else:
            self.used_ports.difference_update(res.host_ports)


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Node names a PreFilter allows; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """Intersection; a None side means "no restriction"."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits no node: per-node statuses, the plugins that rejected, a PreFilter message."""

    node_to_status: dict[NodeName, Status] = field(default_factory=dict)
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if status.plugin and status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
            if status.code is Code.PENDING:
                self.pending_plugins.add(status.plugin)


class NodeToStatus(Mapping[NodeName, Status]):
    """The Filter verdicts PostFilter reads (upstream's ``NodeToStatus``): the nodes with a status of
    their own, and one status for every other node (by default UnschedulableAndUnresolvable: a node
    the search never judged is one preemption cannot help)."""

    __slots__ = ("_statuses", "absent_nodes_status")

    def __init__(self, statuses: Mapping[NodeName, Status] | None = None, absent: Status | None = None) -> None:
        self._statuses: dict[NodeName, Status] = dict(statuses or {})
        self.absent_nodes_status = absent if absent is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def __getitem__(self, name: NodeName) -> Status:
        return self._statuses[name]

    def __iter__(self) -> Iterator[NodeName]:
        return iter(self._statuses)

    def __len__(self) -> int:
        return len(self._statuses)

    def set(self, name: NodeName, status: Status) -> None:
        self._statuses[name] = status

    def get_status(self, name: str) -> Status:
        """The node's own status, else the absent nodes' (upstream's ``Get``)."""
        return self._statuses.get(NodeName(name), self.absent_nodes_status)

    def nodes_for_status_code(self, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        """``NodesForStatusCode``: the nodes whose status has ``code``, in ``nodes``' order (upstream
        walks its map, in no fixed order, when the absent status does not match)."""
        if self.absent_nodes_status.code is code and not self._statuses:
            return list(nodes)
        return [info for info in nodes if self.get_status(info.name).code is code]


@dataclass(slots=True)
class FitError(Exception):
    """The pod fits no node; ``str()`` is the exact upstream message (``FitError.Error()``)."""

    pod: Pod
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        pre = self.diagnosis.pre_filter_msg
        if pre:
            msg += f" {pre}."
        else:
            histogram: Counter[str] = Counter()
            for status in self.diagnosis.node_to_status.values():
                for reason in status.reasons:
                    histogram[reason] += 1
            absent = self.num_all_nodes - len(self.diagnosis.node_to_status)
            if self.diagnosis.absent_nodes_status is not None and absent > 0:
                for reason in self.diagnosis.absent_nodes_status.reasons:
                    histogram[reason] += absent
            # Sorted as strings, so "10 ..." sorts before "2 ..." exactly as upstream prints it.
            entries = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if entries:  # upstream appends nothing (not even " .") when no node gave a reason
                msg += " " + ", ".join(entries) + "."
        if self.diagnosis.post_filter_msg:
            msg += " " + self.diagnosis.post_filter_msg
        return msg
