"""The writers of a dry run: the Binder, Recorder, VolumeBinding's and DynamicResources' PreBind and
the preemption sink, keeping in memory what the live scheduler would write to the API server."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.objects import Pod, PodKey
from scheduler.api.resourceclaim import ConsumerReference, ResourceClaim
from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.eventhandlers import EventHandlers
from scheduler.features import features_at
from scheduler.framework.interface import PodNominator
from scheduler.framework.status import Status
from scheduler.plugins.dynamicresources.plugin.claimwrites import FINALIZER, ClaimBinding, ClaimDeallocation


class MemoryBinder:
    """The Binder of a dry run: remembers each Binding instead of posting it."""

    def __init__(self) -> None:
        self.bindings: dict[PodKey, str] = {}

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings[pod.key] = node_name


class MemoryVolumeBinder:
    """VolumeBinding's PreBind in a dry run: the writes are remembered and applied to the cache at
    once, as if the PV controller (and, for a claim to provision, a provisioner creating a PV on the
    selected node) had answered: each claim ends bound, so the next pods see the volumes taken."""

    def __init__(self, handlers: EventHandlers) -> None:
        self._handlers = handlers
        # Each pod's writes, in order: "bind PV <pv> -> <claim>", "select node <claim> -> <node>".
        self.by_pod: dict[PodKey, list[str]] = {}

    async def bind_pod_volumes(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolumeClaim, PersistentVolume]],
        provisions: Sequence[PersistentVolumeClaim],
        timeout: float,
    ) -> None:
        done = self.by_pod.setdefault(pod.key, [])
        for claim, pv in bindings:
            done.append(f"bind PV {pv.name} -> {claim.key}")
            self._apply(pv.raw, {"phase": "Bound"})
            self._bind_claim(claim, pv.name)
        for claim in provisions:
            done.append(f"select node {claim.key} -> {node_name}")
            name = f"pvc-{claim.uid or claim.namespace + '-' + claim.name}"
            spec: dict[str, Any] = {
                "capacity": {"storage": _requested_storage(claim)},
                "accessModes": sorted(claim.access_modes),
                "storageClassName": claim.storage_class,
                "claimRef": {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid},
            }
            hostname = self._hostname(node_name)
            if hostname is not None:  # a node without the label: a PV any node can use
                expr = {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}
                spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
            self._apply({"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}, {"phase": "Bound"})
            self._bind_claim(claim, name)

    def _hostname(self, node_name: str) -> str | None:
        """The node's hostname label, which a local provisioner pins its PV to (not the node's name:
        the two may differ)."""
        info = self._handlers.cache.get(node_name)
        return None if info is None else info.node.labels.get(HOSTNAME_LABEL)

    def _bind_claim(self, claim: PersistentVolumeClaim, volume: str) -> None:
        raw = dict(claim.raw)
        meta = dict(raw.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
        spec = {**(raw.get("spec") or {}), "volumeName": volume}
        self._apply({**raw, "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}, {"phase": "Bound"})

    def _apply(self, raw: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        obj = {**raw, "status": status}
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        obj["metadata"] = meta
        self._handlers.on_storage_object("MODIFIED", obj)


HOSTNAME_LABEL = "kubernetes.io/hostname"


class MemoryClaimWriter:
    """DynamicResources' writes in a dry run (``ClaimWriter``): each claim's allocation and reservation
    (or its deallocation, or a pod's reservation dropped) applied to the cache at once, as the watch
    would bring the written claim, so the next pods see its devices taken (or free)."""

    def __init__(self, handlers: EventHandlers) -> None:
        self._handlers = handlers
        self.by_pod: dict[PodKey, list[ClaimBinding]] = {}
        self._created = 0

    async def bind_claim(self, pod: Pod, binding: ClaimBinding) -> ResourceClaim:
        storage = self._handlers.cache.storage
        claim = storage.resource_claim(binding.namespace, binding.name)
        if claim is None or claim.uid != binding.uid:
            raise LookupError(f"resourceclaims.resource.k8s.io {binding.name!r} not found")
        if any(ref.uid == binding.reserved_for.uid for ref in claim.reserved_for):
            # The API server's validation (reservedFor is a map keyed by uid): a pod naming one claim
            # twice reserves it at its first entry, and the second entry's write adds it again.
            raise ValueError(
                f"add reservation to claim {binding.namespace}/{binding.name}: ResourceClaim.resource.k8s.io "
                f'"{binding.name}" is invalid: status.reservedFor[{len(claim.reserved_for)}]: Duplicate value: '
                + _duplicate_value(
                    binding.reserved_for, features_at(self._handlers.minor).duplicate_reservation_as_json
                )
            )
        finalizers = claim.finalizers
        if binding.add_finalizer and FINALIZER not in finalizers:
            finalizers = (*finalizers, FINALIZER)
        written = self._store(
            dataclasses.replace(
                claim,
                finalizers=finalizers,
                allocation=binding.allocation if binding.allocation is not None else claim.allocation,
                reserved_for=(*claim.reserved_for, binding.reserved_for),
            )
        )
        self.by_pod.setdefault(pod.key, []).append(binding)
        return written

    async def deallocate_claim(self, deallocation: ClaimDeallocation) -> None:
        claim = self._handlers.cache.storage.resource_claim(deallocation.namespace, deallocation.name)
        if claim is not None and claim.uid == deallocation.uid:
            self._store(dataclasses.replace(claim, allocation=None, reserved_for=(), device_statuses=()))

    async def unreserve_claim(self, pod: Pod, claim: ResourceClaim) -> None:
        held = self._handlers.cache.storage.resource_claim(claim.namespace, claim.name)
        if held is not None and held.uid == claim.uid:
            self._store(dataclasses.replace(held, reserved_for=tuple(r for r in held.reserved_for if r.uid != pod.uid)))

    async def create_claim(self, namespace: str, body: dict[str, Any]) -> ResourceClaim:
        """The claim for a pod's extended resources, named as the API names a ``generateName`` one."""
        meta = dict(body.get("metadata") or {})
        self._created += 1
        meta["name"] = f"{meta.pop('generateName', '')}{self._created:05d}"
        meta["uid"] = str(uuid.uuid4())
        claim = ResourceClaim.from_dict({**body, "metadata": meta})
        return self._store(claim)

    async def delete_claim(self, claim: ResourceClaim) -> None:
        held = self._handlers.cache.storage.resource_claim(claim.namespace, claim.name)
        if held is not None and held.uid == claim.uid:
            self._handlers.cache.storage.remove(held)

    async def patch_pod_status(self, pod: Pod, patch: dict[str, Any]) -> None:
        """Nothing the dry run's cache reads: the claim's own reservation names the pod."""

    def _store(self, claim: ResourceClaim) -> ResourceClaim:
        """``claim`` as the watch would bring it after the write: a newer resourceVersion."""
        written = dataclasses.replace(claim, resource_version=_next_version(claim.resource_version))
        self._handlers.cache.storage.upsert(written, written.resource_version)
        return written


def _duplicate_value(ref: ConsumerReference, as_json: bool) -> str:
    """``field.Duplicate``'s value: the uid, or (declarative validation) the entry as Go marshals it."""
    if not as_json:
        return f'"{ref.uid}"'
    entry = {"apiGroup": ref.api_group} if ref.api_group else {}
    entry |= {"resource": ref.resource, "name": ref.name, "uid": ref.uid}
    return json.dumps(entry, separators=(",", ":"))


def _next_version(version: str) -> str:
    """A newer integer resourceVersion (a claim of a file has none: "1")."""
    return str(int(version) + 1) if version.isdigit() else "1"


def _requested_storage(claim: PersistentVolumeClaim) -> str:
    spec = claim.raw.get("spec")
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    value = requests.get("storage") if isinstance(requests, Mapping) else None
    return str(value) if value is not None else "0"


class MemoryRecorder:
    """The Recorder of a dry run: keeps the conditions and Events the scheduler would write."""

    def __init__(self) -> None:
        self.conditions: dict[PodKey, tuple[str, str]] = {}
        self.nominations: dict[PodKey, str] = {}  # status.nominatedNodeName writes ("": cleared)
        self.events: list[tuple[PodKey, str, str, str]] = []  # (pod, type, reason, note)

    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        self.conditions[pod.key] = (reason, message)
        if nominated_node_name is not None:
            self.nominations[pod.key] = nominated_node_name

    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        self.nominations[pod.key] = node_name

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        self.events.append((pod.key, event_type, reason, note))


@dataclass(frozen=True, slots=True)
class Preemption:
    """One decision to carry out: ``victims`` leave, the pods of lower priority nominated to ``node``
    lose their nomination (upstream's ``prepareCandidate``), and ``preemptor`` is nominated there."""

    preemptor: Pod
    node: str
    victims: tuple[Pod, ...]
    lower_nominated: tuple[Pod, ...] = ()


class MemoryPreemption:
    """The PreemptionSink of a dry run: remembers each decision (preemptor -> node and victims) and
    keeps it for ``Simulation`` to carry out after the round, as the watch would report the writes."""

    def __init__(self, nominator: PodNominator | None = None) -> None:
        self.decisions: dict[PodKey, tuple[str, list[PodKey]]] = {}
        self.nominator = nominator
        self.pending: list[Preemption] = []

    def prepare_candidate(self, preemptor: Pod, node_name: str, victims: Sequence[Pod]) -> Status | None:
        self.decisions[preemptor.key] = (node_name, [v.key for v in victims])
        nominated = self.nominator.nominated_pods_for_node(node_name) if self.nominator is not None else ()
        lower = tuple(p for p in nominated if p.priority < preemptor.priority)  # getLowerPriorityNominatedPods
        self.pending.append(Preemption(preemptor, node_name, tuple(victims), lower))
        return None

    def is_pod_running_preemption(self, pod: Pod) -> bool:
        return False  # decisions are carried out between rounds, before any retry of the preemptor

    def take(self) -> list[Preemption]:
        """The decisions not carried out yet, oldest first; they are forgotten here."""
        pending, self.pending = self.pending, []
        return pending
