"""Prometheus metrics with kube-scheduler's names and labels, fed by the scheduler's observer hooks.

Only ``prometheus_client`` here; the HTTP endpoint lives in ``scheduler.kube.serving.server``. Scrapes run on
the server's own thread: everything it reads is a prometheus_client metric (locked) or a copy the
scheduling loop published (``publish_queue``), never the queue itself.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from scheduler.kube.gc_pauses import GC_PAUSES, GcPauses

__all__ = ["SchedulerMetrics"]

# Upstream: metrics.ExponentialBuckets(0.001, 2, 15) for attempt durations, (0.01, 2, 20) for the SLI,
# (0.1, 2, 14) for DynamicResources' wait for binding conditions.
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
BINDING_CONDITIONS_BUCKETS = tuple(0.1 * 2**i for i in range(14))
SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))
PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))
# Rebalance planning slices: 1 ms to 1 s (a slice is meant to stay near 20 ms, never near 100 ms).
PLAN_SLICE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1.0)
# Evictions per rebalance batch: 1 (a budget of one) up to a plan's lookahead (MAX_PLANNED, 100).
BATCH_MOVES_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100)
# Patches per deletion-cost re-rank: 0 (nothing changed) up to the cap (PATCHES_PER_RERANK, 20).
COST_PATCH_BUCKETS = (0, 1, 2, 5, 10, 20)


class PluginDurations(Collector):
    """``scheduler_plugin_execution_duration_seconds``: a histogram kept in plain lists.

    A sampled cycle observes every Filter call on every node (upstream's rule), thousands per cycle
    at 2000 nodes; prometheus_client's ``labels().observe()`` (a lock, a label lookup, per-bucket
    values) made sampled cycles a fifth of the scheduler's CPU in the end-to-end benchmark. Here an
    observation is one bisect and two additions; buckets are summed up at scrape time.
    """

    NAME = "scheduler_plugin_execution_duration_seconds"

    def __init__(self) -> None:
        self._series: dict[tuple[str, str, str], list[float]] = {}

    def observe(self, plugin: str, point: str, status: str, seconds: float) -> None:
        series = self._series.get((plugin, point, status))
        if series is None:
            # one count per bucket, then +Inf, then the sum
            series = self._series[(plugin, point, status)] = [0.0] * (len(PLUGIN_BUCKETS) + 2)
        series[bisect_left(PLUGIN_BUCKETS, seconds)] += 1
        series[-1] += seconds

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(
            self.NAME,
            "Duration for running a plugin at a specific extension point.",
            labels=["plugin", "extension_point", "status"],
        )
        # Called on the server thread while the scheduling thread observes: list() copies the dict and
        # each series in one step under the GIL (a new series mid-iteration would otherwise raise).
        for labels, live in sorted(list(self._series.items())):
            series = list(live)
            buckets, running = [], 0.0
            for bound, count in zip((*PLUGIN_BUCKETS, float("inf")), series[:-1], strict=True):
                running += count
                buckets.append((floatToGoString(bound), running))  # type: ignore[no-untyped-call]
            family.add_metric(list(labels), buckets, series[-1])
        yield family


class GcPauseSeconds(Collector):
    """``spread_scheduler_gc_pause_seconds_total``: the collector's pauses, read at scrape time from
    ``GcPauses`` (whose callback may take no lock, so it cannot feed a prometheus_client metric)."""

    def __init__(self, pauses: GcPauses) -> None:
        self._pauses = pauses

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "spread_scheduler_gc_pause_seconds",
            "Time CPython's garbage collector held the process, by generation (2: a full collection). "
            "Every stretch of work it fell into, a scheduling cycle or a planning slice, took that much longer.",
            labels=["generation"],
        )
        for generation, seconds in enumerate(self._pauses.seconds):
            family.add_metric([str(generation)], seconds)
        yield family


class BindingConditionsMetrics:
    """``scheduler_dra_bindingconditions_*`` of one profile (DynamicResources' ``BindingConditionsMetrics``)."""

    def __init__(self, allocations: Counter, wait: Histogram, profile: str) -> None:
        self._allocations, self._wait, self._profile = allocations, wait, profile

    def observe_wait(self, driver: str, status: str, seconds: float) -> None:
        self._wait.labels(self._profile, driver, status).observe(seconds)

    def count_allocation(self, driver: str, status: str) -> None:
        self._allocations.labels(self._profile, driver, status).inc()


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
        self.plugin_duration = PluginDurations()
        self.registry.register(self.plugin_duration)
        self.registry.register(GcPauseSeconds(GC_PAUSES))
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            "spread_scheduler_api_requests",
            "Requests the scheduler sent to the API server (bindings, status patches, events), by outcome: "
            "ok, outage (no connection, timeout, 5xx), throttled (429) or refused (other 4xx); "
            "the informer's lists and watches count their outages only.",
            ["outcome"],
            registry=self.registry,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods "
            "that the scheduler never attempted to schedule because they are gated.",
            ["queue"],
            registry=self.registry,
        )
        self._incoming_seen: dict[tuple[str, str], int] = {}
        # Rebalancing (scheduler.kube.controllers.rebalance, docs/rebalance.md).
        self.rebalance_moves = Counter(
            "spread_scheduler_rebalance_moves",
            "Evictions the rebalancer sent to move a pod to a domain that lowers its workload's skew, by "
            "result: evicted, pdb-blocked (429 from a PodDisruptionBudget), gone (404) or failed; timed-out: a move "
            "not done (the pod gone, a replacement bound and Ready) 5 minutes after its eviction.",
            ["result"],
            registry=self.registry,
        )
        self.rebalance_batches = Counter(
            "spread_scheduler_rebalance_batches",
            "Batches of evictions the rebalancer sent (a checked plan's moves within the disruption budget), "
            "by how each ended: sent (every eviction of the batch sent), pdb-blocked (a 429 from a "
            "PodDisruptionBudget ended it: the rest is retried later), gone (a pod already gone), changed "
            "(the workload or a node changed between two evictions: the rest is checked again later), "
            "failed (another error), not-leading.",
            ["result"],
            registry=self.registry,
        )
        self.rebalance_batch_moves = Histogram(
            "spread_scheduler_rebalance_batch_moves",
            "Evictions sent in each batch of the rebalancer (at most what the workload's disruption budget allows).",
            buckets=BATCH_MOVES_BUCKETS,
            registry=self.registry,
        )
        self.rebalance_skipped = Counter(
            "spread_scheduler_rebalance_plans_skipped",
            "Workloads the rebalancer looked at and moved nothing of, by reason: within-skew, not-opted-in, "
            "bad-annotation, in-flight, no-improving-move, not-converging, move-limit, pdb, error, or another "
            "reason of the planner.",
            ["reason"],
            registry=self.registry,
        )
        self.rebalance_plan_slice = Histogram(
            "spread_scheduler_rebalance_plan_slice_duration_seconds",
            "Wall time of each slice of rebalance planning run on the scheduling loop between its cycles "
            "(planning yields to the loop when a slice passes 20 ms; a slice ends after the cycle it is in).",
            buckets=PLAN_SLICE_BUCKETS,
            registry=self.registry,
        )
        self.rebalance_plan_slice_cpu = Histogram(
            "spread_scheduler_rebalance_plan_slice_cpu_seconds",
            "CPU time of the scheduling loop's thread in each slice of rebalance planning, the garbage "
            "collector's pauses taken out: the slice's own work. Beside the wall time, it tells planning "
            "that ran long from a process the machine did not run.",
            buckets=PLAN_SLICE_BUCKETS,
            registry=self.registry,
        )
        self.rebalance_plans = Counter(
            "spread_scheduler_rebalance_plans",
            "Rebalance plans, by result: computed (planned from scratch), kept (the next move of a kept plan "
            "checked and carried on), stale (a kept plan's next move no longer held: planned again), "
            "interrupted (the workload's pods or a node changed while it was planned: planned again later).",
            ["result"],
            registry=self.registry,
        )
        self.workload_skew = Gauge(
            "spread_scheduler_workload_skew",
            "Per workload (ReplicaSet) of ours and topology key: the largest domain's pod count minus the "
            "global minimum, as the Filter counts it now; compare with spread_scheduler_workload_max_skew.",
            ["namespace", "workload", "topology_key"],
            registry=self.registry,
        )
        self.workload_max_skew = Gauge(
            "spread_scheduler_workload_max_skew",
            "The maxSkew of the constraint spread_scheduler_workload_skew reports (same labels).",
            ["namespace", "workload", "topology_key"],
            registry=self.registry,
        )
        self._skew_keys: dict[tuple[str, str], set[str]] = {}  # the series set_skews wrote, to drop them
        # Spread-aware scale-down (scheduler.kube.controllers.deletion_cost, docs/scale-down.md).
        self.cost_patches = Counter(
            "spread_scheduler_deletion_cost_patches",
            "Deletion-cost patches the scale-down keeper sent, by result: patched, conflict (409: the pod "
            "changed since it was ranked), gone (404) or failed.",
            ["result"],
            registry=self.registry,
        )
        self.cost_patches_per_rerank = Histogram(
            "spread_scheduler_deletion_cost_patches_per_rerank",
            "Patches one re-rank of a workload sent (its count: the re-ranks; capped, the rest next window).",
            buckets=COST_PATCH_BUCKETS,
            registry=self.registry,
        )
        self.cost_queue_depth = Gauge(
            "spread_scheduler_deletion_cost_queue_depth",
            "Pods whose deletion cost must change and was not sent yet (beyond a re-rank's cap: the next window's).",
            registry=self.registry,
        )
        self.build_info = Gauge(
            "spread_scheduler_build_info",
            "1, labelled with spread-scheduler's version, the kube-scheduler minor and release it decides as "
            "(--kube-version, else the API server's), and the API server's gitVersion (empty when not read).",
            ["version", "kube_version", "kube_release", "server_version"],
            registry=self.registry,
        )

    def binding_conditions(self) -> Callable[[str], BindingConditionsMetrics]:
        """Register the two DRADeviceBindingConditions metrics (upstream registers them only where that
        gate is on: from 1.36) and return each profile's face."""
        allocations = Counter(
            "scheduler_dra_bindingconditions_allocations",
            "Number of allocations using devices with BindingConditions, counted per driver per scheduling attempt",
            ["profile", "driver", "status"],
            registry=self.registry,
        )
        wait = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"],
            buckets=BINDING_CONDITIONS_BUCKETS,
            registry=self.registry,
        )
        return lambda profile: BindingConditionsMetrics(allocations, wait, profile)

    def set_skews(self, namespace: str, workload: str, skews: dict[str, tuple[int, int]]) -> None:
        """One workload's series: topology key -> (skew, maxSkew); keys it no longer has are dropped."""
        held = self._skew_keys.pop((namespace, workload), set())
        for key in held - skews.keys():
            self.workload_skew.remove(namespace, workload, key)
            self.workload_max_skew.remove(namespace, workload, key)
        if skews:
            self._skew_keys[(namespace, workload)] = set(skews)
        for key, (skew, max_skew) in skews.items():
            self.workload_skew.labels(namespace, workload, key).set(skew)
            self.workload_max_skew.labels(namespace, workload, key).set(max_skew)

    def publish_queue(self, pending: dict[str, int], incoming: dict[tuple[str, str], int]) -> None:
        """Copy the queue's numbers into the metrics; called on the scheduling loop, before a scrape."""
        for queue, value in pending.items():
            self.pending_pods.labels(queue).set(value)
        self.sync_incoming(incoming)

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
