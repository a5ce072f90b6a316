"""KubeSchedulerConfiguration: typed values (``types``), strict reading (``parse``), extenders (``extenders``)."""

from scheduler.config.parse import load_config, parse_config, upstream_config
from scheduler.config.types import (
    SPREAD_SCHEDULER_NAME,
    ConfigError,
    LeaderElection,
    ProfileConfig,
    SchedulerConfig,
)

__all__ = [
    "SPREAD_SCHEDULER_NAME",
    "ConfigError",
    "LeaderElection",
    "ProfileConfig",
    "SchedulerConfig",
    "load_config",
    "parse_config",
    "upstream_config",
]
