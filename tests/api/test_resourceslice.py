"""ResourceSlices parsed as each minor's ``resource.k8s.io/v1`` has them (``scheduler.api.resourceslice``).

Objects and bounds from upstream's validation tests (``validation_resourceslice_test.go``: the
``testAttributes``/``testCapacity`` values, ``ResourceSliceMaxDevices``) and allocator table
(``allocatortesting``: driver, pool and device names).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

import scheduler.api.resourceslice as rs
from scheduler.plugins.dynamicresources import cel
from tests.helpers import each_field_replaced

MINORS = ("1.35", "1.36", "1.37")


def device(name: str = "device-0", **fields: Any) -> dict[str, Any]:
    """upstream ``testResourceSlice``'s device: ``testAttributes()`` and ``testCapacity()``."""
    out: dict[str, Any] = {
        "name": name,
        "attributes": {
            "int": {"int": 42},
            "string": {"string": "hello world"},
            "version": {"version": "1.2.3"},
            "bool": {"bool": True},
        },
        "capacity": {"memory": {"value": "1Gi"}},
    }
    out.update(fields)
    return out


_ONE_DEVICE: Any = object()


def slice_obj(devices: Any = _ONE_DEVICE, **spec: Any) -> dict[str, Any]:
    """upstream ``testResourceSlice`` (one device unless given; None: no ``devices``)."""
    body: dict[str, Any] = {
        "driver": "driver-a",
        "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [device()] if devices is _ONE_DEVICE else devices,
    }
    body.update(spec)
    if body["devices"] is None:
        del body["devices"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "slice-1"}, "spec": body}


def parse(obj: object, minor: str = "1.37") -> rs.ResourceSlice:
    return rs.ResourceSlice.from_dict(obj, minor=minor)


def messages(parsed: Any) -> list[str]:
    return [str(e) for e in parsed.errors]


@pytest.mark.parametrize("minor", MINORS)
def test_upstream_test_slice(minor: str) -> None:
    s = parse(slice_obj(), minor)
    assert s.errors == ()
    assert (s.name, s.driver, s.node_name) == ("slice-1", "driver-a", "node-1")
    assert s.pool == rs.ResourcePool("pool-1", 1, 1)
    (d,) = s.devices
    assert d.name == "device-0" and d.driver == "driver-a"
    assert d.attributes["int"] == rs.DeviceAttribute(int_value=42)
    assert d.attributes["string"] == rs.DeviceAttribute(string_value="hello world")
    assert d.attributes["version"] == rs.DeviceAttribute(version_value="1.2.3")
    assert d.attributes["bool"] == rs.DeviceAttribute(bool_value=True)
    assert d.capacity == {"memory": Fraction(2**30)}


def test_a_parsed_device_is_what_selectors_read() -> None:
    (d,) = parse(slice_obj()).devices
    compiled = cel.compiler_for(37).compile(
        'device.attributes["driver-a"].int == 42 && device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) == 0'
        ' && device.attributes["driver-a"].version.isGreaterThan(semver("1.0.0"))'
    )
    assert compiled.error is None
    assert compiled.device_matches(d).matches is True


def test_node_selection() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    s = parse(slice_obj(nodeName=None, nodeSelector=selector))
    assert s.errors == () and s.node_name is None and s.node_selector is not None
    assert s.node_selector.matches("n", {"zone": "a"}) and not s.node_selector.matches("n", {"zone": "b"})
    s = parse(slice_obj(nodeName=None, allNodes=True))
    assert s.errors == () and s.all_nodes
    per_device = [device("device-0", nodeName="node-1"), device("device-1", allNodes=True)]
    s = parse(slice_obj(per_device, nodeName=None, perDeviceNodeSelection=True))
    assert s.errors == () and s.per_device_node_selection
    assert [(d.node_name, d.all_nodes) for d in s.devices] == [("node-1", None), (None, True)]


