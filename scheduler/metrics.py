"""Prometheus metrics with kube-scheduler's names and labels, fed by the scheduler's observer hooks.

Only ``prometheus_client`` here; the HTTP endpoint lives in ``scheduler.kube.server``.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = ["SchedulerMetrics"]

# Upstream: metrics.ExponentialBuckets(0.001, 2, 15) for attempt durations, (0.01, 2, 20) for the SLI.
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))
PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))


class _PendingPods(Collector):
    """``scheduler_pending_pods{queue}``, read from the queue at scrape time."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self._counts = counts

    def collect(self):  # type: ignore[no-untyped-def]  # prometheus_client's Collector is untyped
        family = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods "
            "that the scheduler never attempted to schedule because they are gated.",
            labels=["queue"],
        )
        for queue, value in sorted(self._counts().items()):
            family.add_metric([queue], value)
        yield family


class SchedulerMetrics:
    """All metrics of one scheduler process, in their own registry (tests can make several)."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = True) -> None:
        self.registry = registry or CollectorRegistry()
        if process:
            ProcessCollector(registry=self.registry)
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.incoming = Counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=self.registry,
        )
        self.sli = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
            "involve multiple scheduling attempts.",
            ["attempts"],
            buckets=SLI_BUCKETS,
            registry=self.registry,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            "spread_scheduler_api_requests",
            "Requests the scheduler sent to the API server (bindings, status patches, events), by outcome: "
            "ok, outage (no connection, timeout, 5xx), throttled (429) or refused (other 4xx). Watches are kopf's.",
            ["outcome"],
            registry=self.registry,
        )
        self._incoming_seen: dict[tuple[str, str], int] = {}

    def watch_queue(self, counts: Callable[[], dict[str, int]]) -> None:
        self.registry.register(_PendingPods(counts))

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        self.schedule_attempts.labels(result, profile).inc()
        self.attempt_duration.labels(result, profile).observe(seconds)

    def observe_bound(self, attempts: int, seconds: float) -> None:
        self.sli.labels(str(attempts)).observe(seconds)

    def sync_incoming(self, incoming: dict[tuple[str, str], int]) -> None:
        """Copy the queue's (queue, event) counters; the queue stays free of prometheus."""
        for key, value in incoming.items():
            delta = value - self._incoming_seen.get(key, 0)
            if delta > 0:
                self.incoming.labels(*key).inc(delta)
                self._incoming_seen[key] = value
