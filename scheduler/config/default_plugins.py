"""The default profile of each Kubernetes minor (upstream ``apis/config/v1/default_plugins.go``).

``getDefaultPlugins`` restricted to the plugins we ship, with upstream's score weights: the order
decides which Filter reason a node shows, and which refusing stand-in names itself first. What
changes between minors is read from ``Features`` (a gate, or an ungated change of the release), as
upstream's ``applyFeatureGates`` reads the gates.
"""

from __future__ import annotations

from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.plugins import names

__all__ = ["DEFAULT_MULTI_POINT", "default_multi_point"]

_BASE: tuple[tuple[str, int], ...] = (
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
    (names.DEFAULT_PREEMPTION, 0),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (names.IMAGE_LOCALITY, 1),
    (names.DEFAULT_BINDER, 0),
)


def default_multi_point(features: Features) -> tuple[tuple[str, int], ...]:
    """The default ``multiPoint`` of the minor ``features`` belong to, as (plugin, weight)."""
    plugins = list(_BASE)
    if features.node_name_first:  # 1.37 lists NodeName before NodeUnschedulable
        i, j = plugins.index((names.NODE_UNSCHEDULABLE, 0)), plugins.index((names.NODE_NAME, 0))
        plugins[i], plugins[j] = plugins[j], plugins[i]
    if features.enable_node_declared_features:  # applyFeatureGates appends it
        plugins.append((names.NODE_DECLARED_FEATURES, 0))
    # applyDynamicResources (DynamicResourceAllocation is locked on at every minor we support) inserts
    # it right before DefaultPreemption, with weight 2; our stand-in has no Score, so the weight is unused.
    at = plugins.index((names.DEFAULT_PREEMPTION, 0))
    plugins.insert(at, (names.DYNAMIC_RESOURCES, 2))
    return tuple(plugins)


DEFAULT_MULTI_POINT = default_multi_point(DEFAULT_FEATURES)
"""1.35's default profile."""
