"""The devices of ``resource.k8s.io/v1`` ResourceSlices, as far as DRA's CEL selectors read them.

A device's attributes and capacities are keyed by qualified name (``domain/id``, or a bare ``id``
in the slice driver's domain); an attribute holds exactly one typed value (``DeviceAttribute``'s
one-of, the list kinds from DRAListTypeAttributes on), a capacity a quantity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["Device", "DeviceAttribute"]


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One of the value fields of ``resourceapi.DeviceAttribute`` (none set: upstream's "unsupported")."""

    int_value: int | None = None
    bool_value: bool | None = None
    string_value: str | None = None
    version_value: str | None = None
    int_values: tuple[int, ...] | None = None
    bool_values: tuple[bool, ...] | None = None
    string_values: tuple[str, ...] | None = None
    version_values: tuple[str, ...] | None = None

    @property
    def is_list(self) -> bool:
        return any(v is not None for v in (self.int_values, self.bool_values, self.string_values, self.version_values))


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakref: evaluators keep per-device inputs
class Device:
    """A slice's device as a selector sees it (``cel.Device`` upstream): the slice's driver, the
    device's ``allowMultipleAllocations``, attributes and capacity values (exact quantities)."""

    driver: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, Fraction] = field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
