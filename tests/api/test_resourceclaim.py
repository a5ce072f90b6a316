"""ResourceClaims and ResourceClaimTemplates parsed from ``resource.k8s.io/v1`` (``scheduler.api.resourceclaim``).

Objects from upstream's validation tests (``validation_resourceclaim_test.go``: ``validClaimSpec``,
``validClaimSpecWithFirstAvailable``, names "foo"/"bar", namespace "ns") and allocator table
(``allocatortesting``: driver-a, pool-1, device-0, class-a).
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

import scheduler.api.resourceclaim as rc
from scheduler.api.devicefields import DeviceConfiguration, DeviceToleration
from tests.helpers import each_field_replaced

MINORS = ("1.35", "1.36", "1.37")


def exactly(**fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1}
    out.update(fields)
    return out


def claim_obj(requests: Any = None, status: Any = None, **devices: Any) -> dict[str, Any]:
    """upstream ``testClaim("foo", "ns", validClaimSpec)``."""
    body: dict[str, Any] = {"requests": [{"name": "foo", "exactly": exactly()}] if requests is None else requests}
    body.update(devices)
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "foo", "namespace": "ns", "uid": "claim-uid"},
        "spec": {"devices": body},
    }
    if status is not None:
        obj["status"] = status
    return obj


def parse(obj: object, minor: str = "1.37") -> rc.ResourceClaim:
    return rc.ResourceClaim.from_dict(obj, minor=minor)


def messages(parsed: Any) -> list[str]:
    return [str(e) for e in parsed.errors]


@pytest.mark.parametrize("minor", MINORS)
def test_valid_claim_spec(minor: str) -> None:
    c = parse(claim_obj(), minor)
    assert c.errors == ()
    assert (c.key, c.uid, c.allocation, c.reserved_for) == ("ns/foo", "claim-uid", None, ())
    assert c.devices.requests == (rc.DeviceRequest("foo", exactly=rc.DeviceSubRequest("foo", "foo")),)


def test_exact_request_fields() -> None:
    request = exactly(
        selectors=[{"cel": {"expression": 'device.driver == "driver-a"'}}],
        adminAccess=True,
        tolerations=[{"key": "example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k"}],
        capacity={"requests": {"memory": "4Gi"}},
    )
    (r,) = parse(claim_obj([{"name": "foo", "exactly": request}])).devices.requests
    assert r.exactly is not None and r.first_available == ()
    e = r.exactly
    assert e.selectors == ('device.driver == "driver-a"',)
    assert e.admin_access is True
    assert e.tolerations == (
        DeviceToleration("example.com/unhealthy", "Exists", "", "NoSchedule"),
        DeviceToleration("k", "Equal", ""),  # operator defaults to Equal
    )
    assert e.capacity == {"memory": Fraction(4 * 2**30)}


def test_defaults_as_the_api_server_sets_them() -> None:
    """SetDefaults_ExactDeviceRequest: allocationMode ExactCount, count 1; All has no count."""
    (r,) = parse(claim_obj([{"name": "foo", "exactly": {"deviceClassName": "foo"}}])).devices.requests
    assert r.exactly is not None and (r.exactly.allocation_mode, r.exactly.count) == ("ExactCount", 1)
    (r,) = parse(claim_obj([{"name": "foo", "exactly": exactly(allocationMode="All", count=None)}])).devices.requests
    assert r.exactly is not None and (r.exactly.allocation_mode, r.exactly.count) == ("All", 0)


def test_request_errors() -> None:
    requests = [
        {"name": "a", "exactly": exactly(allocationMode="All", count=2)},
        {"name": "b", "exactly": exactly(count=-1)},
        {"name": "c", "exactly": exactly(allocationMode="Some")},
        {"name": "d", "exactly": exactly(deviceClassName="")},
        {"name": "e"},
        {"name": "f", "exactly": exactly(), "firstAvailable": [{"name": "x", "deviceClassName": "foo"}]},
        {"name": "!@#$%^", "exactly": exactly()},
        {"name": "a", "exactly": exactly()},
    ]
    assert messages(parse(claim_obj(requests))) == [
        "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
        "spec.devices.requests[1].exactly.count: Invalid value: -1: must be greater than zero",
        'spec.devices.requests[2].exactly.allocationMode: Unsupported value: "Some": '
        'supported values: "All", "ExactCount"',
        "spec.devices.requests[3].exactly.deviceClassName: Required value",
        "spec.devices.requests[4]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        "spec.devices.requests[5]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
        "but multiple fields are set",
        'spec.devices.requests[6].name: Invalid value: "!@#$%^": must be a DNS label '
        "(at most 63 lower case alphanumerics or '-')",
        'spec.devices.requests[7]: Duplicate value: "a"',
    ]


def test_first_available() -> None:
    """upstream ``validClaimSpecWithFirstAvailable`` (subrequests "foo" and "bar")."""
    alternatives = [
        {"name": "foo", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1},
        {"name": "bar", "deviceClassName": "foo", "allocationMode": "All", "adminAccess": True},
    ]
    (r,) = parse(claim_obj([{"name": "foo", "firstAvailable": alternatives}])).devices.requests
    assert r.exactly is None
    assert [(s.name, s.allocation_mode, s.count) for s in r.first_available] == [
        ("foo", "ExactCount", 1),
        ("bar", "All", 0),
    ]
    assert r.first_available[1].admin_access is None  # a subrequest has no adminAccess field
    nine = [{"name": f"s{i}", "deviceClassName": "foo"} for i in range(9)]
    assert messages(parse(claim_obj([{"name": "foo", "firstAvailable": nine}]))) == [
        "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"
    ]


def test_too_many_requests() -> None:
    requests = [{"name": f"r{i}", "exactly": exactly()} for i in range(33)]
    c = parse(claim_obj(requests))
    assert messages(c) == ["spec.devices.requests: Too many: 33: must have at most 32 items"]
    assert c.devices.requests == ()


def test_constraints() -> None:
    requests = [{"name": "foo", "exactly": exactly()}, {"name": "bar", "firstAvailable": [exactly(name="sub")]}]
    constraints = [
        {"requests": ["foo", "bar/sub"], "matchAttribute": "driver-a/numa"},
        {"distinctAttribute": "driver-a/pcie-root"},
    ]
    c = parse(claim_obj(requests, constraints=constraints))
    assert messages(c) == [
        'spec.devices.constraints[1].distinctAttribute: Invalid value: "pcie-root": a valid C identifier must start '
        "with alphabetic character or '_', followed by a string of alphanumeric characters or '_'"
    ]
    assert c.devices.constraints == (
        rc.DeviceConstraint(("foo", "bar/sub"), "driver-a/numa"),
        rc.DeviceConstraint((), None, "driver-a/pcie-root"),
    )


def test_constraint_errors() -> None:
    constraints = [
        {"requests": ["nope"], "matchAttribute": "driver-a/numa"},
        {},
        {"matchAttribute": "numa"},
        {"matchAttribute": "driver-a/numa", "distinctAttribute": "driver-a/numa"},
    ]
    either = '"matchAttribute" or "distinctAttribute"'
    assert messages(parse(claim_obj(constraints=constraints))) == [
        'spec.devices.constraints[0].requests[0]: Invalid value: "nope": must be the name of a request in the '
        "claim or the name of a request and a subrequest separated by '/'",
        f"spec.devices.constraints[1]: Required value: exactly one of {either} is required",
        'spec.devices.constraints[2].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain '
        "and a name separated by a slash",
        f"spec.devices.constraints[3]: Invalid value: exactly one of {either} is required, but multiple fields are set",
    ]


def test_config() -> None:
    config = [{"requests": ["foo"], "opaque": {"driver": "driver-a", "parameters": {"kind": "GpuConfig", "mig": 2}}}]
    c = parse(claim_obj(config=config))
    assert c.errors == ()
    assert c.devices.config == (DeviceConfiguration("driver-a", {"kind": "GpuConfig", "mig": 2}, ("foo",)),)
    bad = parse(claim_obj(config=[{"requests": ["bar"]}, {"opaque": {"driver": "driver-a"}}]))
    assert messages(bad) == [
        'spec.devices.config[0].requests[0]: Invalid value: "bar": must be the name of a request in the claim or '
        "the name of a request and a subrequest separated by '/'",
        "spec.devices.config[0].opaque: Required value",
        "spec.devices.config[1].opaque.parameters: Required value",
    ]


def allocated(**result: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"request": "foo", "driver": "driver-a", "pool": "pool-1", "device": "device-0"}
    out.update(result)
    return out


def test_allocation_and_reservations() -> None:
    status = {
        "allocation": {
            "devices": {
                "results": [
                    allocated(
                        adminAccess=True,
                        tolerations=[{"key": "k", "operator": "Exists"}],
                        consumedCapacity={"memory": "4Gi"},
                        shareID="2f1e4b2c-0000-4000-8000-000000000001",
                        bindingConditions=["attached"],
                        bindingFailureConditions=["failed"],
                    )
                ],
                "config": [{"source": "FromClass", "opaque": {"driver": "driver-a", "parameters": {}}}],
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                ]
            },
            "allocationTimestamp": "2025-06-01T10:00:00Z",
        },
        "reservedFor": [{"resource": "pods", "name": "pod-1", "uid": "pod-uid"}],
        "devices": [
            {
                "driver": "driver-a",
                "pool": "pool-1",
                "device": "device-0",
                "conditions": [
                    {"type": "attached", "status": "True", "reason": "Attached", "message": "on node-1"},
                    {"type": "failed", "status": "False"},
                ],
            }
        ],
    }
    c = parse(claim_obj(status=status))
    assert c.errors == ()
    a = c.allocation
    assert a is not None
    assert a.results == (
        rc.DeviceAllocationResult(
            "foo",
            "driver-a",
            "pool-1",
            "device-0",
            admin_access=True,
            tolerations=(DeviceToleration("k", "Exists"),),
            binding_conditions=("attached",),
            binding_failure_conditions=("failed",),
            share_id="2f1e4b2c-0000-4000-8000-000000000001",
            consumed_capacity={"memory": Fraction(4 * 2**30)},
        ),
    )
    assert a.config == (DeviceConfiguration("driver-a", {}, (), "FromClass"),)
    assert a.node_selector is not None and a.node_selector.matches("node-1", {})
    assert not a.node_selector.matches("node-2", {})
    assert a.allocation_timestamp == "2025-06-01T10:00:00Z" and a.allocated_at == 1748772000.0
    assert c.reserved_for == (rc.ConsumerReference("pods", "pod-1", "pod-uid"),) and c.reserved_for[0].is_pod
    assert c.device_statuses == (
        rc.AllocatedDeviceStatus(
            "driver-a",
            "pool-1",
            "device-0",
            None,
            {"attached": True, "failed": False},
            {"attached": ("Attached", "on node-1"), "failed": ("", "")},
        ),
    )


def test_status_errors() -> None:
    reserved = [{"resource": "pods", "name": "pod-1", "uid": "u"}]
    assert messages(parse(claim_obj(status={"reservedFor": reserved}))) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
    ]
    results = [allocated(consumedCapacity={"memory": "x"}), allocated(request="bar"), {"request": "foo"}]
    status = {
        "allocation": {"devices": {"results": results, "config": [{"opaque": {"driver": "d", "parameters": {}}}]}},
        "reservedFor": [{"resource": "pods"}, *reserved, *reserved],
    }
    c = parse(claim_obj(status=status))
    assert [e.path for e in c.errors] == [
        "status.allocation.devices.results[0].consumedCapacity[memory]",
        "status.allocation.devices.results[1].request",
        "status.allocation.devices.results[2].driver",
        "status.allocation.devices.results[2].pool",
        "status.allocation.devices.results[2].device",
        "status.allocation.devices.config[0].source",
        "status.reservedFor[0].name",
        "status.reservedFor[0].uid",
        "status.reservedFor[2]",
    ]
    assert c.errors[0].message.startswith("not a quantity: ")
    too_many = {"allocation": {"devices": {"results": [allocated()] * 33}}}
    assert messages(parse(claim_obj(status=too_many))) == [
        "status.allocation.devices.results: Too many: 33: must have at most 32 items"
    ]
    many_users = {
        "allocation": {},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": str(i)} for i in range(257)],
    }
    assert messages(parse(claim_obj(status=many_users))) == [
        "status.reservedFor: Too many: 257: must have at most 256 items"
    ]


def test_result_for_a_subrequest() -> None:
    requests = [{"name": "foo", "firstAvailable": [exactly(name="bar")]}]
    status = {"allocation": {"devices": {"results": [allocated(request="foo/bar")]}}}
    c = parse(claim_obj(requests, status))
    assert c.errors == () and c.allocation is not None and c.allocation.results[0].request == "foo/bar"


def test_template() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "ns"},
        "spec": {
            "metadata": {"labels": {"app": "inference"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "class-a"}}]}},
        },
    }
    t = rc.ResourceClaimTemplate.from_dict(obj)
    assert t.errors == () and t.key == "ns/gpu" and t.labels == {"app": "inference"}
    assert t.devices.requests == (rc.DeviceRequest("gpu", exactly=rc.DeviceSubRequest("gpu", "class-a")),)
    bad = copy.deepcopy(obj)
    bad["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = "two"
    assert messages(rc.ResourceClaimTemplate.from_dict(bad)) == [
        "spec.spec.devices.requests[0].exactly.count: must be an integer, got 'two'"
    ]


@pytest.mark.parametrize("bad", [None, "claim", [], {"spec": {"devices": []}}, {"status": {"allocation": "x"}}])
def test_wrong_shapes_are_errors_never_exceptions(bad: object) -> None:
    assert parse(bad).errors
    assert rc.ResourceClaimTemplate.from_dict(bad).errors


def test_every_field_replaced_by_junk_is_an_error_never_an_exception() -> None:
    full = claim_obj(
        [
            {
                "name": "foo",
                "exactly": exactly(selectors=[{"cel": {"expression": "true"}}], capacity={"requests": {"m": "1"}}),
            },
            {"name": "bar", "firstAvailable": [exactly(name="sub", tolerations=[{"key": "k"}])]},
        ],
        {
            "allocation": {
                "devices": {
                    "results": [allocated(consumedCapacity={"m": "1"}, tolerations=[{"key": "k"}])],
                    "config": [{"source": "FromClaim", "opaque": {"driver": "d", "parameters": {}}}],
                },
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": []}]},
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}],
            "devices": [{"driver": "d", "pool": "p", "device": "x", "conditions": [{"type": "a", "status": "True"}]}],
        },
        constraints=[{"requests": ["foo"], "matchAttribute": "d/a"}],
        config=[{"requests": ["foo"], "opaque": {"driver": "d", "parameters": {}}}],
    )
    junk: list[object] = [None, True, 7, "x", [], {}, [None], {"a": None}]
    count = 0
    for obj in each_field_replaced(full, junk):
        parse(obj)  # must not raise
        count += 1
    assert count > 300


def test_controller_owner_and_finalizers_are_kept() -> None:
    """The plugin checks a generated claim's controller (``resourceclaim.IsForPod``) and PreBind adds the
    finalizer only when missing."""
    claim = rc.ResourceClaim.from_dict(
        {
            "metadata": {
                "name": "c",
                "finalizers": ["resource.kubernetes.io/delete-protection"],
                "ownerReferences": [
                    {"kind": "Other", "name": "o", "uid": "u-other"},
                    {"kind": "Pod", "name": "p", "uid": "u-pod", "controller": True},
                ],
            }
        }
    )
    assert claim.controller_uid == "u-pod"
    assert claim.finalizers == ("resource.kubernetes.io/delete-protection",)
    assert (
        rc.ResourceClaim.from_dict({"metadata": {"name": "c", "ownerReferences": [{"uid": "x"}]}}).controller_uid
        is None
    )
