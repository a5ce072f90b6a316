"""The object builders of upstream's allocator test table (``allocatortesting/allocator_testing.go``,
v0.35.4), so that its cases read here as they read there.

Objects are built as their API JSON (``GoObj``: a dict whose Go field names read and write the JSON
keys, so upstream's ``c.Spec.Devices.Requests[0].Exactly.AdminAccess = true`` has a direct
counterpart) and parsed with our ``from_dict`` when a case runs.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.fields import FieldError
from scheduler.api.nodeselector import NodeSelector, parse_node_selector
from scheduler.api.objects import Node
from scheduler.api.resourceclaim import ALLOCATION_RESULTS_MAX_SIZE, ResourceClaim
from scheduler.api.resourceslice import ResourceSlice
from scheduler.plugins.dynamicresources.structured import DeviceID, Features

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "Case", "DeviceID", "Features", "GoObj"]

# Go field names whose JSON name is not the lower-camel form.
_JSON_NAMES = {
    "CEL": "cel",
    "ObjectMeta": "metadata",
    "StringValue": "string",
    "IntValue": "int",
    "BoolValue": "bool",
    "VersionValue": "version",
}


def _json_name(go_name: str) -> str:
    return _JSON_NAMES.get(go_name, go_name[:1].lower() + go_name[1:])


class GoObj(dict[str, Any]):
    """A Kubernetes object as JSON, read and written through Go field names.

    ``Name`` of a top-level object is ``metadata.name`` (Go embeds ObjectMeta); an embedded
    ``DeviceConfiguration`` is merged in, as its JSON is.
    """

    def __getattr__(self, go_name: str) -> Any:
        if go_name.startswith("_"):
            raise AttributeError(go_name)
        if go_name == "Name" and "metadata" in self:
            return self["metadata"]["name"]
        key = _json_name(go_name)
        if key not in self:
            self[key] = GoObj()
        return self[key]

    def __setattr__(self, go_name: str, value: Any) -> None:
        if go_name == "Name" and "metadata" in self:
            self["metadata"]["name"] = value
            return
        self[_json_name(go_name)] = value


def obj(*embedded: GoObj, **fields: Any) -> GoObj:
    out = GoObj()
    for part in embedded:
        out.update(part)
    for go_name, value in fields.items():
        if go_name == "DeviceConfiguration":
            out.update(value)
        elif value is not None:
            out[_json_name(go_name)] = value
    return out


def assign(target: GoObj, go_name: str, value: Any) -> None:
    setattr(target, go_name, value)


def copy_obj(value: GoObj) -> GoObj:
    return copy.deepcopy(value)


def objects(*items: Any) -> list[Any]:
    return list(items)


unwrap = objects
unwrap_resource_slices = objects


def concat(*lists: list[Any]) -> list[Any]:
    return [item for items in lists for item in items]


def sprintf(fmt: str, *args: Any) -> str:
    return fmt.replace("%v", "%s") % args


def quantity(text: str) -> str:
    return text


# Constants of the table.
REGION1 = "region-1"
REGION2 = "region-2"
NODE1 = "node-1"
NODE2 = "node-2"
CLASS_A = "class-a"
CLASS_B = "class-b"
DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
POOL1 = "pool-1"
POOL2 = "pool-2"
POOL3 = "pool-3"
POOL4 = "pool-4"
REQ0 = "req-0"
REQ1 = "req-1"
REQ2 = "req-2"
REQ3 = "req-3"
SUB_REQ0 = "subReq-0"
SUB_REQ1 = "subReq-1"
REQ0_SUB_REQ0 = "req-0/subReq-0"
REQ0_SUB_REQ1 = "req-0/subReq-1"
REQ1_SUB_REQ0 = "req-1/subReq-0"
REQ1_SUB_REQ1 = "req-1/subReq-1"
REQ2_SUB_REQ0 = "req-2/subReq-0"
CLAIM0 = "claim-0"
CLAIM1 = "claim-1"
SLICE1 = "slice-1"
SLICE2 = "slice-2"
SLICE3 = "slice-3"
SLICE4 = "slice-4"
DEVICE0 = "device-0"
DEVICE1 = "device-1"
DEVICE2 = "device-2"
DEVICE3 = "device-3"
DEVICE4 = "device-4"
FIELD_NAME_KEY = "metadata.name"
REGION_KEY = "region"
PLANET_KEY = "planet"
PLANET_VALUE_EARTH = "earth"
NODE_SELECTION_ALL = "nodeSelectionAll"
NODE_SELECTION_PER_DEVICE = "nodeSelectionPerDevice"
NON_EXISTENT_ATTRIBUTE = f"{DRIVER_A}/NonExistentAttribute"
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
INT_ATTRIBUTE = f"{DRIVER_A}/numa"
COUNTER_SET1 = "counter-set-1"
COUNTER_SET2 = "counter-set-2"
TAINT_KEY = "taint-key"
TAINT_NONE = {"key": TAINT_KEY, "value": "taint-value", "effect": "None"}
TAINT_NO_SCHEDULE = {"key": TAINT_KEY, "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": TAINT_KEY, "value": "taint-value-2", "effect": "NoExecute"}
TOLERATION_NO_SCHEDULE = {"operator": "Exists", "key": TAINT_KEY, "effect": "NoSchedule"}
TOLERATION_NO_EXECUTE = {"operator": "Equal", "key": TAINT_KEY, "value": "taint-value-2", "effect": "NoExecute"}
TOLERATION_NO_SCHEDULE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}
FROM_COUNTERS = "fromCounters"  # a device's capacity: what it consumes of its counters
CAPACITY0 = "capacity-0"
CAPACITY1 = "capacity-1"
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"  # the harness writes it over every share ID
ZERO = "0"
TWO = "2"
THREE = "3"
FOUR = "4"
POINT_ONE = "100m"
POINT_TWO = "200m"
POINT_TWO_FIVE = "250m"
POINT_THREE = "300m"
MAX_INT = 2**63 - 1  # Go's math.MaxInt
ONE = "1"
REQ2_SUB_REQ1 = "req-2/subReq-1"


def node(name: str, region: str) -> Node:
    return Node(
        name=name, uid="", labels={REGION_KEY: region, PLANET_KEY: PLANET_VALUE_EARTH}, taints=(), unschedulable=False
    )


def device_class(name: str, driver: str) -> GoObj:
    return obj(Metadata=obj(Name=name), Spec=obj(Selectors=[obj(CEL=obj(Expression=f'device.driver == "{driver}"'))]))


def device_configuration(driver: str, attribute: str) -> GoObj:
    return obj(Opaque=obj(Driver=driver, Parameters={attribute: attribute + "Value"}))


def class_with_config(name: str, driver: str, attribute: str) -> GoObj:
    out = device_class(name, driver)
    out.Spec.Config = [device_configuration(driver, attribute)]
    return out


def claim_with_requests(name: str, constraints: list[GoObj] | None, *requests: GoObj) -> GoObj:
    return obj(
        Metadata=obj(Name=name),
        Spec=obj(Devices=obj(Requests=list(requests), Constraints=constraints)),
    )


def request(name: str, klass: str, count: int, *selectors: GoObj) -> GoObj:
    return obj(
        Name=name,
        Exactly=obj(Count=count, AllocationMode="ExactCount", DeviceClassName=klass, Selectors=list(selectors) or None),
    )


device_request = request


def all_device_request(name: str, klass: str) -> GoObj:
    return obj(Name=name, Exactly=obj(AllocationMode="All", DeviceClassName=klass))


def sub_request(name: str, klass: str, count: int, *fields: GoObj | dict[str, str]) -> GoObj:
    """Upstream's ``subRequest``: its fields are selectors and tolerations, told apart by type."""
    selectors = [f for f in fields if "operator" not in f]
    tolerations = [f for f in fields if "operator" in f]
    return obj(
        Name=name,
        Count=count,
        AllocationMode="ExactCount",
        DeviceClassName=klass,
        Selectors=selectors or None,
        Tolerations=tolerations or None,
    )


