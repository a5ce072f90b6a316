"""The runner's comparison rules (module docstring of ``runner.py``), pure: hand-written results on
both sides, no oracle."""

from __future__ import annotations

from typing import Any

from scheduler.config import upstream_config
from scheduler.features import features_at
from tests.differential.runner import UPSTREAM_ONLY_PLUGINS, compare, oracle_gates, upstream_default_profile

FEASIBLE = {"filter": None, "scores": {}, "total": None}
SKIPPED = {"filter": None, "scores": {}, "total": None, "evaluated": False}
UNRESOLVABLE = "UnschedulableAndUnresolvable"
TAINT = {"plugin": "TaintToleration", "reason": "node(s) had untolerated taint(s)", "code": UNRESOLVABLE}


def scored(total: int) -> dict[str, Any]:
    return {"filter": None, "scores": {"TaintToleration": {"raw": 0, "normalized": total}}, "total": total}


def ours(node: str | None, nodes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    code = "Success" if node else "Unschedulable"
    base = {"pod": "default/p", "node": node, "code": code, "message": "", "unschedulablePlugins": []}
    return {**base, "pendingPlugins": [], "nodes": nodes, **fields}


def upstream(
    node: str | None, nodes: dict[str, Any], full: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    feasible = sorted(n for n, e in nodes.items() if e["filter"] is None and e.get("evaluated", True))
    totals = {n: e["total"] for n, e in nodes.items() if e["total"] is not None}
    best = sorted(n for n, t in totals.items() if t == max(totals.values())) if totals else ([node] if node else [])
    result = {
        "pod": "default/p",
        "code": "Success" if node else "Unschedulable",
        "message": "",
        "node": node,
        "best": best,
        "feasible": feasible,
        "batched": False,
        "unschedulablePlugins": [],
        "pendingPlugins": [],
        "nodes": nodes,
    }
    result["full"] = full or {k: result[k] for k in ("code", "best", "feasible", "nodes")}
    return {**result, **fields}


class TestFullSearch:
    def test_a_tie_is_no_mismatch(self) -> None:
        """Our node only has to be among upstream's best."""
        nodes = {"a": scored(300), "b": scored(300)}
        assert compare([ours("b", nodes)], [upstream("a", nodes)]) == []

    def test_a_node_outside_the_best_set_is(self) -> None:
        nodes = {"a": scored(300), "b": scored(200)}
        assert compare([ours("b", nodes)], [upstream("a", nodes)]) == ["default/p: chose b, upstream's best: ['a']"]

    def test_the_filter_code_is_compared(self) -> None:
        """Unschedulable vs UnschedulableAndUnresolvable on one node is a mismatch."""
        resolvable = {**TAINT, "code": "Unschedulable"}
        theirs = upstream("a", {"a": FEASIBLE, "b": {**FEASIBLE, "filter": TAINT}})
        (problem,) = compare([ours("a", {"a": FEASIBLE, "b": {**FEASIBLE, "filter": resolvable}})], [theirs])
        assert problem.startswith("default/p/b: filter")


class TestFailures:
    def test_message_before_post_filter_and_plugins(self) -> None:
        """The whole message, DefaultPreemption's text included; the unschedulable plugins are compared."""
        msg = "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
        msg += " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        nodes = {"a": {**FEASIBLE, "filter": TAINT}}
        theirs = upstream(None, nodes, message=msg, unschedulablePlugins=["TaintToleration"])
        assert compare([ours(None, nodes, message=msg, unschedulablePlugins=["TaintToleration"])], [theirs]) == []
        (problem,) = compare([ours(None, nodes, message=msg)], [theirs])
        assert problem == "default/p: unschedulablePlugins [] vs ['TaintToleration']"

    def test_error_messages_are_compared_in_full(self) -> None:
        theirs = upstream(None, {}, code="Error", message='running PreScore plugin "X": b')
        (problem,) = compare([ours(None, {}, code="Error", message='running PreScore plugin "X": a')], [theirs])
        assert problem.startswith("default/p: message")


class TestBatched:
    """Batched decisions are compared directly: both sides batched, onto the same node."""

    def full_view(self) -> dict[str, Any]:
        nodes = {"a": scored(300), "b": scored(300), "c": scored(100)}
        return {"code": "Success", "best": ["a", "b"], "feasible": ["a", "b", "c"], "nodes": nodes}

    def test_the_same_hint_agrees_even_off_the_fresh_best(self) -> None:
        """Upstream's hint c is not what a fresh scoring would pick; it is upstream's decision, and ours."""
        view = {"a": SKIPPED, "b": SKIPPED, "c": FEASIBLE}
        theirs = upstream("c", view, self.full_view(), batched=True, hint="c")
        assert compare([ours("c", view, batched=True, hint="c")], [theirs]) == []

    def test_another_hint_is_reported(self) -> None:
        theirs = upstream("c", {"a": SKIPPED, "b": SKIPPED, "c": FEASIBLE}, self.full_view(), batched=True, hint="c")
        problems = compare([ours("b", {"a": SKIPPED, "b": FEASIBLE, "c": SKIPPED}, batched=True, hint="b")], [theirs])
        assert problems[:2] == [
            "default/p: batching hint b vs upstream's c",
            "default/p: batched onto b, upstream's hint c",
        ]

    def test_a_hint_offered_on_one_side_only_is_reported(self) -> None:
        """Unused hints count too: the batching state must evolve alike on both sides."""
        nodes = {"a": scored(300), "b": scored(200)}
        assert compare([ours("a", nodes, hint="b")], [upstream("a", nodes, hint="b")]) == []
        assert compare([ours("a", nodes)], [upstream("a", nodes, hint="b")]) == [
            "default/p: batching hint None vs upstream's b"
        ]

    def test_only_one_side_batching_is_reported(self) -> None:
        full = self.full_view()
        theirs = upstream("a", {"a": FEASIBLE, "b": SKIPPED, "c": SKIPPED}, full, batched=True, hint="a")
        assert compare([ours("a", full["nodes"], hint="a")], [theirs]) == [
            "default/p: only upstream batched: ours a, upstream's a"
        ]
        assert compare(
            [ours("a", full["nodes"], batched=True, hint="a")], [upstream("a", full["nodes"], hint="a")]
        ) == ["default/p: only we batched: ours a, upstream's a"]

    def test_a_batch_expired_on_the_oracle_clock_compares_verdicts_only(self) -> None:
        """Upstream's stored batch may have outlived 500 ms of the oracle's wall clock: we batched onto
        a, upstream scored afresh and took b. Our hint must still pass upstream's filters, and the
        next pod's hints (each side's state differs) compare as after a partial search."""
        full = self.full_view()
        mine = ours("a", {"a": FEASIBLE, "b": SKIPPED, "c": SKIPPED}, batched=True, hint="a")
        theirs = upstream("b", full["nodes"], full, batchMayHaveExpired=True)
        nxt_ours = {
            **ours("b", {"a": SKIPPED, "b": FEASIBLE, "c": SKIPPED}, batched=True, hint="b"),
            "pod": "default/q",
        }
        nxt_theirs = {**upstream("c", {"a": SKIPPED, "b": SKIPPED, "c": FEASIBLE}, full, batched=True, hint="c")}
        nxt_theirs["pod"] = "default/q"
        assert compare([mine, nxt_ours], [theirs, nxt_theirs]) == []
        # Without the oracle's word, the same is a mismatch; and a hint infeasible upstream still is.
        assert compare([mine], [upstream("b", full["nodes"], full)]) != []
        bad = {**full, "feasible": ["b", "c"], "nodes": {**full["nodes"], "a": {**full["nodes"]["a"], "filter": "X"}}}
        assert compare([mine], [upstream("b", full["nodes"], bad, batchMayHaveExpired=True)]) != []

    def test_after_a_partial_search_only_verdicts_compare(self) -> None:
        """The first pod's partial search (over 100 nodes) stored different rankings on each side,
        so the next pod's hints differ: only filter verdicts compare (seed 12003340)."""
        full = self.full_view()
        partial = {"a": scored(300), "b": scored(300), "c": SKIPPED}
        first_ours = {**ours("a", partial, ranking=["a", "b"]), "pod": "default/first"}
        first_theirs = {**upstream("a", partial), "pod": "default/first"}
        theirs = upstream("c", {"a": SKIPPED, "b": SKIPPED, "c": FEASIBLE}, full, batched=True, hint="c")
        mine = ours("b", {"a": SKIPPED, "b": FEASIBLE, "c": SKIPPED}, batched=True, hint="b")
        assert compare([first_ours, mine], [first_theirs, theirs]) == []
        rejected = ours("b", {"a": SKIPPED, "b": {**FEASIBLE, "filter": TAINT}, "c": scored(7)}, hint="b")
        assert compare([first_ours, rejected], [first_theirs, theirs]) == [f"default/p/b: filter {TAINT} vs None"]

    def test_a_full_scoring_on_both_sides_ends_the_relaxation(self) -> None:
        full = self.full_view()
        partial = {"a": scored(300), "b": scored(300), "c": SKIPPED}
        first = (
            {**ours("a", partial, ranking=["a", "b"]), "pod": "default/1"},
            {**upstream("a", partial), "pod": "default/1"},
        )
        every = {"a": scored(300), "b": scored(200), "c": scored(100)}
        second = (
            {**ours("a", every, ranking=["a", "b", "c"]), "pod": "default/2"},
            {**upstream("a", every), "pod": "default/2"},
        )
        theirs = upstream("c", {"a": SKIPPED, "b": SKIPPED, "c": FEASIBLE}, full, batched=True, hint="c")
        mine = ours("b", {"a": SKIPPED, "b": FEASIBLE, "c": SKIPPED}, batched=True, hint="b")
        problems = compare([first[0], second[0], mine], [first[1], second[1], theirs])
        assert problems[0] == "default/p: batching hint b vs upstream's c"


class TestPartialSearch:
    def test_different_nodes_found_are_no_mismatch(self) -> None:
        """Each side stopped after two feasible nodes, not the same two: counts and verdicts only."""
        full_nodes = {"a": scored(300), "b": scored(300), "c": scored(300)}
        full = {"code": "Success", "best": ["a", "b", "c"], "feasible": ["a", "b", "c"], "nodes": full_nodes}
        theirs = upstream("a", {"a": scored(300), "b": scored(300), "c": SKIPPED}, full)
        assert compare([ours("c", {"a": SKIPPED, "b": scored(300), "c": scored(300)})], [theirs]) == []

    def test_a_node_upstream_filters_out_is_not_feasible_for_us(self) -> None:
        full_nodes = {"a": scored(300), "b": scored(300), "c": {**FEASIBLE, "filter": TAINT}}
        full = {"code": "Success", "best": ["a", "b"], "feasible": ["a", "b"], "nodes": full_nodes}
        theirs = upstream("a", {"a": scored(300), "b": scored(300), "c": SKIPPED}, full)
        problems = compare([ours("c", {"a": SKIPPED, "b": scored(300), "c": scored(300)})], [theirs])
        assert problems == ["default/p: ['c'] feasible for us, not for upstream's filters"]


def test_gated_pods_are_compared_by_name_not_position() -> None:
    """Upstream lists the pods its queue never popped last; we list them in queue order."""
    gate = {"code": "UnschedulableAndUnresolvable", "message": "waiting for scheduling gates: [g]"}
    gated_ours = {**ours(None, {}), "pod": "default/gated", **gate}
    gated_theirs = {**upstream(None, {}), "pod": "default/gated", "gated": True, **gate}
    nodes = {"a": FEASIBLE}
    assert compare([gated_ours, ours("a", nodes)], [upstream("a", nodes), gated_theirs]) == []


def test_the_profile_sent_is_upstreams_default_minus_one_list() -> None:
    """Our spelled-out profile becomes upstream's default list, DefaultPreemption right after
    DynamicResources (applyDynamicResources' place), minus UPSTREAM_ONLY_PLUGINS; args stay."""
    args = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
    (profile,) = upstream_default_profile(upstream_config(args))["profiles"]
    multi = profile["plugins"]["multiPoint"]
    assert multi["disabled"] == [{"name": "*"}]
    names = [p["name"] for p in multi["enabled"]]
    assert names[names.index("InterPodAffinity") :][:3] == ["InterPodAffinity", "DynamicResources", "DefaultPreemption"]
    assert not set(UPSTREAM_ONLY_PLUGINS) & set(names)
    assert {"name": "TaintToleration", "weight": 3} in multi["enabled"]
    assert profile["pluginConfig"] == args


def test_the_profile_sent_is_the_default_of_the_minor_decided_as() -> None:
    """The generator spells out 1.35's profile; at 1.37 both sides get 1.37's default (NodeName before
    NodeUnschedulable, NodeDeclaredFeatures last), and the oracle the gates set away from 1.37's defaults."""
    features = features_at("1.37")
    (profile,) = upstream_default_profile(upstream_config(), features)["profiles"]
    names = [p["name"] for p in profile["plugins"]["multiPoint"]["enabled"]]
    assert names.index("NodeName") < names.index("NodeUnschedulable")
    assert names[-1] == "NodeDeclaredFeatures"
    (old,) = upstream_default_profile(upstream_config())["profiles"]
    assert "NodeDeclaredFeatures" not in [p["name"] for p in old["plugins"]["multiPoint"]["enabled"]]
    assert oracle_gates(features) == ""
    assert oracle_gates(features_at("1.37", {"VolumeLimitScaling": False})) == "VolumeLimitScaling=false"


def candidate(node: str, victims: list[str], criteria: list[int]) -> dict[str, Any]:
    return {"node": node, "victims": victims, "pdbViolations": -criteria[0], "criteria": criteria}


def preempting(nominated: str | None, victims: list[str]) -> dict[str, Any]:
    return ours(None, {}, message="m", nominatedNode=nominated, victims=victims)


def view(*candidates: dict[str, Any]) -> dict[str, Any]:
    top = max((c["criteria"] for c in candidates), default=None)
    best = sorted(c["node"] for c in candidates if c["criteria"] == top)
    return {"eligible": True, "candidates": list(candidates), "best": best, "victims": []}


class TestPreemption:
    A = candidate("a", ["default/x"], [0, 0, -(2**31), -1, 5])
    B = candidate("b", ["default/y"], [0, 0, -(2**31), -1, 5])  # ties with a
    C = candidate("c", ["default/z", "default/w"], [0, 0, -(2**32), -2, 5])  # two victims: worse

    def test_a_node_upstream_ranks_equal_is_no_mismatch(self) -> None:
        g = upstream(None, {}, message="m", nominatedNode="a", preemption=view(self.A, self.B, self.C))
        assert compare([preempting("b", ["default/y"])], [g]) == []

    def test_a_node_ranked_lower_is(self) -> None:
        g = upstream(None, {}, message="m", nominatedNode="a", preemption=view(self.A, self.C))
        (problem,) = compare([preempting("c", ["default/z", "default/w"])], [g])
        assert problem.startswith("default/p: nominated to c [0, 0, -4294967296, -2, 5], upstream's best: ['a']")

    def test_victims_are_compared_in_order(self) -> None:
        g = upstream(None, {}, message="m", nominatedNode="c", preemption=view(self.C))
        assert compare([preempting("c", ["default/w", "default/z"])], [g]) == [
            "default/p: victims on c ['default/w', 'default/z'], upstream's ['default/z', 'default/w']"
        ]

    def test_no_candidate_upstream_means_no_nomination_here(self) -> None:
        g = upstream(None, {}, message="m", preemption=view())
        assert compare([preempting(None, [])], [g]) == []
        assert compare([preempting("a", ["default/x"])], [g]) == [
            "default/p: nominated to a, upstream found no candidate"
        ]

    def test_the_preemption_text_is_compared_as_it_is(self) -> None:
        """No stripping: a message without upstream's "preemption: ..." part is a mismatch."""
        text = "0/1 nodes are available: 1 Insufficient cpu."
        full = f"{text} preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        g = upstream(None, {}, message=full, preemption=view())
        (problem,) = compare([ours(None, {}, message=text, nominatedNode=None, victims=[])], [g])
        assert problem.startswith("default/p: message")

    def test_a_nomination_where_upstream_ran_no_preemption_is_a_mismatch(self) -> None:
        g = upstream(None, {}, message="m")
        assert compare([preempting("a", ["default/x"])], [g]) == [
            "default/p: we nominated a, upstream ran no DefaultPreemption"
        ]

    def test_a_prefilter_that_ended_the_cycle_differs_only_in_the_tail(self) -> None:
        """docs/differences.md: upstream's message ends with DynamicResources' internal "not found",
        ours with the FitError; any other difference is still one."""
        fit = '0/1 nodes are available: persistentvolumeclaim "c" not found.'
        g = upstream(None, {}, message=f"{fit} not found")
        assert compare([ours(None, {}, message=fit, nominatedNode=None, victims=[])], [g]) == []
        other = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        (problem,) = compare([ours(None, {}, message=other, nominatedNode=None, victims=[])], [g])
        assert problem.startswith("default/p: message")


class TestPlacementMessage:
    """1.37's preemption message names the node and the victim count of upstream's real PostFilter,
    whose parallel dry run may find other candidates than its deterministic view (seeds 2000200,
    2000547, 2001142 at 1.37): that tail alone is judged by the view, like the nomination."""

    FIT = "0/2 nodes are available: 2 Insufficient cpu."
    A = candidate("a", ["default/x"], [0, 0, -(2**31), -1, 5])

    def message(self, node: str, victims: int) -> str:
        return (
            f"{self.FIT} preemption: found a potential placement for pod on node {node}, preempting {victims} victims"
        )

    def test_only_the_placement_tail_differs(self) -> None:
        g = upstream(None, {}, message=self.message("b", 3), preemption=view(self.A))
        p = ours(None, {}, message=self.message("a", 1), nominatedNode="a", victims=["default/x"])
        assert compare([p], [g]) == []

    def test_our_node_is_still_judged_by_the_view(self) -> None:
        g = upstream(None, {}, message=self.message("a", 1), preemption=view(self.A))
        p = ours(None, {}, message=self.message("b", 1), nominatedNode="b", victims=["default/y"])
        (problem,) = compare([p], [g])
        assert problem.startswith("default/p: nominated to b None, upstream's best: ['a']")

    def test_any_other_difference_is_still_one(self) -> None:
        g = upstream(None, {}, message=self.message("a", 1), preemption=view(self.A))
        other = self.message("a", 1).replace("2 Insufficient cpu", "2 Insufficient memory")
        p = ours(None, {}, message=other, nominatedNode="a", victims=["default/x"])
        (problem,) = compare([p], [g])
        assert problem.startswith("default/p: message")


def test_a_dra_backed_extended_resource_refusal_in_other_words_is_a_mismatch() -> None:
    """DynamicResources allocates DeviceClass-backed extended resources as upstream (1.36+): the words
    the old stand-in refused with are no longer excused (docs/differences.md has no entry left)."""
    refusal = 'extended resource "example.com/gpu" (DeviceClass "gpu") needs the DynamicResources plugin'
    mine = {"plugin": "DynamicResources", "reason": refusal, "code": UNRESOLVABLE}
    theirs = {**mine, "reason": "cannot allocate all claims"}
    problems = compare(
        [ours(None, {"a": {**FEASIBLE, "filter": mine}}, message=f"0/1 nodes are available: 1 {refusal}.")],
        [
            upstream(
                None,
                {"a": {**FEASIBLE, "filter": theirs}},
                message="0/1 nodes are available: 1 cannot allocate all claims.",
            )
        ],
    )
    assert len(problems) == 2, problems


def test_several_extended_resources_short_on_one_node_compare_in_any_order() -> None:
    """docs/differences.md: upstream lists them in Go map order, we sort them; cpu and memory keep
    their fixed places, and a reason more or less is still a mismatch."""
    fit = {"plugin": "NodeResourcesFit", "code": UNRESOLVABLE}
    mine = {**fit, "reason": "Insufficient cpu, Insufficient example.com/fpga, Insufficient example.com/gpu"}
    theirs = {**fit, "reason": "Insufficient cpu, Insufficient example.com/gpu, Insufficient example.com/fpga"}
    assert (
        compare(
            [ours(None, {"a": {**FEASIBLE, "filter": mine}})], [upstream(None, {"a": {**FEASIBLE, "filter": theirs}})]
        )
        == []
    )
    fewer = {**fit, "reason": "Insufficient cpu, Insufficient example.com/gpu"}
    assert compare(
        [ours(None, {"a": {**FEASIBLE, "filter": mine}})], [upstream(None, {"a": {**FEASIBLE, "filter": fewer}})]
    )
    moved = {**fit, "reason": "Insufficient example.com/fpga, Insufficient cpu, Insufficient example.com/gpu"}
    assert compare(
        [ours(None, {"a": {**FEASIBLE, "filter": moved}})], [upstream(None, {"a": {**FEASIBLE, "filter": theirs}})]
    )


def test_the_oracles_two_views_may_list_extended_reasons_in_either_order() -> None:
    """Seed 6001206 at 1.36: upstream's real cycle and the oracle's second view walk the same Go
    map twice; only the order of the extended resources' reasons differs, which is no self-check failure."""
    fit = {"plugin": "NodeResourcesFit", "code": UNRESOLVABLE}
    gpu_first = {**fit, "reason": "Insufficient example.com/gpu, Insufficient example.com/fpga"}
    fpga_first = {**fit, "reason": "Insufficient example.com/fpga, Insufficient example.com/gpu"}
    nodes = {"a": scored(300), "b": {**FEASIBLE, "filter": fpga_first}}
    second = {"a": scored(300), "b": {**FEASIBLE, "filter": gpu_first}}
    full = {"code": "Success", "best": ["a"], "feasible": ["a"], "nodes": second}
    assert compare([ours("a", nodes)], [upstream("a", nodes, full=full)]) == []
    other = {**full, "nodes": {**second, "b": {**FEASIBLE, "filter": {**fit, "reason": "Insufficient cpu"}}}}
    assert compare([ours("a", nodes)], [upstream("a", nodes, full=other)])
