"""``resource.k8s.io/v1`` DeviceTaintRules (1.37, DRADeviceTaintRules GA): one taint for the devices a
selector names, and the slices as the allocator sees them once the rules are applied.

kube-scheduler does not hand the allocator the ResourceSlices as the driver published them where the
gate is on: ``resourceslice/tracker`` (``ListPatchedResourceSlices``) appends each matching rule's
taint to each device it selects, "the same effect as if the taint was specified directly in the
ResourceSlice by the DRA driver". At 1.37 the selector is driver, pool and device name, each optional
(unset: any); no selector selects every device. ``tainted`` does the same here. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api.devicefields import DEFAULT_MINOR, DeviceTaint, check_minor, parse_device_taint
from scheduler.api.fields import FieldError, as_mapping, opt_str, required_name
from scheduler.api.resourceslice import ResourceSlice

__all__ = ["DeviceTaintRule", "tainted"]


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """A rule as the tracker reads it: the selector's driver, pool and device (None: any) and the taint."""

    name: str
    taint: DeviceTaint
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    resource_version: str = ""
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object, *, minor: str = DEFAULT_MINOR) -> DeviceTaintRule:
        check_minor(minor)
        errors: list[FieldError] = []
        root = as_mapping(obj, "deviceTaintRule", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        selector = as_mapping(spec.get("deviceSelector"), "spec.deviceSelector", errors)
        return cls(
            name=required_name(meta, errors),
            taint=parse_device_taint(spec.get("taint"), "spec.taint", errors),
            driver=opt_str(selector.get("driver"), "spec.deviceSelector.driver", errors),
            pool=opt_str(selector.get("pool"), "spec.deviceSelector.pool", errors),
            device=opt_str(selector.get("device"), "spec.deviceSelector.device", errors),
            resource_version=opt_str(meta.get("resourceVersion"), "metadata.resourceVersion", errors) or "",
            errors=tuple(errors),
        )


def tainted(slice_: ResourceSlice, rules: Iterable[DeviceTaintRule]) -> ResourceSlice:
    """``applyPatches``: ``slice_`` with each rule's taint appended to every device the rule selects;
    ``slice_`` itself when no rule selects any of its devices."""
    added: dict[int, list[DeviceTaint]] = {}
    for rule in rules:
        if rule.errors or (rule.driver is not None and rule.driver != slice_.driver):
            continue
        if rule.pool is not None and rule.pool != slice_.pool.name:
            continue
        for i, device in enumerate(slice_.devices):
            if rule.device is None or rule.device == device.name:
                added.setdefault(i, []).append(rule.taint)
    if not added:
        return slice_
    devices = tuple(
        dataclasses.replace(device, taints=device.taints + tuple(added[i])) if i in added else device
        for i, device in enumerate(slice_.devices)
    )
    return dataclasses.replace(slice_, devices=devices)
