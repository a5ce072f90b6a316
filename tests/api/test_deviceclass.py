"""DeviceClasses parsed from ``resource.k8s.io/v1``: selectors, config and the extended resource a class
backs (``scheduler.api.deviceclass``; ``scheduler.api.storage`` re-exports it for the cache).

Objects from upstream's validation tests (``validation_deviceclass_test.go``: selectors, opaque config).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.storage import DeviceClass


def class_obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "class-a", "creationTimestamp": "2025-06-01T10:00:00Z"},
        "spec": spec,
    }


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_selectors_config_and_extended_resource(minor: str) -> None:
    obj = class_obj(
        selectors=[{"cel": {"expression": 'device.driver == "driver-a"'}}, {"cel": {"expression": "true"}}],
        config=[{"opaque": {"driver": "driver-a", "parameters": {"kind": "GpuConfig"}}}],
        extendedResourceName="example.com/gpu",
    )
    c = DeviceClass.from_dict(obj, minor=minor)
    assert c.errors == ()
    assert c.name == "class-a" and c.created == "2025-06-01T10:00:00Z"
    assert c.selectors == ('device.driver == "driver-a"', "true")
    assert [(x.driver, x.parameters, x.requests) for x in c.config] == [("driver-a", {"kind": "GpuConfig"}, ())]
    assert c.extended_resource_name == "example.com/gpu"


def test_selector_errors() -> None:
    selectors = [{}, {"cel": {}}, {"cel": {"expression": "x" * (10 * 1024 + 1)}}, {"cel": {"expression": 3}}]
    c = DeviceClass.from_dict(class_obj(selectors=selectors))
    assert [str(e) for e in c.errors] == [
        "spec.selectors[0].cel: Required value",
        "spec.selectors[1].cel.expression: Required value",
        "spec.selectors[2].cel.expression: Too long: may not be more than 10240 bytes",
        "spec.selectors[3].cel.expression: must be a string, got int",
    ]
    assert c.selectors == ()


def test_too_many_selectors_and_configs() -> None:
    """DeviceSelectorsMaxSize and DeviceConfigMaxSize: 32."""
    c = DeviceClass.from_dict(
        class_obj(
            selectors=[{"cel": {"expression": "true"}}] * 33,
            config=[{"opaque": {"driver": "d", "parameters": {}}}] * 33,
        )
    )
    assert [str(e) for e in c.errors] == [
        "spec.selectors: Too many: 33: must have at most 32 items",
        "spec.config: Too many: 33: must have at most 32 items",
    ]


def test_config_errors() -> None:
    c = DeviceClass.from_dict(class_obj(config=[{}, {"opaque": {"parameters": {}}}, {"opaque": "x"}]))
    assert [str(e) for e in c.errors] == [
        "spec.config[0].opaque: Required value",
        "spec.config[1].opaque.driver: Required value",
        "spec.config[2].opaque: must be an object, got str",
        "spec.config[2].opaque.driver: Required value",
        "spec.config[2].opaque.parameters: Required value",
    ]


def test_opaque_parameters_are_bounded_and_never_printed() -> None:
    """OpaqueParametersMaxLength (10 KiB of JSON); a deeply nested value is measured, not recursed into."""
    fits = {"opaque": {"driver": "driver-a", "parameters": {"blob": "x" * 10000}}}
    too_long = {"opaque": {"driver": "driver-a", "parameters": {"blob": "x" * 10240}}}
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    nested = {"opaque": {"driver": "driver-a", "parameters": deep}}
    c = DeviceClass.from_dict(class_obj(config=[fits, too_long, nested]))
    assert [str(e) for e in c.errors] == [
        "spec.config[1].opaque.parameters: Too long: may not be more than 10240 bytes",
        "spec.config[2].opaque.parameters: Too long: may not be more than 10240 bytes",
    ]
    assert c.config[0].parameters == {"blob": "x" * 10000} and c.config[1].parameters is None
