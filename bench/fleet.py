"""What bench/rebalance_compare.py's fleet scenarios read off a run: the workloads' pods as a watch
reports them (zones, availability, when all were back within maxSkew), the fewest evictions that
could have done it, the PodDisruptionBudget and what it allows, ``/healthz`` probed every second,
and our planning-slice histogram. The pure parts are tested in tests/test_bench_fleet.py; the I/O
is the watch (``follow``) and the probe's requests."""

from __future__ import annotations

import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

from bench.e2e import insecure_tls
from e2e.kube_helpers import disruption_budget
from e2e.zone_loss import minimum_moves

ZONES = "abc"
PLAN_SLICE = "spread_scheduler_rebalance_plan_slice_duration_seconds"
PLAN_SLICE_CPU = "spread_scheduler_rebalance_plan_slice_cpu_seconds"
GC_PAUSE = "spread_scheduler_gc_pause_seconds_total"
PROBE_TIMEOUT = 1.0  # a kubelet's probe timeoutSeconds default: a slower answer is a failure
METRICS_LIMIT = 8 << 20  # bytes read of one /metrics answer
WATCH_SECONDS = 5  # each watch request's timeoutSeconds: how long a stop waits for the watch thread


# -- budgets and the fewest moves --------------------------------------------------------------


def parse_max_unavailable(text: str) -> int | str:
    """``--pdb``: ``10%`` or ``3``, as policy/v1's ``maxUnavailable`` (an IntOrString) takes them."""
    if re.fullmatch(r"(100|[1-9]?[0-9])%", text):
        return text
    if text.isdigit():
        return int(text)
    raise ValueError(f"--pdb {text!r}: a percentage (0%-100%) or a count of pods")


def allowed_unavailable(max_unavailable: int | str, replicas: int) -> int:
    """Pods of ``replicas`` the budget lets be unavailable at once: a percentage of the expected
    count rounded up, as the disruption controller resolves it (``GetScaledValueFromIntOrPercent``
    with roundUp, pkg/controller/disruption); 10% of 30 is 3, of 6 is 1."""
    if isinstance(max_unavailable, int):
        return max_unavailable
    return math.ceil(int(max_unavailable.rstrip("%")) * replicas / 100)


def workload_budget(app: str, namespace: str, max_unavailable: int | str) -> dict[str, Any]:
    """The PodDisruptionBudget of one workload: its name, its pods (``app``), ``maxUnavailable``."""
    return disruption_budget(app, namespace, app, maxUnavailable=max_unavailable)


def fewest_evictions(at_return: Mapping[str, Mapping[str, int]]) -> int:
    """The fewest evictions that bring every workload within maxSkew 1 from its counts at the zone's
    return: each eviction moves one pod, so a workload needs at least ``minimum_moves`` of its own
    (600/600/0 -> 400/400/400 is 400; 15/15/0 -> 10/10/10 is 10), and no move serves two workloads."""
    return sum(minimum_moves([counts[z] for z in ZONES]) for counts in at_return.values())


# -- the workloads' pods, from a watch ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodView:
    """What one pod of a workload is, for this bench."""

    zone: str | None  # its node's zone once bound (None: pending, or a node we did not make)
    ready: bool  # its Ready condition is True
    terminating: bool  # it has a deletionTimestamp


