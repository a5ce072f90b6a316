"""Upstream's allocator test table (``k8s.io/dynamic-resource-allocation@v0.37.2``,
``structured/internal/allocatortesting/allocator_testing.go``, ``TestAllocator``) as data, names kept,
inputs and expected answers as upstream wrote them (an expected error is a substring of the error,
as upstream matches it).

Which cases: every one whose features are among those the port implements at this release:
AdminAccess,
ConsumableCapacity,
DeviceBindingAndStatus,
DeviceTaints,
FractionalCapacityRange,
PartitionableDevices,
PrioritizedList.
Left out (47): the cases enabling any other feature (docs/dra-allocator.md).

Generated from the Go source by ``gen_allocator_table.py`` (then ``ruff check --fix`` and
``ruff format``); do not edit by hand.
"""

from __future__ import annotations

from tests.plugins.dynamicresources.allocator_builders import (
    ALLOCATION_RESULTS_MAX_SIZE,
    BOOL_ATTRIBUTE,
    CAPACITY0,
    CAPACITY1,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DEVICE4,
    DRIVER_A,
    DRIVER_B,
    FIELD_NAME_KEY,
    FIXED_SHARE_ID,
    FOUR,
    FROM_COUNTERS,
    INT_ATTRIBUTE,
    MAX_INT,
    NODE1,
    NODE2,
    NODE_SELECTION_ALL,
    NODE_SELECTION_PER_DEVICE,
    NON_EXISTENT_ATTRIBUTE,
    ONE,
    PLANET_KEY,
    PLANET_VALUE_EARTH,
    POINT_THREE,
    POINT_TWO,
    POINT_TWO_FIVE,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REGION_KEY,
    REQ0,
    REQ0_SUB_REQ0,
    REQ0_SUB_REQ1,
    REQ1,
    REQ1_SUB_REQ0,
    REQ1_SUB_REQ1,
    REQ2,
    REQ2_SUB_REQ0,
    REQ2_SUB_REQ1,
    REQ3,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    STRING_ATTRIBUTE,
    SUB_REQ0,
    SUB_REQ1,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_NONE,
    THREE,
    TOLERATION_NO_EXECUTE,
    TOLERATION_NO_SCHEDULE,
    TOLERATION_NO_SCHEDULE_KEY1,
    TWO,
    VERSION_ATTRIBUTE,
    ZERO,
    Case,
    DeviceID,
    Features,
    all_device_request,
    all_of,
    allocation_result,
    allocation_result_with_config,
    allocation_result_with_configs,
    assign,
    claim,
    claim_with_device_config,
    claim_with_request,
    claim_with_requests,
    class_with_allow_multiple_allocations,
    class_with_config,
    concat,
    copy_obj,
    counter_set,
    device,
    device_allocation_result,
    device_claim_config,
    device_class,
    device_configuration,
    device_counter_consumption,
    device_request,
    device_request_allocation_result,
    device_request_allocation_result_with_binding_conditions,
    last,
    local_node_selector,
    multiple_device_allocation_results,
    new_quantity,
    node,
    node_label_selector,
    obj,
    objects,
    request,
    request_with_prioritized_list,
    resource_pool,
    shared_device_id,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_no_devices,
    slice_with_one_device,
    sprintf,
    sub_request,
    unwrap,
    unwrap_resource_slices,
    with_allocation_mode,
    with_allow_multiple_allocations,
    with_binding_conditions,
    with_binds_to_node,
    with_capacity_request,
    with_capacity_request_policy_range,
    with_capacity_request_policy_valid_values,
    with_configs,
    with_constraints,
    with_consumed_capacity,
    with_device_counter_consumption,
    with_fractional_capacity_request_policy_range,
    with_node_selection,
    with_requests,
    with_selectors,
    with_taints,
    with_tolerations,
)

