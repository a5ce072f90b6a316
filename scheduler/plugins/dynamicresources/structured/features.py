"""The DRA features an allocator is asked to support (``structured.Features``) and which of upstream's
implementations kube-scheduler picks for them (``structured.NewAllocator``).

Upstream keeps three copies of its allocator: ``stable``, ``incubating`` and ``experimental``, and
takes the first whose supported features cover every enabled one. kube-scheduler enables them from
its feature gates (``AllocatorFeatures``). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["FEATURES_1_35_DEFAULT", "STABLE_SUPPORTED", "Features", "implementation_for"]


@dataclass(frozen=True, slots=True)
class Features:
    """``internal.Features`` at v0.35.4; ``device_binding_and_status`` is DRADeviceBindingConditions
    and DRAResourceClaimDeviceStatus both on."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable_devices: bool = False
    device_taints: bool = False
    device_binding_and_status: bool = False
    consumable_capacity: bool = False

    def enabled(self) -> frozenset[str]:
        return frozenset(f.name for f in fields(self) if getattr(self, f.name))


# stable.SupportedFeatures at v0.35.4: none. (From v0.36 on, stable supports admin access,
# prioritized lists, partitionable devices and device taints.)
STABLE_SUPPORTED = Features()
_INCUBATING_SUPPORTED = Features(
    admin_access=True, prioritized_list=True, partitionable_devices=True, device_taints=True
)
_EXPERIMENTAL_SUPPORTED = Features(
    admin_access=True,
    prioritized_list=True,
    partitionable_devices=True,
    device_taints=True,
    device_binding_and_status=True,
    consumable_capacity=True,
)

# kube-scheduler 1.35.4 with its default gates: DRAAdminAccess and DRAPrioritizedList are beta and on,
# the others alpha and off (pkg/features/kube_features.go). That picks "incubating", not "stable".
FEATURES_1_35_DEFAULT = Features(admin_access=True, prioritized_list=True)


def implementation_for(features: Features) -> str:
    """Which of upstream's allocators (v0.35.4) ``NewAllocator`` picks for ``features``."""
    for name, supported in (
        ("stable", STABLE_SUPPORTED),
        ("incubating", _INCUBATING_SUPPORTED),
        ("experimental", _EXPERIMENTAL_SUPPORTED),
    ):
        if features.enabled() <= supported.enabled():
            return name
    raise ValueError(f"internal error: no allocator available for feature set {features}")
