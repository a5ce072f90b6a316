"""TaintToleration (spec section 3), driven through Filter and PreScore → Score → NormalizeScore.

Cases ported from upstream ``tainttoleration/taint_toleration_test.go`` keep their names as ids.
The comparison operators (Gt/Lt) sit behind the alpha gate ``TaintTolerationComparisonOperators``,
which is off in our scheduler: the gate-on cases are checked on ``Toleration.tolerates`` directly.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.taints import Taint, Toleration, find_untolerated
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.tainttoleration import taint_toleration
from scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from scheduler.testing import make_node, make_pod
from tests.helpers import TT, UNTOLERATED, make_cache, plugin_handle, schedule, score_nodes

UNTOLERATED_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNTOLERATED,), TT)
Tol = dict[str, Any]
TaintSpec = tuple[str, str, str]


def _node(name: str, taints: list[TaintSpec]) -> Any:
    node = make_node(name)
    for key, value, effect in taints:
        node = node.taint(key, value, effect)
    return node


def _pod(tolerations: list[Tol]) -> Any:
    pod = make_pod("pod1")
    for tol in tolerations:
        pod = pod.toleration(**tol)
    return pod


def run_filter(tolerations: list[Tol], taints: list[TaintSpec], *, with_snapshot: bool = True) -> Status | None:
    cache = make_cache([_node("nodeA", taints)])
    plugin = TaintToleration({}, plugin_handle(cache) if with_snapshot else plugin_handle(make_cache()))
    info = cache.get("nodeA")
    assert info is not None
    return plugin.filter(CycleState(), _pod(tolerations).build(), info)


# -- Filter (upstream TestTaintTolerationFilter) ---------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"),
    [
        pytest.param(
            [],
            [("dedicated", "user1", "NoSchedule")],
            UNTOLERATED_STATUS,
            id="A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
            [("dedicated", "user1", "NoSchedule")],
            None,
            id="A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        ),
        pytest.param(
            [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
            [("dedicated", "user1", "NoSchedule")],
            UNTOLERATED_STATUS,
            id="A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        ),
        pytest.param(
            [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
            [("foo", "bar", "NoSchedule")],
            None,
            id=(
                "A pod can be scheduled onto the node, with a toleration uses operator Exists "
                "that tolerates the taints on the node"
            ),
        ),
        pytest.param(
            [
                {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
                {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
            ],
            [("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")],
            None,
            id=(
                "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
                "pod can be scheduled onto the node"
            ),
        ),
        pytest.param(
            [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
            [("foo", "bar", "NoSchedule")],
            UNTOLERATED_STATUS,
            id=(
                "A pod has a toleration that keys and values match the taint on the node, but (non-empty) "
                "effect doesn't match, can't be scheduled onto the node"
            ),
        ),
        pytest.param(
            [{"key": "foo", "operator": "Equal", "value": "bar"}],
            [("foo", "bar", "NoSchedule")],
            None,
            id=(
                "The pod has a toleration that keys and values match the taint on the node, the effect of "
                "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node"
            ),
        ),
        pytest.param(
            [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
            [("dedicated", "user1", "PreferNoSchedule")],
            None,
            id=(
                "The pod has a toleration that key and value don't match the taint on the node, but the "
                "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node"
            ),
        ),
        pytest.param(
            [],
            [("dedicated", "user1", "PreferNoSchedule")],
            None,
            id=(
                "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. "
                "Pod can be scheduled onto the node"
            ),
        ),
        pytest.param(
            [{"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"}],
            [("node.kubernetes.io/sla", "950", "NoSchedule")],
            UNTOLERATED_STATUS,
            id="Pod with Gt toleration cannot be scheduled when feature gate is disabled",
        ),
        pytest.param(
            [{"key": "node.kubernetes.io/sla", "operator": "Lt", "value": "950", "effect": "NoSchedule"}],
            [("node.kubernetes.io/sla", "800", "NoSchedule")],
            UNTOLERATED_STATUS,
            id="Pod with Lt toleration cannot be scheduled when feature gate is disabled",
        ),
        pytest.param(
            [
                {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"},
            ],
            [("dedicated", "user1", "NoSchedule")],
            None,
            id="Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is honored",
        ),
        pytest.param(
            [
                {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"},
            ],
            [("dedicated", "user1", "NoSchedule"), ("node.kubernetes.io/sla", "950", "NoSchedule")],
            UNTOLERATED_STATUS,
            id="Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is disabled",
        ),
        # Our own cases.
        pytest.param([], [("k", "v", "NoExecute")], UNTOLERATED_STATUS, id="noexecute-taint-filters"),
        pytest.param(
            [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
            [("k", "v", "NoExecute")],
            None,
            id="toleration-seconds-play-no-role",
        ),
        pytest.param(
            [{"operator": "Exists"}], [("a", "", "NoSchedule"), ("b", "x", "NoExecute")], None, id="exists-all"
        ),
        pytest.param(
            [{"operator": "Exists", "effect": "NoSchedule"}],
            [("a", "", "NoSchedule"), ("b", "x", "NoExecute")],
            UNTOLERATED_STATUS,
            id="exists-all-keys-of-one-effect",
        ),
        pytest.param(
            [{"key": "k", "operator": "Equal"}], [("k", "", "NoSchedule")], None, id="empty-value-equals-empty-value"
        ),
        pytest.param([{"key": "k", "value": "v"}], [("k", "V", "NoSchedule")], UNTOLERATED_STATUS, id="values-exact"),
        pytest.param([], [], None, id="no-taints"),
    ],
)
def test_filter(tolerations: list[Tol], taints: list[TaintSpec], want: Status | None) -> None:
    assert run_filter(tolerations, taints) == want
    # The verdict does not depend on the memo shared through the snapshot.
    assert run_filter(tolerations, taints, with_snapshot=False) == want


def test_filter_reason_is_generic_and_not_the_exported_constant() -> None:
    status = run_filter([], [("dedicated", "gpu", "NoSchedule")])
    assert status is not None
    assert status.message() == "node(s) had untolerated taint(s)"
    assert status.message() != taint_toleration.ERR_REASON_NOT_MATCH
    assert "gpu" not in status.message()  # 1.35 does not leak taint values


def test_taint_toleration_filter_never_returns_the_unused_exported_constant() -> None:
    """The same through the pipeline's FitError message."""
    r = schedule([make_node("n1").taint("k", "v")], [], make_pod("p"))
    assert taint_toleration.ERR_REASON_NOT_MATCH not in r.message
    assert taint_toleration.ERR_REASON_UNTOLERATED in r.message


