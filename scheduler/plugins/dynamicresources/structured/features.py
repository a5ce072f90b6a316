"""The DRA features an allocator is asked to support (``structured.Features``) and which of upstream's
implementations ``structured.NewAllocator`` picks for them, per ``dynamic-resource-allocation`` release.

Upstream keeps three copies of its allocator: ``stable``, ``incubating`` and ``experimental``, and
takes the first whose supported features cover every enabled one. Which features a kube-scheduler
minor enables by default, and which release it vendors, is ``scheduler.features``' business
(``Features.dra_allocator_features``); ``for_scheduler`` turns that into this type. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from scheduler import features as scheduler_features

__all__ = ["RELEASES", "Features", "for_scheduler", "implementation_for", "supported"]

V0_35, V0_36, V0_37 = "v0.35.4", "v0.36.3", "v0.37.2"
RELEASES = (V0_35, V0_36, V0_37)


@dataclass(frozen=True, slots=True)
class Features:
    """``internal.Features``; ``device_binding_and_status`` is DRADeviceBindingConditions and
    DRAResourceClaimDeviceStatus both on. A field a release does not have is never set there."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable_devices: bool = False
    device_taints: bool = False
    device_binding_and_status: bool = False
    consumable_capacity: bool = False
    list_type_attributes: bool = False  # v0.36 on
    fractional_capacity_range: bool = False  # v0.37 on
    optional_node_operations: bool = False  # v0.37 on
    derived_attributes: bool = False  # v0.37 on
    compatibility_groups: bool = False  # v0.37 on

    def enabled(self) -> frozenset[str]:
        return frozenset(f.name for f in fields(self) if getattr(self, f.name))


def for_scheduler(fts: scheduler_features.Features) -> tuple[Features, str]:
    """The allocator features kube-scheduler of ``fts``' minor enables, and the release it runs."""
    return Features(**dict.fromkeys(fts.dra_allocator_features, True)), fts.dra_allocator_release


_SIX = frozenset(
    {
        "admin_access",
        "prioritized_list",
        "partitionable_devices",
        "device_taints",
        "device_binding_and_status",
        "consumable_capacity",
    }
)
_FOUR = frozenset({"admin_access", "prioritized_list", "partitionable_devices", "device_taints"})
# Each variant's ``SupportedFeatures``, in ``NewAllocator``'s order of preference.
_SUPPORTED: Mapping[str, tuple[tuple[str, frozenset[str]], ...]] = {
    V0_35: (("stable", frozenset()), ("incubating", _FOUR), ("experimental", _SIX)),
    V0_36: (("stable", _FOUR), ("incubating", _SIX), ("experimental", _SIX | {"list_type_attributes"})),
    V0_37: (
        ("stable", _FOUR),
        ("incubating", _SIX | {"fractional_capacity_range"}),
        (
            "experimental",
            _SIX
            | {
                "fractional_capacity_range",
                "list_type_attributes",
                "optional_node_operations",
                "derived_attributes",
                "compatibility_groups",
            },
        ),
    ),
}


def supported(implementation: str, release: str) -> frozenset[str]:
    """``<implementation>.SupportedFeatures`` at ``release``."""
    return dict(_SUPPORTED[release])[implementation]


def implementation_for(features: Features, release: str = V0_35) -> str:
    """Which of upstream's allocators ``NewAllocator`` picks for ``features`` at ``release``."""
    for name, covered in _SUPPORTED[release]:
        if features.enabled() <= covered:
            return name
    raise ValueError(f"internal error: no allocator available for feature set {features}")
