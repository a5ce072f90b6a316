"""``DynamicResourcesArgs``: ``filterTimeout`` and ``bindingTimeout``, defaulted and validated as
upstream (``SetDefaults_DynamicResourcesArgs``, ``ValidateDynamicResourcesArgs``, the plugin's ``New``);
a ValueError names the field, each value echoed as Go prints a ``metav1.Duration``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.durations import format_go_duration, parse_go_duration
from scheduler.features import Features
from scheduler.plugins.dynamicresources.plugin.binding import BINDING_TIMEOUT_SECONDS

__all__ = ["FILTER_TIMEOUT_SECONDS", "DynamicResourcesArgs", "parse_args"]

FILTER_TIMEOUT_SECONDS = 10.0  # DynamicResourcesFilterTimeoutDefault
_SECOND = 10**9


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    """In seconds. ``filter_timeout`` 0: the Filter's search is not limited (the gate off, or set so);
    ``binding_timeout``: how long PreBind waits for binding conditions."""

    filter_timeout: float
    binding_timeout: float


def _duration(args: Mapping[str, Any], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):  # metav1.Duration decodes from a JSON string only
        raise ValueError(f"{key}: Invalid value: {value!r}: must be a duration such as 10s")
    try:
        return parse_go_duration(value)
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None


def parse_args(args: Mapping[str, Any], features: Features) -> DynamicResourcesArgs:
    """The plugin's timeouts; unset ones get upstream's defaults (a gate's timeout only with its gate)."""
    filter_ns = _duration(args, "filterTimeout")
    binding_ns = _duration(args, "bindingTimeout")
    problems = []
    filter_gate = features.enabled("DRASchedulerFilterTimeout")
    if filter_gate:
        if filter_ns is not None and filter_ns < 0:
            shown = format_go_duration(filter_ns)  # json.Marshal of the metav1.Duration
            problems.append(f'filterTimeout: Invalid value: "{shown}": must be zero or positive')
    elif filter_ns is not None:
        problems.append("filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled")
    if features.enabled("DRADeviceBindingConditions") and features.enabled("DRAResourceClaimDeviceStatus"):
        if binding_ns is not None and binding_ns < _SECOND:
            shown = format_go_duration(binding_ns)
            problems.append(f'bindingTimeout: Invalid value: "{shown}": must be at least 1 second')
    elif binding_ns is not None:
        problems.append(
            "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
            "feature gate is disabled"
        )
    if problems:
        # utilerrors.NewAggregate: one error alone, several as a bracketed list.
        raise ValueError(problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")
    default_filter = FILTER_TIMEOUT_SECONDS if filter_gate else 0.0
    filter_timeout = default_filter if filter_ns is None else filter_ns / _SECOND
    binding_timeout = BINDING_TIMEOUT_SECONDS if binding_ns is None else binding_ns / _SECOND
    return DynamicResourcesArgs(filter_timeout, binding_timeout)
