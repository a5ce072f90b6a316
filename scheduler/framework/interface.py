"""Plugin interfaces per extension point, the Snapshot plugins read, and the I/O seams.

Everything here is a Protocol: plugins implement only the points they need and the runtime finds
them with ``isinstance``. Nothing here performs I/O; ``Binder`` and ``Recorder`` are the seams where
the live scheduler plugs in an API client, and ``simulate`` and the tests plug in memory.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.labels import Selector
from scheduler.api.objects import NodeName, Pod, SelectingObject
from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    DeviceClass,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PreFilterResult

__all__ = [
    "CLEAR_NOMINATED_NODE",
    "BatchFilter",
    "BatchScore",
    "BindPlugin",
    "Binder",
    "EnqueueExtensions",
    "EventRecorder",
    "FilterPlugin",
    "Handle",
    "NodeIndex",
    "NominatingInfo",
    "NominatingMode",
    "PermitPlugin",
    "Plugin",
    "PluginRunner",
    "PodNominator",
    "PodSigner",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreScorePlugin",
    "PreemptionSink",
    "QueueSortPlugin",
    "Recorder",
    "ReservePlugin",
    "ScoreExtensions",
    "ScorePlugin",
    "SignPlugin",
    "Snapshot",
    "StorageLister",
    "VolumeBinder",
    "nominating_mode",
]


class NodeIndex(Protocol):
    """Facts about single nodes that many pods share (which match an affinity, which carry an
    untolerated taint, which domain each is in). The cache keeps every index current per node, so a
    node update costs the same at 500 nodes as at 5,000 (upstream re-clones the one node)."""

    def put(self, info: NodeInfo) -> None:
        """Record (or replace) what this index holds about ``info``'s node."""
        ...

    def drop(self, name: NodeName) -> None:
        """Forget the node ``name``; nothing happens if the index does not hold it."""
        ...


IndexT = TypeVar("IndexT", bound=NodeIndex)