def test_node_selection_errors() -> None:
    required = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    assert messages(parse(slice_obj(nodeName=None))) == [f"spec: Required value: {required}"]
    assert messages(parse(slice_obj(allNodes=True))) == [
        f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {required}, but multiple fields are set'
    ]
    assert "spec.allNodes: Invalid value: false: must be either unset or set to true" in messages(
        parse(slice_obj(nodeName=None, allNodes=False))
    )
    assert messages(parse(slice_obj([device(nodeName="node-1")]))) == [
        "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    ]
    per_device = parse(slice_obj([device()], nodeName=None, perDeviceNodeSelection=True))
    assert [e.path for e in per_device.errors] == ["spec.devices[0]"]
    two_terms: dict[str, Any] = {"nodeSelectorTerms": [{"matchFields": []}, {"matchFields": []}]}
    assert "spec.nodeSelector.nodeSelectorTerms" in [
        e.path for e in parse(slice_obj(nodeName=None, nodeSelector=two_terms)).errors
    ]


def test_pool_errors() -> None:
    s = parse(slice_obj(pool={"name": "", "generation": -1, "resourceSliceCount": 0}))
    assert messages(s) == [
        "spec.pool.name: Required value",
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
    ]


@pytest.mark.parametrize("minor", MINORS)
def test_too_many_devices_is_one_error_and_nothing_read(minor: str) -> None:
    """upstream: "too-large", ResourceSliceMaxDevices+1; validateSet short-circuits past the bound."""
    s = parse(slice_obj([device(f"device-{i}") for i in range(129)]), minor)
    assert messages(s) == ["spec.devices: Too many: 129: must have at most 128 items"]
    assert s.devices == ()
    assert len(parse(slice_obj([device(f"device-{i}") for i in range(128)]), minor).devices) == 128


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(
    "advanced",
    [
        {"taints": [{"key": "example.com/taint", "effect": "NoSchedule"}]},
        {"consumesCounters": [{"counterSet": "counter-set-1", "counters": {"memory": {"value": "1Gi"}}}]},
    ],
    ids=["taints", "consumesCounters"],
)
def test_devices_with_taints_or_counters_are_bounded_lower(minor: str, advanced: dict[str, Any]) -> None:
    devices = [device(f"device-{i}") for i in range(65)]
    devices[0].update(advanced)
    assert messages(parse(slice_obj(devices), minor)) == ["spec.devices: Too many: 65: must have at most 64 items"]


def test_list_attributes_exist_from_1_36() -> None:
    """DeviceAttribute's ``ints``/``bools``/``strings``/``versions`` (k8s.io/api 1.36): 1.35's API has no
    such field, its decoder drops it and the attribute has no value left."""
    obj = slice_obj([device(attributes={"cores": {"ints": [1, 2]}, "names": {"strings": ["a", "b"]}})])
    for minor in ("1.36", "1.37"):
        s = parse(obj, minor)
        assert s.errors == ()
        assert s.devices[0].attributes["cores"] == rs.DeviceAttribute(int_values=(1, 2))
        assert s.devices[0].attributes["names"] == rs.DeviceAttribute(string_values=("a", "b"))
    old = parse(obj, "1.35")
    assert old.devices[0].attributes["cores"] == rs.DeviceAttribute()
    assert messages(old) == [
        "spec.devices[0].attributes[cores]: Invalid value: exactly one value must be specified",
        "spec.devices[0].attributes[names]: Invalid value: exactly one value must be specified",
    ]


def test_list_attributes_bound_the_slice_from_1_36() -> None:
    devices = [device(f"device-{i}") for i in range(65)]
    devices[0]["attributes"] = {"cores": {"ints": [1]}}
    assert messages(parse(slice_obj(devices), "1.36")) == ["spec.devices: Too many: 65: must have at most 64 items"]
    assert len(parse(slice_obj(devices), "1.35").devices) == 65


def test_attribute_values_per_device_from_1_36() -> None:
    attrs = {f"a{i}": {"ints": list(range(10))} for i in range(5)}  # 50 values
    s = parse(slice_obj([device(attributes=attrs, capacity={})]), "1.36")
    assert messages(s) == [
        "spec.devices[0]: Invalid value: 50: the total number of attribute values must not exceed 48"
    ]


def test_attribute_errors() -> None:
    attrs = {
        "two": {"string": "x", "version": "1.2.3"},
        "none": {},
        "badversion": {"version": "1.2"},
        "long": {"string": "x" * 65},
        "bad-name": {"int": 1},
        "int": {"int": "42"},
    }
    s = parse(slice_obj([device(attributes=attrs)]))
    assert messages(s) == [
        "spec.devices[0].attributes[two]: Invalid value: exactly one value must be specified",
        "spec.devices[0].attributes[none]: Invalid value: exactly one value must be specified",
        'spec.devices[0].attributes[badversion].version: Invalid value: "1.2": '
        "must be a string compatible with semver.org spec 2.0.0",
        "spec.devices[0].attributes[long].string: Too long: may not be more than 64 bytes",
        'spec.devices[0].attributes[bad-name]: Invalid value: "bad-name": a valid C identifier must start with '
        "alphabetic character or '_', followed by a string of alphanumeric characters or '_'",
        "spec.devices[0].attributes[int].int: must be an integer, got '42'",
        "spec.devices[0].attributes[int]: Invalid value: exactly one value must be specified",
    ]


def test_too_many_attributes_and_capacities() -> None:
    attrs = {f"a{i}": {"int": i} for i in range(32)}
    s = parse(slice_obj([device(attributes=attrs)]))
    assert messages(s) == [
        "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"
    ]
    assert s.devices[0].attributes == {}


def test_capacity_not_a_quantity() -> None:
    s = parse(slice_obj([device("device-0"), device("device-1", capacity={"memory": {"value": "lots"}})]))
    assert [e.path for e in s.errors] == ["spec.devices[1].capacity[memory].value"]
    assert s.errors[0].message.startswith("not a quantity: quantities must match the regular expression")
    assert s.devices[1].capacity == {}


def test_consumable_capacity() -> None:
    """allocatortesting's consumable devices: allowMultipleAllocations with a request policy."""
    policy = {"default": "1Gi", "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"}}
    discrete = {"default": "2", "validValues": ["1", "2", "4"]}
    capacity = {"memory": {"value": "8Gi", "requestPolicy": policy}, "cores": {"value": "4", "requestPolicy": discrete}}
    s = parse(slice_obj([device(capacity=capacity, allowMultipleAllocations=True)]))
    assert s.errors == ()
    (d,) = s.devices
    assert d.allow_multiple_allocations is True
    gi = Fraction(2**30)
    assert d.request_policies["memory"] == rs.CapacityRequestPolicy(
        gi, (), rs.CapacityRequestPolicyRange(gi, 8 * gi, gi)
    )
    assert d.request_policies["cores"] == rs.CapacityRequestPolicy(Fraction(2), (Fraction(1), Fraction(2), Fraction(4)))


