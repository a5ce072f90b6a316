"""bench/fleet.py, the parts of the fleet rebalancing bench that decide its figures: the fewest
evictions, the PodDisruptionBudget and what it allows, the unavailable pods counted from watch
events, the time back within maxSkew, the planning-slice histogram read from /metrics."""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from bench.fleet import (
    GC_PAUSE,
    PLAN_SLICE,
    PLAN_SLICE_CPU,
    Fleet,
    allowed_unavailable,
    fewest_evictions,
    longest_run,
    parse_max_unavailable,
    slice_histogram,
    workload_budget,
)
from e2e.zone_loss import rebalance_workload
from scheduler.kube.metrics import PLAN_SLICE_BUCKETS

ZONE_OF = {"na": "a", "nb": "b", "nc": "c"}


def _brute_force_moves(counts: tuple[int, ...]) -> int:
    """Breadth-first over single-pod moves until the counts differ by at most 1."""
    seen, queue = {counts}, deque([(counts, 0)])
    while queue:
        now, moves = queue.popleft()
        if max(now) - min(now) <= 1:
            return moves
        for i, j in itertools.permutations(range(len(now)), 2):
            if now[i]:
                nxt = list(now)
                nxt[i], nxt[j] = nxt[i] - 1, nxt[j] + 1
                if (key := tuple(nxt)) not in seen:
                    seen.add(key)
                    queue.append((key, moves + 1))
    raise AssertionError("unreachable")


class TestFewestEvictions:
    def test_a_zone_back_under_1200_replicas_needs_400(self) -> None:
        """600/600/0 -> 400/400/400: 200 from each full zone."""
        assert fewest_evictions({"w00": {"a": 600, "b": 600, "c": 0}}) == 400

    def test_workloads_add_up(self) -> None:
        """50 workloads at 15/15/0 need 10 each: no eviction serves two workloads."""
        at_return = {f"w{i:02d}": {"a": 15, "b": 15, "c": 0} for i in range(50)}
        assert fewest_evictions(at_return) == 500

    def test_is_the_brute_forces_minimum(self) -> None:
        """Every count of up to 12 pods over three zones, against a search over single moves."""
        for counts in (c for c in itertools.product(range(13), repeat=3) if sum(c) <= 12):
            assert fewest_evictions({"w": dict(zip("abc", counts, strict=True))}) == _brute_force_moves(counts), counts


class TestBudget:
    @pytest.mark.parametrize(("text", "value"), [("10%", "10%"), ("0%", "0%"), ("100%", "100%"), ("3", 3), ("0", 0)])
    def test_parses_as_an_int_or_a_percentage(self, text: str, value: int | str) -> None:
        assert parse_max_unavailable(text) == value

    @pytest.mark.parametrize("text", ["101%", "-1", "10.5%", "ten", "", "%"])
    def test_refuses_anything_else(self, text: str) -> None:
        with pytest.raises(ValueError, match="--pdb"):
            parse_max_unavailable(text)

    @pytest.mark.parametrize(
        ("max_unavailable", "replicas", "allowed"),
        [("10%", 30, 3), ("10%", 6, 1), ("10%", 300, 30), ("10%", 1200, 120), ("10%", 5, 1), ("0%", 30, 0), (3, 30, 3)],
    )
    def test_a_percentage_rounds_up_as_the_disruption_controller(
        self, max_unavailable: int | str, replicas: int, allowed: int
    ) -> None:
        assert allowed_unavailable(max_unavailable, replicas) == allowed

    def test_the_budget_selects_the_workloads_pods(self) -> None:
        """policy/v1, in the workload's namespace, its selector the Deployment's own pod labels."""
        deployment = rebalance_workload("w07", "main", 1, True, True, 30)
        budget = workload_budget("w07", "fleet", "10%")
        assert (budget["apiVersion"], budget["kind"]) == ("policy/v1", "PodDisruptionBudget")
        assert budget["metadata"] == {"name": "w07", "namespace": "fleet"}
        assert budget["spec"] == {"maxUnavailable": "10%", "selector": deployment["spec"]["selector"]}
        assert deployment["spec"]["template"]["metadata"]["labels"] == budget["spec"]["selector"]["matchLabels"]


