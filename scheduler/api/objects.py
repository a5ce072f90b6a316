"""Typed, immutable views of the API objects the scheduler reads, parsed once from their dict form.

``Pod.from_dict`` and ``Node.from_dict`` never raise: anything the API server would refuse is kept
as ``errors`` (each naming its field) and the scheduler reports it instead of crashing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NewType

from scheduler.api.declaredfeatures import parse_node_declared_features, pod_feature_uses
from scheduler.api.fields import (
    FieldError,
    as_list,
    as_mapping,
    as_str_map,
    int32_errors,
    opt_int,
    opt_str,
    parse_timestamp,
    required_name,
)
from scheduler.api.images import parse_node_images, parse_pod_images
from scheduler.api.labels import NOTHING, Selector, parse_label_selector, selector_from_map
from scheduler.api.names import label_key_errors, label_value_errors
from scheduler.api.nodeselector import NodeSelector, PreferredTerm, parse_node_selector, parse_preferred_terms
from scheduler.api.podaffinity import NO_POD_AFFINITY, PodAffinity, parse_pod_affinity
from scheduler.api.resources import PodResources, Resource, parse_node_allocatable, parse_pod_resources
from scheduler.api.spread import SpreadConstraint, parse_spread_constraints
from scheduler.api.taints import Taint, Toleration, parse_taints, parse_tolerations
from scheduler.api.volumes import (
    PodResourceClaim,
    ResourceClaimStatus,
    Volume,
    parse_resource_claim_statuses,
    parse_resource_claims,
    parse_volumes,
)

__all__ = [
    "Namespace",
    "Node",
    "NodeName",
    "OwnerRef",
    "Pod",
    "PodKey",
    "SelectingObject",
    "forget_spec_parses",
    "parse_selecting_object",
]

NodeName = NewType("NodeName", str)
PodKey = NewType("PodKey", str)

DEFAULT_SCHEDULER_NAME = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
_PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Pod:
    """What scheduling reads of a Pod. Equality is identity: two parses are two observations."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    node_name: str
    scheduler_name: str
    priority: int
    created: float
    terminating: bool
    phase: str
    resource_version: str
    generation: int
    node_selector: Mapping[str, str] | None
    required_affinity: NodeSelector | None
    preferred_affinity: tuple[PreferredTerm, ...]
    tolerations: tuple[Toleration, ...]
    spread_constraints: tuple[SpreadConstraint, ...]
    controller: OwnerRef | None
    scheduling_gates: tuple[str, ...]
    nominated_node_name: str
    resources: PodResources = field(default_factory=PodResources)
    pod_affinity: PodAffinity = NO_POD_AFFINITY
    # Init containers' images, then the app containers', as written (ImageLocality normalizes them).
    images: tuple[str, ...] = ()
    volumes: tuple[Volume, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()
    resource_claim_statuses: tuple[ResourceClaimStatus, ...] = ()
    # A preferred node-affinity list is present, even if every term in it is empty or weighs 0:
    # upstream's NodeAffinity then scores (0 everywhere) instead of skipping (getPodPreferredNodeAffinity).
    preferred_affinity_listed: bool = False
    # Preemption (DefaultPreemption): ``spec.preemptionPolicy`` (unset is PreemptLowerPriority),
    # ``status.startTime`` (None until the kubelet starts it), and whether a DisruptionTarget
    # condition says the scheduler preempted it (upstream's ``podTerminatingByPreemption``, with
    # ``terminating``).
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    start_time: float | None = None
    preempted_by_scheduler: bool = False
    # Node-declared features the spec needs (``scheduler.api.declaredfeatures``; NodeDeclaredFeatures).
    feature_uses: frozenset[str] = frozenset()
    errors: tuple[FieldError, ...] = ()
    # The API object: whole while the pod is pending (signing, extenders and status writes read it);
    # once bound, only what is read of a bound pod (``_bound_pod_view``).
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> PodKey:
        return PodKey(f"{self.namespace}/{self.name}")

    @property
    def assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def error_message(self) -> str:
        return "; ".join(str(e) for e in self.errors)

    @classmethod
    def from_dict(cls, obj: object) -> Pod:
        root = obj if isinstance(obj, Mapping) else {}
        meta, spec, status = root.get("metadata"), root.get("spec"), root.get("status")
        key = _spec_key(meta, spec, status) if isinstance(spec, Mapping) and isinstance(status, Mapping) else None
        parsed = _SPEC_PARSES.get(key) if key is not None else None
        if parsed is not None:
            return cls._with_spec(root, meta, spec, status, parsed)  # type: ignore[arg-type]
        pod = cls._parse(obj)
        if key is not None and not pod.errors:
            if len(_SPEC_PARSES) >= _SPEC_PARSES_MAX:
                _SPEC_PARSES.clear()
            _SPEC_PARSES[key] = {name: getattr(pod, name) for name in _SPEC_FIELDS}
        return pod

    @classmethod
    def _with_spec(
        cls, root: Mapping[str, Any], meta: object, spec: Mapping[str, Any], status: Mapping[str, Any], parsed: _Parsed
    ) -> Pod:
        """A pod whose spec (with its labels and namespace) was parsed before, without errors: only
        what differs between pods of one template and between a pod's events is read here, with
        its errors in the order ``_parse`` reports them."""
        errors: list[FieldError] = []
        meta = as_mapping(meta, "metadata", errors)
        labels = as_str_map(meta.get("labels"), "metadata.labels", errors)  # checked with the spec
        name = required_name(meta, errors)
        controller = _controller(meta, errors)
        node_name = opt_str(spec.get("nodeName"), "spec.nodeName", errors) or ""
        return cls(
            name=name,
            labels=labels,
            node_name=node_name,
            controller=controller,
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            created=parse_timestamp(meta.get("creationTimestamp")) or 0.0,
            terminating=meta.get("deletionTimestamp") is not None,
            phase=opt_str(status.get("phase"), "status.phase", errors) or "",
            resource_version=str(meta.get("resourceVersion") or ""),
            generation=opt_int(meta.get("generation"), "metadata.generation", errors) or 0,
            nominated_node_name=opt_str(status.get("nominatedNodeName"), "status.nominatedNodeName", errors) or "",
            volumes=parse_volumes(spec.get("volumes"), "spec.volumes", errors),
            resource_claim_statuses=parse_resource_claim_statuses(
                status.get("resourceClaimStatuses"), "status.resourceClaimStatuses", errors
            ),
            start_time=parse_timestamp(status.get("startTime")),
            preempted_by_scheduler=_preempted_by_scheduler(status.get("conditions"), errors),
            errors=tuple(errors),
            raw=_bound_pod_view(root, meta, spec, status) if node_name else root,
            **parsed,
        )

    @classmethod
    def _parse(cls, obj: object) -> Pod:
        errors: list[FieldError] = []
        root = as_mapping(obj, "pod", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        labels = as_str_map(meta.get("labels"), "metadata.labels", errors)
        for k, v in labels.items():
            errors.extend(label_key_errors(k, "metadata.labels"))
            errors.extend(label_value_errors(v, "metadata.labels"))
        name = required_name(meta, errors)
        node_selector_raw = spec.get("nodeSelector")
        node_selector = None
        if node_selector_raw is not None:
            node_selector = as_str_map(node_selector_raw, "spec.nodeSelector", errors)
            for k, v in node_selector.items():
                errors.extend(label_key_errors(k, "spec.nodeSelector"))
                errors.extend(label_value_errors(v, "spec.nodeSelector"))
        affinity = as_mapping(spec.get("affinity"), "spec.affinity", errors)
        node_aff = as_mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity", errors)
        apath = "spec.affinity.nodeAffinity"
        required = parse_node_selector(
            node_aff.get("requiredDuringSchedulingIgnoredDuringExecution"),
            f"{apath}.requiredDuringSchedulingIgnoredDuringExecution",
            errors,
        )
        preferred = parse_preferred_terms(
            node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"),
            f"{apath}.preferredDuringSchedulingIgnoredDuringExecution",
            errors,
        )
        namespace = opt_str(meta.get("namespace"), "metadata.namespace", errors) or "default"
        pod_affinity = parse_pod_affinity(affinity, "spec.affinity", namespace, labels, errors)
        controller = _controller(meta, errors)
        gates: list[str] = []
        for i, gate in enumerate(as_list(spec.get("schedulingGates"), "spec.schedulingGates", errors)):
            gate_name = as_mapping(gate, f"spec.schedulingGates[{i}]", errors).get("name")
            if isinstance(gate_name, str):
                gates.append(gate_name)
        node_name = opt_str(spec.get("nodeName"), "spec.nodeName", errors) or ""
        return cls(
            namespace=namespace,
            name=name,
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            labels=labels,
            node_name=node_name,
            scheduler_name=opt_str(spec.get("schedulerName"), "spec.schedulerName", errors) or DEFAULT_SCHEDULER_NAME,
            priority=_priority(spec.get("priority"), errors),
            created=parse_timestamp(meta.get("creationTimestamp")) or 0.0,
            terminating=meta.get("deletionTimestamp") is not None,
            phase=opt_str(status.get("phase"), "status.phase", errors) or "",
            resource_version=str(meta.get("resourceVersion") or ""),
            generation=opt_int(meta.get("generation"), "metadata.generation", errors) or 0,
            node_selector=node_selector,
            required_affinity=required,
            preferred_affinity=preferred,
            tolerations=parse_tolerations(spec.get("tolerations"), "spec.tolerations", errors),
            spread_constraints=parse_spread_constraints(
                spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints", labels, errors
            ),
            controller=controller,
            scheduling_gates=tuple(gates),
            nominated_node_name=opt_str(status.get("nominatedNodeName"), "status.nominatedNodeName", errors) or "",
            resources=parse_pod_resources(spec, status, errors),
            pod_affinity=pod_affinity,
            images=parse_pod_images(spec, errors),
            volumes=parse_volumes(spec.get("volumes"), "spec.volumes", errors),
            resource_claims=parse_resource_claims(spec.get("resourceClaims"), "spec.resourceClaims", errors),
            resource_claim_statuses=parse_resource_claim_statuses(
                status.get("resourceClaimStatuses"), "status.resourceClaimStatuses", errors
            ),
            preferred_affinity_listed=node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") is not None,
            preemption_policy=_preemption_policy(spec.get("preemptionPolicy"), errors),
            start_time=parse_timestamp(status.get("startTime")),
            preempted_by_scheduler=_preempted_by_scheduler(status.get("conditions"), errors),
            feature_uses=pod_feature_uses(spec),
            errors=tuple(errors),
            raw=_bound_pod_view(root, meta, spec, status) if node_name else root,
        )


def _controller(meta: Mapping[str, Any], errors: list[FieldError]) -> OwnerRef | None:
    """The owner reference marked ``controller: true`` (the first, as upstream's ``GetControllerOf``)."""
    for i, ref in enumerate(as_list(meta.get("ownerReferences"), "metadata.ownerReferences", errors)):
        r = as_mapping(ref, f"metadata.ownerReferences[{i}]", errors)
        if r.get("controller") is True:
            return OwnerRef(
                str(r.get("apiVersion", "")), str(r.get("kind", "")), str(r.get("name", "")), str(r.get("uid") or "")
            )
    return None


# What ``Pod`` parses from its spec (with the namespace and labels some of it depends on, and the
# container statuses and resize condition its requests read), kept per distinct spec: the events of
# one pod (created, bound, started) have equal specs apart from ``nodeName``, as have pods of one
# template, and parsing it was most of an event's cost (110 us of a 1.2 KB pod). A hit is
# decided by the text of the raw values, so it is exact; only specs parsed without any error are
# kept (the order of a pod's errors stays ``_parse``'s). Bounded: past the bound the table starts
# over. Pods that share a spec share its parsed objects too.
_Parsed = dict[str, Any]
_SPEC_FIELDS = (
    "namespace",
    "scheduler_name",
    "priority",
    "node_selector",
    "required_affinity",
    "preferred_affinity",
    "tolerations",
    "spread_constraints",
    "scheduling_gates",
    "resources",
    "pod_affinity",
    "images",
    "resource_claims",
    "preferred_affinity_listed",
    "preemption_policy",
    "feature_uses",
)
_SPEC_PARSES: dict[tuple[str, ...], _Parsed] = {}
_SPEC_PARSES_MAX = 1024


def forget_spec_parses() -> None:
    """Empty the table (a measurement of what parsing retains starts from nothing)."""
    _SPEC_PARSES.clear()


def _spec_key(meta: object, spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[str, ...] | None:
    if not isinstance(meta, Mapping):
        return None
    # Volumes are parsed afresh (3 us) and mounts are not read: with both out of the key, pods of
    # one template whose service-account token volume has a name of its own share the rest.
    spec = {k: _without_mounts(v) if k in _CONTAINER_LISTS else v for k, v in spec.items() if k not in _UNKEYED}
    conditions = status.get("conditions")
    # The requests read only PodResizePending conditions, and only from a list (no error otherwise).
    resize = (
        [c for c in conditions if isinstance(c, Mapping) and c.get("type") == "PodResizePending"]
        if isinstance(conditions, list)
        else []
    )
    return (
        repr(meta.get("namespace")),
        repr(meta.get("labels")),
        repr(spec),
        _status_requests(status.get("containerStatuses")),
        _status_requests(status.get("initContainerStatuses")),
        repr(resize),
        repr((status.get("resources"), status.get("allocatedResources"))),  # the pod-level resize
    )


_UNKEYED = frozenset({"nodeName", "volumes"})
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})


def _without_mounts(containers: object) -> object:
    """The containers without their mounts, but for the mounts' ``bindMountOptions`` (a feature a
    spec may need, ``feature_uses``)."""
    if not isinstance(containers, list):
        return containers
    return [
        {k: _bind_mount_options(v) if k == "volumeMounts" else v for k, v in c.items()}
        if isinstance(c, Mapping) and "volumeMounts" in c
        else c
        for c in containers
    ]


def _bind_mount_options(mounts: object) -> object:
    if not isinstance(mounts, list):
        return mounts
    return [m.get("bindMountOptions") if isinstance(m, Mapping) else m for m in mounts]


def _status_requests(statuses: object) -> str:
    """What the requests read of container statuses (a kubelet's updates change their state and
    times, not these, so a running pod's events still find its parse)."""
    if not isinstance(statuses, list):
        return repr(statuses)
    return repr(
        [
            (s.get("name"), s.get("resources"), s.get("allocatedResources")) if isinstance(s, Mapping) else s
            for s in statuses
        ]
    )


def _bound_pod_view(
    root: Mapping[str, Any], meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any]
) -> dict[str, Any]:
    """What is read of a bound pod's API object besides its parsed fields: its metadata, the
    tolerations and extended-resource claim status its update events compare, the
    DisruptionTarget condition preemption patches, and the Ready condition (rebalancing moves a
    workload's pods only while all of them are Ready). The rest (containers, volumes, container
    statuses) was 88 % of a cached pod's memory and nothing reads it once the pod is bound."""
    kept_spec = {k: spec[k] for k in _BOUND_SPEC if k in spec}
    kept_status = {k: status[k] for k in _BOUND_STATUS if k in status}
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        kept_status["conditions"] = [
            c for c in conditions if isinstance(c, Mapping) and c.get("type") in _KEPT_CONDITIONS
        ]
    view = {k: root[k] for k in ("apiVersion", "kind") if k in root}
    view.update(metadata=meta, spec=kept_spec, status=kept_status)
    return view