def test_request_policy_errors() -> None:
    policy = {"default": "1Gi", "validRange": {"min": "1Gi"}}
    single = parse(slice_obj([device(capacity={"memory": {"value": "8Gi", "requestPolicy": policy}})]))
    assert messages(single) == [
        "spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true"
    ]
    both = {"default": "1", "validValues": ["1"], "validRange": {"min": "1"}}
    no_default = {"validValues": ["1", "2"]}
    unsorted = {"default": "2", "validValues": ["2", "1"]}
    capacity = {
        "a": {"value": "8", "requestPolicy": both},
        "b": {"value": "8", "requestPolicy": no_default},
        "c": {"value": "8", "requestPolicy": unsorted},
        "d": {"value": "8", "requestPolicy": {"default": "1", "validRange": {}}},
    }
    s = parse(slice_obj([device(capacity=capacity, allowMultipleAllocations=True)]))
    prefix = "spec.devices[0].capacity"
    assert messages(s) == [
        f"{prefix}[a].requestPolicy: Forbidden: exactly one policy can be specified, "
        'cannot specify "validValues" and "validRange" at the same time',
        f"{prefix}[b].requestPolicy.default: Required value: required when validValues is defined",
        f"{prefix}[c].requestPolicy.validValues[1]: Invalid value: values must be sorted in ascending order",
        f"{prefix}[d].requestPolicy.validRange.min: Required value: required when validRange is defined",
    ]
    assert s.devices[0].request_policies == {}