def test_first_untolerated_taint_in_spec_order() -> None:
    taints = (Taint("a", "1", "PreferNoSchedule"), Taint("b", "2", "NoSchedule"), Taint("c", "3", "NoExecute"))
    effects = taint_toleration.FILTER_EFFECTS
    assert find_untolerated(taints, (), effects) == Taint("b", "2", "NoSchedule")
    assert find_untolerated(taints, (Toleration("b", "Exists"),), effects) == Taint("c", "3", "NoExecute")
    assert find_untolerated(taints, (Toleration("", "Exists"),), effects) is None


def test_cordon_flag_is_not_a_taint_for_this_plugin() -> None:
    cache = make_cache([make_node("n").unschedulable()])
    info = cache.get("n")
    assert info is not None
    assert TaintToleration({}, plugin_handle(cache)).filter(CycleState(), make_pod("p").build(), info) is None


def test_filter_through_the_pipeline() -> None:
    nodes = [_node("a", [("dedicated", "gpu", "NoSchedule")]), _node("b", [("x", "", "NoExecute")])]
    r = schedule(nodes, [], make_pod("p"))
    assert r.message == "0/2 nodes are available: 2 node(s) had untolerated taint(s)."
    assert r.rejectors == {TT}
    assert {n: v[1] for n, v in r.reasons().items()} == {
        "a": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "b": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }


# -- comparison operators, gate on (upstream TestTaintTolerationFilterWithFeatureGate) -------------


