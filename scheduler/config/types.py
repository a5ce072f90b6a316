"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as typed values: the subset we honour.

Upstream: ``pkg/scheduler/apis/config/types.go``. Parsing and validation live in ``parse``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.config.extenders import ExtenderConfig
from scheduler.features import DEFAULT_FEATURES, Features

__all__ = [
    "API_VERSION",
    "SPREAD_SCHEDULER_NAME",
    "ConfigError",
    "LeaderElection",
    "PluginRef",
    "ProfileConfig",
    "SchedulerConfig",
]

SPREAD_SCHEDULER_NAME = "spread-scheduler"
API_VERSION = "kubescheduler.config.k8s.io/v1"


class ConfigError(ValueError):
    """The configuration is invalid; the message starts with the offending field's path."""


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0


@dataclass(slots=True)
class ProfileConfig:
    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    points: dict[str, list[str]]
    weights: dict[str, int]
    plugin_args: dict[str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # Empty: the pod's own namespace ($POD_NAMESPACE), else "spread-scheduler"; resolved at start-up by
    # scheduler.kube.leader.with_lease_namespace (upstream defaults to kube-system, see docs/install.md).
    resource_namespace: str = ""
    resource_name: str = SPREAD_SCHEDULER_NAME


@dataclass(slots=True)
class SchedulerConfig:
    profiles: list[ProfileConfig]
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    qps: float = 50.0
    burst: int = 100
    kubeconfig: str | None = None
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    extenders: list[ExtenderConfig] = field(default_factory=list)  # shared by every profile, as upstream
    # The minor decided as and its feature gates (``--kube-version``, ``--feature-gates``): every
    # profile's plugins receive them, and the default profile is that minor's.
    features: Features = DEFAULT_FEATURES