CASES = {
    "empty": Case(),
    "simple": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "other-node": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B), slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A)
        ),
        node=node(NODE2, REGION2),
        expect=[
            allocation_result(
                local_node_selector(NODE2), device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, False)
            )
        ],
    ),
    "small-and-large": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request(
                    REQ1,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "1Gi"}, None),
                device(DEVICE2, {"memory": "2Gi"}, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request(
                    REQ1,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, None),
                device(DEVICE1, {"memory": "1Gi"}, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
            ),
            claim_with_requests(
                CLAIM1,
                None,
                request(
                    REQ1,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, None),
                device(DEVICE1, {"memory": "1Gi"}, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False)
            ),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(Count=2, AllocationMode="ExactCount", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, False),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                "slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)
            ),
            last(
                (
                    v_slice := slice_with_devices(
                        "slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2, None, None)
                    )
                ),
                assign(v_slice.Spec.Pool, "Generation", v_slice.Spec.Pool.Generation + 1),
                v_slice,
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "duplicate-slice": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=last(
            (v_slice_a := copy_obj(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A))),
            assign(v_slice_a.Spec.Pool, "ResourceSliceCount", 2),
            (v_slice_b := copy_obj(v_slice_a)),
            assign(v_slice_b, "Name", v_slice_b.Name + "-2"),
            [v_slice_a, v_slice_b],
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=None,
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "not-enough-suitable-devices": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM0, REQ1, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "no-classes": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=None,
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, "unknown-class")),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, "")),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "no-claims-to-allocate": Case(
        claims=None,
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "all-devices-single": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "all-devices-with-consumed-counters": Case(
        features=Features(partitionable_devices=True),
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "all-devices-many": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, False),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", Count=1, DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_slice := slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
                assign(v_slice.Spec.Pool, "ResourceSliceCount", v_slice.Spec.Pool.ResourceSliceCount + 1),
                v_slice,
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
        error=(
            "claim claim-0, request req-0: asks for all devices, but resource "
            "pool driver-a/pool-1 is currently being updated"
        ),
    ),
    "all-devices-plus-another": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_B))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, False)
            ),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=objects(
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_B))
            ),
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
        ],
    ),
    "all-devices-many-plus-another": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_B))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None)
            ),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, False)
            ),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=objects(
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_B))
            ),
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None)
            ),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
            ),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=objects(
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_A))
            ),
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
    ),
    "all-devices-no-solution-reversed": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            ),
            claim_with_requests(
                CLAIM1, None, obj(Name=REQ0, Exactly=obj(AllocationMode="ExactCount", Count=1, DeviceClassName=CLASS_A))
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
    ),
    "all-devices-slice-without-devices": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_no_devices(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "all-devices-no-slices": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=None,
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "all-devices-some-allocated": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "all-devices-some-allocated-admin-access": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AllocationMode", "All"),
            [v_c],
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_c := claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            assign(v_c.Spec.Devices.Requests[1].Exactly, "AdminAccess", True),
            assign(v_c.Spec.Devices.Requests[1].Exactly, "AllocationMode", "All"),
            [v_c],
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "count-devices-some-allocated-admin-access": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AllocationMode", "ExactCount"),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "Count", 2),
            [v_c],
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_c1 := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c1.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            (v_c2 := claim_with_request(CLAIM1, REQ0, CLASS_A)),
            assign(v_c2.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [v_c1, v_c2],
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)
            ),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_admin := claim_with_request(CLAIM1, REQ0, CLASS_A)),
            assign(v_admin.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [claim_with_request(CLAIM0, REQ0, CLASS_A), v_admin],
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)
            ),
        ],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            last(
                (
                    v_claim := with_requests(
                        claim(CLAIM0),
                        request_with_prioritized_list(
                            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1)
                        ),
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "AllocationMode", "All"),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "Count", 0),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_no_devices(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL2, DEVICE1, False)
            )
        ],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            last(
                (
                    v_claim := with_requests(
                        claim(CLAIM0),
                        request_with_prioritized_list(
                            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1)
                        ),
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "AllocationMode", "All"),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "Count", 0),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL2, DEVICE1, False)
            )
        ],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            last(
                (
                    v_claim := with_requests(
                        claim(CLAIM0),
                        request_with_prioritized_list(
                            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1)
                        ),
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "AllocationMode", "All"),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "Count", 0),
                v_claim,
            )
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None)
            ),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL2, DEVICE1, False)
            )
        ],
    ),
    "network-attached-device": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                node_label_selector(REGION_KEY, REGION1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A)
        ),
        node=node(NODE2, REGION2),
        expect=None,
    ),
    "many-network-attached-devices": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 4))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE_SELECTION_ALL, POOL2, DRIVER_A),
            slice_with_one_device(SLICE1, node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH), POOL3, DRIVER_A),
            slice_with_one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                obj(
                    NodeSelectorTerms=[
                        obj(
                            MatchExpressions=[
                                obj(Key=REGION_KEY, Operator="In", Values=[REGION1]),
                                obj(Key=PLANET_KEY, Operator="In", Values=[PLANET_VALUE_EARTH]),
                            ],
                            MatchFields=[obj(Key=FIELD_NAME_KEY, Operator="In", Values=[NODE1])],
                        )
                    ]
                ),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL3, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL4, DEVICE1, False),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, False),
            )
        ],
    ),
    "several-different-drivers": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM0, REQ0, CLASS_B)),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None)
            ),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, False)
            ),
        ],
    ),
    "already-allocated-devices": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1), DeviceID(DRIVER_A, POOL1, DEVICE2)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "admin-access-disabled": Case(
        features=Features(admin_access=False),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [v_c],
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
    ),
    "admin-access-enabled": Case(
        features=Features(admin_access=True),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [v_c],
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1), DeviceID(DRIVER_A, POOL1, DEVICE2)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)
            )
        ],
    ),
    "with-constraint": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                [
                    obj(MatchAttribute=INT_ATTRIBUTE),
                    obj(MatchAttribute=VERSION_ATTRIBUTE),
                    obj(MatchAttribute=STRING_ATTRIBUTE),
                    obj(MatchAttribute=BOOL_ATTRIBUTE),
                ],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1,
                    None,
                    {
                        "driverVersion": obj(VersionValue="1.0.0"),
                        "numa": obj(IntValue=1),
                        "stringAttribute": obj(StringValue="stringAttributeValue"),
                        "boolAttribute": obj(BoolValue=True),
                    },
                ),
                device(
                    DEVICE2,
                    None,
                    {
                        "driverVersion": obj(VersionValue="1.0.0"),
                        "numa": obj(IntValue=1),
                        "stringAttribute": obj(StringValue="stringAttributeValue"),
                        "boolAttribute": obj(BoolValue=True),
                    },
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A, obj(MatchAttribute=NON_EXISTENT_ATTRIBUTE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": obj(IntValue=1)}),
                device(DEVICE2, None, {"numa": obj(IntValue=2)}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=objects(
            last(
                (
                    v_claim := claim_with_requests(
                        CLAIM0, [obj(MatchAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 0)
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "AllocationMode", "All"),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": obj(IntValue=1)}),
                device(DEVICE2, None, {"numa": obj(IntValue=2)}),
            )
        ),
        node=node(NODE1, REGION1),
        error=(
            "claim claim-0, request req-0: cannot add device "
            "driver-a/pool-1/device-2 because a claim constraint would not be satisfied"
        ),
    ),
    "partitionable-all-mode-constraint-must-error-with-reserved-counter": Case(
        features=Features(partitionable_devices=True),
        claims=objects(
            last(
                (
                    v_claim := claim_with_requests(
                        CLAIM0, [obj(MatchAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 0)
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "AllocationMode", "All"),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, None, {"numa": obj(IntValue=1)}),
                with_device_counter_consumption(
                    device(DEVICE2, None, {"numa": obj(IntValue=2)}),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        error=(
            "claim claim-0, request req-0: cannot add device "
            "driver-a/pool-1/device-2 because a claim constraint would not be satisfied"
        ),
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValue="stringAttributeValue")}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValue="stringAttributeValue2")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=BOOL_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"boolAttribute": obj(BoolValue=True)}),
                device(DEVICE2, None, {"boolAttribute": obj(BoolValue=False)}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=VERSION_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"driverVersion": obj(VersionValue="1.0.0")}),
                device(DEVICE2, None, {"driverVersion": obj(VersionValue="2.0.0")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-constraint-for-request": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                [obj(Requests=[REQ0], MatchAttribute=VERSION_ATTRIBUTE)],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"driverVersion": obj(VersionValue="1.0.0")}),
                device(DEVICE2, None, {"driverVersion": obj(VersionValue="2.0.0")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "with-constraint-for-request-retry": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                [obj(Requests=[REQ0], MatchAttribute=VERSION_ATTRIBUTE), obj(MatchAttribute=STRING_ATTRIBUTE)],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1, None, {"driverVersion": obj(VersionValue="1.0.0"), "stringAttribute": obj(StringValue="a")}
                ),
                device(
                    DEVICE2, None, {"driverVersion": obj(VersionValue="2.0.0"), "stringAttribute": obj(StringValue="b")}
                ),
                device(
                    DEVICE3, None, {"driverVersion": obj(VersionValue="3.0.0"), "stringAttribute": obj(StringValue="b")}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(class_with_config(CLASS_A, DRIVER_A, "classAttribute")),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)),
                [
                    obj(
                        Source="FromClass",
                        Requests=None,
                        DeviceConfiguration=device_configuration(DRIVER_A, "classAttribute"),
                    )
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, [], request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request(REQ2, CLASS_B, 1)
            )
        ),
        classes=objects(
            class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
            class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
        ),
        slices=unwrap(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
            slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE0, False),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
                    device_allocation_result(REQ2, DRIVER_B, POOL1, DEVICE1, False),
                ),
                [
                    obj(
                        Source="FromClass",
                        Requests=[REQ0, REQ1],
                        DeviceConfiguration=device_configuration(DRIVER_A, "classAttribute-A"),
                    ),
                    obj(
                        Source="FromClass",
                        Requests=[REQ2],
                        DeviceConfiguration=device_configuration(DRIVER_B, "classAttribute-B"),
                    ),
                ],
            )
        ],
    ),
    "with-claim-config-for-two-requests": Case(
        claims=last(
            (
                v_c := claim_with_requests(
                    CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request(REQ2, CLASS_A, 1)
                )
            ),
            assign(
                v_c.Spec.Devices,
                "Config",
                [obj(Requests=[REQ0, REQ1], DeviceConfiguration=device_configuration(DRIVER_A, "deviceAttribute"))],
            ),
            [v_c],
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap(slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE0, False),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
                    device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE2, False),
                ),
                [
                    obj(
                        Source="FromClaim",
                        Requests=[REQ0, REQ1],
                        DeviceConfiguration=device_configuration(DRIVER_A, "deviceAttribute"),
                    )
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=objects(claim_with_device_config(CLAIM0, REQ0, CLASS_A, DRIVER_A, "deviceAttribute")),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_config(
                local_node_selector(NODE1),
                DRIVER_A,
                "FromClaim",
                "deviceAttribute",
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
    ),
    "unknown-selector": Case(
        claims=objects(
            last(
                (v_claim := claim_with_request(CLAIM0, REQ0, CLASS_A)),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "Selectors", [obj()]),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=objects(
            last(
                (v_claim := claim_with_request(CLAIM0, REQ0, CLASS_A)),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "AllocationMode", "future-mode"),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=objects(
            last(
                (v_claim := claim_with_request(CLAIM0, REQ0, CLASS_A)),
                assign(v_claim.Spec.Devices, "Constraints", [obj()]),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=objects(
            last(
                (v_claim := claim_with_request(CLAIM0, REQ0, CLASS_A)),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "Selectors", [obj(CEL=obj(Expression="noSuchVar"))]),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(
            last(
                (v_c := device_class(CLASS_A, DRIVER_A)),
                assign(v_c.Spec.Selectors[0].CEL, "Expression", "noSuchVar"),
                v_c,
            )
        ),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=objects(
            last(
                (v_claim := claim_with_request(CLAIM0, REQ0, CLASS_A)),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "Selectors", [obj(CEL=obj(Expression="noSuchVar"))]),
                assign(v_claim.Spec.Devices.Requests[0].Exactly, "AllocationMode", "All"),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 500))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
    ),
    "too-many-devices-total": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, request(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE), request(REQ1, CLASS_A, 1)
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE + 1)
        ),
        node=node(NODE1, REGION1),
        error="exceeds the claim limit",
    ),
    "exact-count-total-overflows-claim-limit": Case(
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ1, CLASS_A, MAX_INT // 2 + 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error="exceeds the claim limit",
    ),
    "exact-count-total-would-wrap-to-zero": Case(
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ1, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ2, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ3, CLASS_A, MAX_INT // 2 + 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error="exceeds the claim limit",
    ),
    "exact-count-sum-exceeds-claim-limit": Case(
        claims=objects(
            with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 20), device_request(REQ1, CLASS_A, 20))
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error=all_of("request " + REQ1, "exceeds the claim limit"),
    ),
    "exact-count-sum-exactly-fills-claim-limit": Case(
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                device_request(REQ1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                *concat(
                    multiple_device_allocation_results(REQ0, DRIVER_A, POOL1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0),
                    multiple_device_allocation_results(
                        REQ1, DRIVER_A, POOL1, ALLOCATION_RESULTS_MAX_SIZE // 2, ALLOCATION_RESULTS_MAX_SIZE // 2
                    ),
                ),
            )
        ],
    ),
    "all-devices-invalid-CEL": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 500))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error="exceeds the claim limit",
    ),
    "prioritized-list-first-unavailable": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_B, 1), sub_request(SUB_REQ1, CLASS_A, 1)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-non-available": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_B, 2), sub_request(SUB_REQ1, CLASS_A, 2)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A), slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "prioritized-list-device-config": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_configs(
                with_requests(
                    claim(CLAIM0),
                    request_with_prioritized_list(
                        REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 2)
                    ),
                ),
                objects(
                    device_claim_config([REQ0_SUB_REQ0], device_configuration(DRIVER_A, "foo")),
                    device_claim_config([REQ0_SUB_REQ1], device_configuration(DRIVER_B, "bar")),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1, None, {}), device(DEVICE2, None, {}))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1, False),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2, False),
                ),
                [obj(Source="FromClaim", Requests=None, DeviceConfiguration=device_configuration(DRIVER_B, "bar"))],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_A, 2), sub_request(SUB_REQ1, CLASS_B, 2)
                ),
            )
        ),
        classes=objects(class_with_config(CLASS_A, DRIVER_A, "foo"), class_with_config(CLASS_B, DRIVER_B, "bar")),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1, None, None), device(DEVICE2, None, None)
            ),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3, None, None)),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1, False),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2, False),
                ),
                [obj(Source="FromClass", Requests=None, DeviceConfiguration=device_configuration(DRIVER_B, "bar"))],
            )
        ],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_configs(
                with_requests(
                    claim(CLAIM0),
                    request_with_prioritized_list(
                        REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1)
                    ),
                    device_request(REQ1, CLASS_A, 1),
                ),
                objects(device_claim_config([REQ0_SUB_REQ0, REQ0_SUB_REQ1], device_configuration(DRIVER_A, "scoped"))),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap(slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE0, False),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
                ),
                [
                    obj(
                        Source="FromClaim",
                        Requests=[REQ0_SUB_REQ0, REQ0_SUB_REQ1],
                        DeviceConfiguration=device_configuration(DRIVER_A, "scoped"),
                    )
                ],
            )
        ],
    ),
    "claim-config-covering-all-requests-is-cleared": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_configs(
                with_requests(
                    claim(CLAIM0),
                    request_with_prioritized_list(
                        REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1)
                    ),
                    device_request(REQ1, CLASS_A, 1),
                ),
                objects(device_claim_config([REQ0_SUB_REQ0, REQ1], device_configuration(DRIVER_A, "all"))),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap(slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE1),
                objects(
                    device_allocation_result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE0, False),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
                ),
                [obj(Source="FromClaim", Requests=None, DeviceConfiguration=device_configuration(DRIVER_A, "all"))],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_selectors(
                    device_request(REQ0, CLASS_A, 1),
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        2,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "2Gi"}, None),
                device(DEVICE2, {"memory": "2Gi"}, None),
                device(DEVICE3, {"memory": "1Gi"}, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(Requests=[REQ0, REQ1], MatchAttribute=VERSION_ATTRIBUTE)),
                with_selectors(
                    device_request(REQ0, CLASS_A, 1),
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "8Gi"}, {"driverVersion": obj(VersionValue="1.0.0")}),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, {"driverVersion": obj(VersionValue="2.0.0")}),
                device(DEVICE3, {"memory": "1Gi"}, {"driverVersion": obj(VersionValue="1.0.0")}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE3, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(Requests=[REQ0, REQ1_SUB_REQ0], MatchAttribute=VERSION_ATTRIBUTE)),
                with_selectors(
                    device_request(REQ0, CLASS_A, 1),
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "8Gi"}, {"driverVersion": obj(VersionValue="1.0.0")}),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, {"driverVersion": obj(VersionValue="2.0.0")}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            last(
                (
                    v_claim := with_requests(
                        claim(CLAIM0),
                        request_with_prioritized_list(
                            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_A, 1)
                        ),
                    )
                ),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "AllocationMode", "All"),
                assign(v_claim.Spec.Devices.Requests[0].FirstAvailable[0], "Count", 0),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    with_allocation_mode(sub_request(SUB_REQ0, CLASS_A, 0), "All"),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
    ),
    "prioritized-list-disabled": Case(
        features=Features(prioritized_list=False),
        claims=objects(
            last(
                (
                    v_claim := with_requests(
                        claim(CLAIM0), request_with_prioritized_list(REQ0, sub_request(SUB_REQ0, CLASS_A, 1))
                    )
                ),
                v_claim,
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error=("claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"),
    ),
    "prioritized-list-multi-request": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_selectors(
                    device_request(REQ1, CLASS_A, 1),
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"}, {})),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"}, {})),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, False),
            )
        ],
    ),
    "prioritized-list-with-backtracking": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
                with_selectors(
                    device_request(REQ1, CLASS_A, 1),
                    obj(
                        CEL=obj(
                            Expression=sprintf('device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0', DRIVER_A)
                        )
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"}, {})),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"}, {})),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_B, 500), sub_request(SUB_REQ1, CLASS_A, 1)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-minimum-sum-exceeds-claim-limit": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 20),
                request_with_prioritized_list(
                    REQ1, sub_request(SUB_REQ0, CLASS_A, 20), sub_request(SUB_REQ1, CLASS_A, 24)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        error=all_of("request " + REQ1, "exceeds the claim limit"),
    ),
    "prioritized-list-overflowing-first-subrequest-is-pruned": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1, sub_request(SUB_REQ0, CLASS_A, MAX_INT), sub_request(SUB_REQ1, CLASS_A, 1)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False),
            )
        ],
        steps=8,
    ),
    "partitionable-devices-single-device": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "partitionable-devices-counter-quantities-are-not-modified": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"c": "9000000000000000000"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, None, None), device_counter_consumption(COUNTER_SET1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"c": "10000000000000000000"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "partitionable-devices-counter-cache-scoped-by-pool-ID": Case(
        features=Features(partitionable_devices=True),
        claims=objects(
            claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1)),
            claim_with_requests(CLAIM1, None, request(REQ1, CLASS_B, 1)),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_B,
                with_device_counter_consumption(
                    device(DEVICE2, None, None), device_counter_consumption(COUNTER_SET1, {"c": "2"})
                ),
            ),
            slice_with_counter_sets(
                SLICE4, NODE1, resource_pool(POOL1, 2), DRIVER_B, counter_set(COUNTER_SET1, {"c": "2"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ1, DRIVER_B, POOL1, DEVICE2, False)
            ),
        ],
    ),
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas": Case(
        features=Features(partitionable_devices=True),
        claims=objects(
            claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1)),
            claim_with_requests(CLAIM1, None, request(REQ1, CLASS_B, 1)),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_B,
                with_device_counter_consumption(
                    device(DEVICE2, None, None), device_counter_consumption(COUNTER_SET2, {"d": "2"})
                ),
            ),
            slice_with_counter_sets(
                SLICE4, NODE1, resource_pool(POOL1, 2), DRIVER_B, counter_set(COUNTER_SET2, {"d": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "partitionable-devices-taint-releases-counter": Case(
        features=Features(partitionable_devices=True, device_taints=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, None, None), device_counter_consumption(COUNTER_SET1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "partitionable-devices-constraint-releases-counter": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, {"stringAttribute": obj(StringValue="red")}),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, None, {"stringAttribute": obj(StringValue="blue")}),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, None, {"stringAttribute": obj(StringValue="blue")}),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "2"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-consumable-capacity-backtrack-releases-counter": Case(
        features=Features(partitionable_devices=True, consumable_capacity=True),
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].kind == "shared"', DRIVER_A))),
                ),
                request(
                    REQ1,
                    CLASS_A,
                    1,
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].kind == "counteronly"', DRIVER_A))),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    with_allow_multiple_allocations(device(DEVICE1, None, {"kind": obj(StringValue="shared")})),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
                device(DEVICE2, None, {"kind": obj(StringValue="shared")}),
                with_device_counter_consumption(
                    device(DEVICE3, None, {"kind": obj(StringValue="counteronly")}),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "consumable-capacity-rejection-rolls-back-constraints": Case(
        features=Features(consumable_capacity=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_selectors(
                    with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO),
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].stringAttribute == "cap"', DRIVER_A))),
                ),
            ),
            with_requests(
                with_constraints(claim(CLAIM1), obj(MatchAttribute=STRING_ATTRIBUTE)),
                request_with_prioritized_list(
                    REQ0,
                    with_capacity_request(
                        with_allocation_mode(
                            sub_request(
                                SUB_REQ0,
                                CLASS_A,
                                1,
                                obj(
                                    CEL=obj(
                                        Expression=sprintf('device.attributes["%s"].stringAttribute == "cap"', DRIVER_A)
                                    )
                                ),
                            ),
                            "All",
                        ),
                        TWO,
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].stringAttribute == "fb"', DRIVER_A))),
                    ),
                ),
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(
                    device(DEVICE1, {CAPACITY0: TWO}, {"stringAttribute": obj(StringValue="cap")})
                ),
                device(DEVICE2, None, {"stringAttribute": obj(StringValue="fb")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False)
            ),
        ],
    ),
    "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership": Case(
        features=Features(partitionable_devices=True, consumable_capacity=True),
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].kind == "shared"', DRIVER_A))),
                ),
            ),
            claim_with_requests(
                CLAIM1,
                [obj(MatchAttribute=STRING_ATTRIBUTE, Requests=[REQ1, REQ2])],
                request(
                    REQ1,
                    CLASS_A,
                    1,
                    obj(
                        CEL=obj(
                            Expression=sprintf(
                                (
                                    'device.attributes["%s"].kind == "shared" || '
                                    'device.attributes["%s"].kind == "fallback"'
                                ),
                                DRIVER_A,
                                DRIVER_A,
                            )
                        )
                    ),
                ),
                request(
                    REQ2,
                    CLASS_A,
                    1,
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].kind == "gate"', DRIVER_A))),
                ),
                request(
                    REQ3,
                    CLASS_A,
                    1,
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].kind == "shared"', DRIVER_A))),
                ),
            ),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    with_allow_multiple_allocations(
                        device(
                            DEVICE1,
                            None,
                            {"kind": obj(StringValue="shared"), "stringAttribute": obj(StringValue="red")},
                        )
                    ),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
                device(
                    DEVICE2, None, {"kind": obj(StringValue="fallback"), "stringAttribute": obj(StringValue="blue")}
                ),
                device(DEVICE3, None, {"kind": obj(StringValue="gate"), "stringAttribute": obj(StringValue="blue")}),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE3, False),
                with_consumed_capacity(
                    device_request_allocation_result(REQ3, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            ),
        ],
    ),
    "partitionable-devices-prioritized-list": Case(
        features=Features(prioritized_list=True, partitionable_devices=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        features=Features(prioritized_list=True, partitionable_devices=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "4"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "6"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "4"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"memory": "18Gi"}),
                counter_set(COUNTER_SET2, {"cpus": "8"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-counters": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "4Gi", "cpus": "6"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "4", "memory": "2Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "6Gi", "cpus": "4"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "6", "memory": "6Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"memory": "4Gi", "cpus": "4"}),
                    device_counter_consumption(COUNTER_SET2, {"cpus": "4", "memory": "4Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"cpus": "8", "memory": "18Gi"}),
                counter_set(COUNTER_SET2, {"cpus": "12", "memory": "18Gi"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-pools": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "6", "memory": "4Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "4", "memory": "6Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "4", "memory": "4Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"cpus": "8", "memory": "18Gi"}),
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                resource_pool(POOL2, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "6", "memory": "4Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "1", "memory": "7Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None),
                    device_counter_consumption(COUNTER_SET1, {"cpus": "1", "memory": "7Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE4,
                NODE1,
                resource_pool(POOL2, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"cpus": "8", "memory": "18Gi"}),
            ),
        ),
        allocated=[
            DeviceID(DRIVER_A, POOL1, DEVICE2),
            DeviceID(DRIVER_A, POOL1, DEVICE3),
            DeviceID(DRIVER_A, POOL2, DEVICE1),
        ],
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL2, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "5Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE3, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"memory": "8Gi", "unused": "1Gi"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "partitionable-devices-no-capacity-available": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "16Gi"})
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, {"memory": "18Gi"})),
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE2)],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "20Gi"})
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, {"memory": "18Gi"})),
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE2)],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        features=Features(partitionable_devices=False),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, {"memory": "18Gi"})),
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        features=Features(partitionable_devices=False),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
                device(DEVICE2, None, None),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "18Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        features=Features(partitionable_devices=False),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE_SELECTION_PER_DEVICE,
                POOL1,
                DRIVER_A,
                with_node_selection(device(DEVICE2, None, None), NODE1),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        features=Features(partitionable_devices=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    NODE1,
                ),
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE2, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"}),
                    ),
                    NODE2,
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"memory": "18Gi"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        features=Features(partitionable_devices=True, prioritized_list=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    node_label_selector(REGION_KEY, REGION1),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"memory": "18Gi"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                obj(NodeSelectorTerms=[obj(MatchExpressions=[obj(Key=REGION_KEY, Operator="In", Values=[REGION1])])]),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        features=Features(partitionable_devices=True, prioritized_list=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    node_label_selector(REGION_KEY, REGION1),
                ),
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE2, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    NODE1,
                ),
                with_node_selection(
                    with_device_counter_consumption(
                        device(DEVICE3, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    NODE_SELECTION_ALL,
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"memory": "18Gi"}),
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                resource_pool(POOL2, 2),
                DRIVER_B,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET2, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET2, {"memory": "4Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE4, NODE1, resource_pool(POOL2, 2), DRIVER_B, counter_set(COUNTER_SET2, {"memory": "12Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                obj(NodeSelectorTerms=[obj(MatchFields=[obj(Key=FIELD_NAME_KEY, Operator="In", Values=[NODE1])])]),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
                device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE1, False),
                device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE3, False),
            )
        ],
    ),
    "tainted-two-devices": Case(
        features=Features(device_taints=True),
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE),
                with_taints(device(DEVICE2, None, None), TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
    ),
    "tainted-one-device-two-taints": Case(
        features=Features(device_taints=True),
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
    ),
    "tainted-two-devices-tolerated": Case(
        features=Features(device_taints=True),
        claims=objects(with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A), TOLERATION_NO_EXECUTE)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE),
                with_taints(device(DEVICE2, None, None), TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOLERATION_NO_EXECUTE),
            )
        ],
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        features=Features(device_taints=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_A, 1, TOLERATION_NO_EXECUTE)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE),
                with_taints(device(DEVICE2, None, None), TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False, TOLERATION_NO_EXECUTE),
            )
        ],
    ),
    "tainted-no-effect": Case(
        features=Features(device_taints=True),
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NONE))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        features=Features(device_taints=True),
        claims=objects(
            with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A), TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE)
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(
                    REQ0, DRIVER_A, POOL1, DEVICE1, False, TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE
                ),
            )
        ],
    ),
    "tainted-disabled": Case(
        features=Features(device_taints=False),
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "tainted-prioritized-list": Case(
        features=Features(device_taints=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_B, 1), sub_request(SUB_REQ1, CLASS_A, 1)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
    ),
    "tainted-prioritized-list-disabled": Case(
        features=Features(device_taints=False, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0, sub_request(SUB_REQ0, CLASS_B, 1), sub_request(SUB_REQ1, CLASS_A, 1)
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "tainted-admin-access": Case(
        features=Features(device_taints=True, admin_access=True),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [v_c],
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1), DeviceID(DRIVER_A, POOL1, DEVICE2)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
    ),
    "tainted-admin-access-disabled": Case(
        features=Features(device_taints=False, admin_access=True),
        claims=last(
            (v_c := claim_with_request(CLAIM0, REQ0, CLASS_A)),
            assign(v_c.Spec.Devices.Requests[0].Exactly, "AdminAccess", True),
            [v_c],
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1), DeviceID(DRIVER_A, POOL1, DEVICE2)],
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)
            )
        ],
    ),
    "tainted-all-devices-single": Case(
        features=Features(device_taints=True),
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
    ),
    "tainted-all-devices-single-disabled": Case(
        features=Features(device_taints=False),
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_taints(device(DEVICE1, None, None), TAINT_NO_SCHEDULE)
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-allocation-mode-all": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(sub_request(SUB_REQ0, CLASS_A, 0), "All"),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None), device(DEVICE2, None, None))
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE2)],
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v6"', DRIVER_A))),
                        ),
                        "All",
                    ),
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v5"', DRIVER_A))),
                        ),
                        "All",
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": obj(StringValue="v5")})
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v6"', DRIVER_A))),
                        ),
                        "All",
                    ),
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v5"', DRIVER_A))),
                        ),
                        "All",
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": obj(StringValue="v5")})
            ),
            slice_with_devices(
                SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE1, None, {"generation": obj(StringValue="v5")})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE1, False),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v6"', DRIVER_A))),
                        ),
                        "All",
                    ),
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v5"', DRIVER_A))),
                        ),
                        "All",
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": obj(StringValue="v5")})
            ),
            slice_with_devices(
                SLICE2,
                NODE2,
                POOL2,
                DRIVER_A,
                device(DEVICE1, None, {"generation": obj(StringValue="v5")}),
                device(DEVICE2, None, {"generation": obj(StringValue="v6")}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v6"', DRIVER_A))),
                        ),
                        "All",
                    ),
                    with_allocation_mode(
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            0,
                            obj(CEL=obj(Expression=sprintf('device.attributes["%s"].generation == "v5"', DRIVER_A))),
                        ),
                        "All",
                    ),
                ),
            )
        ),
        classes=objects(
            obj(
                ObjectMeta=obj(Name=CLASS_A),
                Spec=obj(
                    Selectors=[
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.driver == "%s" && device.attributes["%s"].selected', DRIVER_A, DRIVER_A
                                )
                            )
                        )
                    ]
                ),
            )
        ),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"generation": obj(StringValue="v6"), "selected": obj(BoolValue=False)}),
                device(DEVICE2, None, {"generation": obj(StringValue="v5"), "selected": obj(BoolValue=False)}),
                device(DEVICE3, None, {"generation": obj(StringValue="v5"), "selected": obj(BoolValue=True)}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, False)
            )
        ],
    ),
    "max-number-devices": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                *multiple_device_allocation_results(REQ0, DRIVER_A, POOL1, ALLOCATION_RESULTS_MAX_SIZE, 0),
            )
        ],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        features=Features(partitionable_devices=True),
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 2),
                request(
                    REQ1, CLASS_A, 1, obj(CEL=obj(Expression=sprintf('device.attributes["%s"].special', DRIVER_A)))
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, {"special": obj(BoolValue=True)}),
                    device_counter_consumption(COUNTER_SET1, {"cpu1": "1"}),
                    device_counter_consumption(COUNTER_SET2, {"mem": "10Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, None, {"special": obj(BoolValue=False)}),
                    device_counter_consumption(COUNTER_SET1, {"cpu2": "1"}),
                    device_counter_consumption(COUNTER_SET2, {"mem": "10Gi"}),
                ),
                with_device_counter_consumption(
                    device(DEVICE3, None, {"special": obj(BoolValue=False)}),
                    device_counter_consumption(COUNTER_SET1, {"cpu3": "1"}),
                    device_counter_consumption(COUNTER_SET2, {"mem": "10Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {"cpu1": "1", "cpu2": "1", "cpu3": "1"}),
                counter_set(COUNTER_SET2, {"mem": "30Gi"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(SUB_REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(SUB_REQ1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(SUB_REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(SUB_REQ1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE * 2)
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                *concat(
                    multiple_device_allocation_results(
                        REQ0_SUB_REQ1, DRIVER_A, POOL1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0
                    ),
                    multiple_device_allocation_results(
                        REQ1_SUB_REQ1,
                        DRIVER_A,
                        POOL1,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                    ),
                ),
            )
        ],
        steps=75,
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_allocation_mode(sub_request(SUB_REQ0, CLASS_A, 0), "All"),
                    sub_request(SUB_REQ1, CLASS_A, 2),
                ),
                device_request(REQ1, CLASS_B, 2),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)),
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE - 1),
            slice_with_multiple_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, "device-0", False),
                device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, "device-1", False),
                device_allocation_result(REQ1, DRIVER_B, POOL2, "device-0", False),
                device_allocation_result(REQ1, DRIVER_B, POOL2, "device-1", False),
            )
        ],
        steps=42,
    ),
    "device-binding-conditions": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding_conditions(device(DEVICE1, None, None), ["IsPrepare"], ["BindingFailed"]),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "binding-conditions-multiple-devices": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding_conditions(device(DEVICE1, None, None), ["IsPrepare"], ["BindingFailed"]),
                with_binding_conditions(device(DEVICE2, None, None), ["IsPrepare2"], ["BindingFailed2"]),
                with_binding_conditions(device(DEVICE3, None, None), ["IsPrepare3"], ["BindingFailed3"]),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ1, DRIVER_A, POOL1, DEVICE3, ["IsPrepare3"], ["BindingFailed3"]
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "binding-conditions-with-and-without": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, None),
                with_binding_conditions(device(DEVICE2, None, None), ["IsPrepare"], ["BindingFailed"]),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                        device_request_allocation_result_with_binding_conditions(
                            REQ1, DRIVER_A, POOL1, DEVICE2, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "binding-conditions-without-feature-gate": Case(
        features=Features(device_binding_and_status=False),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding_conditions(device(DEVICE1, None, None), ["IsPrepare"], ["BindingFailed"]),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "node-restriction": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH),
                POOL1,
                DRIVER_A,
                with_binds_to_node(device(DEVICE1, None, None), True),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    ["IsPrepare"],
                    ["BindingFailed"],
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    ["IsPrepare"],
                    ["BindingFailed"],
                ),
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE2, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    ["IsPrepare2"],
                    ["BindingFailed2"],
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 3))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "2Gi"}),
                    ),
                    ["IsPrepare"],
                    ["BindingFailed"],
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "2Gi"})
                ),
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE3, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    ["IsReady"],
                    ["BindingTimeout"],
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE3, ["IsReady"], ["BindingTimeout"]
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE4,
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                with_binding_conditions(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    ),
                    ["IsPrepare"],
                    ["BindingFailed"],
                ),
            ),
            slice_with_counter_sets(
                SLICE3, NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE1, NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET2, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True, device_taints=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_taints(
                    with_binding_conditions(
                        with_device_counter_consumption(
                            device(DEVICE1, FROM_COUNTERS, None),
                            device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                        ),
                        ["IsPrepare"],
                        ["BindingFailed"],
                    ),
                    obj(Key="key1", Value="value1", Effect="NoSchedule"),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        features=Features(partitionable_devices=True, device_binding_and_status=True, device_taints=True),
        claims=objects(
            with_tolerations(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2)), TOLERATION_NO_SCHEDULE_KEY1)
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_taints(
                    with_binding_conditions(
                        with_device_counter_consumption(
                            device(DEVICE1, FROM_COUNTERS, None),
                            device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                        ),
                        ["IsPrepare"],
                        ["BindingFailed"],
                    ),
                    obj(Key="key1", Value="value1", Effect="NoSchedule"),
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            obj(
                Devices=obj(
                    Results=[
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            ["IsPrepare"],
                            ["BindingFailed"],
                            TOLERATION_NO_SCHEDULE_KEY1,
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0, DRIVER_A, POOL1, DEVICE2, None, None, TOLERATION_NO_SCHEDULE_KEY1
                        ),
                    ]
                ),
                NodeSelector=local_node_selector(NODE1),
            )
        ],
    ),
    "consumable-capacity-disabled-feature": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error=(
            "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"
        ),
    ),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        features=Features(prioritized_list=True, device_binding_and_status=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_capacity_request(sub_request(SUB_REQ0, CLASS_A, 1), ONE),
                    with_capacity_request(sub_request(SUB_REQ1, CLASS_A, 1), ONE),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)),
        node=node(NODE1, REGION1),
        expect=None,
        error=(
            "claim claim-0, subrequest subReq-0: has capacity requests, but the "
            "DRAConsumableCapacity feature is disabled"
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, {CAPACITY1: ONE}, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), ONE))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, {CAPACITY1: ONE}, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1)),
            with_requests(claim(CLAIM1), device_request(REQ0, CLASS_A, 1)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, None, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1)),
            with_requests(claim(CLAIM1), device_request(REQ0, CLASS_A, 1)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: ONE}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1)),
            with_requests(claim(CLAIM1), device_request(REQ0, CLASS_A, 1)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
            with_requests(claim(CLAIM1), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1)),
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_A, 1)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1)),
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_A, 1)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_valid_values(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), ZERO, {CAPACITY0: ONE}, None
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ZERO}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ZERO}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_valid_values(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), ZERO, {CAPACITY0: ONE}, None
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
            with_requests(claim(CLAIM1), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), new_quantity(3, "BinarySI"))
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: FOUR}
                ),
            )
        ],
    ),
    "consumable-capacity-range-policy-request-above-int64-rejected": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), "18446744073709551616")
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        error="cannot be represented",
    ),
    "consumable-capacity-range-policy-rounded-value-overflow-rejected": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), "9223372036854775807"))
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        error="cannot be represented",
    ),
    "consumable-capacity-range-policy-overflow-aborts-not-skip": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), "18446744073709551616")
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: "36893488147419103232"}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        error="cannot be represented",
    ),
    "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), "18446744073709551616")
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        error="cannot be represented",
    ),
    "consumable-capacity-negative-request-aborts": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), "-5"))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: "10"}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        error="negative",
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), new_quantity(2, "BinarySI"))
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_valid_values(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), ONE, {CAPACITY0: FOUR}, [TWO]
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), new_quantity(2, "BinarySI"))
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_valid_values(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), ONE, {CAPACITY0: THREE}, [THREE]
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: THREE}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
            with_requests(claim(CLAIM1), with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: TWO}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), new_quantity(6, "BinarySI"))
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)),
                    {CAPACITY0: new_quantity(10, "BinarySI")},
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO))),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: FOUR}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO))),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: TWO}
                ),
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE2, None, None)), {CAPACITY0: TWO}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(MatchAttribute=STRING_ATTRIBUTE)),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO),
                with_capacity_request(device_request(REQ1, CLASS_A, 1), TWO),
            ),
            with_requests(claim(CLAIM1), with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO)),
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        device(DEVICE2, None, {"stringAttribute": obj(StringValue="stringAttributeValue1")})
                    ),
                    {CAPACITY0: TWO},
                ),
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        device(DEVICE1, None, {"stringAttribute": obj(StringValue="stringAttributeValue2")})
                    ),
                    {CAPACITY0: FOUR},
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        features=Features(consumable_capacity=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    with_capacity_request(sub_request(SUB_REQ0, CLASS_A, 1), FOUR),
                    with_capacity_request(sub_request(SUB_REQ1, CLASS_A, 1), TWO),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: TWO}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: TWO},
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO))),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: TWO}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), TWO))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None)),
                with_allow_multiple_allocations(device(DEVICE2, None, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), TWO))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE),
                with_capacity_request(all_device_request(REQ1, CLASS_A), ONE),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        features=Features(consumable_capacity=True),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), ONE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: TWO}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: ONE}
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE),
                with_capacity_request(all_device_request(REQ1, CLASS_A), ONE),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: ONE}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        features=Features(consumable_capacity=True),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(all_device_request(REQ0, CLASS_A), ONE))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: ONE}, None)),
                with_allow_multiple_allocations(device(DEVICE2, {CAPACITY0: ONE}, None)),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {CAPACITY0: ONE}, None))
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
            with_requests(claim(CLAIM1), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE)),
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(device(DEVICE1, None, None), {CAPACITY0: TWO}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "consumable-capacity-requests-are-not-modified": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO),
                with_capacity_request(device_request(REQ1, CLASS_A, 1), "1000000000000000000000"),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(
                    device(
                        DEVICE1,
                        {
                            CAPACITY0: obj(
                                Value="1000000000000000000002",
                                RequestPolicy=obj(Default="1000000000000000000000", ValidRange=obj(Min=TWO)),
                            )
                        },
                        None,
                    )
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: "1000000000000000000000"},
                ),
            )
        ],
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, {CAPACITY0: ONE}, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        features=Features(consumable_capacity=True),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: TWO}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        features=Features(consumable_capacity=True),
        claims=objects(with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE))),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(device(DEVICE1, None, None), {CAPACITY0: TWO}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        features=Features(prioritized_list=True, partitionable_devices=True, consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_allow_multiple_allocations(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    )
                ),
                with_allow_multiple_allocations(
                    with_device_counter_consumption(
                        device(DEVICE2, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"}),
                    )
                ),
                with_allow_multiple_allocations(
                    with_device_counter_consumption(
                        device(DEVICE3, FROM_COUNTERS, None),
                        device_counter_consumption(COUNTER_SET1, {"memory": "4Gi"}),
                    )
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {"memory": "4Gi"}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3),
                    FIXED_SHARE_ID,
                    {"memory": "4Gi"},
                ),
            )
        ],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        features=Features(partitionable_devices=True, consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_selectors(
                    with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE),
                    obj(CEL=obj(Expression=sprintf('device.attributes["%s"].mode == "b"', DRIVER_A))),
                ),
            )
        ),
        allocated_shares=objects(shared_device_id(DeviceID(DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID)),
        allocated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_allow_multiple_allocations(
                    with_device_counter_consumption(
                        device(DEVICE1, FROM_COUNTERS, {"mode": obj(StringValue="a")}),
                        device_counter_consumption(COUNTER_SET1, {CAPACITY0: ONE}),
                    )
                ),
                with_allow_multiple_allocations(
                    with_device_counter_consumption(
                        device(DEVICE2, FROM_COUNTERS, {"mode": obj(StringValue="b")}),
                        device_counter_consumption(COUNTER_SET1, {CAPACITY0: ONE}),
                    )
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {CAPACITY0: ONE})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "partitionable-consumable-capacity-shared-device-counter-not-recharged": Case(
        features=Features(partitionable_devices=True, consumable_capacity=True),
        allocated_shares=objects(shared_device_id(DeviceID(DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID)),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)),
                    device_counter_consumption(COUNTER_SET1, {"c": "1"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"c": "1"})
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            )
        ],
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        features=Features(prioritized_list=True, partitionable_devices=True, consumable_capacity=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE),
                with_capacity_request(device_request(REQ2, CLASS_A, 1), TWO),
                request_with_prioritized_list(
                    REQ1,
                    with_capacity_request(
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            obj(
                                CEL=obj(
                                    Expression=sprintf(
                                        'device.capacity["%s"]["%s"].compareTo(quantity("4")) >= 0', DRIVER_A, CAPACITY0
                                    )
                                )
                            ),
                        ),
                        ONE,
                    ),
                    with_capacity_request(
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            obj(
                                CEL=obj(
                                    Expression=sprintf(
                                        'device.capacity["%s"]["%s"].compareTo(quantity("2")) >= 0', DRIVER_A, CAPACITY0
                                    )
                                )
                            ),
                        ),
                        ONE,
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        with_device_counter_consumption(
                            device(DEVICE1, FROM_COUNTERS, None),
                            device_counter_consumption(COUNTER_SET1, {CAPACITY0: TWO}),
                            device_counter_consumption(COUNTER_SET2, {CAPACITY1: FOUR}),
                        )
                    ),
                    ({CAPACITY1: FOUR}),
                ),
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        with_device_counter_consumption(
                            device(DEVICE2, FROM_COUNTERS, None),
                            device_counter_consumption(COUNTER_SET1, {CAPACITY0: FOUR}),
                            device_counter_consumption(COUNTER_SET2, {CAPACITY1: FOUR}),
                        )
                    ),
                    ({CAPACITY1: FOUR}),
                ),
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        with_device_counter_consumption(
                            device(DEVICE3, FROM_COUNTERS, None),
                            device_counter_consumption(COUNTER_SET1, {CAPACITY0: TWO}),
                            device_counter_consumption(COUNTER_SET2, {CAPACITY1: FOUR}),
                        )
                    ),
                    ({CAPACITY1: FOUR}),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, {CAPACITY0: FOUR}),
                counter_set(COUNTER_SET2, {CAPACITY1: "8"}),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: ONE, CAPACITY1: TWO},
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE3),
                    FIXED_SHARE_ID,
                    {CAPACITY0: TWO, CAPACITY1: TWO},
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: ONE, CAPACITY1: TWO},
                ),
            )
        ],
    ),
    "with-distinct-constraints": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(
                    claim(CLAIM0),
                    obj(DistinctAttribute=BOOL_ATTRIBUTE, Requests=[REQ0, REQ1]),
                    obj(DistinctAttribute=VERSION_ATTRIBUTE, Requests=[REQ0, REQ1, REQ2]),
                    obj(DistinctAttribute=INT_ATTRIBUTE, Requests=[REQ0, REQ1, REQ2, REQ3]),
                ),
                device_request(REQ0, CLASS_A, 1),
                device_request(REQ1, CLASS_A, 1),
                device_request(REQ2, CLASS_A, 1),
                device_request(REQ3, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(
                    device(
                        DEVICE1,
                        None,
                        {
                            "driverVersion": obj(VersionValue="1.0.0"),
                            "numa": obj(IntValue=0),
                            "boolAttribute": obj(BoolValue=True),
                        },
                    )
                ),
                with_allow_multiple_allocations(
                    device(
                        DEVICE2,
                        None,
                        {
                            "driverVersion": obj(VersionValue="1.0.1"),
                            "numa": obj(IntValue=1),
                            "boolAttribute": obj(BoolValue=False),
                        },
                    )
                ),
                with_allow_multiple_allocations(
                    device(
                        DEVICE3,
                        None,
                        {
                            "driverVersion": obj(VersionValue="1.0.2"),
                            "numa": obj(IntValue=2),
                            "boolAttribute": obj(BoolValue=True),
                        },
                    )
                ),
                with_allow_multiple_allocations(
                    device(
                        DEVICE4,
                        None,
                        {
                            "driverVersion": obj(VersionValue="1.0.0"),
                            "numa": obj(IntValue=3),
                            "boolAttribute": obj(BoolValue=True),
                        },
                    )
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, None
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE3), FIXED_SHARE_ID, None
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ3, DRIVER_A, POOL1, DEVICE4), FIXED_SHARE_ID, None
                ),
            )
        ],
    ),
    "distinct-constraint-single-request-count-3-not-distinct": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            claim_with_requests(CLAIM0, [obj(DistinctAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 3))
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValue="value1")}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValue="value2")}),
                device(DEVICE3, None, {"stringAttribute": obj(StringValue="value1")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            claim_with_requests(CLAIM0, [obj(DistinctAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 3))
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValue="value1")}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValue="value2")}),
                device(DEVICE3, None, {"stringAttribute": obj(StringValue="value3")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False),
            )
        ],
    ),
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=STRING_ATTRIBUTE, Requests=[REQ0, REQ1])),
                device_request(REQ0, CLASS_A, 2),
                device_request(REQ1, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValue="value1")}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValue="value2")}),
                device(DEVICE3, None, {"stringAttribute": obj(StringValue="value1")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=BOOL_ATTRIBUTE, Requests=[REQ0])),
                device_request(REQ0, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, with_allow_multiple_allocations(device(DEVICE1, None, None))
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=BOOL_ATTRIBUTE, Requests=[REQ0])),
                device_request(REQ0, CLASS_A, 1),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, None, {"boolAttribute": obj()})),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
        error="unsupported attribute value",
    ),
    "with-distinct-constraints-with-subrequests": Case(
        features=Features(consumable_capacity=True, prioritized_list=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=BOOL_ATTRIBUTE, Requests=[REQ0, REQ1])),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].boolAttribute', DRIVER_A))),
                    ),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].boolAttribute', DRIVER_A))),
                    ),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
                request_with_prioritized_list(
                    REQ2,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].boolAttribute', DRIVER_A))),
                    ),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_allow_multiple_allocations(device(DEVICE1, None, {"boolAttribute": obj(BoolValue=True)})),
                with_allow_multiple_allocations(device(DEVICE2, None, {"boolAttribute": obj(BoolValue=False)})),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, None
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ2_SUB_REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, None
                ),
            )
        ],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-not-set": Case(
        features=Features(consumable_capacity=True),
        claims=objects(claim_with_requests(CLAIM0, [obj(DistinctAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 3))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, None),
                device(DEVICE2, None, None),
                device(DEVICE3, None, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "distinct-constraint-single-request-not-enough-distinct-values": Case(
        features=Features(consumable_capacity=True),
        claims=objects(claim_with_requests(CLAIM0, [obj(DistinctAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 3))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": obj(IntValue=1)}),
                device(DEVICE2, None, {"numa": obj(IntValue=2)}),
                device(DEVICE3, None, {"numa": obj(IntValue=2)}),
                device(DEVICE4, None, {"numa": obj(IntValue=2)}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-set": Case(
        features=Features(consumable_capacity=True),
        claims=objects(claim_with_requests(CLAIM0, [obj(DistinctAttribute=INT_ATTRIBUTE)], request(REQ0, CLASS_A, 3))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": obj(IntValue=1)}),
                device(DEVICE2, None, {"numa": obj(IntValue=2)}),
                device(DEVICE3, None, {"numa": obj(IntValue=1)}),
                device(DEVICE4, None, {"numa": obj(IntValue=3)}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE4, False),
            )
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=STRING_ATTRIBUTE)),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), ONE),
                with_capacity_request(device_request(REQ1, CLASS_A, 1), ONE),
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        device(DEVICE1, None, {"stringAttribute": obj(StringValue="stringAttributeValue")})
                    ),
                    {CAPACITY0: TWO},
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(
                with_constraints(claim(CLAIM0), obj(DistinctAttribute=STRING_ATTRIBUTE)),
                with_capacity_request(device_request(REQ0, CLASS_A, 1), TWO),
                with_capacity_request(device_request(REQ1, CLASS_A, 1), TWO),
            )
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        device(DEVICE1, None, {"stringAttribute": obj(StringValue="stringAttributeValue1")})
                    ),
                    {CAPACITY0: FOUR},
                ),
            ),
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_capacity_request_policy_range(
                    with_allow_multiple_allocations(
                        device(DEVICE2, None, {"stringAttribute": obj(StringValue="stringAttributeValue2")})
                    ),
                    {CAPACITY0: FOUR},
                ),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
                with_consumed_capacity(
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2), FIXED_SHARE_ID, {CAPACITY0: TWO}
                ),
            )
        ],
    ),
    "consumable-capacity-fractional-range-gate-disabled": Case(
        features=Features(consumable_capacity=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), POINT_TWO))
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_fractional_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: ONE}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: new_quantity(1, "DecimalSI")},
                ),
            )
        ],
    ),
    "consumable-capacity-fractional-range-gate-enabled-round-up": Case(
        features=Features(consumable_capacity=True, fractional_capacity_range=True),
        claims=objects(
            with_requests(claim(CLAIM0), with_capacity_request(device_request(REQ0, CLASS_A, 1), POINT_TWO_FIVE))
        ),
        classes=objects(class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_fractional_capacity_request_policy_range(
                    with_allow_multiple_allocations(device(DEVICE1, None, None)), {CAPACITY0: ONE}
                ),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                with_consumed_capacity(
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    FIXED_SHARE_ID,
                    {CAPACITY0: POINT_THREE},
                ),
            )
        ],
    ),
    "list-attributes-disabled-match-constraint-with-lists": Case(
        features=Features(list_type_attributes=False),
        claims=objects(claim_with_requests(CLAIM0, [obj(MatchAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 2))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValues=["value1", "value2", "value3"])}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValues=["value2", "value3", "value4"])}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": Case(
        features=Features(list_type_attributes=False, consumable_capacity=True),
        claims=objects(
            claim_with_requests(CLAIM0, [obj(DistinctAttribute=STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 2))
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": obj(StringValues=["value1", "value2", "value3"])}),
                device(DEVICE2, None, {"stringAttribute": obj(StringValues=["value2", "value3", "value4"])}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0, None, obj(Name=REQ0, Exactly=obj(AllocationMode="All", DeviceClassName=CLASS_A))
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE2, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2, None, None)),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_s := slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
        ),
        node=node(NODE1, REGION1),
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_s := slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_s := slice_with_devices(SLICE1, NODE2, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE1, NODE2, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_s := slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False)
            )
        ],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=objects(claim_with_request(CLAIM0, REQ0, CLASS_A)),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            last(
                (v_s := slice_with_devices(SLICE1, NODE2, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE1, NODE2, POOL1, DRIVER_A, device(DEVICE2, None, None))),
                assign(v_s.Spec.Pool, "Generation", 1),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
            last(
                (v_s := slice_with_devices(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None))),
                assign(v_s.Spec.Pool, "Generation", 2),
                assign(v_s.Spec.Pool, "ResourceSliceCount", 2),
                v_s,
            ),
        ),
        node=node(NODE1, REGION1),
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        features=Features(partitionable_devices=True),
        claims=objects(with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1, None)),
            slice_with_devices(SLICE3, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE2, None, None)),
            slice_with_counter_sets(SLICE4, NODE1, resource_pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1, None)),
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        features=Features(partitionable_devices=True),
        claims=objects(with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET2, None)
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, None)),
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        features=Features(partitionable_devices=True),
        claims=objects(with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, {"other-memory": "8Gi"})
            ),
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        features=Features(partitionable_devices=True),
        claims=objects(with_requests(claim(CLAIM0), device_request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(SLICE2, NODE1, POOL2, DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        features=Features(partitionable_devices=True, prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ0,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(
                            CEL=obj(
                                Expression=sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0', DRIVER_A
                                )
                            )
                        ),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "2Gi"})
                ),
            ),
            slice_with_devices(
                SLICE3,
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE3, None, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
            ),
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE3)],
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                SLICE3,
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE2, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
                with_device_counter_consumption(
                    device(DEVICE3, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "2Gi"})
                ),
            ),
        ),
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        node=node(NODE2, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE2), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, False)
            )
        ],
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        features=Features(partitionable_devices=True),
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, {"memory": "8Gi"})
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE1, FROM_COUNTERS, None), device_counter_consumption(COUNTER_SET1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                SLICE3,
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                with_device_counter_consumption(
                    device(DEVICE3, None, None), device_counter_consumption(COUNTER_SET2, {"memory": "6Gi"})
                ),
            ),
        ),
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE2, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2, None, None)),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False)
            )
        ],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A, device(DEVICE2, None, None)),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1), device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2, False)
            )
        ],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A, device(DEVICE2, None, None)),
        ),
        allocated=[DeviceID(DRIVER_A, POOL2, DEVICE2)],
        node=node(NODE1, REGION1),
        error="invalid resource pools were encountered",
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None))
        ),
        node=node(NODE1, REGION1),
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 5))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, None),
                device(DEVICE2, None, None),
                device(DEVICE3, None, None),
                device(DEVICE4, None, None),
            )
        ),
        node=node(NODE1, REGION1),
        expect=None,
        steps=16,
        steps_by_channel={"stable": 65},
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 5))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, None, None),
                device(DEVICE2, None, None),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE3, None, None),
                device(DEVICE4, None, None),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=None,
        steps=16,
        steps_by_channel={"stable": 65},
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 5))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2, None, None)),
            slice_with_devices(
                SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3, None, None), device(DEVICE4, None, None)
            ),
        ),
        node=node(NODE1, REGION1),
        expect=None,
        steps=16,
        steps_by_channel={"stable": 65},
    ),
    "check-combinations-within-single-request-many-pools": Case(
        claims=objects(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 5))),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, None)),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, None, None)),
            slice_with_devices(SLICE3, NODE1, POOL3, DRIVER_A, device(DEVICE3, None, None)),
            slice_with_devices(SLICE4, NODE1, POOL4, DRIVER_A, device(DEVICE4, None, None)),
        ),
        node=node(NODE1, REGION1),
        expect=None,
        steps=16,
        steps_by_channel={"stable": 65},
    ),
    "check-combinations-with-backtracking": Case(
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ1, CLASS_A, 2),
                request(
                    REQ2, CLASS_A, 1, obj(CEL=obj(Expression=sprintf('device.attributes["%s"].type == "X"', DRIVER_A)))
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"type": obj(StringValue="X")}),
                device(DEVICE2, None, {"type": obj(StringValue="Y")}),
                device(DEVICE3, None, {"type": obj(StringValue="Y")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, False),
                device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
        steps=12,
        steps_by_channel={"stable": 14},
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        features=Features(device_binding_and_status=True),
        claims=objects(
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ1, CLASS_A, 2),
                request(
                    REQ2, CLASS_A, 1, obj(CEL=obj(Expression=sprintf('device.attributes["%s"].type == "X"', DRIVER_A)))
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1, None, {"type": obj(StringValue="X")})
            ),
            slice_with_devices(
                SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2, None, {"type": obj(StringValue="Y")})
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_A,
                with_binding_conditions(device(DEVICE3, None, {"type": obj(StringValue="Y")}), ["IsPrepare"], []),
            ),
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, False),
                device_request_allocation_result_with_binding_conditions(
                    REQ1, DRIVER_A, POOL2, DEVICE3, ["IsPrepare"], []
                ),
                device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
        steps=12,
        steps_by_channel={"stable": 14},
    ),
    "check-combinations-with-prioritized-list": Case(
        features=Features(prioritized_list=True),
        claims=objects(
            with_requests(
                claim(CLAIM0),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        3,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].type == "Y"', DRIVER_A))),
                    ),
                    sub_request(SUB_REQ1, CLASS_A, 2),
                ),
                request_with_prioritized_list(
                    REQ2,
                    sub_request(SUB_REQ0, CLASS_A, 2),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        obj(CEL=obj(Expression=sprintf('device.attributes["%s"].type == "X"', DRIVER_A))),
                    ),
                ),
            )
        ),
        classes=objects(device_class(CLASS_A, DRIVER_A)),
        slices=unwrap_resource_slices(
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"type": obj(StringValue="X")}),
                device(DEVICE2, None, {"type": obj(StringValue="Y")}),
                device(DEVICE3, None, {"type": obj(StringValue="Y")}),
            )
        ),
        node=node(NODE1, REGION1),
        expect=[
            allocation_result(
                local_node_selector(NODE1),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, False),
                device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, False),
                device_allocation_result(REQ2_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, False),
            )
        ],
        steps=26,
        steps_by_channel={"stable": 32},
    ),
}