@pytest.mark.parametrize(
    ("toleration", "taint", "gate_on", "gate_off"),
    [
        pytest.param(
            Toleration("node.example.com/priority-level", "Gt", "950", "NoSchedule"),
            Taint("node.example.com/priority-level", "800", "NoSchedule"),
            False,
            False,
            id="Pod with Gt toleration cannot be scheduled on node when taint value is lower than threshold",
        ),
        pytest.param(
            Toleration("node.kubernetes.io/sla", "Gt", "750", "NoSchedule"),
            Taint("node.kubernetes.io/sla", "950", "NoSchedule"),
            True,
            False,
            id="Pod with Gt toleration can be scheduled on node when taint value is higher than threshold",
        ),
        pytest.param(
            Toleration("node.example.com/priority-level", "Lt", "800", "NoSchedule"),
            Taint("node.example.com/priority-level", "950", "NoSchedule"),
            False,
            False,
            id="Pod with Lt toleration cannot be scheduled on node when taint value is higher than threshold",
        ),
        pytest.param(
            Toleration("node.kubernetes.io/sla", "Lt", "950", "NoSchedule"),
            Taint("node.kubernetes.io/sla", "800", "NoSchedule"),
            True,
            False,
            id="Pod with Lt toleration can be scheduled on node when taint value is lower than threshold",
        ),
        pytest.param(
            Toleration("node.kubernetes.io/sla", "Gt", "950", "NoSchedule"),
            Taint("node.kubernetes.io/sla", "high", "NoSchedule"),
            False,
            False,
            id="Pod with Gt toleration cannot be scheduled on node with non-numeric taint value",
        ),
        pytest.param(Toleration("g", "Gt", "3"), Taint("g", "05", "NoSchedule"), False, False, id="taint-leading-zero"),
        pytest.param(Toleration("g", "Gt", "03"), Taint("g", "5", "NoSchedule"), False, False, id="tol-leading-zero"),
        pytest.param(Toleration("g", "Gt", "+3"), Taint("g", "5", "NoSchedule"), False, False, id="plus-sign-refused"),
        pytest.param(Toleration("g", "Gt", "-3"), Taint("g", "0", "NoSchedule"), True, False, id="negative-ok"),
        pytest.param(Toleration("g", "Lt", "0"), Taint("g", "-1", "NoSchedule"), True, False, id="zero-ok"),
        pytest.param(Toleration("g", "Gt", "-0"), Taint("g", "1", "NoSchedule"), False, False, id="minus-zero-refused"),
        pytest.param(
            Toleration("g", "Lt", "9223372036854775808"),
            Taint("g", "1", "NoSchedule"),
            False,
            False,
            id="int64-overflow-refused",
        ),
        pytest.param(Toleration("g", "Gt", "3", "NoExecute"), Taint("g", "5", "NoSchedule"), False, False, id="effect"),
        pytest.param(Toleration("g", "Foo", "3"), Taint("g", "5", "NoSchedule"), False, False, id="unknown-operator"),
        pytest.param(Toleration("gen", "Gt", "3"), Taint("gen", "5", "NoSchedule"), True, False, id="gt-any-effect"),
        pytest.param(Toleration("gen", "Lt", "3"), Taint("gen", "5", "NoSchedule"), False, False, id="lt-any-effect"),
        pytest.param(
            Toleration("gen", "Gt", "3"),
            Taint("gen", "05", "NoSchedule"),
            False,
            False,
            id="gt-any-effect-leading-zero",
        ),
    ],
)
def test_comparison_operators(toleration: Toleration, taint: Taint, gate_on: bool, gate_off: bool) -> None:
    assert toleration.tolerates(taint, comparison_operators=True) is gate_on
    assert toleration.tolerates(taint) is gate_off


def test_comparison_operator_tolerations_are_refused_by_the_api_while_the_gate_is_off() -> None:
    pod = make_pod("p").toleration("k", "Gt", "3", "NoSchedule").build()
    assert [e.path for e in pod.errors] == ["spec.tolerations[0].operator"]


