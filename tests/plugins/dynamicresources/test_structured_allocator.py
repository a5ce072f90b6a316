"""The structured allocator's variants against upstream's own test table of each release
(allocator_table_v0_35_4.py...).

Each case runs as upstream's ``TestAllocator`` runs it against one variant: a fresh allocator over
the case's classes, slices and allocated devices with the case's features, then
``Allocate(node, claims)``; the answer must be upstream's devices (in the order upstream's search
picks them), tolerations, configs and node selectors, or its error, and where the case counts them,
upstream's number of ``allocateOne`` calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.devicefields import DeviceToleration
from scheduler.api.nodeselector import NodeSelector
from scheduler.api.quantity import parse_quantity
from scheduler.api.resourceclaim import AllocationResult
from scheduler.features import features_at
from scheduler.plugins.dynamicresources import cel
from scheduler.plugins.dynamicresources.structured import AllocationError, Allocator, Features, implementation_for
from scheduler.plugins.dynamicresources.structured import allocator as allocator_module
from scheduler.plugins.dynamicresources.structured.features import V0_35, V0_36, V0_37, for_scheduler, supported
from tests.plugins.dynamicresources.allocator_builders import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    FIXED_SHARE_ID,
    NODE1,
    POOL1,
    REGION1,
    REQ0,
    REQ0_SUB_REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB_REQ0,
    SUB_REQ1,
    TAINT_NO_SCHEDULE,
    Case,
    GoObj,
    claim,
    claim_with_request,
    claim_with_requests,
    copy_obj,
    counter_set,
    device,
    device_claim_config,
    device_class,
    device_configuration,
    device_counter_consumption,
    node,
    obj,
    parse_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    sub_request,
    with_allocation_mode,
    with_configs,
    with_device_counter_consumption,
    with_requests,
    with_taints,
)
from tests.plugins.dynamicresources.allocator_table_v0_35_4 import CASES as CASES_V0_35
from tests.plugins.dynamicresources.allocator_table_v0_36_3 import CASES as CASES_V0_36
from tests.plugins.dynamicresources.allocator_table_v0_37_2 import CASES as CASES_V0_37

# v0.37.2 cases whose slices carry list-type attribute values with DRAListTypeAttributes off: the API
# server drops such values, and so does our parser (the attribute reaches CEL with no value, an
# error), while upstream's harness hands them to the allocator as written (no error, no fit).
_UNREPRESENTABLE_V0_37 = {
    "list-attributes-disabled-distinct-constraint-with-lists",
    "list-attributes-disabled-match-constraint-with-lists",
}

# Per variant and release: the table's cases upstream runs against it (features it supports; the
# stable port runs the admin access and prioritized list cases too, as its code has their branches,
# but not those counting allocateOne calls, which upstream never runs against stable).
_STABLE = Features(admin_access=True, prioritized_list=True).enabled()
_RUNS = [
    *(
        ("stable", V0_35, name)
        for name, c in sorted(CASES_V0_35.items())
        if c.features.enabled() <= _STABLE and not c.steps
    ),
    *(("incubating", V0_35, name) for name in sorted(CASES_V0_35)),
    *(("incubating", V0_36, name) for name in sorted(CASES_V0_36)),
    *(("incubating", V0_37, name) for name in sorted(CASES_V0_37) if name not in _UNREPRESENTABLE_V0_37),
]
_TABLES = {V0_35: CASES_V0_35, V0_36: CASES_V0_36, V0_37: CASES_V0_37}


_MINOR = {V0_35: 35, V0_36: 36, V0_37: 37}


def _cache(release: str = V0_35) -> cel.Cache:
    """The CEL environment of the minor that vendors ``release``."""
    return cel.Cache(10, cel.compiler_for(_MINOR[release]))


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
            "results": [
                (
                    d.request,
                    d.driver,
                    d.pool,
                    d.device,
                    d.admin_access,
                    [_toleration(t) for t in d.tolerations],
                    list(d.binding_conditions),
                    list(d.binding_failure_conditions),
                    d.share_id,
                    dict(d.consumed_capacity),
                )
                for d in r.results
            ],
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
                    (
                        d["request"],
                        d["driver"],
                        d["pool"],
                        d["device"],
                        d.get("adminAccess"),
                        [_toleration(DeviceToleration(**t)) for t in d.get("tolerations") or ()],
                        list(d.get("bindingConditions") or ()),
                        list(d.get("bindingFailureConditions") or ()),
                        d.get("shareID"),
                        {k: parse_quantity(v) for k, v in (d.get("consumedCapacity") or {}).items()},
                    )
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


def _toleration(t: DeviceToleration) -> tuple[str, str, str, str]:
    return (t.key, t.operator or "Equal", t.value, t.effect)


def _allocator(case: Case, **kwargs: Any) -> Allocator:
    cache = _cache(kwargs.get("release", V0_35))
    aggregated = {
        device_id: {k: parse_quantity(v) for k, v in consumed.items()}
        for device_id, consumed in (case.allocated_capacity or {}).items()
    }
    return Allocator(
        case.features,
        case.allocated or (),
        case.parsed_classes(),
        case.parsed_slices(),
        cache,
        shared_devices=case.allocated_shares or (),
        aggregated_capacity=aggregated,
        share_id=lambda: FIXED_SHARE_ID,  # upstream's harness writes it over every share ID
        **kwargs,
    )


@pytest.mark.parametrize(("implementation", "release", "name"), _RUNS)
def test_upstream_case(implementation: str, release: str, name: str) -> None:
    case = _TABLES[release][name]
    allocator = _allocator(case, release=release, implementation=implementation)
    # From v0.36 upstream's harness allocates for node-1 when a case names no node.
    target = case.node if case.node is not None or release == V0_35 else node(NODE1, REGION1)
    if case.error is not None:
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(target, case.parsed_claims())
        for part in (case.error,) if isinstance(case.error, str) else case.error:
            assert part in str(raised.value)
    else:
        assert _got(allocator.allocate(target, case.parsed_claims())) == _want(case.expect)
    if case.steps:
        assert allocator.steps == (case.steps_by_channel or {}).get(implementation, case.steps)


def _outcome(allocator: Allocator, target: Any, case: Case) -> tuple[Any, str | None, int]:
    try:
        return _got(allocator.allocate(target, case.parsed_claims())), None, allocator.steps
    except AllocationError as err:
        return None, str(err), allocator.steps


def test_the_one_device_loop_answers_as_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case of upstream's table the loop for one claim asking one device takes: the same
    devices, error and ``allocateOne`` count as the generator-driven search it stands in for."""
    taken = 0
    original = allocator_module._Search._single_device_request
    for implementation, release, name in _RUNS:
        case = _TABLES[release][name]
        target = case.node if case.node is not None or release == V0_35 else node(NODE1, REGION1)
        fast = _allocator(case, release=release, implementation=implementation)
        loop = _outcome(fast, target, case)
        monkeypatch.setattr(allocator_module._Search, "_single_device_request", lambda self: None)
        general = _outcome(_allocator(case, release=release, implementation=implementation), target, case)
        monkeypatch.setattr(allocator_module._Search, "_single_device_request", original)
        assert loop == general, (implementation, release, name)
        claims = case.parsed_claims()
        taken += len(claims) == 1 and len(claims[0].devices.requests) == 1
    assert taken > 50, "the table has cases of that shape"


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
        Allocator(Features(partitionable_devices=True), (), {}, [], _cache(), implementation="stable")
    with pytest.raises(ValueError, match="consumable_capacity"):
        Allocator(Features(consumable_capacity=True), (), {}, [], _cache(), implementation="incubating")


