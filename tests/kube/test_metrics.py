"""The plugin-duration histogram kept in plain lists must expose what prometheus_client's would."""

from __future__ import annotations

import gc

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from scheduler.config import load_config
from scheduler.features import features_at
from scheduler.kube.app import _attach_metrics
from scheduler.kube.gc_pauses import GcPauses
from scheduler.kube.metrics import PLUGIN_BUCKETS, GcPauseSeconds, SchedulerMetrics
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.names import DYNAMIC_RESOURCES
from scheduler.scheduler import Scheduler
from tests.fakes import FakeBinder, FakeClock, FakeRecorder


def _lines(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return sorted(line for line in text.splitlines() if line.startswith("scheduler_plugin_execution_duration_seconds"))


def test_plugin_durations_expose_the_same_series_as_a_prometheus_histogram() -> None:
    ours = SchedulerMetrics(process=False)
    reference_registry = CollectorRegistry()
    reference = Histogram(
        "scheduler_plugin_execution_duration_seconds",
        "Duration for running a plugin at a specific extension point.",
        ["plugin", "extension_point", "status"],
        buckets=PLUGIN_BUCKETS,
        registry=reference_registry,
    )
    samples = [
        ("NodeAffinity", "Filter", "Success", 0.00001),  # exactly on a bound: counted in that bucket
        ("NodeAffinity", "Filter", "Success", 0.0004),
        ("NodeAffinity", "Filter", "Unschedulable", 0.02),
        ("PodTopologySpread", "Score", "Success", 5.0),  # beyond every bound: +Inf only
        ("PodTopologySpread", "Score", "Success", 0.0),
    ]
    for plugin, point, status, seconds in samples:
        ours.plugin_duration.observe(plugin, point, status, seconds)
        reference.labels(plugin, point, status).observe(seconds)
    expected = [line for line in _lines(reference_registry) if not line.startswith(f"{reference._name}_created")]
    assert _lines(ours.registry) == expected
    assert any('le="+Inf"' in line and line.endswith(" 2.0") for line in expected)


def test_gc_pauses_are_summed_by_generation_and_served() -> None:
    """A full collection while the clock is installed is counted under generation 2 and served as
    ``spread_scheduler_gc_pause_seconds_total``; once uninstalled, collections are not counted."""
    pauses = GcPauses()
    registry = CollectorRegistry()
    registry.register(GcPauseSeconds(pauses))
    pauses.install()
    pauses.install()  # once only
    try:
        gc.collect()
    finally:
        pauses.uninstall()
    assert pauses.collections[2] == 1 and pauses.seconds[2] > 0
    gc.collect()
    assert pauses.collections[2] == 1
    served = registry.get_sample_value("spread_scheduler_gc_pause_seconds_total", {"generation": "2"})
    assert served == pauses.seconds[2]
    assert (
        SchedulerMetrics(process=False).registry.get_sample_value(
            "spread_scheduler_gc_pause_seconds_total", {"generation": "0"}
        )
        is not None
    )  # the scheduler's own registry serves the process's clock


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_binding_conditions_metrics_where_the_minor_has_them(minor: str) -> None:
    """``scheduler_dra_bindingconditions_*``: registered where DRADeviceBindingConditions is on (from
    1.36), with upstream's names, labels and buckets (ExponentialBuckets(0.1, 2, 14)); DynamicResources'
    PreBind feeds them per profile."""
    metrics = SchedulerMetrics(CollectorRegistry(), process=False)
    sched = Scheduler(load_config(None, features=features_at(minor)), FakeBinder(), FakeRecorder(), clock=FakeClock())
    _attach_metrics(sched, metrics)
    plugin = sched.frameworks["spread-scheduler"].plugins[DYNAMIC_RESOURCES]
    assert isinstance(plugin, StructuredDynamicResources)
    if minor == "1.35":
        assert plugin.binding_metrics is None
        assert b"bindingconditions" not in generate_latest(metrics.registry)
        return
    assert plugin.binding_metrics is not None
    plugin.binding_metrics.observe_wait("gpu.example.com", "success", 7.0)
    plugin.binding_metrics.count_allocation("gpu.example.com", "success")
    labels = {"profile": "spread-scheduler", "driver": "gpu.example.com", "status": "success"}
    registry = metrics.registry
    assert registry.get_sample_value("scheduler_dra_bindingconditions_allocations_total", labels) == 1
    wait = "scheduler_dra_bindingconditions_wait_duration_seconds"
    assert registry.get_sample_value(f"{wait}_bucket", {**labels, "le": "6.4"}) == 0
    assert registry.get_sample_value(f"{wait}_bucket", {**labels, "le": "12.8"}) == 1
    assert registry.get_sample_value(f"{wait}_bucket", {**labels, "le": "819.2"}) == 1
    assert registry.get_sample_value(f"{wait}_sum", labels) == 7.0