_BOUND_SPEC = ("nodeName", "schedulerName", "priority", "tolerations")
_BOUND_STATUS = ("phase", "extendedResourceClaimStatus")
_DISRUPTION_TARGET = "DisruptionTarget"
_KEPT_CONDITIONS = (_DISRUPTION_TARGET, "Ready")


def _priority(value: object, errors: list[FieldError]) -> int:
    """``spec.priority``: an int32 (admission fills it in; unset, 0 as upstream's ``PodPriority``)."""
    priority = opt_int(value, "spec.priority", errors)
    if priority is None:
        return 0
    range_errors = int32_errors(priority, "spec.priority", "PodSpec.spec.priority")
    errors.extend(range_errors)
    return 0 if range_errors else priority


def _preemption_policy(value: object, errors: list[FieldError]) -> str:
    """``spec.preemptionPolicy``: unset is PreemptLowerPriority (the API server's default)."""
    policy = opt_str(value, "spec.preemptionPolicy", errors) or PREEMPT_LOWER_PRIORITY
    if policy not in _PREEMPTION_POLICIES:
        supported = ", ".join(f'"{p}"' for p in _PREEMPTION_POLICIES)
        message = f'Unsupported value: "{policy}": supported values: {supported}'
        errors.append(FieldError("spec.preemptionPolicy", message))
    return policy


