"""One scheduling cycle (schedule_one.py with framework/runtime.py, spec 1.2-1.7, 6.2): PreFilter
merging, Filter order, scoring and its range check, host selection and the feasible-node search.

Fake plugins drive the extension points where our profile has no plugin that exercises a rule
(two narrowing PreFilters, a Score plugin returning an out-of-range value).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.objects import NodeName, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, StatusError
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.testing import make_node, make_pod
from tests.helpers import (
    FOO,
    HOSTNAME,
    IPA,
    NA,
    NU,
    PTS,
    SPREAD,
    TT,
    UNSCHEDULABLE_NODE,
    ZONE,
    cluster_a,
    config_with,
    framework,
    incoming,
    make_cache,
    schedule,
)

# -- fake plugins --------------------------------------------------------------------------------

PreFilterFn = Callable[[], tuple[PreFilterResult | None, Status | None]]


@dataclass
class FakePlugin:
    """A plugin for every point our profile cannot reach; ``calls`` records what ran."""

    NAME: str
    pre_filter_fn: PreFilterFn = lambda: (None, None)
    filter_fn: Callable[[str], Status | None] = lambda node: None
    pre_score_fn: Callable[[], Status | None] = lambda: None
    score_fn: Callable[[str], int] = lambda node: 0
    normalize_fn: Callable[[list[int]], Status | None] | None = None
    calls: list[str] = field(default_factory=list)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self.calls.append("PreFilter")
        return self.pre_filter_fn()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls.append(f"Filter/{node_info.name}")
        return self.filter_fn(node_info.name)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        self.calls.append("PreScore")
        return self.pre_score_fn()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        self.calls.append(f"Score/{node_info.name}")
        return self.score_fn(node_info.name)


@dataclass
class NormalizingFake(FakePlugin):
    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[int], nodes: Sequence[NodeInfo]
    ) -> Status | None:
        self.calls.append("NormalizeScore")
        assert self.normalize_fn is not None
        return self.normalize_fn(scores)


def fake_framework(*plugins: FakePlugin, weights: dict[str, int] | None = None) -> Framework:
    names = [p.NAME for p in plugins]
    points = {p: names for p in ("preFilter", "filter", "preScore", "score")}
    return Framework("fake", {p.NAME: p for p in plugins}, points, weights or {}, Handle())


def run_fake(fwk: Framework, nodes: int = 3, seed: int = 0) -> Any:
    cache = make_cache([make_node(f"n{i}") for i in range(1, nodes + 1)])
    return SchedulingAlgorithm(random.Random(seed)).schedule_pod(fwk, cache, make_pod("p").build())


def narrow(*names: str) -> PreFilterFn:
    return lambda: (PreFilterResult(frozenset(names)), None)


# -- PreFilter -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "message", "rejectors"),
    [
        pytest.param(
            narrow("n1"),
            narrow("n2"),
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [A B] simultaneously.",
            {"A", "B"},
            id="two-plugins-disjoint",
        ),
        pytest.param(
            narrow(),
            narrow("n2"),
            "0/3 nodes are available: node(s) didn't satisfy plugin A.",
            {"A"},
            id="one-plugin-empty-set",
        ),
        pytest.param(
            lambda: (None, None),
            narrow(),
            "0/3 nodes are available: node(s) didn't satisfy plugin B.",
            {"B"},
            id="all-nodes-plugin-not-named",
        ),
    ],
)
def test_pre_filter_result_intersection_messages(
    a: PreFilterFn, b: PreFilterFn, message: str, rejectors: set[str]
) -> None:
    pa, pb = FakePlugin("A", pre_filter_fn=a), FakePlugin("B", pre_filter_fn=b)
    attempt = run_fake(fake_framework(pa, pb))
    assert attempt.message == message
    assert attempt.status.code is Code.UNSCHEDULABLE
    assert attempt.diagnosis.unschedulable_plugins == rejectors
    assert attempt.diagnosis.node_to_status == {}
    assert not any(c.startswith("Filter") for c in pa.calls + pb.calls)


def test_pre_filter_results_intersect_and_outside_nodes_share_one_status() -> None:
    pa = FakePlugin("B", pre_filter_fn=narrow("n1", "n2", "ghost"))
    pb = FakePlugin("A", pre_filter_fn=narrow("n2", "n3", "ghost"), filter_fn=lambda n: Status.unschedulable("no"))
    attempt = run_fake(fake_framework(pa, pb))
    # Only n2 (and the unknown "ghost", dropped) survive; n2 fails A's Filter.
    assert [c for c in pb.calls if c.startswith("Filter")] == ["Filter/n2"]
    assert attempt.message == "0/3 nodes are available: 1 no, 2 node(s) didn't satisfy plugin(s) [A B]."
    assert attempt.diagnosis.unschedulable_plugins == {"A", "B"}


def test_pre_filter_unschedulable_keeps_running_the_others_and_the_last_wins() -> None:
    first = FakePlugin("A", pre_filter_fn=lambda: (None, Status.unschedulable("a says no")))
    second = FakePlugin("B", pre_filter_fn=lambda: (None, Status.unschedulable("b says no")))
    attempt = run_fake(fake_framework(first, second))
    assert first.calls == ["PreFilter"]
    assert second.calls == ["PreFilter"]
    assert attempt.message == "0/3 nodes are available: b says no."
    assert attempt.diagnosis.unschedulable_plugins == {"B"}
    assert attempt.diagnosis.absent_nodes_status is not None
    assert attempt.diagnosis.absent_nodes_status.plugin == "B"


def test_pre_filter_unresolvable_stops_at_once() -> None:
    first = FakePlugin("A", pre_filter_fn=lambda: (None, Status.unschedulable("a says no", resolvable=False)))
    second = FakePlugin("B")
    attempt = run_fake(fake_framework(first, second))
    assert second.calls == []
    assert attempt.message == "0/3 nodes are available: a says no."
    assert attempt.diagnosis.unschedulable_plugins == {"A"}


def test_pre_filter_error_is_a_scheduler_error() -> None:
    attempt = run_fake(fake_framework(FakePlugin("A", pre_filter_fn=lambda: (None, Status.as_error("boom")))))
    assert attempt.status.code is Code.ERROR
    assert attempt.message == 'running PreFilter plugin "A": boom'
    assert attempt.fit_error is None


def test_pre_filter_skip_skips_that_plugins_filter_only() -> None:
    skipper = FakePlugin(
        "A", pre_filter_fn=lambda: (None, Status(Code.SKIP)), filter_fn=lambda n: Status.unschedulable()
    )
    other = FakePlugin("B")
    attempt = run_fake(fake_framework(skipper, other))
    assert attempt.state.skip_filter_plugins == {"A"}
    assert not any(c.startswith("Filter") for c in skipper.calls)
    assert [c for c in other.calls if c.startswith("Filter")] == ["Filter/n1", "Filter/n2", "Filter/n3"]
    assert attempt.host in {"n1", "n2", "n3"}


# -- Filter --------------------------------------------------------------------------------------


def test_filter_stops_at_the_first_rejecting_plugin() -> None:
    first = FakePlugin("A", filter_fn=lambda n: Status.unschedulable("a") if n == "n1" else None)
    second = FakePlugin("B", filter_fn=lambda n: Status.unschedulable("b"))
    attempt = run_fake(fake_framework(first, second))
    assert "Filter/n1" not in second.calls
    assert attempt.diagnosis.node_to_status[NodeName("n1")].plugin == "A"
    assert attempt.message == "0/3 nodes are available: 1 a, 2 b."
    assert attempt.diagnosis.unschedulable_plugins == {"A", "B"}


def test_filter_order_decides_the_reason_in_our_profile() -> None:
    node = make_node("n").unschedulable().taint("dedicated", "x")
    r = schedule([node], [], make_pod("p"))
    assert r.reasons() == {"n": (UNSCHEDULABLE_NODE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NU)}
    assert r.rejectors == {NU}


def test_filter_error_aborts_the_cycle() -> None:
    plugin = FakePlugin("A", filter_fn=lambda n: Status.as_error("boom") if n == "n2" else None)
    attempt = run_fake(fake_framework(plugin))
    assert attempt.status.code is Code.ERROR
    assert attempt.message == 'running "A" filter plugin: boom'
    assert attempt.host is None


def test_invalid_pod_is_refused_with_the_field_and_never_raises() -> None:
    r = schedule([make_node("n1").zone("a")], [], make_pod("p").spread(ZONE, 0, match=FOO))
    assert r.host is None
    assert r.message == "invalid pod: spec.topologySpreadConstraints[0].maxSkew: must be greater than zero"


def test_no_nodes_available() -> None:
    attempt = SchedulingAlgorithm(random.Random(0)).schedule_pod(framework(), Cache(), make_pod("p").build())
    assert attempt.status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert attempt.message == "no nodes available to schedule pods"


# -- Score ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            101,
            'applying score defaultWeights on Score plugins: plugin "A" returns an invalid score 101, '
            "it should in the range of [0, 100] after normalizing",
            id="above-max",
        ),
        pytest.param(
            -1,
            'applying score defaultWeights on Score plugins: plugin "A" returns an invalid score -1, '
            "it should in the range of [0, 100] after normalizing",
            id="below-min",
        ),
    ],
)
def test_score_range_check(value: int, message: str) -> None:
    attempt = run_fake(fake_framework(FakePlugin("A", score_fn=lambda n: value if n == "n2" else 0)))
    assert attempt.status.code is Code.ERROR
    assert attempt.message == message
    assert attempt.host is None


def test_score_range_check_applies_after_normalizing() -> None:
    def to_seven(scores: list[int]) -> None:
        scores[:] = [7] * len(scores)

    plugin = NormalizingFake("A", score_fn=lambda n: 1000, normalize_fn=to_seven)
    attempt = run_fake(fake_framework(plugin))
    assert attempt.status.is_success()
    assert attempt.scores[0].raw == [1000, 1000, 1000]
    assert attempt.scores[0].normalized == [7, 7, 7]


def test_score_passes_run_all_scores_before_any_normalize() -> None:
    def failing_score(node: str) -> int:
        raise StatusError(Status.as_error("bad score"))

    first = NormalizingFake("A", normalize_fn=lambda s: Status.as_error("bad normalize"))
    second = FakePlugin("B", score_fn=failing_score)
    attempt = run_fake(fake_framework(first, second))
    assert attempt.message == 'running Score plugins: plugin "B" failed with: bad score'
    assert "NormalizeScore" not in first.calls


def test_normalize_failure_message() -> None:
    plugin = NormalizingFake("A", normalize_fn=lambda s: Status.as_error("bad normalize"))
    attempt = run_fake(fake_framework(plugin))
    assert attempt.message == 'running Normalize on Score plugins: plugin "A" failed with: bad normalize'


def test_pre_score_skip_removes_the_plugin_from_scoring() -> None:
    skipper = FakePlugin("A", pre_score_fn=lambda: Status(Code.SKIP), score_fn=lambda n: 100)
    other = FakePlugin("B", score_fn=lambda n: 10 if n == "n3" else 0)
    attempt = run_fake(fake_framework(skipper, other))
    assert not any(c.startswith("Score") for c in skipper.calls)
    assert [s.plugin for s in attempt.scores] == ["B"]
    assert attempt.host == "n3"


def test_pre_score_error_message() -> None:
    attempt = run_fake(fake_framework(FakePlugin("A", pre_score_fn=lambda: Status.as_error("nope"))))
    assert attempt.message == 'running PreScore plugin "A": nope'
    assert attempt.status.code is Code.ERROR


def test_weights_multiply_and_zero_weight_means_one() -> None:
    a = FakePlugin("A", score_fn=lambda n: {"n1": 10, "n2": 0, "n3": 0}[n])
    b = FakePlugin("B", score_fn=lambda n: {"n1": 0, "n2": 4, "n3": 0}[n])
    attempt = run_fake(fake_framework(a, b, weights={"A": 0, "B": 3}))
    assert attempt.totals == {"n1": 10, "n2": 12, "n3": 0}
    assert attempt.host == "n2"


def test_one_feasible_node_runs_no_scoring() -> None:
    plugin = FakePlugin("A", filter_fn=lambda n: None if n == "n2" else Status.unschedulable("x"))
    attempt = run_fake(fake_framework(plugin))
    assert attempt.host == "n2"
    assert "PreScore" not in plugin.calls
    assert not any(c.startswith("Score") for c in plugin.calls)
    assert attempt.scores == []


def test_one_feasible_node_runs_no_scoring_in_our_profile() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes[:1], pods[:1], incoming().spread(HOSTNAME, 1, "ScheduleAnyway", match=FOO))
    assert r.host == "node1"
    assert r.attempt.scores == []
    assert r.attempt.state.get("PreScore" + TT) is None
    assert r.attempt.state.get("PreScore" + PTS) is None


def test_ties_are_broken_by_the_rng() -> None:
    hosts = {run_fake(fake_framework(FakePlugin("A")), seed=s).host for s in range(24)}
    assert hosts == {"n1", "n2", "n3"}


def test_same_seed_same_choice() -> None:
    nodes, pods = cluster_a()
    pod = incoming().spread(HOSTNAME, 1, match=FOO)
    assert {schedule(nodes, pods, pod, seed=7).host for _ in range(5)} == {schedule(nodes, pods, pod, seed=7).host}


# -- feasible-node search ------------------------------------------------------------------------


def test_no_score_plugins_means_first_fit_rotating_through_nodes() -> None:
    cfg = config_with(plugins={"score": {"disabled": [{"name": "*"}]}})
    fwk = framework(cfg)
    assert not fwk.has_score_plugins()
    cache = make_cache([make_node(f"n{i}") for i in (1, 2, 3)])
    algo = SchedulingAlgorithm(random.Random(0))
    picks = []
    for i in range(4):
        attempt = algo.schedule_pod(fwk, cache, make_pod(f"p{i}").build())
        assert attempt.evaluated_nodes == 1
        picks.append(attempt.host)
    assert picks == ["n1", "n2", "n3", "n1"]


def test_with_scoring_every_node_is_evaluated_below_100_nodes() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming())
    assert r.attempt.evaluated_nodes == 4
    assert r.feasible == {"node1", "node2", "node3", "node4"}


def test_default_profile_plugin_order() -> None:
    fwk = framework()
    # framework() leaves out NodePorts and NodeResourcesFit (and DynamicResources).
    volume_filters = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert [p.NAME for p in fwk.filter] == [NU, "NodeName", TT, NA, *volume_filters, PTS, IPA]
    volumes = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert [p.NAME for p in fwk.pre_filter] == [NA, *volumes, PTS, IPA]  # DynamicResources: disabled by framework()
    assert [p.NAME for p in fwk.score] == [TT, NA, PTS, IPA]
    assert fwk.weights == {TT: 3, NA: 2, PTS: 2, IPA: 2}
    assert [p.NAME for p in fwk.post_filter] == ["DefaultPreemption"]  # DynamicResources' is disabled


def test_search_stops_after_num_feasible_nodes_to_find_and_rotates() -> None:
    nodes = [make_node(f"n{i:03d}") for i in range(200)]
    cache = make_cache(nodes)
    algo = SchedulingAlgorithm(random.Random(0))
    fwk = framework()
    first = algo.schedule_pod(fwk, cache, make_pod("p1").build())
    assert len(first.feasible) == 100  # 200 nodes: 49 % = 98 < 100, so 100
    assert first.evaluated_nodes == 100
    assert algo.next_start_node_index == 100
    second = algo.schedule_pod(fwk, cache, make_pod("p2").build())
    assert set(second.feasible).isdisjoint(first.feasible)  # the search resumed where it stopped
    assert algo.next_start_node_index == 0


def test_nominated_node_is_tried_alone_first() -> None:
    nodes, pods = cluster_a()
    pod = incoming().set("status.nominatedNodeName", "node2")
    r = schedule(nodes, pods, pod)
    assert r.host == "node2"
    assert r.attempt.evaluated_nodes == 1
    assert r.attempt.scores == []


def test_a_nominated_node_that_fits_is_taken_without_evaluating_others() -> None:
    nodes = [make_node("n1"), make_node("n2"), make_node("n3").taint("k", "v")]
    r = schedule(nodes, [], make_pod("p").set("status.nominatedNodeName", "n2"))
    assert r.host == "n2" and r.attempt.evaluated_nodes == 1 and r.attempt.scores == []
    tainted = schedule(nodes, [], make_pod("q").set("status.nominatedNodeName", "n3"))
    assert tainted.host in {"n1", "n2"}  # the nominated node fails: every node is searched as usual


def test_failing_nominated_node_falls_back_to_all_nodes() -> None:
    nodes, pods = cluster_a()
    pod = incoming().spread(ZONE, 1, match=FOO).set("status.nominatedNodeName", "node1")
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"node3", "node4"}
    assert r.attempt.evaluated_nodes == 4
    assert r.reasons()["node1"] == (SPREAD, Code.UNSCHEDULABLE, PTS)


def test_a_failed_nominated_node_outside_the_prefilter_result_keeps_its_own_verdict() -> None:
    """evaluateNominatedNode filters the nominated node whatever PreFilter allowed: its verdict stays in
    the diagnosis instead of the absent nodes' text (found by the differential oracle, seed 11000012)."""
    nodes = [make_node("n1").taint("k", "v"), make_node("n2"), make_node("n3")]
    only_n1 = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    pod = make_pod("p").required_terms(only_n1).set("status.nominatedNodeName", "n2")
    r = schedule(nodes, [], pod)
    assert r.host is None
    assert r.attempt.message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) didn't satisfy plugin(s) [NodeAffinity], 1 node(s) had untolerated taint(s)."
    )


