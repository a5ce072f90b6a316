"""The in-tree registry: plugin name → factory ``(args, handle) -> plugin``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.interface import Handle, Plugin
from scheduler.plugins import names
from scheduler.plugins.defaultbinder.default_binder import DefaultBinder
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.dynamicresources.dynamicresources import DynamicResources
from scheduler.plugins.imagelocality.image_locality import ImageLocality
from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.plugins.nodename.node_name import NodeName
from scheduler.plugins.nodeports.node_ports import NodePorts
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.plugins.noderesources.fit import Fit
from scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from scheduler.plugins.nodevolumelimits.csi import NodeVolumeLimits
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.queuesort.priority_sort import PrioritySort
from scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.plugins.selectorspread.selector_spread import SelectorSpread
from scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from scheduler.plugins.volumebinding.volume_binding import VolumeBinding
from scheduler.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions
from scheduler.plugins.volumezone.volume_zone import VolumeZone

__all__ = ["DEFAULT_MULTI_POINT", "REGISTRY", "PluginFactory"]

PluginFactory = Callable[[Mapping[str, Any], Handle], Plugin]

REGISTRY: dict[str, PluginFactory] = {
    names.SCHEDULING_GATES: SchedulingGates,
    names.PRIORITY_SORT: PrioritySort,
    names.NODE_UNSCHEDULABLE: NodeUnschedulable,
    names.NODE_NAME: NodeName,
    names.TAINT_TOLERATION: TaintToleration,
    names.NODE_AFFINITY: NodeAffinity,
    names.NODE_PORTS: NodePorts,
    names.NODE_RESOURCES_FIT: Fit,
    names.VOLUME_RESTRICTIONS: VolumeRestrictions,
    names.NODE_VOLUME_LIMITS: NodeVolumeLimits,
    names.VOLUME_BINDING: VolumeBinding,
    names.VOLUME_ZONE: VolumeZone,
    names.POD_TOPOLOGY_SPREAD: PodTopologySpread,
    names.INTER_POD_AFFINITY: InterPodAffinity,
    names.DYNAMIC_RESOURCES: DynamicResources,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: BalancedAllocation,
    names.IMAGE_LOCALITY: ImageLocality,
    names.DEFAULT_BINDER: DefaultBinder,
    names.DEFAULT_PREEMPTION: DefaultPreemption,
    # Opt-in, not in DEFAULT_MULTI_POINT: enable it in a profile's plugins (see README).
    names.SELECTOR_SPREAD: SelectorSpread,
}

# Upstream's default multiPoint order (default_plugins.go) restricted to the plugins we ship,
# with upstream's score weights. The order decides which Filter reason a node shows, and which
# refusing stand-in names itself first.
DEFAULT_MULTI_POINT: tuple[tuple[str, int], ...] = (
    (names.SCHEDULING_GATES, 0),
    (names.PRIORITY_SORT, 0),
    (names.NODE_UNSCHEDULABLE, 0),
    (names.NODE_NAME, 0),
    (names.TAINT_TOLERATION, 3),
    (names.NODE_AFFINITY, 2),
    (names.NODE_PORTS, 0),
    (names.NODE_RESOURCES_FIT, 1),
    (names.VOLUME_RESTRICTIONS, 0),
    (names.NODE_VOLUME_LIMITS, 0),
    (names.VOLUME_BINDING, 0),
    (names.VOLUME_ZONE, 0),
    (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2),
    # applyDynamicResources inserts it (DynamicResourceAllocation is locked on in 1.35) right before
    # DefaultPreemption, with weight 2; our stand-in has no Score, so the weight is unused.
    (names.DYNAMIC_RESOURCES, 2),
    (names.DEFAULT_PREEMPTION, 0),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (names.IMAGE_LOCALITY, 1),
    (names.DEFAULT_BINDER, 0),
)
