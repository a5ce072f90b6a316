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
from scheduler.plugins.dynamicresources.structured import AllocationError, Allocator, Features
from tests.plugins.dynamicresources.allocator_builders import (
    CLAIM0,
    CLASS_A,
    DRIVER_A,
    NODE1,
    POOL1,
    REGION1,
    REQ0,
    SLICE1,
    Case,
    GoObj,
    claim_with_requests,
    device,
    device_class,
    node,
    parse_selector,
    request,
    slice_with_devices,
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
