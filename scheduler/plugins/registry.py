"""The in-tree registry: plugin name → factory ``(args, handle, features) -> plugin``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.features import Features
from scheduler.framework.interface import Handle, Plugin
from scheduler.plugins import names
from scheduler.plugins.defaultbinder.default_binder import DefaultBinder
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.imagelocality.image_locality import ImageLocality
from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.plugins.nodedeclaredfeatures.node_declared_features import NodeDeclaredFeatures
from scheduler.plugins.nodename.node_name import NodeName, NodeNameWithPreFilter
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
from scheduler.plugins.volumebinding.volume_binding import VolumeBinding, VolumeBindingWithCapacityScoring
from scheduler.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions
from scheduler.plugins.volumezone.volume_zone import VolumeZone

__all__ = ["REGISTRY", "PluginFactory", "registry"]

# Upstream's ``PluginFactory`` receives ``feature.Features``: so does ours, at composition.
PluginFactory = Callable[[Mapping[str, Any], Handle, Features], Plugin]

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
    names.DYNAMIC_RESOURCES: StructuredDynamicResources,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: BalancedAllocation,
    names.IMAGE_LOCALITY: ImageLocality,
    names.DEFAULT_BINDER: DefaultBinder,
    names.DEFAULT_PREEMPTION: DefaultPreemption,
    names.NODE_DECLARED_FEATURES: NodeDeclaredFeatures,
    # Opt-in, in no default profile (scheduler.config.default_plugins): enable it in a profile (see README).
    names.SELECTOR_SPREAD: SelectorSpread,
}


def registry(features: Features) -> Mapping[str, PluginFactory]:
    """The plugins of the minor ``features`` belong to: where a plugin gained an extension point
    without a gate, the class that has it (``parse`` reads the points off the class)."""
    out: dict[str, PluginFactory] = dict(REGISTRY)
    if features.node_name_first:
        out[names.NODE_NAME] = NodeNameWithPreFilter
    if features.enabled("StorageCapacityScoring"):
        out[names.VOLUME_BINDING] = VolumeBindingWithCapacityScoring
    return out