def request_with_prioritized_list(name: str, *subrequests: GoObj) -> GoObj:
    return obj(Name=name, FirstAvailable=list(subrequests))


def claim_with_request(name: str, req: str, klass: str, *constraints: GoObj) -> GoObj:
    return claim_with_requests(name, list(constraints) or None, request(req, klass, 1))


def with_tolerations(claim_: GoObj, *tolerations: dict[str, str]) -> GoObj:
    out = copy_obj(claim_)
    for request_ in out.Spec.Devices.Requests:
        request_.Exactly.Tolerations = [*(request_.Exactly.get("tolerations") or ()), *tolerations]
    return out


def claim(name: str) -> GoObj:
    return obj(Metadata=obj(Name=name), Spec=obj(Devices=obj()))


def with_requests(claim_: GoObj, *requests: GoObj) -> GoObj:
    out = copy_obj(claim_)
    out.Spec.Devices.Requests = list(requests)
    return out


def with_constraints(claim_: GoObj, *constraints: GoObj) -> GoObj:
    out = copy_obj(claim_)
    out.Spec.Devices.Constraints = list(constraints)
    return out


def with_configs(claim_: GoObj, configs: list[GoObj]) -> GoObj:
    out = copy_obj(claim_)
    out.Spec.Devices.Config = configs
    return out