def _pod(name: str, node: str | None = None, ready: bool = False, terminating: bool = False, app: str = "w") -> Any:
    pod: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    if terminating:
        pod["metadata"]["deletionTimestamp"] = "2026-11-29T15:00:00Z"
    return pod


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _balanced_fleet(clock: Clock) -> Fleet:
    """Workload ``w`` of 3 pods, one a zone, all Ready, and the clock armed."""
    fleet = Fleet({"w": 3}, ZONE_OF, clock=clock)
    fleet.replace([_pod("p0", "na", True), _pod("p1", "nb", True), _pod("p2", "nc", True)])
    fleet.arm()
    return fleet


class TestUnavailable:
    def test_an_eviction_is_unavailable_until_its_replacement_is_ready(self) -> None:
        """Terminating, then a pending replacement, then bound, then Ready: one unavailable throughout."""
        clock = Clock()
        fleet = _balanced_fleet(clock)
        seen = []
        for kind, pod in [
            ("MODIFIED", _pod("p0", "na", True, terminating=True)),
            ("ADDED", _pod("p3")),
            ("MODIFIED", _pod("p3", "nc")),
            ("DELETED", _pod("p0", "na", True, terminating=True)),
            ("MODIFIED", _pod("p3", "nc", True)),
        ]:
            fleet.apply(kind, pod)
            seen.append(fleet.peak["w"])
        assert seen == [1, 1, 1, 1, 1]
        assert fleet.disruptions == 1

    def test_the_peak_is_kept_after_the_pods_are_back(self) -> None:
        """Two evictions at once: the peak is 2 though every pod is Ready again at the end."""
        fleet = _balanced_fleet(Clock())
        fleet.apply("MODIFIED", _pod("p0", "na", True, terminating=True))
        fleet.apply("MODIFIED", _pod("p1", "nb", True, terminating=True))
        for name, node in [("p0", "na"), ("p1", "nb")]:
            fleet.apply("DELETED", _pod(name, node, True, terminating=True))
        fleet.apply("ADDED", _pod("p3", "nc", True))
        fleet.apply("ADDED", _pod("p4", "nc", True))
        assert (fleet.peak["w"], fleet.peak_total, fleet.disruptions) == (2, 2, 2)

    def test_a_pod_gone_without_terminating_is_a_disruption(self) -> None:
        """A pod of no grace period is deleted at once: no terminating event before its DELETED."""
        fleet = _balanced_fleet(Clock())
        fleet.apply("DELETED", _pod("p0", "na", True))
        assert (fleet.peak["w"], fleet.disruptions) == (1, 1)

    def test_before_the_clock_nothing_counts(self) -> None:
        """The zone's loss (before arm) is not the rebalancer's: its peaks and deletions are dropped."""
        clock = Clock()
        fleet = Fleet({"w": 3}, ZONE_OF, clock=clock)
        fleet.replace([_pod("p0", "na", True), _pod("p1", "nb", True), _pod("p2", "nc", True, terminating=True)])
        fleet.apply("DELETED", _pod("p2", "nc", True, terminating=True))
        fleet.apply("ADDED", _pod("p3", "na", True))
        fleet.arm()
        assert (fleet.peak, fleet.peak_total, fleet.disruptions, fleet.first_disruption) == ({"w": 0}, 0, 0, None)

    def test_other_pods_are_not_counted(self) -> None:
        fleet = _balanced_fleet(Clock())
        fleet.apply("MODIFIED", _pod("x", "na", True, terminating=True, app="burst"))
        assert (fleet.peak["w"], fleet.disruptions) == (0, 0)