def test_partitionable_devices() -> None:
    """allocatortesting's partitionable pool: a slice of counter sets, a slice of devices consuming them."""
    counters = parse(
        slice_obj(None, sharedCounters=[{"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}])
    )
    assert counters.errors == () and counters.devices == ()
    assert counters.shared_counters == (rs.CounterSet("counter-set-1", {"memory": Fraction(8 * 2**30)}),)
    consume = [{"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}]
    s = parse(slice_obj([device(consumesCounters=consume)]))
    assert s.errors == ()
    assert s.devices[0].consumes_counters == (
        rs.DeviceCounterConsumption("counter-set-1", {"memory": Fraction(4 * 2**30)}),
    )


def test_counter_errors() -> None:
    sets = [{"name": f"counter-set-{i}", "counters": {"c": {"value": "1"}}} for i in range(9)]
    s = parse(slice_obj(None, sharedCounters=sets))
    assert messages(s) == ["spec.sharedCounters: Too many: 9: must have at most 8 items"]
    both = parse(slice_obj([device()], sharedCounters=sets[:1]))
    assert messages(both) == ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']
    dup = parse(slice_obj(None, sharedCounters=[sets[0], sets[0]]))
    assert messages(dup) == ['spec.sharedCounters[1]: Duplicate value: "counter-set-0"']
    three = [{"counterSet": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(3)]
    assert messages(parse(slice_obj([device(consumesCounters=three)]))) == [
        "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"
    ]
    empty = parse(slice_obj([device(consumesCounters=[{"counterSet": "s", "counters": {}}])]))
    assert messages(empty) == ["spec.devices[0].consumesCounters[0].counters: Required value"]


def test_taints() -> None:
    taints = [
        {"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"},
        {"key": "example.com/maintenance", "effect": "None"},
    ]
    s = parse(slice_obj([device(taints=taints)]))
    assert s.errors == ()
    first = s.devices[0].taints[0]
    assert (first.key, first.value, first.effect, first.time_added) == (
        "example.com/unhealthy",
        "true",
        "NoSchedule",
        "2025-01-01T00:00:00Z",
    )
    assert s.devices[0].taints[1].effect == "None"
    bad = parse(slice_obj([device(taints=[{"key": "k", "effect": "PreferNoSchedule"}, {"effect": "NoExecute"}])]))
    assert messages(bad) == [
        'spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": '
        'supported values: "NoExecute", "NoSchedule", "None"',
        "spec.devices[0].taints[1].key: Required value",
    ]


def test_binding_conditions() -> None:
    fields: dict[str, Any] = {
        "bindsToNode": True,
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["failed"],
    }
    (d,) = parse(slice_obj([device(**fields)])).devices
    assert (d.binds_to_node, d.binding_conditions, d.binding_failure_conditions) == (True, ("attached",), ("failed",))
    five = parse(slice_obj([device(bindingConditions=list("abcde"), bindingFailureConditions=["f"])]))
    assert messages(five) == ["spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"]
    alone = parse(slice_obj([device(bindingConditions=["a"])]))
    assert [e.path for e in alone.errors] == ["spec.devices[0].bindingFailureConditions"]


def test_duplicate_device_names() -> None:
    s = parse(slice_obj([device("device-0"), device("device-0")]))
    assert messages(s) == ['spec.devices[1]: Duplicate value: "device-0"']


@pytest.mark.parametrize(
    "bad",
    [None, "slice", 3, [], {"metadata": "x"}, {"spec": []}, {"spec": {"devices": "many"}}, {"spec": {"pool": 1}}],
)
def test_wrong_shapes_are_errors_never_exceptions(bad: object) -> None:
    s = parse(bad)
    assert s.errors


def test_every_field_replaced_by_junk_is_an_error_never_an_exception() -> None:
    """Each leaf and container of a full slice replaced by values of other types, one at a time."""
    full = slice_obj(
        [
            device(
                allowMultipleAllocations=True,
                capacity={"memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi", "validValues": ["1Gi"]}}},
                taints=[{"key": "k", "effect": "NoSchedule"}],
                consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}],
                bindingConditions=["a"],
                bindingFailureConditions=["b"],
                bindsToNode=True,
            )
        ]
    )
    junk: list[object] = [None, True, 7, 1.5, "x", [], {}, [None], {"a": None}]
    count = 0
    for obj in each_field_replaced(full, junk):
        for minor in MINORS:
            parse(obj, minor)  # must not raise
            count += 1
    assert count > 500
