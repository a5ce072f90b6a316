"""The stable structured allocator against upstream's own test table (allocator_table.py).

Each case runs as upstream's ``TestAllocator`` runs it: a fresh allocator over the case's classes,
slices and allocated devices, then ``Allocate(node, claims)``; the answer must be upstream's devices
(in the order upstream's search picks them), configs and node selectors, or its error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.nodeselector import NodeSelector
from scheduler.api.resourceclaim import AllocationResult
from scheduler.plugins.dynamicresources import cel
from scheduler.plugins.dynamicresources.structured import AllocationError, Allocator, Features, implementation_for
from scheduler.plugins.dynamicresources.structured.features import FEATURES_1_35_DEFAULT
from tests.plugins.dynamicresources.allocator_builders import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    NODE1,
    POOL1,
    REGION1,
    REQ0,
    REQ0_SUB_REQ0,
    SLICE1,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    GoObj,
    claim,
    claim_with_requests,
    device,
    device_class,
    node,
    obj,
    parse_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_devices,
    sub_request,
    with_allocation_mode,
    with_requests,
)
from tests.plugins.dynamicresources.allocator_table import CASES


def _cache() -> cel.Cache:
    return cel.Cache(10, cel.compiler_for(35))


def _selector(selector: NodeSelector | None) -> Any:
    if selector is None:
        return None
    return sorted(
        (
            sorted(
                (r.key, str(r.operator), tuple(sorted(r.values))) for r in (t.labels.requirements if t.labels else ())
            ),
            sorted((f.key, "NotIn" if f.negated else "In", (f.value,)) for f in t.fields or ()),
        )
        for t in selector.terms
    )


def _got(results: Sequence[AllocationResult] | None) -> list[Any]:
    return [
        {
            "results": [(d.request, d.driver, d.pool, d.device, d.admin_access) for d in r.results],
            "config": [(c.source, tuple(c.requests), c.driver, c.parameters) for c in r.config],
            "nodeSelector": _selector(r.node_selector),
        }
        for r in results or ()
    ]


def _want(expect: Sequence[GoObj] | None) -> list[Any]:
    out = []
    for r in expect or ():
        devices = r.get("devices", {})
        out.append(
            {
                "results": [
                    (d["request"], d["driver"], d["pool"], d["device"], d.get("adminAccess"))
                    for d in devices.get("results", [])
                ],
                "config": [
                    (c["source"], tuple(c.get("requests") or ()), c["opaque"]["driver"], c["opaque"]["parameters"])
                    for c in devices.get("config", [])
                ],
                "nodeSelector": _selector(parse_selector(r["nodeSelector"])) if r.get("nodeSelector") else None,
            }
        )
    return out


def _allocator(case: Case, **kwargs: Any) -> Allocator:
    return Allocator(
        case.features, case.allocated or (), case.parsed_classes(), case.parsed_slices(), _cache(), **kwargs
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_case(name: str) -> None:
    case = CASES[name]
    allocator = _allocator(case)
    if case.error is not None:
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(case.node, case.parsed_claims())
        assert case.error in str(raised.value)
        return
    assert _got(allocator.allocate(case.node, case.parsed_claims())) == _want(case.expect)


_INTERRUPT = Case(
    claims=[claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 6))],
    classes=[device_class(CLASS_A, DRIVER_A)],
    slices=[
        slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}", None, None) for i in range(1, 6)))
    ],
    node=node(NODE1, REGION1),
)


def test_interrupt_off() -> None:
    """Upstream's ``interrupt/off``: six devices asked of five, searched to the end, no error."""
    assert _allocator(_INTERRUPT).allocate(_INTERRUPT.node, _INTERRUPT.parsed_claims()) is None


@pytest.mark.parametrize("cause", ["context deadline exceeded", "context canceled"])
def test_interrupt(cause: str) -> None:
    """Upstream's ``interrupt/timeout|deadline|cancel``: the context's cause ends the search."""
    allocator = _allocator(_INTERRUPT, stop=lambda: cause)
    with pytest.raises(AllocationError, match=f"^filter operation aborted: {cause}$"):
        allocator.allocate(_INTERRUPT.node, _INTERRUPT.parsed_claims())


def test_features_beyond_the_port_are_refused() -> None:
    with pytest.raises(ValueError, match="partitionable_devices"):
        Allocator(Features(partitionable_devices=True), (), {}, [], _cache())


def _kind(value: str) -> GoObj:
    return obj(CEL=obj(Expression=f'device.attributes["{DRIVER_A}"].kind == "{value}"'))


def test_subrequest_validated_under_the_previous_key() -> None:
    """v0.35.4 (stable and incubating, so 1.35) checks subrequest i's devices under the cache key of
    subrequest i-1: here the "All" subrequest's answers (kind y) stand in for subrequest 0's own
    selector (kind x), which then takes the y device. 0.36 fixed the order; 1.35 decides so."""
    case = Case(
        features=Features(prioritized_list=True),
        claims=[
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(SUB_REQ0, CLASS_A, 1, _kind("x")),
                    with_allocation_mode(obj(sub_request(SUB_REQ1, CLASS_A, 0, _kind("y"))), "All"),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"kind": obj(StringValue="y")}),
                device(DEVICE2, None, {"kind": obj(StringValue="x")}),
            )
        ],
        node=node(NODE1, REGION1),
    )
    got = _allocator(case).allocate(case.node, case.parsed_claims())
    assert got is not None
    assert [(d.request, d.device) for d in got[0].results] == [(REQ0_SUB_REQ0, DEVICE1)]


def test_deep_search_has_no_recursion_limit() -> None:
    """40 claims of 30 devices each: 1200 devices deep, past Python's default recursion limit."""
    claims = [claim_with_requests(f"claim-{i}", None, request(REQ0, "plain", 30)) for i in range(40)]
    slices = [
        slice_with_devices(
            f"slice-{s}",
            NODE1,
            resource_pool(POOL1, 10),
            DRIVER_A,
            *(device(f"device-{i}", None, None) for i in range(s * 120, s * 120 + 120)),
        )
        for s in range(10)
    ]
    case = Case(
        claims=claims,
        classes=[obj(Metadata=obj(Name="plain"), Spec=obj())],
        slices=slices,
        node=node(NODE1, REGION1),
    )
    got = _allocator(case).allocate(case.node, case.parsed_claims())
    assert got is not None
    assert [d.device for d in got[-1].results] == [f"device-{i}" for i in range(1170, 1200)]


def test_implementation_chosen_as_new_allocator_does() -> None:
    """1.35.4's default gates enable admin access and prioritized lists: incubating, not stable."""
    assert implementation_for(Features()) == "stable"
    assert implementation_for(FEATURES_1_35_DEFAULT) == "incubating"
    assert implementation_for(Features(consumable_capacity=True)) == "experimental"