def _kind(value: str) -> GoObj:
    return obj(CEL=obj(Expression=f'device.attributes["{DRIVER_A}"].kind == "{value}"'))


def test_match_cache_dropped_before_the_search() -> None:
    """v0.35.4 (stable and incubating, so 1.35) checks subrequest i's devices under the cache key of
    subrequest i-1, but ``Allocate`` empties the device-match cache once the checks are done: the
    "All" subrequest's answers (kind y) never stand in for subrequest 0's own selector (kind x),
    which takes the x device (the differential oracle at 1.35, seed 96: upstream allocated a
    firstAvailable's GPUs where a NIC-only "All" alternative's answers had made ours refuse them)."""
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
    assert [(d.request, d.device) for d in got[0].results] == [(REQ0_SUB_REQ0, DEVICE2)]


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
    """Every minor's default gates pick the incubating variant of its own release."""
    assert implementation_for(Features()) == "stable"
    assert implementation_for(Features(consumable_capacity=True)) == "experimental"
    for minor, release in (("1.35", "v0.35.4"), ("1.36", "v0.36.3"), ("1.37", "v0.37.2")):
        features, got = for_scheduler(features_at(minor))
        assert got == release
        assert implementation_for(features, release) == "incubating"


def test_allocator_features_per_minor() -> None:
    """``AllocatorFeatures`` over each minor's default gates (kube_features.go): 1.35 two features,
    1.36 and 1.37 every one incubating supports at their releases."""
    assert features_at("1.35").dra_allocator_features == {"admin_access", "prioritized_list"}
    assert features_at("1.36").dra_allocator_features == supported("incubating", V0_36)
    assert features_at("1.37").dra_allocator_features == supported("incubating", V0_37)
    assert "consumable_capacity" in supported("incubating", V0_36)


