"""Plugin names, exactly as upstream spells them (config files and messages use these)."""

from __future__ import annotations

PRIORITY_SORT = "PrioritySort"
SCHEDULING_GATES = "SchedulingGates"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DYNAMIC_RESOURCES = "DynamicResources"  # refusing stand-in
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_PREEMPTION = "DefaultPreemption"  # accepted in configs, never preempts, not in our default profile
DEFAULT_BINDER = "DefaultBinder"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"  # default from 1.36 (gate NodeDeclaredFeatures)
SELECTOR_SPREAD = "SelectorSpread"  # opt-in only: removed upstream in 1.28, never in our default profile