def with_selectors(request_: GoObj, *selectors: GoObj) -> GoObj:
    out = copy_obj(request_)
    out.Exactly.Selectors = list(selectors)
    return out


def with_allocation_mode(subrequest: GoObj, mode: str) -> GoObj:
    out = copy_obj(subrequest)
    out.AllocationMode = mode
    return out


def claim_with_device_config(name: str, req: str, klass: str, driver: str, attribute: str) -> GoObj:
    out = claim_with_request(name, req, klass)
    out.Spec.Devices.Config = [device_configuration(driver, attribute)]
    return out


def device_claim_config(requests: list[str], config: GoObj) -> GoObj:
    return obj(config, Requests=requests)


class _FromCounters(GoObj):
    """A device whose capacity ``with_device_counter_consumption`` sets from what it consumes."""


def device(name: str, capacity: dict[str, Any] | str | None, attributes: dict[str, GoObj] | None) -> GoObj:
    if capacity == FROM_COUNTERS:
        return _FromCounters(obj(Name=name, Attributes=attributes))
    assert not isinstance(capacity, str)
    return obj(
        Name=name,
        Attributes=attributes,
        # A quantity, or (upstream's map of DeviceCapacity) the capacity with its request policy.
        Capacity={key: value if isinstance(value, dict) else {"value": value} for key, value in capacity.items()}
        if capacity
        else None,
    )


def with_taints(device_: GoObj, *taints: dict[str, str]) -> GoObj:
    out = GoObj(copy_obj(device_))
    out.Taints = [*(out.get("taints") or ()), *taints]
    return out


def with_binding_conditions(device_: GoObj, conditions: list[str], failure_conditions: list[str]) -> GoObj:
    out = copy_obj(device_)
    out.BindingConditions = conditions
    out.BindingFailureConditions = failure_conditions
    return out


def with_node_selection(device_: GoObj, selection: Any) -> GoObj:
    out = copy_obj(device_)
    _node_selection(out, selection)
    return out


def device_counter_consumption(counter_set_name: str, counters: dict[str, str] | None) -> GoObj:
    return obj(
        CounterSet=counter_set_name, Counters={name: {"value": value} for name, value in (counters or {}).items()}
    )


def with_device_counter_consumption(device_: GoObj, *consumptions: GoObj) -> GoObj:
    out = GoObj(copy_obj(device_))
    out.ConsumesCounters = [*(out.get("consumesCounters") or ()), *consumptions]
    if isinstance(device_, _FromCounters):
        out.Capacity = {name: dict(value) for c in out.ConsumesCounters for name, value in c["counters"].items()}
    return out


def counter_set(name: str, counters: dict[str, str] | None) -> GoObj:
    return obj(Name=name, Counters={key: {"value": value} for key, value in (counters or {}).items()})


def slice_with_counter_sets(name: str, selection: Any, pool: Any, driver: str, *counter_sets: GoObj) -> GoObj:
    out = slice_with_devices(name, selection, pool, driver)
    out.Spec.SharedCounters = list(counter_sets)
    return out


def _node_selection(target: GoObj, selection: Any) -> None:
    if isinstance(selection, dict):
        target.NodeSelector = selection
    elif selection == NODE_SELECTION_ALL:
        target.AllNodes = True
    elif selection == NODE_SELECTION_PER_DEVICE:
        target.PerDeviceNodeSelection = True
    else:
        target.NodeName = selection


def resource_pool(name: str, count: int) -> GoObj:
    return obj(Name=name, ResourceSliceCount=count, Generation=1)


def slice_with_devices(name: str, selection: Any, pool: Any, driver: str, *devices: GoObj) -> GoObj:
    spec = obj(Driver=driver, Pool=copy_obj(pool) if isinstance(pool, dict) else resource_pool(pool, 1))
    _node_selection(spec, selection)
    if devices:
        spec.Devices = [copy_obj(d) for d in devices]
    return obj(Metadata=obj(Name=name), Spec=spec)


