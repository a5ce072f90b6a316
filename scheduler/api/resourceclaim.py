"""``resource.k8s.io/v1`` ResourceClaims and ResourceClaimTemplates, as the scheduler holds them: what a
claim asks for (``spec.devices``), and what was allocated for it and who uses it (``status``).

``from_dict`` never raises: what the API server would refuse is kept as ``errors`` naming the field
(``spec.devices.requests[2].exactly.count``), with the API server's bounds. A claim written without
the API server's defaults (a file) gets them here: ``allocationMode`` ExactCount, ``count`` 1, a
toleration's ``operator`` Equal. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from scheduler.api.devicefields import (
    DEFAULT_MINOR,
    DEVICE_CONFIG_MAX_SIZE,
    DeviceConfiguration,
    DeviceToleration,
    bounded_items,
    check_minor,
    duplicate_errors,
    opt_bool,
    parse_device_configuration,
    parse_device_tolerations,
    parse_quantity_map,
    parse_selectors,
    parse_string_list,
    request_ref_errors,
    request_ref_message,
    required_str,
)
from scheduler.api.fields import FieldError, as_mapping, opt_int, opt_str, parse_timestamp, required_name
from scheduler.api.nodeselector import NodeSelector, parse_node_selector
from scheduler.api.resourceslice import BINDING_CONDITIONS_MAX_SIZE, qualified_name_errors

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "AllocatedDeviceStatus",
    "AllocationResult",
    "ConsumerReference",
    "DeviceAllocationResult",
    "DeviceClaim",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceSubRequest",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "parse_device_claim",
]

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
_ALLOCATION_MODES = (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT)  # upstream lists them so

# k8s.io/api resource/v1 bounds.
ALLOCATION_RESULTS_MAX_SIZE = 32
DEVICE_REQUESTS_MAX_SIZE = ALLOCATION_RESULTS_MAX_SIZE
DEVICE_CONSTRAINTS_MAX_SIZE = 32
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
# status.devices is unbounded upstream (one entry per allocated device, each at most once): its
# results bound it, and one per result (a shared device's shares too) is what can be read.
_DEVICE_STATUSES_READ_MAX = ALLOCATION_RESULTS_MAX_SIZE * 4
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """One alternative of a ``firstAvailable`` list (or, as ``ExactDeviceRequest``, a request's ``exactly``).

    ``capacity``: the consumable capacity each allocated device must give (``capacity.requests``).
    """

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: Mapping[str, Fraction] = field(default_factory=dict)


# ``exactly`` has the fields of a subrequest (but admin access, which only it has) and no name of
# its own: it is kept as one with the request's name.
ExactDeviceRequest = DeviceSubRequest


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """``spec.devices.requests[i]``: exactly one of ``exactly`` and ``first_available`` is set."""

    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """All devices of the named requests (all requests when none is named) have the same value of
    ``match_attribute``, or pairwise different values of ``distinct_attribute``."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceClaim:
    """A claim's ``spec.devices`` (also a template's ``spec.spec.devices``)."""

    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceAllocationResult:
    """One allocated device (``status.allocation.devices.results[i]``). ``request`` is the request's
    name, ``<request>/<subrequest>`` for an alternative of ``firstAvailable``."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = None
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """``status.allocation``: the devices, their configuration, the nodes that reach all of them
    (None: every node), and when (DRADeviceBindingConditions: RFC 3339 text, ``allocated_at`` parsed)."""

    results: tuple[DeviceAllocationResult, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None

    @property
    def allocated_at(self) -> float | None:
        return parse_timestamp(self.allocation_timestamp)


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    """``status.reservedFor[i]``: a pod (``resource`` "pods", no group) or another consumer."""

    resource: str
    name: str
    uid: str
    api_group: str = ""

    @property
    def is_pod(self) -> bool:
        return self.api_group == "" and self.resource == "pods"


@dataclass(frozen=True, slots=True)
class AllocatedDeviceStatus:
    """``status.devices[i]``: what a driver reports of an allocated device; the scheduler reads its
    conditions (binding conditions, by type: True or not; the reason and message of each, which a
    failed binding's error quotes) and nothing else of it."""

    driver: str
    pool: str
    device: str
    share_id: str | None = None
    conditions: Mapping[str, bool] = field(default_factory=dict)
    reasons: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # type -> (reason, message)


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaim:
    """A ResourceClaim. Equality is identity, as for pods: two parses are two observations."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    deleting: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    # The UID of the controlling owner (``metav1.GetControllerOf``): a generated claim's pod.
    controller_uid: str | None = None
    finalizers: tuple[str, ...] = ()
    devices: DeviceClaim = field(default_factory=DeviceClaim)
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = ()
    device_statuses: tuple[AllocatedDeviceStatus, ...] = ()
    errors: tuple[FieldError, ...] = ()
    # The object as read (the informer drops managedFields): what PreBind's and PostFilter's writes
    # send back, changed, on their first try, as upstream updates the informer's copy.
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: object, *, minor: str = DEFAULT_MINOR) -> ResourceClaim:
        check_minor(minor)
        errors: list[FieldError] = []
        root = as_mapping(obj, "resourceClaim", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        name = required_name(meta, errors)
        devices = parse_device_claim(spec.get("devices"), "spec.devices", errors)
        allocation = None
        if status.get("allocation") is not None:
            allocation = _allocation(status["allocation"], "status.allocation", devices, errors)
        reserved = _reserved_for(status.get("reservedFor"), "status.reservedFor", errors)
        if reserved and allocation is None:
            errors.append(
                FieldError("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
            )
        annotations = as_mapping(meta.get("annotations"), "metadata.annotations", errors)
        return cls(
            namespace=opt_str(meta.get("namespace"), "metadata.namespace", errors) or "default",
            name=name,
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            resource_version=str(meta.get("resourceVersion") or ""),
            deleting=meta.get("deletionTimestamp") is not None,
            annotations={k: v for k, v in annotations.items() if isinstance(k, str) and isinstance(v, str)},
            controller_uid=_controller_uid(meta.get("ownerReferences")),
            finalizers=tuple(f for f in _bounded_list(meta.get("finalizers")) if isinstance(f, str)),
            devices=devices,
            allocation=allocation,
            reserved_for=reserved,
            device_statuses=_device_statuses(status.get("devices"), "status.devices", errors),
            errors=tuple(errors),
            raw=root,
        )


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    """A ResourceClaimTemplate: the claim spec (``spec.spec``) and the labels and annotations
    (``spec.metadata``) kube-controller-manager gives each claim it generates from it."""

    namespace: str
    name: str
    devices: DeviceClaim = field(default_factory=DeviceClaim)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    uid: str = ""
    resource_version: str = ""
    errors: tuple[FieldError, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: object, *, minor: str = DEFAULT_MINOR) -> ResourceClaimTemplate:
        check_minor(minor)
        errors: list[FieldError] = []
        root = as_mapping(obj, "resourceClaimTemplate", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        claim_meta = as_mapping(spec.get("metadata"), "spec.metadata", errors)
        claim_spec = as_mapping(spec.get("spec"), "spec.spec", errors)
        name = required_name(meta, errors)
        labels = as_mapping(claim_meta.get("labels"), "spec.metadata.labels", errors)
        annotations = as_mapping(claim_meta.get("annotations"), "spec.metadata.annotations", errors)
        return cls(
            namespace=opt_str(meta.get("namespace"), "metadata.namespace", errors) or "default",
            name=name,
            devices=parse_device_claim(claim_spec.get("devices"), "spec.spec.devices", errors),
            labels={k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)},
            annotations={k: v for k, v in annotations.items() if isinstance(k, str) and isinstance(v, str)},
            uid=opt_str(meta.get("uid"), "metadata.uid", errors) or "",
            resource_version=str(meta.get("resourceVersion") or ""),
            errors=tuple(errors),
        )


_OWNERS_READ_MAX = 64  # owner references and finalizers read, at most (a claim has one or two)


def _bounded_list(value: object) -> list[object]:
    return list(value[:_OWNERS_READ_MAX]) if isinstance(value, list) else []


def _controller_uid(value: object) -> str | None:
    """The UID of the owner reference marked ``controller: true`` (there is at most one)."""
    for ref in _bounded_list(value):
        if isinstance(ref, Mapping) and ref.get("controller") is True and isinstance(ref.get("uid"), str):
            return str(ref["uid"])
    return None


def parse_device_claim(value: object, path: str, errors: list[FieldError]) -> DeviceClaim:
    """``validateDeviceClaim``: requests (unique names), constraints and config naming them."""
    obj = as_mapping(value, path, errors)
    requests = tuple(
        _request(item, f"{path}.requests[{i}]", errors)
        for i, item in enumerate(
            bounded_items(obj.get("requests"), f"{path}.requests", DEVICE_REQUESTS_MAX_SIZE, errors)
        )
    )
    errors.extend(duplicate_errors([r.name for r in requests], f"{path}.requests"))
    names = _request_names(requests)
    constraints = tuple(
        _constraint(item, f"{path}.constraints[{i}]", names, errors)
        for i, item in enumerate(
            bounded_items(obj.get("constraints"), f"{path}.constraints", DEVICE_CONSTRAINTS_MAX_SIZE, errors)
        )
    )
    config = parse_device_configuration(
        obj.get("config"), f"{path}.config", DEVICE_CONFIG_MAX_SIZE, errors, request_names=names
    )
    return DeviceClaim(requests, constraints, config)


def _name(value: object, path: str, errors: list[FieldError]) -> str:
    """A request's or subrequest's name: a DNS label."""
    name = required_str(value, path, errors)
    if name and (len(name) > 63 or not _DNS1123_LABEL.fullmatch(name)):
        errors.append(
            FieldError(
                path, f"Invalid value: \"{name}\": must be a DNS label (at most 63 lower case alphanumerics or '-')"
            )
        )
    return name


def _request(value: object, path: str, errors: list[FieldError]) -> DeviceRequest:
    obj = as_mapping(value, path, errors)
    name = _name(obj.get("name"), f"{path}.name", errors)
    has_exactly = obj.get("exactly") is not None
    raw_alternatives = bounded_items(
        obj.get("firstAvailable"), f"{path}.firstAvailable", FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE, errors
    )
    if has_exactly and raw_alternatives:
        errors.append(
            FieldError(
                path,
                "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
                "but multiple fields are set",
            )
        )
        return DeviceRequest(name)
    if not has_exactly and not raw_alternatives:
        if not (isinstance(obj.get("firstAvailable"), list) and obj["firstAvailable"]):  # not one over the bound
            errors.append(FieldError(path, "Required value: exactly one of `exactly` or `firstAvailable` is required"))
        return DeviceRequest(name)
    if has_exactly:
        return DeviceRequest(name, exactly=_subrequest(obj["exactly"], f"{path}.exactly", name, errors, exact=True))
    alternatives = tuple(
        _subrequest(item, f"{path}.firstAvailable[{i}]", None, errors, exact=False)
        for i, item in enumerate(raw_alternatives)
    )
    errors.extend(duplicate_errors([a.name for a in alternatives], f"{path}.firstAvailable"))
    return DeviceRequest(name, first_available=alternatives)


def _subrequest(
    value: object, path: str, name: str | None, errors: list[FieldError], *, exact: bool
) -> DeviceSubRequest:
    obj = as_mapping(value, path, errors)
    if name is None:
        name = _name(obj.get("name"), f"{path}.name", errors)
    device_class = required_str(obj.get("deviceClassName"), f"{path}.deviceClassName", errors)
    mode = opt_str(obj.get("allocationMode"), f"{path}.allocationMode", errors) or ALLOCATION_MODE_EXACT_COUNT
    count = opt_int(obj.get("count"), f"{path}.count", errors) or 0
    if mode == ALLOCATION_MODE_EXACT_COUNT and count == 0:
        count = 1  # SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest
    if mode == ALLOCATION_MODE_ALL:
        if count != 0:
            errors.append(
                FieldError(
                    f"{path}.count", f"Invalid value: {count}: must not be specified when allocationMode is 'All'"
                )
            )
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count <= 0:
            errors.append(FieldError(f"{path}.count", f"Invalid value: {count}: must be greater than zero"))
    else:
        supported = ", ".join(f'"{m}"' for m in _ALLOCATION_MODES)
        errors.append(
            FieldError(f"{path}.allocationMode", f'Unsupported value: "{mode}": supported values: {supported}')
        )
    admin_access = opt_bool(obj.get("adminAccess"), f"{path}.adminAccess", errors) if exact else None
    capacity_obj = as_mapping(obj.get("capacity"), f"{path}.capacity", errors)
    capacity = parse_quantity_map(capacity_obj.get("requests"), f"{path}.capacity.requests", errors)
    for key in capacity:
        errors.extend(qualified_name_errors(key, f"{path}.capacity.requests[{key}]"))
    return DeviceSubRequest(
        name=name,
        device_class_name=device_class,
        selectors=parse_selectors(obj.get("selectors"), f"{path}.selectors", errors),
        allocation_mode=mode,
        count=count if mode == ALLOCATION_MODE_EXACT_COUNT else 0,
        admin_access=admin_access,
        tolerations=parse_device_tolerations(obj.get("tolerations"), f"{path}.tolerations", errors),
        capacity=capacity,
    )


def _request_names(requests: Sequence[DeviceRequest]) -> frozenset[str]:
    """Every name a constraint, config or result may name: a request, or ``request/subrequest``."""
    names: set[str] = set()
    for request in requests:
        names.add(request.name)
        names.update(f"{request.name}/{sub.name}" for sub in request.first_available)
    return frozenset(names)


def _constraint(value: object, path: str, names: frozenset[str], errors: list[FieldError]) -> DeviceConstraint:
    obj = as_mapping(value, path, errors)
    requests = parse_string_list(obj.get("requests"), f"{path}.requests", DEVICE_REQUESTS_MAX_SIZE, errors)
    errors.extend(duplicate_errors(requests, f"{path}.requests"))
    errors.extend(request_ref_errors(requests, f"{path}.requests", names))
    match = opt_str(obj.get("matchAttribute"), f"{path}.matchAttribute", errors)
    distinct = opt_str(obj.get("distinctAttribute"), f"{path}.distinctAttribute", errors)
    either = '"matchAttribute" or "distinctAttribute"'
    if match is not None and distinct is not None:
        errors.append(
            FieldError(path, f"Invalid value: exactly one of {either} is required, but multiple fields are set")
        )
    elif match is None and distinct is None:
        errors.append(FieldError(path, f"Required value: exactly one of {either} is required"))
    for attr, key in ((match, "matchAttribute"), (distinct, "distinctAttribute")):
        if attr is not None:
            errors.extend(_fully_qualified_name_errors(attr, f"{path}.{key}"))
    return DeviceConstraint(requests, match, distinct)


def _fully_qualified_name_errors(name: str, path: str) -> list[FieldError]:
    """``validateFullyQualifiedName``: a qualified name whose domain is given."""
    errors = qualified_name_errors(name, path)
    if "/" not in name:
        message = "a fully qualified name must be a domain and a name separated by a slash"
        errors.append(FieldError(path, f'Invalid value: "{name}": {message}'))
    return errors


def _allocation(value: object, path: str, claim: DeviceClaim, errors: list[FieldError]) -> AllocationResult:
    obj = as_mapping(value, path, errors)
    devices = as_mapping(obj.get("devices"), f"{path}.devices", errors)
    names = _request_names(claim.requests)
    results = tuple(
        _result(item, f"{path}.devices.results[{i}]", names, errors)
        for i, item in enumerate(
            bounded_items(devices.get("results"), f"{path}.devices.results", ALLOCATION_RESULTS_MAX_SIZE, errors)
        )
    )
    config = parse_device_configuration(
        devices.get("config"),
        f"{path}.devices.config",
        2 * DEVICE_CONFIG_MAX_SIZE,  # the class's and the claim's
        errors,
        with_source=True,
        request_names=names,
    )
    stamp = obj.get("allocationTimestamp")
    if isinstance(stamp, datetime):  # a YAML file's unquoted timestamp
        stamp = stamp.isoformat()
    return AllocationResult(
        results=results,
        config=config,
        node_selector=parse_node_selector(obj.get("nodeSelector"), f"{path}.nodeSelector", errors),
        allocation_timestamp=opt_str(stamp, f"{path}.allocationTimestamp", errors),
    )


def _result(value: object, path: str, names: frozenset[str], errors: list[FieldError]) -> DeviceAllocationResult:
    obj = as_mapping(value, path, errors)
    request = required_str(obj.get("request"), f"{path}.request", errors)
    if request and request not in names:
        errors.append(FieldError(f"{path}.request", request_ref_message(request)))
    consumed = parse_quantity_map(obj.get("consumedCapacity"), f"{path}.consumedCapacity", errors)
    conditions = parse_string_list(
        obj.get("bindingConditions"), f"{path}.bindingConditions", BINDING_CONDITIONS_MAX_SIZE, errors
    )
    failures = parse_string_list(
        obj.get("bindingFailureConditions"), f"{path}.bindingFailureConditions", BINDING_CONDITIONS_MAX_SIZE, errors
    )
    return DeviceAllocationResult(
        request=request,
        driver=required_str(obj.get("driver"), f"{path}.driver", errors),
        pool=required_str(obj.get("pool"), f"{path}.pool", errors),
        device=required_str(obj.get("device"), f"{path}.device", errors),
        admin_access=opt_bool(obj.get("adminAccess"), f"{path}.adminAccess", errors),
        tolerations=parse_device_tolerations(obj.get("tolerations"), f"{path}.tolerations", errors),
        binding_conditions=conditions,
        binding_failure_conditions=failures,
        share_id=opt_str(obj.get("shareID"), f"{path}.shareID", errors) or None,
        consumed_capacity=consumed,
    )


def _reserved_for(value: object, path: str, errors: list[FieldError]) -> tuple[ConsumerReference, ...]:
    out: list[ConsumerReference] = []
    for i, item in enumerate(bounded_items(value, path, RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        out.append(
            ConsumerReference(
                resource=required_str(obj.get("resource"), f"{ipath}.resource", errors),
                name=required_str(obj.get("name"), f"{ipath}.name", errors),
                uid=required_str(obj.get("uid"), f"{ipath}.uid", errors),
                api_group=opt_str(obj.get("apiGroup"), f"{ipath}.apiGroup", errors) or "",
            )
        )
    errors.extend(duplicate_errors([r.uid for r in out], path))
    return tuple(out)


def _device_statuses(value: object, path: str, errors: list[FieldError]) -> tuple[AllocatedDeviceStatus, ...]:
    out: list[AllocatedDeviceStatus] = []
    for i, item in enumerate(bounded_items(value, path, _DEVICE_STATUSES_READ_MAX, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        conditions: dict[str, bool] = {}
        reasons: dict[str, tuple[str, str]] = {}
        raw_conditions = bounded_items(
            obj.get("conditions"), f"{ipath}.conditions", ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS, errors
        )
        for j, raw in enumerate(raw_conditions):
            condition = as_mapping(raw, f"{ipath}.conditions[{j}]", errors)
            kind = opt_str(condition.get("type"), f"{ipath}.conditions[{j}].type", errors)
            if kind and kind not in conditions:  # apimeta.FindStatusCondition: the first of its type
                conditions[kind] = condition.get("status") == "True"
                reason = opt_str(condition.get("reason"), f"{ipath}.conditions[{j}].reason", errors) or ""
                message = opt_str(condition.get("message"), f"{ipath}.conditions[{j}].message", errors) or ""
                reasons[kind] = (reason, message)
        out.append(
            AllocatedDeviceStatus(
                driver=required_str(obj.get("driver"), f"{ipath}.driver", errors),
                pool=required_str(obj.get("pool"), f"{ipath}.pool", errors),
                device=required_str(obj.get("device"), f"{ipath}.device", errors),
                share_id=opt_str(obj.get("shareID"), f"{ipath}.shareID", errors) or None,
                conditions=conditions,
                reasons=reasons,
            )
        )
    return tuple(out)