def test_default_allocator_is_incubating_at_1_35() -> None:
    """Without ``implementation``, 1.35's features get the incubating variant."""
    features, release = for_scheduler(features_at("1.35"))
    assert Allocator(features, (), {}, [], _cache(), release=release).variant.implementation == "incubating"


# The variants told apart where kube-scheduler 1.35's features (admin access and prioritized lists,
# no partitionable devices) make them decide differently (docs/dra-allocator.md).

_FEATURES_1_35 = Features(admin_access=True, prioritized_list=True)


def _both(case: Case) -> dict[str, Any]:
    """The case's answer (results, or the error's text) from stable and from incubating, at v0.35.4."""
    out: dict[str, Any] = {}
    for implementation in ("stable", "incubating"):
        allocator = _allocator(case, release=V0_35, implementation=implementation)
        try:
            out[implementation] = _got(allocator.allocate(case.node, case.parsed_claims()))
        except AllocationError as err:
            out[implementation] = str(err)
    return out


def test_counter_slice_left_out_without_partitionable_devices() -> None:
    """Incubating skips a slice with ``sharedCounters`` while PartitionableDevices is off, so it
    does not count towards the pool's slices: a pool of one slice (as ``resourceSliceCount`` says)
    plus a counter slice is complete there and incomplete (nothing allocated) for stable."""
    case = Case(
        features=_FEATURES_1_35,
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 1), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 1), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ],
        node=node(NODE1, REGION1),
    )
    got = _both(case)
    assert got["stable"] == []
    assert [r[3] for r in got["incubating"][0]["results"]] == [DEVICE1]


def test_incomplete_pool_not_checked_for_duplicates() -> None:
    """A pool both incomplete and holding a device name twice: stable calls it invalid, so "no fit"
    becomes ``invalid resource pools were encountered``; incubating does not check it: no fit."""
    pool = resource_pool(POOL1, 3)
    case = Case(
        features=_FEATURES_1_35,
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool, DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, pool, DRIVER_A, device(DEVICE1, None, None)),
        ],
        node=node(NODE1, REGION1),
    )
    got = _both(case)
    assert got["stable"] == "invalid resource pools were encountered"
    assert got["incubating"] == []


def test_tolerations_copied_into_results() -> None:
    """Incubating copies the request's tolerations into each result even with DeviceTaints off
    (what 1.35 writes into ``status.allocation``); stable does not."""
    toleration = obj(Operator="Exists", Key="gpu", Effect="NoSchedule")
    claim_ = claim_with_request(CLAIM0, REQ0, CLASS_A)
    claim_.Spec.Devices.Requests[0].Exactly.Tolerations = [toleration]
    case = Case(
        features=_FEATURES_1_35,
        claims=[claim_],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))],
        node=node(NODE1, REGION1),
    )
    got = _both(case)
    assert got["stable"][0]["results"][0][5] == []
    assert got["incubating"][0]["results"][0][5] == [("gpu", "Exists", "", "NoSchedule")]


def test_counters_of_a_tainted_device_stay_taken() -> None:
    """v0.35.4 takes a device's counters before it checks the device's taints and does not give
    them back when a taint refuses it (v0.36 does): the 4Gi of the tainted device-1 stay consumed,
    so device-2 (6Gi of 8Gi) no longer fits, and the claim is not allocated."""
    consume = device_counter_consumption
    case = Case(
        features=Features(partitionable_devices=True, device_taints=True),
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_counter_sets(
                SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_taints(
                    with_device_counter_consumption(
                        device(DEVICE1, None, None), consume(COUNTER_SET1, {"memory": "4Gi"})
                    ),
                    TAINT_NO_SCHEDULE,
                ),
                with_device_counter_consumption(device(DEVICE2, None, None), consume(COUNTER_SET1, {"memory": "6Gi"})),
            ),
        ],
        node=node(NODE1, REGION1),
    )
    assert _allocator(case, release=V0_35).allocate(case.node, case.parsed_claims()) is None
    # Without the taint, device-1 is taken.
    untainted = copy_obj(case.slices[1])  # type: ignore[index]
    del untainted.Spec.Devices[0]["taints"]
    case.slices = [case.slices[0], untainted]  # type: ignore[index]
    got = _allocator(case, release=V0_35).allocate(case.node, case.parsed_claims())
    assert got is not None
    assert [d.device for d in got[0].results] == [DEVICE1]