def slice_with_no_devices(name: str, selection: Any, pool: Any, driver: str) -> GoObj:
    return slice_with_devices(name, selection, pool, driver)


def slice_with_one_device(name: str, selection: Any, pool: Any, driver: str) -> GoObj:
    return slice_with_devices(name, selection, pool, driver, device(DEVICE1, None, None))


def slice_with_multiple_devices(name: str, selection: Any, pool: Any, driver: str, count: int) -> GoObj:
    return slice_with_devices(name, selection, pool, driver, *(device(f"device-{i}", None, None) for i in range(count)))


def device_allocation_result(
    req: str, driver: str, pool: str, dev: str, admin_access: bool, *tolerations: dict[str, str]
) -> GoObj:
    return obj(
        Request=req,
        Driver=driver,
        Pool=pool,
        Device=dev,
        AdminAccess=True if admin_access else None,
        Tolerations=list(tolerations) or None,
    )


def multiple_device_allocation_results(req: str, driver: str, pool: str, count: int, start: int) -> list[GoObj]:
    return [device_allocation_result(req, driver, pool, f"device-{i}", False) for i in range(start, start + count)]


def node_label_selector(key: str, *values: str) -> GoObj:
    return obj(NodeSelectorTerms=[obj(MatchExpressions=[obj(Key=key, Operator="In", Values=list(values))])])


def local_node_selector(name: str) -> GoObj:
    return obj(NodeSelectorTerms=[obj(MatchFields=[obj(Key=FIELD_NAME_KEY, Operator="In", Values=[name])])])


def allocation_result(selector: GoObj | None, *results: GoObj) -> GoObj:
    return obj(Devices=obj(Results=list(results)), NodeSelector=selector)


def allocation_result_with_config(
    selector: GoObj | None, driver: str, source: str, attribute: str, *results: GoObj
) -> GoObj:
    config = obj(device_configuration(driver, attribute), Source=source)
    return obj(Devices=obj(Results=list(results), Config=[config]), NodeSelector=selector)


def allocation_result_with_configs(selector: GoObj | None, results: list[GoObj], configs: list[GoObj]) -> GoObj:
    return obj(Devices=obj(Results=results, Config=configs), NodeSelector=selector)


@dataclass
class Case:
    """One row of the table: what the allocator gets and what it must answer."""

    features: Features = field(default_factory=Features)
    claims: list[GoObj] = field(default_factory=list)
    allocated: list[DeviceID] | None = None
    allocated_shares: list[DeviceID] | None = None  # ``allocatedSharedDeviceIDs``, less the share IDs
    allocated_capacity: dict[DeviceID, dict[str, str]] | None = None  # ``allocatedCapacityDevices``
    classes: list[GoObj] = field(default_factory=list)
    slices: list[GoObj] | None = None
    node: Node | None = None
    expect: list[GoObj] | None = None
    error: str | tuple[str, ...] | None = None  # a substring of the error, or several (gomega.And)
    steps: int | None = None  # allocateOne calls (``expectNumAllocateOneInvocations``)
    steps_by_channel: dict[str, int] | None = None  # v0.36 on: the count for one variant instead

    def parsed_claims(self) -> list[ResourceClaim]:
        # Upstream's test claims have no namespace (klog prints the name alone).
        return [
            _keep_empty_selectors(c, dataclasses.replace(ResourceClaim.from_dict(c), namespace=""))
            for c in self.claims or ()
        ]

    def parsed_classes(self) -> dict[str, DeviceClass]:
        parsed = [DeviceClass.from_dict(c) for c in self.classes or ()]
        return {c.name: c for c in parsed}

    def parsed_slices(self) -> list[ResourceSlice]:
        return [ResourceSlice.from_dict(s) for s in self.slices or ()]


def _keep_empty_selectors(raw: GoObj, claim_: ResourceClaim) -> ResourceClaim:
    """A selector with no CEL (some future kind) is dropped by our parser, which records the error;
    the allocator meets it as "" (upstream: ``CEL expression empty``)."""
    requests = list(claim_.devices.requests)
    for i, raw_request in enumerate(raw["spec"]["devices"].get("requests") or ()):
        selectors = (raw_request.get("exactly") or {}).get("selectors") or []
        exactly = requests[i].exactly
        if exactly is not None and any("cel" not in s for s in selectors):
            kept = tuple(s["cel"]["expression"] if "cel" in s else "" for s in selectors)
            requests[i] = dataclasses.replace(requests[i], exactly=dataclasses.replace(exactly, selectors=kept))
    devices = dataclasses.replace(claim_.devices, requests=tuple(requests))
    return dataclasses.replace(claim_, devices=devices)