def _preempted_by_scheduler(value: object, errors: list[FieldError]) -> bool:
    """The first DisruptionTarget condition is True with reason PreemptionByScheduler."""
    for i, raw in enumerate(as_list(value, "status.conditions", errors)):
        condition = as_mapping(raw, f"status.conditions[{i}]", errors)
        if condition.get("type") == _DISRUPTION_TARGET:
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    name: NodeName
    uid: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    resource_version: str = ""
    allocatable: Resource = field(default_factory=Resource)
    # Every name in ``status.images`` -> that image's ``sizeBytes`` (ImageLocality).
    images: Mapping[str, int] = field(default_factory=dict)
    # ``status.declaredFeatures`` (NodeDeclaredFeatures, 1.36+).
    declared_features: tuple[str, ...] = ()
    errors: tuple[FieldError, ...] = ()
    # The API object as far as it is read (``_node_view``), unless ``from_dict`` was asked for it
    # whole: an extender that is not nodeCacheCapable is sent whole Node objects.
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, obj: object, *, whole: bool = False) -> Node:
        errors: list[FieldError] = []
        root = as_mapping(obj, "node", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        name = opt_str(meta.get("name"), "metadata.name", errors) or ""
        if not name:
            errors.append(FieldError("metadata.name", "Required value"))
        return cls(
            name=NodeName(name),
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            labels=as_str_map(meta.get("labels"), "metadata.labels", errors),
            taints=parse_taints(spec.get("taints"), "spec.taints", errors),
            unschedulable=spec.get("unschedulable") is True,
            resource_version=str(meta.get("resourceVersion") or ""),
            allocatable=parse_node_allocatable(status, errors),
            images=parse_node_images(status, errors),
            declared_features=parse_node_declared_features(status, errors),
            errors=tuple(errors),
            raw=root if whole else _node_view(root, status),
        )


def _node_view(root: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    """What is read of a Node's API object besides its parsed fields: metadata and spec (annotations
    and taints' ``timeAdded`` for update events), ``status.allocatable`` and each condition's type
    and status. Its images (parsed into ``images``), addresses, nodeInfo and the conditions'
    messages and heartbeats were two thirds of a kubelet's node and nothing reads them."""
    kept: dict[str, Any] = {k: status[k] for k in ("allocatable",) if k in status}
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        kept["conditions"] = [
            {k: c[k] for k in ("type", "status") if k in c} if isinstance(c, Mapping) else c for c in conditions
        ]
    elif "conditions" in status:
        kept["conditions"] = conditions
    view = {k: v for k, v in root.items() if k != "status"}
    view["status"] = kept
    return view


@dataclass(frozen=True, slots=True)
class Namespace:
    """What InterPodAffinity reads of a Namespace: its name and labels (for ``namespaceSelector``)."""

    name: str
    labels: Mapping[str, str]
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> Namespace:
        errors: list[FieldError] = []
        root = as_mapping(obj, "namespace", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        name = required_name(meta, errors)
        return cls(name=name, labels=as_str_map(meta.get("labels"), "metadata.labels", errors), errors=tuple(errors))


@dataclass(frozen=True, slots=True)
class SelectingObject:
    """A Service, ReplicationController, ReplicaSet or StatefulSet: what DefaultSelector reads of it."""

    kind: str
    namespace: str
    name: str
    selector: Selector

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


_MAP_SELECTOR_KINDS = {"Service", "ReplicationController"}
_LABEL_SELECTOR_KINDS = {"ReplicaSet", "StatefulSet"}
SELECTING_KINDS = frozenset(_MAP_SELECTOR_KINDS | _LABEL_SELECTOR_KINDS)


def parse_selecting_object(obj: object) -> SelectingObject | None:
    """None for kinds the scheduler does not read. A Service without selector selects nothing."""
    errors: list[FieldError] = []
    root = as_mapping(obj, "object", errors)
    kind = root.get("kind")
    if not isinstance(kind, str) or kind not in SELECTING_KINDS:  # a list is unhashable
        return None
    meta = as_mapping(root.get("metadata"), "metadata", errors)
    spec = as_mapping(root.get("spec"), "spec", errors)
    raw_sel = spec.get("selector")
    if kind in _MAP_SELECTOR_KINDS:
        selector = NOTHING if raw_sel is None else selector_from_map(as_str_map(raw_sel, "spec.selector", errors))
    else:
        selector = parse_label_selector(raw_sel, "spec.selector", errors)
    if errors:
        selector = NOTHING
    return SelectingObject(
        kind=str(kind),
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=selector,
    )
