"""A claim's constraints as upstream's allocators check them while they pick devices, one device
at a time, taken back on backtracking: ``matchAttribute`` (``matchAttributeConstraint``, every
variant) and, from incubating v0.36, ``distinctAttribute`` (``distinctAttributeConstraint``).
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.resourceslice import Device, DeviceAttribute

__all__ = ["Constraint", "DistinctAttribute", "MatchAttribute"]


@dataclass(slots=True)
class _AttributeConstraint:
    """What both constraint kinds share: the requests they name (all when none) and the attribute,
    which a device must have."""

    requests: frozenset[str]
    attribute: str

    def applies(self, request: str, subrequest: str) -> bool:
        return _names(self.requests, request, subrequest)

    def add(self, request: str, subrequest: str, device: Device, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        value = _lookup_attribute(device, driver, self.attribute)
        return value is not None and self._take(request, value)

    def remove(self, request: str, subrequest: str) -> None:
        if self.applies(request, subrequest):
            self._give_back(request)

    def _take(self, request: str, value: DeviceAttribute) -> bool:
        raise NotImplementedError

    def _give_back(self, request: str) -> None:
        raise NotImplementedError


@dataclass(slots=True)
class MatchAttribute(_AttributeConstraint):
    """``matchAttributeConstraint``: the devices of the named requests share the attribute's value."""

    value: DeviceAttribute | None = None
    count: int = 0

    def _take(self, request: str, value: DeviceAttribute) -> bool:
        if self.count == 0:
            self.value = value
        elif not _same_value(self.value, value):
            return False
        self.count += 1
        return True

    def _give_back(self, request: str) -> None:
        self.count -= 1


@dataclass(slots=True)
class DistinctAttribute(_AttributeConstraint):
    """``distinctAttributeConstraint``: the devices of the named requests have pairwise different
    values of the attribute.

    As upstream v0.36, the values are kept per *request* name: a request's later device replaces
    its earlier one's value, and taking one device back forgets the request's value altogether.
    With ``every`` (v0.37) every device's value is kept.
    """

    every: bool = False
    values: dict[str, DeviceAttribute] = field(default_factory=dict)
    count: int = 0
    stack: list[DeviceAttribute] = field(default_factory=list)

    def _take(self, request: str, value: DeviceAttribute) -> bool:
        kept = self.stack if self.every else list(self.values.values()) if self.count else []
        if not all(_differs(value, other) for other in kept):
            return False
        if self.every:
            self.stack.append(value)
        else:
            self.values[request] = value
            self.count += 1
        return True

    def _give_back(self, request: str) -> None:
        if self.every:
            self.stack.pop()
        else:
            self.values.pop(request, None)
            self.count -= 1


def _names(requests: frozenset[str], request: str, subrequest: str) -> bool:
    """Whether a constraint naming ``requests`` (all when none) applies to the request or its
    subrequest (``request/subrequest``)."""
    if not requests:
        return True
    return request in requests or (bool(subrequest) and f"{request}/{subrequest}" in requests)


def _lookup_attribute(device: Device, driver: str, name: str) -> DeviceAttribute | None:
    """A fully qualified name, or its bare id when the domain is the device's driver."""
    if name in device.attributes:
        return device.attributes[name]
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


def _same_value(first: DeviceAttribute | None, other: DeviceAttribute) -> bool:
    """Upstream compares by the kind of ``other``; list kinds are unknown to it and never match."""
    if first is None:
        return False
    if other.string_value is not None:
        return first.string_value == other.string_value
    if other.int_value is not None:
        return first.int_value == other.int_value
    if other.bool_value is not None:
        return first.bool_value == other.bool_value
    if other.version_value is not None:
        # semver 2.0.0 values are minimal, so equal versions are equal strings.
        return first.version_value == other.version_value
    return False


Constraint = MatchAttribute | DistinctAttribute


def _differs(value: DeviceAttribute, other: DeviceAttribute) -> bool:
    """``matchesAttribute`` for one kept value: by the kind of ``value``; list kinds never differ."""
    if value.string_value is not None:
        return other.string_value is None or other.string_value != value.string_value
    if value.int_value is not None:
        return other.int_value is None or other.int_value != value.int_value
    if value.bool_value is not None:
        return other.bool_value is None or other.bool_value != value.bool_value
    if value.version_value is not None:
        return other.version_value is None or other.version_value != value.version_value
    return False