# -- plugin metrics sampling ---------------------------------------------------------------------


def test_sampled_cycles_report_plugin_durations_and_others_do_not() -> None:
    cache = make_cache([make_node(name).zone("a") for name in ("n1", "n2")])
    fwk = framework()
    seen: list[tuple[str, str, str]] = []
    fwk.plugin_observer = lambda plugin, point, status, seconds: seen.append((plugin, point, status))
    pod = make_pod("p").labels(FOO).spread(ZONE, 1, "ScheduleAnyway", match=FOO).build()
    SchedulingAlgorithm(random.Random(0), plugin_metrics_sample_percent=0).schedule_pod(fwk, cache, pod)
    assert seen == []
    fwk = framework()  # nothing remembered: every plugin runs
    fwk.plugin_observer = lambda plugin, point, status, seconds: seen.append((plugin, point, status))
    sampled = SchedulingAlgorithm(random.Random(0), plugin_metrics_sample_percent=100)
    sampled.schedule_pod(fwk, cache, pod)
    points = {(plugin, point) for plugin, point, _ in seen}
    assert ("TaintToleration", "Filter") in points and ("PodTopologySpread", "PreScore") in points
    assert ("PodTopologySpread", "Score") in points and ("NodeAffinity", "PreFilter") in points
    assert ("PodTopologySpread", "PreFilter", "Skip") in seen
    # The same pod again on unchanged nodes: signed plugins' results are reused, and a reused result
    # is no plugin call, so it is not observed; the unsigned PodTopologySpread still runs.
    seen.clear()
    sampled.schedule_pod(fwk, cache, pod)
    points = {(plugin, point) for plugin, point, _ in seen}
    assert ("TaintToleration", "Filter") not in points and ("NodeResourcesFit", "Score") not in points
    assert ("PodTopologySpread", "Score") in points
