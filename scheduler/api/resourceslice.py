"""``resource.k8s.io/v1`` ResourceSlices: the devices a driver publishes, as the scheduler holds them.

A device's attributes and capacities are keyed by qualified name (``domain/id``, or a bare ``id``
in the slice driver's domain); an attribute holds exactly one typed value (``DeviceAttribute``'s
one-of, the list kinds from 1.36's ``k8s.io/api`` on), a capacity a quantity. ``Device`` is also
what DRA's CEL selectors read (``cel.Device`` upstream), so a published device needs no conversion.

``ResourceSlice.from_dict`` never raises: what the API server would refuse is kept as ``errors``
naming the field, with the bounds of the minor read as (``minor``). Fields the minor's API does not
have are ignored, as its JSON decoder ignores unknown fields. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.devicefields import (
    DEFAULT_MINOR,
    DeviceTaint,
    bounded_items,
    check_minor,
    duplicate_errors,
    opt_bool,
    parse_device_taints,
    parse_quantity_item,
    parse_quantity_map,
    parse_string_list,
    required_str,
    too_many,
)
from scheduler.api.fields import INT64_MAX, INT64_MIN, FieldError, as_list, as_mapping, opt_int, opt_str, required_name
from scheduler.api.nodeselector import NodeSelector, parse_node_selector
from scheduler.api.semver import SemverError, parse_semver
from scheduler.features import DRAAPIFacts, dra_api

__all__ = [
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CounterSet",
    "Device",
    "DeviceAttribute",
    "DeviceCounterConsumption",
    "ResourcePool",
    "ResourceSlice",
    "parse_device_attributes",
    "qualified_name_errors",
]

# k8s.io/api resource/v1 bounds every supported minor shares; those that differ are the minor's
# ``scheduler.features.DRAAPIFacts``.
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET = 32
RESOURCE_SLICE_MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
RESOURCE_SLICE_MAX_COUNTERS_PER_CONSUMPTION = 32
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
BINDING_CONDITIONS_MAX_SIZE = 4
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One of the value fields of ``resourceapi.DeviceAttribute`` (none set: upstream's "unsupported")."""

    int_value: int | None = None
    bool_value: bool | None = None
    string_value: str | None = None
    version_value: str | None = None
    int_values: tuple[int, ...] | None = None
    bool_values: tuple[bool, ...] | None = None
    string_values: tuple[str, ...] | None = None
    version_values: tuple[str, ...] | None = None

    @property
    def is_list(self) -> bool:
        return any(v is not None for v in (self.int_values, self.bool_values, self.string_values, self.version_values))


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicyRange:
    min: Fraction
    max: Fraction | None = None
    step: Fraction | None = None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """How much of a consumable capacity one allocation may take (``requestPolicy``, DRAConsumableCapacity)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None


@dataclass(frozen=True, slots=True)
class DeviceCounterConsumption:
    """Counters of one of the pool's counter sets a device takes while allocated (partitionable devices)."""

    counter_set: str
    counters: Mapping[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CounterSet:
    """``sharedCounters[i]``: a named set of counters the pool's devices draw from."""

    name: str
    counters: Mapping[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResourcePool:
    name: str
    generation: int = 0
    resource_slice_count: int = 0


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakref: evaluators keep per-device inputs
class Device:
    """A slice's device. A selector reads the first four (``cel.Device`` upstream): the slice's
    driver, attributes, capacity values (exact quantities) and ``allowMultipleAllocations``.

    ``request_policies``: the capacities' ``requestPolicy`` by name (consumable capacity). The node
    fields are set only in a slice with ``perDeviceNodeSelection``.
    """

    driver: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, Fraction] = field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
    name: str = ""
    request_policies: Mapping[str, CapacityRequestPolicy] = field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """A ``resource.k8s.io/v1`` ResourceSlice: one driver's devices of one pool (or a share of it), and
    which nodes can reach them (exactly one of ``node_name``, ``node_selector``, ``all_nodes`` and
    ``per_device_node_selection``). ``devices`` and ``shared_counters`` are never both set."""

    name: str
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    resource_version: str = ""
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object, *, minor: str = DEFAULT_MINOR) -> ResourceSlice:
        check_minor(minor)
        errors: list[FieldError] = []
        root = as_mapping(obj, "resourceSlice", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        name = required_name(meta, errors)
        driver = _driver(spec.get("driver"), "spec.driver", errors)
        pool = _pool(spec.get("pool"), "spec.pool", errors)
        node_name = opt_str(spec.get("nodeName"), "spec.nodeName", errors)
        node_selector = parse_node_selector(spec.get("nodeSelector"), "spec.nodeSelector", errors)
        all_nodes = opt_bool(spec.get("allNodes"), "spec.allNodes", errors)
        per_device = opt_bool(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection", errors)
        errors.extend(_node_choice_errors(node_name, node_selector, all_nodes, per_device, "spec"))
        if node_selector is not None and len(node_selector.terms) != 1:
            errors.append(
                FieldError(
                    "spec.nodeSelector.nodeSelectorTerms", "Invalid value: must have exactly one node selector term"
                )
            )
        if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
            errors.append(FieldError("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'))
        devices = _devices(spec.get("devices"), "spec.devices", driver, per_device is True, dra_api(minor), errors)
        counter_sets = tuple(
            _counter_set(item, f"spec.sharedCounters[{i}]", errors)
            for i, item in enumerate(
                bounded_items(
                    spec.get("sharedCounters"), "spec.sharedCounters", RESOURCE_SLICE_MAX_COUNTER_SETS, errors
                )
            )
        )
        errors.extend(duplicate_errors([c.name for c in counter_sets], "spec.sharedCounters"))
        return cls(
            name=name,
            driver=driver,
            pool=pool,
            node_name=node_name or None,
            node_selector=node_selector,
            all_nodes=all_nodes is True,
            per_device_node_selection=per_device is True,
            devices=devices,
            shared_counters=counter_sets,
            resource_version=str(meta.get("resourceVersion") or ""),
            errors=tuple(errors),
        )


def _driver(value: object, path: str, errors: list[FieldError]) -> str:
    """``validateDriverName``: a DNS subdomain of at most 63 characters."""
    driver = required_str(value, path, errors)
    if len(driver) > DEVICE_MAX_DOMAIN_LENGTH:
        errors.append(FieldError(path, f"Too long: may not be more than {DEVICE_MAX_DOMAIN_LENGTH} bytes"))
    elif driver and not _DNS1123_SUBDOMAIN.fullmatch(driver):
        errors.append(
            FieldError(
                path,
                f'Invalid value: "{driver}": {_SUBDOMAIN_MESSAGE}',
            )
        )
    return driver


def _pool(value: object, path: str, errors: list[FieldError]) -> ResourcePool:
    obj = as_mapping(value, path, errors)
    name = required_str(obj.get("name"), f"{path}.name", errors)
    generation = opt_int(obj.get("generation"), f"{path}.generation", errors) or 0
    count = opt_int(obj.get("resourceSliceCount"), f"{path}.resourceSliceCount", errors) or 0
    if count <= 0:
        errors.append(FieldError(f"{path}.resourceSliceCount", f"Invalid value: {count}: must be greater than zero"))
    if generation < 0:
        errors.append(
            FieldError(f"{path}.generation", f"Invalid value: {generation}: must be greater than or equal to zero")
        )
    return ResourcePool(name, generation, count)


def _node_choice_errors(
    node_name: str | None,
    node_selector: NodeSelector | None,
    all_nodes: bool | None,
    per_device: bool | None,
    path: str,
    *,
    device: bool = False,
) -> list[FieldError]:
    """Exactly one way to say which nodes reach the devices (a slice's, or a device's with
    ``perDeviceNodeSelection``), with ``validateResourceSliceSpec``'s and ``validateDevice``'s texts."""
    errors: list[FieldError] = []
    chosen: list[str] = []
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
        else:
            why = "must not be empty" if device else "must be either unset or set to a non-empty string"
            errors.append(FieldError(f"{path}.nodeName", f'Invalid value: "": {why}'))
    if node_selector is not None:
        chosen.append("`nodeSelector`")
    for name, flag in (("allNodes", all_nodes), ("perDeviceNodeSelection", None if device else per_device)):
        if flag is True:
            chosen.append(f"`{name}`")
        elif flag is False:
            errors.append(FieldError(f"{path}.{name}", "Invalid value: false: must be either unset or set to true"))
    if device:
        what = (
            "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
            "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        )
    else:
        what = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        errors.append(FieldError(path, f"Required value: {what}"))
    elif len(chosen) > 1:
        suffix = "" if device else ", but multiple fields are set"
        errors.append(FieldError(path, f'Invalid value: "{{{", ".join(chosen)}}}": {what}{suffix}'))
    return errors


def _has_advanced(raw: object, api: DRAAPIFacts) -> bool:
    """``haveDeviceTaints || haveConsumesCounters`` (|| ``haveListAttributes`` where the minor has list
    attributes), on the raw list."""
    for device in raw if isinstance(raw, list) else ():
        if not isinstance(device, Mapping):
            continue
        if device.get("taints") or device.get("consumesCounters"):
            return True
        if api.list_attributes:
            attributes = device.get("attributes")
            for attr in attributes.values() if isinstance(attributes, Mapping) else ():
                if isinstance(attr, Mapping) and any(attr.get(k) is not None for k in _LIST_KINDS):
                    return True
    return False


def _devices(
    value: object, path: str, driver: str, per_device: bool, api: DRAAPIFacts, errors: list[FieldError]
) -> tuple[Device, ...]:
    limit = RESOURCE_SLICE_MAX_DEVICES
    advanced = api.max_devices_with_advanced_features
    if isinstance(value, list) and len(value) > advanced and _has_advanced(value, api):
        limit = advanced
    items = bounded_items(value, path, limit, errors)
    devices = tuple(_device(item, f"{path}[{i}]", driver, per_device, api, errors) for i, item in enumerate(items))
    errors.extend(duplicate_errors([d.name for d in devices], path))
    return devices


def _device(
    value: object, path: str, driver: str, per_device: bool, api: DRAAPIFacts, errors: list[FieldError]
) -> Device:
    obj = as_mapping(value, path, errors)
    name = required_str(obj.get("name"), f"{path}.name", errors)
    if name and (len(name) > 63 or not _DNS1123_LABEL.fullmatch(name)):
        errors.append(
            FieldError(
                f"{path}.name",
                f"Invalid value: \"{name}\": must be a DNS label (at most 63 lower case alphanumerics or '-')",
            )
        )
    multiple = opt_bool(obj.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations", errors)
    raw_attributes = as_mapping(obj.get("attributes"), f"{path}.attributes", errors)
    raw_capacity = as_mapping(obj.get("capacity"), f"{path}.capacity", errors)
    total = len(raw_attributes) + len(raw_capacity)
    if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        limit = RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
        errors.append(
            FieldError(
                path, f"Invalid value: {total}: the total number of attributes and capacities must not exceed {limit}"
            )
        )
        raw_attributes, raw_capacity = {}, {}
    attributes = _attributes(raw_attributes, f"{path}.attributes", api, errors)
    if api.max_attribute_values_per_device is not None:
        values = sum(len(_values(a)) if a.is_list else 1 for a in attributes.values())
        if values > api.max_attribute_values_per_device:
            limit = api.max_attribute_values_per_device
            errors.append(
                FieldError(
                    path, f"Invalid value: {values}: the total number of attribute values must not exceed {limit}"
                )
            )
    capacity, policies = _capacity(raw_capacity, f"{path}.capacity", multiple is True, errors)
    consumes = tuple(
        _consumption(item, f"{path}.consumesCounters[{i}]", errors)
        for i, item in enumerate(
            bounded_items(
                obj.get("consumesCounters"),
                f"{path}.consumesCounters",
                RESOURCE_SLICE_MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
                errors,
            )
        )
    )
    errors.extend(duplicate_errors([c.counter_set for c in consumes], f"{path}.consumesCounters"))
    node_name = opt_str(obj.get("nodeName"), f"{path}.nodeName", errors)
    node_selector = parse_node_selector(obj.get("nodeSelector"), f"{path}.nodeSelector", errors)
    all_nodes = opt_bool(obj.get("allNodes"), f"{path}.allNodes", errors)
    if per_device:
        errors.extend(_node_choice_errors(node_name, node_selector, all_nodes, None, path, device=True))
    elif node_name is not None or node_selector is not None or all_nodes is not None:
        errors.append(
            FieldError(
                path,
                "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        )
    conditions = parse_string_list(
        obj.get("bindingConditions"), f"{path}.bindingConditions", BINDING_CONDITIONS_MAX_SIZE, errors
    )
    failures = parse_string_list(
        obj.get("bindingFailureConditions"), f"{path}.bindingFailureConditions", BINDING_CONDITIONS_MAX_SIZE, errors
    )
    binds_to_node = opt_bool(obj.get("bindsToNode"), f"{path}.bindsToNode", errors)
    if conditions and not failures:
        errors.append(
            FieldError(
                f"{path}.bindingFailureConditions",
                "Required value: bindingFailureConditions are required when bindingConditions are set",
            )
        )
    return Device(
        driver=driver,
        attributes=attributes,
        capacity=capacity,
        allow_multiple_allocations=multiple,
        name=name,
        request_policies=policies,
        consumes_counters=consumes,
        node_name=node_name or None,
        node_selector=node_selector,
        all_nodes=all_nodes,
        taints=parse_device_taints(obj.get("taints"), f"{path}.taints", errors),
        binds_to_node=binds_to_node,
        binding_conditions=conditions,
        binding_failure_conditions=failures,
    )


_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = ("ints", "bools", "strings", "versions")


def _values(attr: DeviceAttribute) -> Sequence[object]:
    for values in (attr.int_values, attr.bool_values, attr.string_values, attr.version_values):
        if values is not None:
            return values
    return ()


def qualified_name_errors(name: str, path: str) -> list[FieldError]:
    """``validateQualifiedName``: ``[domain/]id``, the domain a DNS subdomain of at most 63
    characters, the id a C identifier of at most 32 (attribute and capacity names)."""
    domain, sep, ident = name.rpartition("/")
    errors: list[FieldError] = []
    if sep:
        if not domain:
            errors.append(FieldError(path, 'Invalid value: "": the domain must not be empty'))
        elif len(domain) > DEVICE_MAX_DOMAIN_LENGTH:
            errors.append(
                FieldError(path, f"Too long: the domain may not be more than {DEVICE_MAX_DOMAIN_LENGTH} bytes")
            )
        elif not _DNS1123_SUBDOMAIN.fullmatch(domain):
            errors.append(FieldError(path, f'Invalid value: "{domain}": the domain must be a lowercase DNS subdomain'))
    if not ident:
        errors.append(FieldError(path, 'Invalid value: "": the name must not be empty'))
    elif len(ident) > DEVICE_MAX_ID_LENGTH:
        errors.append(FieldError(path, f"Too long: the name may not be more than {DEVICE_MAX_ID_LENGTH} bytes"))
    elif not _C_IDENTIFIER.fullmatch(ident):
        errors.append(
            FieldError(
                path,
                f"Invalid value: \"{ident}\": a valid C identifier must start with alphabetic character or '_', "
                "followed by a string of alphanumeric characters or '_'",
            )
        )
    return errors


def parse_device_attributes(
    raw: Mapping[str, Any], path: str, minor: str, errors: list[FieldError]
) -> dict[str, DeviceAttribute]:
    """A device's ``attributes`` as ``minor`` reads them (``DRAAPIFacts.list_attributes``: whether an
    attribute may hold a list of one kind)."""
    return _attributes(raw, path, dra_api(minor), errors)


def _attributes(
    raw: Mapping[str, Any], path: str, api: DRAAPIFacts, errors: list[FieldError]
) -> dict[str, DeviceAttribute]:
    out: dict[str, DeviceAttribute] = {}
    for key, apath, obj in _qualified_entries(raw, path, errors):
        out[key] = _attribute(obj, apath, api, errors)
    return out


def _qualified_entries(
    raw: Mapping[str, Any], path: str, errors: list[FieldError]
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(name, path, object) of each entry of a map keyed by qualified name (attributes, capacity)."""
    for key, item in raw.items():
        if not isinstance(key, str):
            errors.append(FieldError(path, f"key {key!r} must be a string"))
            continue
        entry_path = f"{path}[{key}]"
        errors.extend(qualified_name_errors(key, entry_path))
        yield key, entry_path, as_mapping(item, entry_path, errors)


def _attribute(obj: Mapping[str, Any], path: str, api: DRAAPIFacts, errors: list[FieldError]) -> DeviceAttribute:
    values: dict[str, Any] = {}
    int_value = obj.get("int")
    if int_value is not None:
        number = opt_int(int_value, f"{path}.int", errors)
        if number is not None and not INT64_MIN <= number <= INT64_MAX:
            errors.append(FieldError(f"{path}.int", f"Invalid value: {number}: out of int64 range"))
        elif number is not None:
            values["int_value"] = number
    if obj.get("bool") is not None:
        flag = opt_bool(obj.get("bool"), f"{path}.bool", errors)
        if flag is not None:
            values["bool_value"] = flag
    if obj.get("string") is not None:
        text = opt_str(obj.get("string"), f"{path}.string", errors)
        if text is not None:
            errors.extend(_string_errors(text, f"{path}.string"))
            values["string_value"] = text
    if obj.get("version") is not None:
        text = opt_str(obj.get("version"), f"{path}.version", errors)
        if text is not None:
            errors.extend(_version_errors(text, f"{path}.version"))
            values["version_value"] = text
    if api.list_attributes:
        bound = api.max_attribute_values_per_device
        for kind in _LIST_KINDS:
            if obj.get(kind) is not None:
                parsed = _attribute_list(obj.get(kind), f"{path}.{kind}", kind, bound, errors)
                if parsed is not None:
                    values[f"{kind[:-1]}_values"] = parsed
    if len(values) != 1:
        errors.append(FieldError(path, "Invalid value: exactly one value must be specified"))
    return DeviceAttribute(**values) if len(values) == 1 else DeviceAttribute()


def _attribute_list(
    value: object, path: str, kind: str, bound: int | None, errors: list[FieldError]
) -> tuple[Any, ...] | None:
    items = as_list(value, path, errors)
    if isinstance(value, list) and not items:
        errors.append(FieldError(path, "Invalid value: []: must not be empty if specified"))
        return None
    if bound is not None and len(items) > bound:  # the device's total is checked after
        errors.append(too_many(path, len(items), bound))
        return None
    out: list[Any] = []
    for i, item in enumerate(items):
        ipath = f"{path}[{i}]"
        if kind == "ints":
            number = opt_int(item, ipath, errors)
            if number is not None and INT64_MIN <= number <= INT64_MAX:
                out.append(number)
            elif number is not None:
                errors.append(FieldError(ipath, f"Invalid value: {number}: out of int64 range"))
        elif kind == "bools":
            flag = opt_bool(item, ipath, errors)
            if flag is not None:
                out.append(flag)
        else:
            text = opt_str(item, ipath, errors)
            if text is not None:
                errors.extend(_string_errors(text, ipath) if kind == "strings" else _version_errors(text, ipath))
                out.append(text)
    return tuple(out) if len(out) == len(items) else None


def _string_errors(text: str, path: str) -> list[FieldError]:
    if len(text) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        return [FieldError(path, f"Too long: may not be more than {DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH} bytes")]
    return []


def _version_errors(text: str, path: str) -> list[FieldError]:
    errors = _string_errors(text, path)
    try:
        parse_semver(text)
    except SemverError:
        errors.insert(
            0, FieldError(path, f'Invalid value: "{text}": must be a string compatible with semver.org spec 2.0.0')
        )
    return errors


def _capacity(
    raw: Mapping[str, Any], path: str, multiple: bool, errors: list[FieldError]
) -> tuple[dict[str, Fraction], dict[str, CapacityRequestPolicy]]:
    values: dict[str, Fraction] = {}
    policies: dict[str, CapacityRequestPolicy] = {}
    for key, cpath, obj in _qualified_entries(raw, path, errors):
        value = parse_quantity_item(obj.get("value"), f"{cpath}.value", errors)
        if value is None:
            continue
        values[key] = value
        if obj.get("requestPolicy") is None:
            continue
        if not multiple:
            errors.append(FieldError(f"{cpath}.requestPolicy", "Forbidden: allowMultipleAllocations must be true"))
            continue
        policy = _request_policy(obj["requestPolicy"], f"{cpath}.requestPolicy", value, errors)
        if policy is not None:
            policies[key] = policy
    return values, policies


def _request_policy(
    value: object, path: str, capacity: Fraction, errors: list[FieldError]
) -> CapacityRequestPolicy | None:
    """``validateRequestPolicy``: valid values or a range (not both), a default within them."""
    before = len(errors)
    obj = as_mapping(value, path, errors)
    default = None if obj.get("default") is None else parse_quantity_item(obj["default"], f"{path}.default", errors)
    raw_values = bounded_items(
        obj.get("validValues"), f"{path}.validValues", CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, errors
    )
    valid_values = tuple(parse_quantity_item(v, f"{path}.validValues[{i}]", errors) for i, v in enumerate(raw_values))
    valid_range = None
    if obj.get("validRange") is not None:
        rng = as_mapping(obj["validRange"], f"{path}.validRange", errors)
        bounds = {
            k: None if rng.get(k) is None else parse_quantity_item(rng[k], f"{path}.validRange.{k}", errors)
            for k in ("min", "max", "step")
        }
        low = bounds["min"]
        if low is None:
            if rng.get("min") is None:
                errors.append(
                    FieldError(f"{path}.validRange.min", "Required value: required when validRange is defined")
                )
        else:
            valid_range = CapacityRequestPolicyRange(low, bounds["max"], bounds["step"])
    if len(errors) > before:
        return None
    values = tuple(v for v in valid_values if v is not None)
    if values and obj.get("validRange") is not None:
        errors.append(
            FieldError(
                path,
                "Forbidden: exactly one policy can be specified, "
                'cannot specify "validValues" and "validRange" at the same time',
            )
        )
    elif (values or valid_range is not None) and default is None:
        which = "validValues" if values else "validRange"
        errors.append(FieldError(f"{path}.default", f"Required value: required when {which} is defined"))
    elif values and default is not None:
        for i in range(len(values) - 1):
            if values[i] > values[i + 1]:
                errors.append(
                    FieldError(
                        f"{path}.validValues[{i + 1}]", "Invalid value: values must be sorted in ascending order"
                    )
                )
        for i, v in enumerate(values):
            if v > capacity:
                errors.append(
                    FieldError(f"{path}.validValues[{i}]", "Invalid value: option is larger than capacity value")
                )
        if default not in values:
            errors.append(
                FieldError(
                    f"{path}.validValues", "Invalid value: default value is not valid according to the requestPolicy"
                )
            )
    elif valid_range is not None and default is not None:
        errors.extend(_range_errors(valid_range, default, capacity, f"{path}.validRange"))
    return CapacityRequestPolicy(default, values, valid_range) if len(errors) == before else None


def _range_errors(
    rng: CapacityRequestPolicyRange, default: Fraction, capacity: Fraction, path: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    if rng.min > capacity:
        errors.append(FieldError(f"{path}.min", "Invalid value: min is larger than capacity value"))
    if default < rng.min:
        errors.append(FieldError(f"{path}.default", "Invalid value: default is less than min"))
    if rng.max is not None:
        if rng.min > rng.max:
            errors.append(FieldError(f"{path}.max", "Invalid value: min is larger than max"))
        if rng.max > capacity:
            errors.append(FieldError(f"{path}.max", "Invalid value: max is larger than capacity value"))
        if default > rng.max:
            errors.append(FieldError(f"{path}.default", "Invalid value: default is more than max"))
    if rng.step is not None and rng.step <= 0:
        errors.append(FieldError(f"{path}.step", "Invalid value: step must be positive"))
    return errors


def _counters(value: object, path: str, limit: int, errors: list[FieldError]) -> dict[str, Fraction]:
    """A counter map (name -> ``{value}``), its names DNS labels, at most ``limit`` of them."""
    raw = as_mapping(value, path, errors)
    if len(raw) > limit:
        errors.append(too_many(path, len(raw), limit))
        return {}
    if not raw:
        errors.append(FieldError(path, "Required value"))
    for key in raw:
        if isinstance(key, str) and not (len(key) <= 63 and _DNS1123_LABEL.fullmatch(key)):
            errors.append(FieldError(f"{path}[{key}]", f'Invalid value: "{key}": must be a DNS label'))
    return parse_quantity_map(raw, path, errors, inner="value")


def _counter_set(value: object, path: str, errors: list[FieldError]) -> CounterSet:
    obj = as_mapping(value, path, errors)
    name = required_str(obj.get("name"), f"{path}.name", errors)
    return CounterSet(
        name, _counters(obj.get("counters"), f"{path}.counters", RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET, errors)
    )


def _consumption(value: object, path: str, errors: list[FieldError]) -> DeviceCounterConsumption:
    obj = as_mapping(value, path, errors)
    counter_set = required_str(obj.get("counterSet"), f"{path}.counterSet", errors)
    counters = _counters(obj.get("counters"), f"{path}.counters", RESOURCE_SLICE_MAX_COUNTERS_PER_CONSUMPTION, errors)
    return DeviceCounterConsumption(counter_set, counters)
