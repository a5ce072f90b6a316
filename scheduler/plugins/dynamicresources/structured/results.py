"""What one claim's allocation holds once the search found its devices: the per-device results, the
class and claim configuration that applies to them, and the node selector the devices impose
(upstream's ``Allocate`` tail and ``createNodeSelector``, stable variant, v0.35.4). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.devicefields import DeviceConfiguration, DeviceToleration
from scheduler.api.labels import Requirement, make_selector
from scheduler.api.nodeselector import NODE_NAME_FIELD, FieldRequirement, NodeSelector, NodeSelectorTerm
from scheduler.api.resourceclaim import AllocationResult, DeviceAllocationResult, ResourceClaim
from scheduler.api.resourceslice import Device, ResourceSlice
from scheduler.plugins.dynamicresources.structured.errors import AllocationError

__all__ = ["CONFIG_FROM_CLAIM", "CONFIG_FROM_CLASS", "DeviceID", "Picked", "Selection", "build_result"]

CONFIG_FROM_CLASS = "FromClass"
CONFIG_FROM_CLAIM = "FromClaim"


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(slots=True)
class Picked:
    """One device the search allocated: for which request (``request/subrequest`` for a subrequest).
    Never changed once made; not frozen, as a frozen dataclass's ``__init__`` costs a few times more
    and the search makes one for every device it takes, node after node."""

    request: str
    id: DeviceID
    slice: ResourceSlice
    device: Device
    admin_access: bool | None
    tolerations: tuple[DeviceToleration, ...] = ()  # the request's (or subrequest's)
    share_id: str | None = None  # consumable capacity: the share of a device allowing multiple allocations
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)  # what that share holds


@dataclass(frozen=True, slots=True)
class Selection:
    """Per request of the claim: the name its devices were allocated under (the request, or
    ``request/subrequest`` for the chosen one) and the class it used."""

    request: str
    subrequest: str | None
    device_class: DeviceClass | None


def build_result(
    claim: ResourceClaim,
    picked: Sequence[Picked],
    selections: Sequence[Selection],
    *,
    tolerations: bool = False,
    binding: bool = False,
    node_name: str | None = None,
    configs_once: bool = False,
) -> AllocationResult:
    """The claim's allocation. With ``tolerations`` (incubating) each result carries its request's;
    with ``binding`` (DeviceBindingAndStatus) its device's binding conditions. ``node_name`` (v0.36):
    the node allocated for, which a device local to a node, or binding to one, pins the claim to.
    ``configs_once`` (v0.37): a claim config is written once, and one naming every request names none."""
    return AllocationResult(
        results=tuple(
            DeviceAllocationResult(
                request=p.request,
                driver=p.id.driver,
                pool=p.id.pool,
                device=p.id.device,
                admin_access=p.admin_access,
                tolerations=p.tolerations if tolerations else (),
                binding_conditions=p.device.binding_conditions if binding else (),
                binding_failure_conditions=p.device.binding_failure_conditions if binding else (),
                share_id=p.share_id,
                consumed_capacity=p.consumed_capacity,
            )
            for p in picked
        ),
        config=tuple(_configs(claim, selections, configs_once)),
        node_selector=_node_selector(claim, picked, node_name),
    )


def _configs(claim: ResourceClaim, selections: Sequence[Selection], once: bool) -> list[DeviceConfiguration]:
    """A class's configs once per class (naming every request that used it), then the claim's:
    one that names no request once, others once per request (or chosen subrequest) they name (with
    ``once``, once if they name any)."""
    out: list[tuple[DeviceConfiguration, list[str]]] = []
    by_class: dict[str, tuple[int, int]] = {}
    for selection in selections:
        device_class = selection.device_class
        name = selection.subrequest or selection.request
        if device_class is None:
            continue
        if device_class.name in by_class:
            start, end = by_class[device_class.name]
            for i in range(start, end):
                out[i][1].append(name)
            continue
        start = len(out)
        out.extend((config, [name]) for config in device_class.config)
        by_class[device_class.name] = (start, len(out))
    result = [
        DeviceConfiguration(driver=c.driver, parameters=c.parameters, requests=tuple(names), source=CONFIG_FROM_CLASS)
        for c, names in out
    ]
    for config in claim.devices.config:
        from_claim = DeviceConfiguration(
            driver=config.driver, parameters=config.parameters, requests=config.requests, source=CONFIG_FROM_CLAIM
        )
        if not config.requests:
            result.append(from_claim)
            continue
        for request, selection in zip(claim.devices.requests, selections, strict=True):
            if request.name in config.requests or (
                selection.subrequest is not None and selection.subrequest in config.requests
            ):
                result.append(from_claim)
                if once:
                    break
    if once:
        result = [
            dataclasses.replace(c, requests=())
            if c.requests
            and all(
                s.request in c.requests or (s.subrequest is not None and s.subrequest in c.requests) for s in selections
            )
            else c
            for c in result
        ]
    return result


def _node_selector(claim: ResourceClaim, picked: Sequence[Picked], node_name: str | None) -> NodeSelector | None:
    """One term: a device local to a node (or, v0.36, binding to it) pins the claim to it; the
    others' selectors are ANDed."""
    labels: list[Requirement] = []
    fields: list[FieldRequirement] = []
    for p in picked:
        source = p.device if p.slice.per_device_node_selection else p.slice
        if source.node_name or (node_name is not None and p.device.binds_to_node):
            name = node_name if node_name is not None else source.node_name
            assert name is not None
            return NodeSelector((NodeSelectorTerm(None, (FieldRequirement(NODE_NAME_FIELD, False, name),)),))
        selector = source.node_selector
        if selector is None:
            continue
        if len(selector.terms) > 1:
            # Validation refuses such slices.
            raise AllocationError(
                f"create NodeSelector for claim {claim.name}: "
                f"unsupported ResourceSlice.NodeSelector with {len(selector.terms)} terms"
            )
        for term in selector.terms:
            fields.extend(f for f in term.fields or () if f not in fields)
            labels.extend(r for r in (term.labels.requirements if term.labels else ()) if r not in labels)
    if not labels and not fields:
        return None
    return NodeSelector((NodeSelectorTerm(make_selector(labels) if labels else None, tuple(fields) or None),))
