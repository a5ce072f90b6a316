"""Node-declared features (KEP-5328): what a node says it supports, and what a pod's spec needs.

Upstream: ``k8s.io/component-helpers/nodedeclaredfeatures``. A node lists feature names in
``status.declaredFeatures``; each registered feature infers from a pod's spec whether the pod needs
it (``InferForScheduling``). The facts below are version-free: which of them a minor's scheduler
asks for is ``Features.declared_features_inferred`` (the registry at that minor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.fields import FieldError, as_list

__all__ = [
    "RESTART_ALL_CONTAINERS",
    "USER_NAMESPACES_HOST_NETWORK",
    "VOLUME_BIND_MOUNT_OPTIONS",
    "parse_node_declared_features",
    "pod_feature_uses",
]

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def parse_node_declared_features(status: Mapping[str, Any], errors: list[FieldError]) -> tuple[str, ...]:
    """``status.declaredFeatures``, in the node's (sorted) order; a name that is not a string is an error."""
    out: list[str] = []
    for i, name in enumerate(as_list(status.get("declaredFeatures"), "status.declaredFeatures", errors)):
        if isinstance(name, str):
            out.append(name)
        else:
            errors.append(FieldError(f"status.declaredFeatures[{i}]", "Invalid value: must be a string"))
    return tuple(out)


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, list) else []


def _restarts_all_containers(spec: Mapping[str, Any]) -> bool:
    """restartallcontainers: a container or init container rule with action RestartAllContainers."""
    for key in ("containers", "initContainers"):
        for container in _containers(spec, key):
            rules = container.get("restartPolicyRules")
            for rule in rules if isinstance(rules, list) else []:
                if isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers":
                    return True
    return False


def _has_bind_mount_options(spec: Mapping[str, Any]) -> bool:
    """volumebindmountoptions (1.37): a volume mount of any container kind with bindMountOptions."""
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _containers(spec, key):
            mounts = container.get("volumeMounts")
            for mount in mounts if isinstance(mounts, list) else []:
                if isinstance(mount, Mapping) and mount.get("bindMountOptions"):
                    return True
    return False


def pod_feature_uses(spec: Mapping[str, Any]) -> frozenset[str]:
    """The declared features the spec would need under every registry we know (the plugin narrows it)."""
    uses: set[str] = set()
    if _restarts_all_containers(spec):
        uses.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:  # usernamespaceshostnetwork
        uses.add(USER_NAMESPACES_HOST_NETWORK)
    if _has_bind_mount_options(spec):
        uses.add(VOLUME_BIND_MOUNT_OPTIONS)
    return frozenset(uses)