class Snapshot(Protocol):
    """The cluster as one scheduling cycle sees it; frozen for the cycle's duration."""

    def node_infos(self) -> Sequence[NodeInfo]:
        """Every node, in the node tree's zone-interleaved order."""
        ...

    def get(self, name: str) -> NodeInfo | None: ...

    def count_matching(self, namespace: str, selector: Selector) -> Mapping[NodeName, int]:
        """Non-terminating pods in ``namespace`` matching ``selector``, per node (absent = 0).

        Kept incrementally by the cache so a PodTopologySpread cycle never rescans every pod.
        """
        ...

    def count_all_matching(self, namespace: str, selector: Selector) -> Mapping[NodeName, int]:
        """Every pod in ``namespace`` matching ``selector``, terminating ones included, per node
        (absent = 0; nodes not in the cache too): what InterPodAffinity counts of upstream's
        ``NodeInfo.Pods``, kept incrementally so its cycles do not visit every pod."""
        ...

    def image_num_nodes(self, name: str) -> int:
        """On how many nodes ``status.images`` lists ``name`` (upstream's ``ImageStateSummary.NumNodes``).

        Kept incrementally by the cache as nodes come, change and go.
        """
        ...

    def node_index(self, key: Hashable, build: Callable[[], IndexT]) -> IndexT:
        """The index under ``key``, built by ``build()`` and filled with every node on first use;
        from then on kept by the cache one node at a time as nodes come, change and go."""
        ...

    def have_pods_with_affinity_node_infos(self) -> Sequence[NodeInfo]:
        """Nodes with a pod that sets podAffinity or podAntiAffinity (``HavePodsWithAffinityList``)."""
        ...

    def have_pods_with_required_anti_affinity_node_infos(self) -> Sequence[NodeInfo]:
        """Nodes with a pod that has required anti-affinity (``HavePodsWithRequiredAntiAffinityList``)."""
        ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace ``name``; None when the cache has no such namespace."""
        ...

    def namespaces_matching(self, selector: Selector) -> frozenset[str]:
        """Names of the cached namespaces whose labels ``selector`` matches (a namespaceSelector)."""
        ...

    def selecting_objects(self, kind: str, namespace: str) -> Iterable[SelectingObject]:
        """Services, ReplicationControllers, ReplicaSets or StatefulSets of one namespace."""
        ...

    def get_selecting_object(self, kind: str, namespace: str, name: str) -> SelectingObject | None: ...

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        """Every PodDisruptionBudget (upstream's PDB lister, ``List(labels.Everything())``), in the order
        they arrived; preemption counts them against victims."""
        ...

    @property
    def storage(self) -> StorageLister:
        """PersistentVolumes, claims, StorageClasses and CSI objects (upstream's informer listers)."""
        ...

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether a pod on a node uses claim ``namespace/name`` (the snapshot's ``IsPVCUsedByPods``)."""
        ...


class StorageLister(Protocol):
    """The volume plugins' lookups; None: the lister would answer NotFound."""

    def persistent_volume_claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def persistent_volume(self, name: str) -> PersistentVolume | None: ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csi_node(self, name: str) -> CSINode | None: ...

    def csi_driver(self, name: str) -> CSIDriver | None: ...

    def persistent_volumes(self) -> Iterable[PersistentVolume]: ...

    def csi_storage_capacities(self) -> Iterable[CSIStorageCapacity]: ...

    def device_class_for(self, resource: str) -> DeviceClass | None: ...

    def volume_attachments_on(self, node_name: str) -> Iterable[VolumeAttachment]: ...

    def assume(self, obj: PersistentVolume | PersistentVolumeClaim, made_from: str) -> None:
        """VolumeBinding's Reserve: lookups see ``obj`` until the watch brings ``made_from`` or newer."""
        ...

    def restore(self, obj: PersistentVolume | PersistentVolumeClaim) -> None: ...

    def api_object(self, kind: str, key: str) -> object | None:
        """The watch's version of an object, whatever is assumed."""
        ...


class NominatingMode(enum.Enum):
    """What a failed cycle does to the pod's nomination (upstream's ``NominatingMode``)."""

    NOOP = "Noop"  # keep whatever ``status.nominatedNodeName`` says
    OVERRIDE = "Override"  # nominate ``NominatingInfo.nominated_node_name`` ("" clears)


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """Where a PostFilter (preemption) wants the pod to wait; the failure handler hands it
    to the queue's nominator and the status patch (upstream's ``fwk.NominatingInfo``)."""

    nominated_node_name: str = ""
    mode: NominatingMode = NominatingMode.NOOP


# What every failure outside a PostFilter's answer hands on (upstream's ``clearNominatedNode``).
CLEAR_NOMINATED_NODE = NominatingInfo("", NominatingMode.OVERRIDE)


def nominating_mode(info: NominatingInfo | None) -> NominatingMode:
    """Upstream's ``(*NominatingInfo).Mode``: no info is Noop."""
    return NominatingMode.NOOP if info is None else info.mode


class PodNominator(Protocol):
    """The pods nominated to a node that Filter must count (upstream's ``PodNominator``, the queue)."""

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated to a node at all (a cycle without any skips the lookups)."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        """The pods nominated to ``node_name``, in nomination order."""
        ...


class PluginRunner(Protocol):
    """The profile's own extension points, as a plugin may run them (upstream's Handle embeds the
    framework): preemption dry-runs Filter on nodes with victims removed."""

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


class Handle:
    """What plugins may reach besides their arguments (upstream's ``framework.Handle``)."""

    __slots__ = (
        "binder",
        "claims_in_flight",
        "events",
        "framework",
        "nominator",
        "preemption",
        "snapshot",
        "stopping",
        "volume_binder",
    )

    def __init__(
        self,
        snapshot: Snapshot | None = None,
        binder: Binder | None = None,
        nominator: PodNominator | None = None,
        preemption: PreemptionSink | None = None,
        volume_binder: VolumeBinder | None = None,
    ) -> None:
        self.snapshot: Snapshot | None = snapshot
        self.binder: Binder | None = binder
        # Set by whoever owns the queue (``Scheduler``); None: no pod is ever nominated (tests).
        self.nominator: PodNominator | None = nominator
        # Set by the Framework this handle serves.
        self.framework: PluginRunner | None = None
        # Where a preemption decision goes to be carried out: the API (``run``) or ``simulate``'s
        # memory. None (tests of other plugins): nobody would evict the victims, so DefaultPreemption
        # decides nothing.
        self.preemption: PreemptionSink | None = preemption
        # VolumeBinding's PreBind writes (the API in ``run``, memory in ``simulate``); None: no claim
        # that still needs binding can be bound, and VolumeBinding refuses such pods.
        self.volume_binder: VolumeBinder | None = volume_binder
        # Upstream's SharedDRAManager's claims in flight (DynamicResources' InFlightAllocations, one
        # per scheduler): the resource scorers count the devices they hold. None: nothing in flight.
        self.claims_in_flight: object | None = None
        # Upstream's ``EventRecorder()``, set by whoever posts the scheduler's Events (``ScheduleOne``);
        # None: a plugin's Events go nowhere (tests).
        self.events: EventRecorder | None = None
        # Set once the scheduler stops (or loses its lease): upstream cancels the context every
        # binding cycle runs under, so a PreBind that waits (for binding conditions) ends at once.
        self.stopping = asyncio.Event()

    def runner(self) -> PluginRunner:
        if self.framework is None:
            raise RuntimeError("no framework: the handle is not a profile's yet")
        return self.framework

    def current(self) -> Snapshot:
        if self.snapshot is None:
            raise RuntimeError("no snapshot: the framework sets one at the start of each cycle")
        return self.snapshot


class EventRecorder(Protocol):
    """A plugin's Events (upstream's ``fh.EventRecorder().Eventf``): posted in the background, best
    effort, so that the plugin never waits on the Event rate limiter."""

    def eventf(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None: ...


class PreemptionSink(Protocol):
    """Carries out a preemption decision (upstream's ``prepareCandidate``/``prepareCandidateAsync``:
    the victims' DisruptionTarget condition and deletion, lower-priority nominations cleared)."""

    def prepare_candidate(self, preemptor: Pod, node_name: str, victims: Sequence[Pod]) -> Status | None:
        """Start (or make) the writes; a failure Status keeps the pod's nomination unchanged."""
        ...

    def is_pod_running_preemption(self, pod: Pod) -> bool:
        """Whether ``pod``'s victims are still being evicted (upstream's ``IsPodRunningPreemption``):
        DefaultPreemption's PreEnqueue keeps the pod out of activeQ meanwhile."""
        ...


class Plugin(Protocol):
    NAME: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: Pod, a_timestamp: float, b: Pod, b_timestamp: float) -> bool: ...

    def sort_key(self, pod: Pod, timestamp: float) -> tuple[object, ...]:
        """The order of ``less`` as a key: ``less(a, ta, b, tb) == (sort_key(a, ta) < sort_key(b, tb))``.

        The queue keeps heaps, which need keys; upstream's heap calls ``Less`` instead.
        """
        ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None: ...

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """None is Success; called once per candidate node, so it should only look things up."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        """The status and, when it moves the pod's nomination, a ``NominatingInfo`` (None: Noop)."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The raw score; raise ``StatusError`` to fail the cycle."""
        ...


@runtime_checkable
class BatchFilter(Protocol):
    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None]:
        """Filter with this cycle's state looked up once: same verdicts as ``filter`` per node."""
        ...


@runtime_checkable
class BatchScore(Protocol):
    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """``[score(state, pod, n) for n in nodes]`` with this cycle's state looked up once."""
        ...


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    def sign_pod(self, pod: Pod) -> Hashable:
        """Everything of ``pod`` this plugin's Filter and Score read (upstream's ``SignPod``).

        Implementing it promises that Filter and Score on a node depend on that signature, the
        plugin's own arguments and that one NodeInfo only, so two pods with equal signatures get the
        same result on a node that has not changed (``scheduler.framework.node_results``).
        """
        ...


@runtime_checkable
class PodSigner(Plugin, Protocol):
    def sign_fragments(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """The parts of ``pod`` this plugin decides on, for opportunistic batching (upstream's
        ``SignPlugin.SignPod``); a non-None status means the pod cannot be signed, so no pod is
        batched with it (``Framework.sign_pod``, ``scheduler.framework.batch``).

        Every PreFilter, Filter, PreScore and Score plugin of a profile must implement it for that
        profile to batch at all (``computeBatchablePlugins``).
        """
        ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """Rewrites ``scores`` (aligned with ``nodes``) in place."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """A Status (None allows) and, for Wait, the timeout in seconds."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(Plugin, Protocol):
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Whether PreBind has work for this pod: None (Success) yes, Skip no, else the error.
        A PreBind plugin without it is taken to have work."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Success binds; a Skip status means "not mine, ask the next Bind plugin"."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


class Binder(Protocol):
    """The API call behind DefaultBinder: POST pods/<name>/binding. Raises on failure."""

    async def bind(self, pod: Pod, node_name: str) -> None: ...


class VolumeBinder(Protocol):
    """VolumeBinding's PreBind writes (``BindPodVolumes``): each PV bound to its claim (its claimRef),
    each claim to provision annotated with the selected node; then waits until the PV controller
    has bound them all. Raises with the reason on failure (a conflict, a reset claimRef, a timeout)."""

    async def bind_pod_volumes(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolumeClaim, PersistentVolume]],
        provisions: Sequence[PersistentVolumeClaim],
        timeout: float,
    ) -> None: ...


class Recorder(Protocol):
    """The writes besides the Binding: the PodScheduled condition and Events."""

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        """PodScheduled=False; ``nominated_node_name`` (not None) goes to ``status.nominatedNodeName``
        in the same patch ("" clears it), as upstream's ``updatePod``."""
        ...

    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        """``status.nominatedNodeName`` alone (upstream's ``updatePod`` without a condition): the binding
        cycle's note to other components that the pod is about to be bound there."""
        ...

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None: ...