def test_all_subrequest_continues_as_subrequest_0() -> None:
    """v0.35.4 (both variants) seeks an "All" subrequest's second device under subrequest 0's data:
    here subrequest 0 wants three devices of two, so "All" (both devices) fails after its first."""
    case = Case(
        features=_FEATURES_1_35,
        claims=[
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(SUB_REQ0, CLASS_A, 3),
                    with_allocation_mode(obj(sub_request(SUB_REQ1, CLASS_A, 0)), "All"),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ],
        node=node(NODE1, REGION1),
    )
    assert _both(case) == {"stable": [], "incubating": []}


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_consumable_capacity_shares_with_default_features(minor: str) -> None:
    """1.36 and 1.37 turn consumable capacity on by default: claims asking capacity of a device
    allowing multiple allocations get shares of it (a share ID each, the capacity consumed) while
    its capacity lasts, and the counters it consumes are taken once."""
    features, release = for_scheduler(features_at(minor))
    request_ = request(REQ0, CLASS_A, 1)
    request_.Exactly.Capacity = obj(Requests={"memory": "3Gi"})
    shared = with_device_counter_consumption(
        device(DEVICE1, {"memory": "8Gi"}, None), device_counter_consumption(COUNTER_SET1, {"memory": "8Gi"})
    )
    shared.AllowMultipleAllocations = True
    claims = [claim_with_requests(f"claim-{i}", None, request_) for i in range(3)]
    case = Case(
        features=features,
        claims=claims,
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_counter_sets(
                "counters", NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, shared),
        ],
        node=node(NODE1, REGION1),
    )
    ids = itertools.count()
    allocator = Allocator(
        case.features,
        (),
        case.parsed_classes(),
        case.parsed_slices(),
        _cache(release),
        release=release,
        share_id=lambda: f"share-{next(ids)}",
    )
    parsed = case.parsed_claims()
    got = allocator.allocate(case.node, parsed[:2])
    assert got is not None
    assert [(r.device, r.share_id, dict(r.consumed_capacity)) for a in got for r in a.results] == [
        (DEVICE1, "share-0", {"memory": 3 * 2**30}),
        (DEVICE1, "share-1", {"memory": 3 * 2**30}),
    ]
    assert allocator.allocate(case.node, parsed) is None  # 9Gi of 8Gi


def _counter_pools(driver_b_memory: str) -> Case:
    """Two drivers, each with a pool named pool-1 holding 8Gi of counters and one device consuming
    some; a claim for one device of each driver."""
    consume = device_counter_consumption
    slices = []
    for n, (driver, memory) in enumerate(((DRIVER_A, "6Gi"), (DRIVER_B, driver_b_memory))):
        slices += [
            slice_with_counter_sets(
                f"counters-{n}", NODE1, resource_pool(POOL1, 2), driver, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                f"devices-{n}",
                NODE1,
                resource_pool(POOL1, 2),
                driver,
                with_device_counter_consumption(device(DEVICE1, None, None), consume(COUNTER_SET1, {"memory": memory})),
            ),
        ]
    return Case(
        features=Features(partitionable_devices=True),
        claims=[claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_B, 1))],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=slices,
        node=node(NODE1, REGION1),
    )


def test_counters_per_pool_name_until_v0_37() -> None:
    """Until v0.37 upstream keys a call's counters by the pool's name alone: driver-a's and
    driver-b's pool-1 share them there (6Gi + 6Gi of 8Gi: no fit); v0.37 keys them by pool ID."""
    case = _counter_pools("6Gi")
    for release, fits in ((V0_35, False), (V0_36, False), (V0_37, True)):
        got = _allocator(case, release=release, implementation="incubating").allocate(case.node, case.parsed_claims())
        assert (got is not None) == fits, release


def test_claim_config_once_from_v0_37() -> None:
    """A claim config naming both requests: up to v0.36 it is written once per request it names;
    v0.37 writes it once, and with no requests since it names them all."""
    claim_ = with_configs(
        claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)),
        [device_claim_config([REQ0, REQ1], device_configuration(DRIVER_A, "x"))],
    )
    case = Case(
        features=_FEATURES_1_35,
        claims=[claim_],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ],
        node=node(NODE1, REGION1),
    )
    configs = {}
    for release in (V0_36, V0_37):
        allocator = _allocator(case, release=release, implementation="incubating")
        got = allocator.allocate(case.node, case.parsed_claims())
        assert got is not None
        configs[release] = [tuple(c.requests) for c in got[0].config]
    assert configs == {V0_36: [(REQ0, REQ1), (REQ0, REQ1)], V0_37: [()]}