# -- toleration semantics (ToleratesTaint) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        pytest.param(Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True, id="all-equal"),
        pytest.param(Toleration("k", "", "v"), Taint("k", "v", "NoExecute"), True, id="empty-operator-is-equal"),
        pytest.param(Toleration("k", "Equal", "v"), Taint("k", "w", "NoSchedule"), False, id="value-differs"),
        pytest.param(Toleration("k", "Exists"), Taint("k", "anything", "NoSchedule"), True, id="exists-ignores-value"),
        pytest.param(Toleration("", "Exists"), Taint("x", "y", "NoExecute"), True, id="empty-key-all-keys"),
        pytest.param(
            Toleration("k", "Exists", "", "NoExecute"), Taint("k", "", "NoSchedule"), False, id="effect-differs"
        ),
        pytest.param(Toleration("K", "Exists"), Taint("k", "", "NoSchedule"), False, id="key-case-sensitive"),
        pytest.param(Toleration("k", "Equal", ""), Taint("k", "", "NoSchedule"), True, id="empty-equals-empty"),
    ],
)
def test_tolerates_taint(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


# -- Score (upstream TestTaintTolerationScore) -----------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "nodes", "expected"),
    [
        pytest.param(
            [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
            [("nodeA", [("foo", "bar", "PreferNoSchedule")]), ("nodeB", [("foo", "blah", "PreferNoSchedule")])],
            [100, 0],
            id=("node with taints tolerated by the pod, gets a higher score than those node with intolerable taints"),
        ),
        pytest.param(
            [
                {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
                {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
            ],
            [
                ("nodeA", []),
                ("nodeB", [("cpu-type", "arm64", "PreferNoSchedule")]),
                ("nodeC", [("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")]),
            ],
            [100, 100, 100],
            id=(
                "the nodes that all of their taints are tolerated by the pod, get the same score, "
                "no matter how many tolerable taints a node has"
            ),
        ),
        pytest.param(
            [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
            [
                ("nodeA", []),
                ("nodeB", [("cpu-type", "arm64", "PreferNoSchedule")]),
                ("nodeC", [("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")]),
            ],
            [100, 50, 0],
            id="the more intolerable taints a node has, the lower score it gets.",
        ),
        pytest.param(
            [
                {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
                {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
            ],
            [
                ("nodeA", []),
                ("nodeB", [("cpu-type", "arm64", "NoSchedule")]),
                ("nodeC", [("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")]),
            ],
            [100, 100, 0],
            id=(
                "only taints and tolerations that have effect PreferNoSchedule are checked by "
                "taints-tolerations priority function"
            ),
        ),
        pytest.param(
            [],
            [("nodeA", []), ("nodeB", [("cpu-type", "arm64", "PreferNoSchedule")])],
            [100, 0],
            id="Default behaviour No taints and tolerations, lands on node with no taints",
        ),
        pytest.param(
            [{"key": "cpu-type", "operator": "Exists"}],
            [("nodeA", []), ("nodeB", [("cpu-type", "arm64", "PreferNoSchedule")])],
            [100, 100],
            id="toleration-with-empty-effect-counts",
        ),
        pytest.param(
            [{"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "950", "effect": "PreferNoSchedule"}],
            [
                ("nodeA", [("node.kubernetes.io/sla", "800", "PreferNoSchedule")]),
                ("nodeB", [("node.kubernetes.io/sla", "999", "PreferNoSchedule")]),
            ],
            [0, 0],  # both untolerated with the gate off: raw 1 and 1, reversed
            id="Numeric Gt operator with the feature gate disabled tolerates nothing",
        ),
    ],
)
def test_score(tolerations: list[Tol], nodes: list[tuple[str, list[TaintSpec]]], expected: list[int]) -> None:
    cache = make_cache([_node(name, taints) for name, taints in nodes])
    plugin = TaintToleration({}, plugin_handle(cache))
    _, normalized = score_nodes(plugin, cache, _pod(tolerations).build(), [n for n, _ in nodes])
    assert normalized == expected


def test_pre_score_never_skips_and_keeps_prefer_no_schedule_tolerations() -> None:
    pod = _pod(
        [
            {"key": "a", "operator": "Exists"},
            {"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"},
            {"key": "c", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "d", "operator": "Exists", "effect": "NoExecute"},
        ]
    ).build()
    state = CycleState()
    assert TaintToleration({}, plugin_handle(make_cache())).pre_score(state, pod, []) is None
    kept = state.read("PreScore" + TT, taint_toleration.PreScoreState).tolerations
    assert [t.key for t in kept] == ["a", "b"]


def test_score_counts_untolerated_prefer_no_schedule_taints() -> None:
    nodes = [("n", [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule"), ("c", "", "NoSchedule")])]
    cache = make_cache([_node(name, taints) for name, taints in nodes])
    raw, normalized = score_nodes(TaintToleration({}, plugin_handle(cache)), cache, _pod([]).build(), ["n"])
    assert raw == [2]
    assert normalized == [0]


def test_score_through_the_pipeline_has_weight_3() -> None:
    nodes = [_node("a", []), _node("b", [("x", "", "PreferNoSchedule")])]
    r = schedule(nodes, [], make_pod("p"))
    assert r.raw(TT) == {"a": 0, "b": 1}
    assert r.normalized(TT) == {"a": 100, "b": 0}
    assert r.totals == {"a": 300, "b": 0}
    assert r.host == "a"