def parse_selector(raw: GoObj) -> NodeSelector | None:
    errors: list[FieldError] = []
    return parse_node_selector(raw, "nodeSelector", errors)


def last(*steps: Any) -> Any:
    """Upstream's ``func() T { ...; return x }()``: the steps run in order, the last is the value."""
    return steps[-1]


def with_capacity_request(request_: GoObj, quantity: str | None) -> GoObj:
    """Upstream's ``withCapacityRequest`` on a request (its ``exactly``) or a subrequest."""
    out = copy_obj(request_)
    target = out.Exactly if "exactly" in out else out
    target.Capacity = obj(Requests={CAPACITY0: quantity} if quantity is not None else {})
    return out


def with_binds_to_node(device_: GoObj, binds: bool) -> GoObj:
    out = GoObj(copy_obj(device_))
    out.BindsToNode = binds
    return out


def device_request_allocation_result_with_binding_conditions(
    req: str,
    driver: str,
    pool: str,
    dev: str,
    conditions: list[str] | None,
    failure_conditions: list[str] | None,
    *tolerations: dict[str, str],
) -> GoObj:
    out = device_allocation_result(req, driver, pool, dev, False, *tolerations)
    if conditions is not None:
        out.BindingConditions = conditions
    if failure_conditions is not None:
        out.BindingFailureConditions = failure_conditions
    return out


def all_of(*substrings: str) -> tuple[str, ...]:
    """``gomega.And`` of substring matchers."""
    return substrings


# Consumable capacity.


def new_quantity(value: int, _format: str) -> str:
    return str(value)


def new_milli_quantity(value: int, _format: str) -> str:
    return f"{value}m"


def shared_device_id(device_id: DeviceID, _share_id: str) -> DeviceID:
    """``MakeSharedDeviceID``: the allocator reads only the device of a share."""
    return device_id


def class_with_allow_multiple_allocations(name: str, driver: str, multiple: bool) -> GoObj:
    expression = f'device.driver == "{driver}" && device.allowMultipleAllocations == {str(multiple).lower()}'
    return obj(ObjectMeta=obj(Name=name), Spec=obj(Selectors=[obj(CEL=obj(Expression=expression))]))


def with_allow_multiple_allocations(device_: GoObj) -> GoObj:
    out = GoObj(copy_obj(device_))
    out.AllowMultipleAllocations = True
    return out


def _with_policies(device_: GoObj, capacity: dict[str, str], policy: dict[str, Any]) -> GoObj:
    out = GoObj(copy_obj(device_))
    out.Capacity = {
        **(out.get("capacity") or {}),
        **{k: {"value": v, "requestPolicy": policy} for k, v in capacity.items()},
    }
    return out


def with_capacity_request_policy_range(device_: GoObj, capacity: dict[str, str]) -> GoObj:
    """A range policy (min, step, max) = (2, 2, 4), default 2."""
    return _with_policies(device_, capacity, {"default": TWO, "validRange": {"min": TWO, "step": TWO, "max": FOUR}})


def with_fractional_capacity_request_policy_range(device_: GoObj, capacity: dict[str, str]) -> GoObj:
    """A range policy (min, step, max) = (200m, 100m, 1), default 200m."""
    policy = {"default": POINT_TWO, "validRange": {"min": POINT_TWO, "step": POINT_ONE, "max": ONE}}
    return _with_policies(device_, capacity, policy)


def with_capacity_request_policy_valid_values(
    device_: GoObj, default: str, capacity: dict[str, str], additional: list[str] | None
) -> GoObj:
    return _with_policies(device_, capacity, {"default": default, "validValues": [default, *(additional or ())]})


def device_request_allocation_result(req: str, driver: str, pool: str, dev: str) -> GoObj:
    return obj(Request=req, Driver=driver, Pool=pool, Device=dev)


def with_consumed_capacity(result: GoObj, share_id: str | None, consumed: dict[str, str] | None) -> GoObj:
    out = GoObj(copy_obj(result))
    out.ShareID = share_id
    if consumed:
        out.ConsumedCapacity = consumed
    return out
