"""Frameworks built from a configuration: one per profile, sharing the extenders (upstream ``profile/``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from scheduler.api.objects import Pod
from scheduler.config.types import ConfigError, SchedulerConfig
from scheduler.framework.extender import Extender
from scheduler.framework.interface import Binder, Handle, Plugin
from scheduler.framework.runtime import Framework
from scheduler.plugins.dynamicresources.plugin.inflight import InFlightAllocations
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.names import NODE_RESOURCES_FIT
from scheduler.plugins.registry import registry

__all__ = ["build_frameworks", "queue_sort_key"]


def build_frameworks(
    config: SchedulerConfig, binder: Binder | None = None, extenders: Sequence[Extender] = ()
) -> dict[str, Framework]:
    """One Framework per profile, keyed by schedulerName; plugin arg errors name the profile.

    ``extenders`` are the clients of ``config.extenders`` (``scheduler.kube.extender.http_extenders``),
    made by the caller that owns their connections; every profile shares them. As upstream's
    ``buildExtenders``: ignorable extenders move to the tail, and managed resources marked
    ``ignoredByScheduler`` replace NodeResourcesFit's ``ignoredResources`` in every profile.
    """
    ordered = [e for e in extenders if not e.is_ignorable()] + [e for e in extenders if e.is_ignorable()]
    ignored = [r.name for ext in config.extenders for r in ext.managed_resources if r.ignored_by_scheduler]
    out: dict[str, Framework] = {}
    plugin_classes = registry(config.features)
    # Upstream's SharedDRAManager: the claims in flight are one scheduler's, whichever profile placed them.
    claims_in_flight = InFlightAllocations()
    for i, prof in enumerate(config.profiles):
        handle = Handle(binder=binder)
        handle.claims_in_flight = claims_in_flight
        used = {name for names in prof.points.values() for name in names}
        plugins: dict[str, Plugin] = {}
        for name in sorted(used):
            args = prof.plugin_args.get(name, {})
            if ignored and name == NODE_RESOURCES_FIT:
                args = {**args, "ignoredResources": ignored}
            try:
                plugins[name] = plugin_classes[name](args, handle, config.features)
            except ValueError as exc:
                raise ConfigError(f"profiles[{i}].pluginConfig[{name}].args: {exc}") from exc
            plugin = plugins[name]
            if isinstance(plugin, StructuredDynamicResources):
                plugin.in_flight = claims_in_flight
        pct = prof.percentage_of_nodes_to_score
        if pct is None:
            pct = config.percentage_of_nodes_to_score
        out[prof.scheduler_name] = Framework(
            prof.scheduler_name,
            plugins,
            prof.points,
            prof.weights,
            handle,
            pct,
            extenders=ordered,
            features=config.features,
        )
    return out


def queue_sort_key(frameworks: Mapping[str, Framework]) -> Callable[[Pod, float], tuple[object, ...]]:
    """The profiles' QueueSort order as the queue's heap key (upstream's ``lessFn``).

    ``check_same_queue_sort`` makes every profile share one plugin, so the first that has it speaks for all.
    """
    for fwk in frameworks.values():
        if fwk.queue_sort is not None:
            return fwk.queue_sort.sort_key
    raise ValueError("no profile has a QueueSort plugin")