class TestWithin:
    def test_the_time_is_when_every_workload_is_back(self) -> None:
        """Two workloads at 2/2/0 (maxSkew 1 needs 1 move each): within when the second is Ready in c."""
        clock = Clock()
        fleet = Fleet({"u": 4, "v": 4}, ZONE_OF, clock=clock)
        fleet.replace([_pod(f"{app}{i}", "na" if i < 2 else "nb", True, app=app) for app in "uv" for i in range(4)])
        fleet.arm()
        for app, at in [("u", 3.0), ("v", 7.5)]:
            clock.now += at
            fleet.apply("MODIFIED", _pod(f"{app}0", "na", True, terminating=True, app=app))
            fleet.apply("DELETED", _pod(f"{app}0", "na", True, terminating=True, app=app))
            fleet.apply("ADDED", _pod(f"{app}9", "nc", False, app=app))
            assert fleet.within_at is None  # bound, not yet Ready
            fleet.apply("MODIFIED", _pod(f"{app}9", "nc", True, app=app))
        assert fleet.within_at == 10.5
        assert (fleet.first_disruption, fleet.last_disruption) == (3.0, 10.5)
        assert fleet.counts() == {"u": {"a": 1, "b": 2, "c": 1}, "v": {"a": 1, "b": 2, "c": 1}}
        assert fleet.within() == 2

    def test_a_missing_replica_is_not_within(self) -> None:
        """2/1/1 is within maxSkew 1, but with 4 replicas wanted and 3 there the workload is not back."""
        fleet = Fleet({"w": 4}, ZONE_OF, clock=Clock())
        fleet.arm()
        fleet.replace([_pod("p0", "na", True), _pod("p1", "nb", True), _pod("p2", "nc", True)])
        assert (fleet.within_at, fleet.settled(), fleet.within()) == (None, None, 0)


WALL = ("plan_slices", "plan_slice_max_le_s", "plan_slices_over_100ms")


class TestSliceHistogram:
    def _metrics(
        self, *seconds: float, cpu: tuple[float, ...] = (), gc: tuple[float, float, float] | None = None
    ) -> str:
        registry = CollectorRegistry()
        histogram = Histogram(PLAN_SLICE, "slices", buckets=PLAN_SLICE_BUCKETS, registry=registry)
        for value in seconds:
            histogram.observe(value)
        own = Histogram(PLAN_SLICE_CPU, "own", buckets=PLAN_SLICE_BUCKETS, registry=registry)
        for value in cpu:
            own.observe(value)
        text = generate_latest(registry).decode() + "other_metric 1.0\n"
        if gc is not None:
            text += "".join(f'{GC_PAUSE}{{generation="{g}"}} {v}\n' for g, v in enumerate(gc))
        return text

    def _wall(self, found: dict[str, object]) -> dict[str, object]:
        return {k: found[k] for k in WALL}

    def test_the_smallest_bucket_that_holds_every_slice(self) -> None:
        found = slice_histogram(self._metrics(0.004, 0.018, 0.019, 0.15))
        assert self._wall(found) == {"plan_slices": 4, "plan_slice_max_le_s": 0.25, "plan_slices_over_100ms": 1}

    def test_no_slice(self) -> None:
        found = slice_histogram(self._metrics())
        assert self._wall(found) == {"plan_slices": 0, "plan_slice_max_le_s": 0.0, "plan_slices_over_100ms": 0}

    def test_only_the_slices_since_the_earlier_scrape(self) -> None:
        """A 0.3 s slice before the zone's return is not the return's: 2 slices since, within 20 ms."""
        before = self._metrics(0.3)
        after = self._metrics(0.3, 0.004, 0.015)
        found = slice_histogram(after, before)
        assert self._wall(found) == {"plan_slices": 2, "plan_slice_max_le_s": 0.02, "plan_slices_over_100ms": 0}

    def test_past_the_largest_bucket(self) -> None:
        found = slice_histogram(self._metrics(0.01, 3.0))
        assert self._wall(found) == {"plan_slices": 2, "plan_slice_max_le_s": None, "plan_slices_over_100ms": 1}

    def test_a_slice_long_by_the_wall_clock_and_short_in_its_own_cpu(self) -> None:
        """A 150 ms slice that ran 15 ms of its own: the machine or the collector, not planning; the
        collector's pauses since the earlier scrape beside it."""
        before = self._metrics(gc=(0.5, 0.25, 1.0))
        after = self._metrics(0.004, 0.15, cpu=(0.003, 0.015), gc=(0.75, 0.25, 1.125))
        found = slice_histogram(after, before)
        assert {k: v for k, v in found.items() if k not in WALL} == {
            "plan_slice_cpu_max_le_s": 0.02,
            "plan_slices_cpu_over_100ms": 0,
            "gc_pause_s": 0.375,
        }
        assert found["plan_slices_over_100ms"] == 1


@pytest.mark.parametrize(
    ("results", "longest"),
    [([], 0), ([True, True], 0), ([False, True, False, False, True], 2), ([True, False, False, False], 3)],
)
def test_longest_failure_run(results: list[bool], longest: int) -> None:
    assert longest_run(results) == longest