def pod_view(pod: Mapping[str, Any], zone_of: Mapping[str, str]) -> PodView:
    """A pod as the API serves it (JSON), seen as the disruption controller counts it: Ready and not
    being deleted is healthy (``countHealthyPods``)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    node = spec.get("nodeName")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return PodView(zone_of.get(node) if node else None, ready, meta.get("deletionTimestamp") is not None)


def skew(counts: Mapping[str, int]) -> int:
    return max(counts.values()) - min(counts.values())


class Fleet:
    """The pods of the bench's workloads (label ``app``), kept from watch events, and what the bench
    reads off them after ``arm()`` (the zone's return):

    - ``peak``: each workload's most unavailable pods at once (replicas minus its healthy pods) and
      ``peak_total`` over all; exact, not sampled: the count changes only at a pod's event, and every
      event passes here;
    - ``within_at``: seconds from ``arm()`` to the first moment every workload had all its replicas
      bound and Ready with a zone skew (a/b/c) within ``max_skew``;
    - ``first_disruption``, ``last_disruption``, ``disruptions``: pods of a workload that began
      terminating (or went without it) after ``arm()``: evictions, as nothing else deletes them then.

    Thread-safe: the watch thread writes, the bench reads.
    """

    def __init__(
        self,
        replicas: Mapping[str, int],
        zone_of: Mapping[str, str],
        max_skew: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replicas = dict(replicas)
        self.zone_of = zone_of
        self.max_skew = max_skew
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, PodView]] = {app: {} for app in replicas}
        self._unavailable = dict(replicas)  # nothing is Ready before the first event
        self._within: set[str] = set()
        self.armed_at: float | None = None
        self.peak: dict[str, int] = {}
        self.peak_total = 0
        self.within_at: float | None = None
        self.first_disruption: float | None = None
        self.last_disruption: float | None = None
        self.disruptions = 0

    def apply(self, kind: str, pod: Mapping[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of a pod, as JSON."""
        meta = pod.get("metadata") or {}
        app = (meta.get("labels") or {}).get("app")
        if app not in self._pods:
            return
        name = str(meta.get("name"))
        with self._lock:
            pods = self._pods[app]
            before = pods.get(name)
            if kind == "DELETED":
                pods.pop(name, None)
                begun = before is not None and not before.terminating  # deleted without a grace period
            else:
                pods[name] = view = pod_view(pod, self.zone_of)
                begun = view.terminating and (before is None or not before.terminating)
            now = self._clock()
            if begun and self.armed_at is not None:
                self.disruptions += 1
                self.last_disruption = now - self.armed_at
                if self.first_disruption is None:
                    self.first_disruption = self.last_disruption
            self._update(app, now)

    def replace(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """A new listing (the first, or after the watch expired): the state it shows, no disruptions."""
        fresh: dict[str, dict[str, PodView]] = {app: {} for app in self._pods}
        for pod in pods:
            meta = pod.get("metadata") or {}
            app = (meta.get("labels") or {}).get("app")
            if app in fresh:
                fresh[app][str(meta.get("name"))] = pod_view(pod, self.zone_of)
        with self._lock:
            self._pods = fresh
            now = self._clock()
            for app in fresh:
                self._update(app, now)

    def arm(self) -> None:
        """The clock starts: peaks from now, ``within_at`` and disruptions counted from now."""
        with self._lock:
            self.armed_at = self._clock()
            self.peak = dict(self._unavailable)
            self.peak_total = sum(self._unavailable.values())
            self.within_at = self.first_disruption = self.last_disruption = None
            self.disruptions = 0

    def _update(self, app: str, now: float) -> None:
        pods = self._pods[app].values()
        healthy = sum(1 for p in pods if p.ready and not p.terminating)
        self._unavailable[app] = max(0, self.replicas[app] - healthy)
        if self._is_within(app):
            self._within.add(app)
        else:
            self._within.discard(app)
        if self.armed_at is None:
            return
        self.peak[app] = max(self.peak.get(app, 0), self._unavailable[app])
        self.peak_total = max(self.peak_total, sum(self._unavailable.values()))
        if self.within_at is None and len(self._within) == len(self._pods):
            self.within_at = now - self.armed_at

    def _settled(self, app: str) -> dict[str, int] | None:
        """Per zone, when every replica is live, bound to one of our nodes and Ready; else None."""
        live = [p for p in self._pods[app].values() if not p.terminating]
        if len(live) != self.replicas[app] or not all(p.zone is not None and p.ready for p in live):
            return None
        found = Counter(p.zone for p in live)
        return {z: found.get(z, 0) for z in ZONES}

    def _is_within(self, app: str) -> bool:
        counts = self._settled(app)
        return counts is not None and skew(counts) <= self.max_skew

    # -- reads
    def settled(self) -> dict[str, dict[str, int]] | None:
        """Every workload's zones when all are settled (all replicas bound and Ready); else None."""
        with self._lock:
            now = {app: self._settled(app) for app in self._pods}
        return now if all(v is not None for v in now.values()) else None  # type: ignore[return-value]

    def counts(self) -> dict[str, dict[str, int]]:
        """Every workload's live bound pods per zone, settled or not."""
        with self._lock:
            out = {}
            for app, pods in self._pods.items():
                found = Counter(p.zone for p in pods.values() if not p.terminating and p.zone is not None)
                out[app] = {z: found.get(z, 0) for z in ZONES}
            return out

    def within(self) -> int:
        """How many workloads are within maxSkew, all their replicas bound and Ready, now."""
        with self._lock:
            return len(self._within)


def follow(core: client.CoreV1Api, namespace: str, fleet: Fleet, stop: threading.Event) -> None:
    """Feed ``fleet`` every pod event of ``namespace`` until ``stop``: a listing, then watches from
    its resourceVersion (bookmarks keep it fresh); an expired one (410) or a broken stream lists
    again. Raw JSON: the client's models would cost more than the events at 1,200 pods."""
    while not stop.is_set():
        try:
            listing = core.list_namespaced_pod(namespace, _preload_content=False, _request_timeout=60)
            body = json.loads(listing.data)
            fleet.replace(body.get("items") or [])
            version = body["metadata"]["resourceVersion"]
            while not stop.is_set():
                stream = core.list_namespaced_pod(
                    namespace,
                    watch=True,
                    resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=WATCH_SECONDS,
                    _preload_content=False,
                    _request_timeout=WATCH_SECONDS + 30,
                )
                try:
                    for line in iter_resp_lines(stream):
                        event = json.loads(line)
                        kind, obj = event.get("type"), event.get("object") or {}
                        if kind == "ERROR":
                            raise ValueError(f"watch: {obj.get('message')}")  # 410 Gone: list again
                        version = (obj.get("metadata") or {}).get("resourceVersion", version)
                        if kind in ("ADDED", "MODIFIED", "DELETED"):
                            fleet.apply(kind, obj)
                finally:
                    stream.release_conn()
        except (client.ApiException, HTTPError, OSError, ValueError, KeyError):
            stop.wait(0.5)


# -- /healthz every second, and /metrics -------------------------------------------------------


def longest_run(results: Iterable[bool]) -> int:
    """The most failures (False) in a row: a kubelet restarts after ``failureThreshold`` (3) of them."""
    longest = current = 0
    for ok in results:
        current = 0 if ok else current + 1
        longest = max(longest, current)
    return longest


def _get(url: str, timeout: float, limit: int = METRICS_LIMIT) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, context=insecure_tls(), timeout=timeout) as reply:
            return int(reply.status), reply.read(limit)
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""
    except (OSError, HTTPException):
        return 0, b""


class HealthProbe:
    """GET ``/healthz`` on a scheduler's port every ``period`` seconds from a thread, as a kubelet's
    liveness probe would (``timeoutSeconds`` 1); a tick missed while a probe waited is skipped."""

    def __init__(self, port: int, period: float = 1.0, timeout: float = PROBE_TIMEOUT) -> None:
        self.url = f"https://127.0.0.1:{port}/healthz"
        self.period, self.timeout = period, timeout
        self.results: list[bool] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthz-probe", daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout + self.period + 5)

    def _run(self) -> None:
        started = time.monotonic()
        tick = 0
        while not self._stop.is_set():
            code, _ = _get(self.url, self.timeout, limit=4096)
            self.results.append(code == 200)
            tick = max(tick + 1, math.ceil((time.monotonic() - started) / self.period))
            self._stop.wait(max(0.0, started + tick * self.period - time.monotonic()))

    def summary(self) -> dict[str, int]:
        results = list(self.results)
        return {
            "healthz_probes": len(results),
            "healthz_failures": results.count(False),
            "healthz_longest_failure_run": longest_run(results),
        }


def scrape(port: int) -> str:
    """Our ``/metrics`` (served without a token in the bench: ``BENCH_ALWAYS_ALLOW``); "" if it fails."""
    code, body = _get(f"https://127.0.0.1:{port}/metrics", 10.0)
    return body.decode(errors="replace") if code == 200 else ""


def _slice_buckets(metrics: str, name: str = PLAN_SLICE) -> tuple[dict[float, float], float]:
    """The finite buckets (bound -> cumulative count) and the count of a planning-slice histogram."""
    buckets: dict[float, float] = {}
    count = 0.0
    pattern = re.compile(rf'^{name}_bucket\{{(?:.*,)?le="([^"]+)"(?:,.*)?\}} (\S+)$')
    for line in metrics.splitlines():
        if found := pattern.match(line):
            if found.group(1) != "+Inf":
                buckets[float(found.group(1))] = float(found.group(2))
        elif line.startswith(f"{name}_count "):
            count = float(line.rsplit(" ", 1)[1])
    return buckets, count


def _most_and_over(metrics: str, before: str, name: str) -> tuple[int, float | None, int | None]:
    """Slices since ``before``, the smallest bound holding all of them, and how many went past 100 ms."""
    buckets, count = _slice_buckets(metrics, name)
    earlier, earlier_count = _slice_buckets(before, name)
    count -= earlier_count
    finite = sorted((le, n - earlier.get(le, 0.0)) for le, n in buckets.items())
    max_le = 0.0 if count == 0 else next((le for le, n in finite if n >= count), None)
    under = next((n for le, n in finite if le == 0.1), None)
    return int(count), max_le, int(count - under) if under is not None else None


def _gc_seconds(metrics: str) -> float:
    """The collector's pauses of every generation, summed (0.0 when the scrape has none)."""
    prefix = f"{GC_PAUSE}{{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(prefix))


def slice_histogram(metrics: str, before: str = "") -> dict[str, Any]:
    """From our /metrics text, less what ``before`` (an earlier scrape) already held: how many planning
    slices ran, the smallest bucket bound that holds every one of them (``plan_slice_max_le_s``: 0.0
    for no slice, None when some went past the largest finite bound) and how many took over 100 ms
    (the Goals' bound on a delayed cycle), by the wall clock and by the slices' own CPU (the thread's,
    the collector's pauses out); and the collector's pauses over the same stretch."""
    count, max_le, over = _most_and_over(metrics, before, PLAN_SLICE)
    _, cpu_max_le, cpu_over = _most_and_over(metrics, before, PLAN_SLICE_CPU)
    return {
        "plan_slices": count,
        "plan_slice_max_le_s": max_le,
        "plan_slices_over_100ms": over,
        "plan_slice_cpu_max_le_s": cpu_max_le,
        "plan_slices_cpu_over_100ms": cpu_over,
        "gc_pause_s": round(_gc_seconds(metrics) - _gc_seconds(before), 3),
    }
