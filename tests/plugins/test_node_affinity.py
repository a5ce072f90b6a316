"""NodeAffinity (spec section 2), driven through PreFilter → Filter and PreScore → Score → NormalizeScore.

Cases ported from upstream ``nodeaffinity/node_affinity_test.go`` keep their names as ids.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.fields import parse_go_int64
from scheduler.api.labels import Operator, Requirement
from scheduler.api.nodeselector import FieldRequirement, NodeSelectorTerm
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status, StatusError
from scheduler.framework.types import PreFilterResult
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import (
    AFFINITY,
    CONFLICT,
    ENFORCED,
    NA,
    TT,
    ZONE,
    code_of,
    config_with,
    expr,
    make_cache,
    message_of,
    name_in,
    plugin_handle,
    schedule,
    score_nodes,
    term,
)

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def plugin(args: dict[str, Any] | None = None, nodes: list[Any] | None = None) -> tuple[NodeAffinity, Any]:
    cache = make_cache(nodes or [])
    return NodeAffinity(args or {}, plugin_handle(cache)), cache


def pod() -> PodBuilder:
    return make_pod("p")


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "preference": t} for w, t in weighted]}


# -- Go integer parsing (Gt/Lt) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("5", 5, id="plain"),
        pytest.param("05", 5, id="leading-zero"),
        pytest.param("+5", 5, id="plus-sign"),
        pytest.param("-3", -3, id="minus-sign"),
        pytest.param("-7", -7, id="minus-seven"),
        pytest.param("-0", 0, id="minus-zero"),
        pytest.param("9223372036854775807", 2**63 - 1, id="int64-max"),
        pytest.param("-9223372036854775808", -(2**63), id="int64-min"),
        pytest.param("1_0", None, id="underscore-rejected"),
        pytest.param(" 5", None, id="leading-space"),
        pytest.param("5 ", None, id="trailing-space"),
        pytest.param("5\n", None, id="trailing-newline"),
        pytest.param("5.0", None, id="decimal"),
        pytest.param("1.5", None, id="fraction"),
        pytest.param("0x10", None, id="hex"),
        pytest.param("", None, id="empty"),
        pytest.param("+", None, id="sign-only"),
        pytest.param("+-5", None, id="two-signs"),
        pytest.param("\uff15", None, id="fullwidth-digit"),
        pytest.param("\u0665", None, id="arabic-indic-digit"),
        pytest.param("\u0663", None, id="arabic-indic-three"),
        pytest.param("9223372036854775808", None, id="int64-overflow"),
        pytest.param("-9223372036854775809", None, id="int64-underflow"),
    ],
)
def test_parse_go_int64(text: str, value: int | None) -> None:
    assert parse_go_int64(text) == value


@pytest.mark.parametrize(
    ("operator", "bound", "label", "matches"),
    [
        pytest.param("Gt", "3", "5", True, id="gt-true"),
        pytest.param("Gt", "5", "5", False, id="gt-equal-false"),
        pytest.param("Lt", "5", "3", True, id="lt-true"),
        pytest.param("Lt", "3", "3", False, id="lt-equal-false"),
        pytest.param("Gt", "3", "05", True, id="label-leading-zero-is-5"),
        pytest.param("Gt", "3", "+5", True, id="label-plus-sign"),
        pytest.param("Gt", "3", "1_0", False, id="label-underscore-not-an-integer"),
        pytest.param("Lt", "100", "abc", False, id="label-not-an-integer"),
        pytest.param("Gt", "-1", "0", False, id="negative-bound-is-no-valid-label-value-so-a-parse-error"),
        pytest.param("Gt", "0", "9223372036854775808", False, id="label-overflow-not-an-integer"),
        pytest.param("Gt", "0204", "0205", True, id="both-leading-zeros"),
    ],
)
def test_gt_lt_through_filter(operator: str, bound: str, label: str, matches: bool) -> None:
    node = make_node("n").label("kernel", label)
    na, cache = plugin(nodes=[node])
    p = pod().required_terms(term(expr("kernel", operator, bound))).build()
    assert p.errors == ()
    state = CycleState()
    na.pre_filter(state, p, cache.node_infos())
    status = na.filter(state, p, cache.get("n"))
    assert code_of(status) is (Code.SUCCESS if matches else UNRESOLVABLE)


def test_gt_without_the_label_does_not_match() -> None:
    na, cache = plugin(nodes=[make_node("n")])
    p = pod().required_terms(term(expr("kernel", "Gt", "1"))).build()
    assert message_of(na.filter(CycleState(), p, cache.get("n"))) == AFFINITY


@pytest.mark.parametrize(
    "bound",
    [
        pytest.param("abc", id="word"),
        pytest.param("1_0", id="underscore"),
        pytest.param("99999999999999999999", id="huge"),
    ],
)
def test_non_integer_gt_bound_is_a_term_parse_error_not_an_invalid_pod(bound: str) -> None:
    node = make_node("n").label("kernel", "5").zone("zoneA")
    na, cache = plugin(nodes=[node])
    broken = pod().required_terms(term(expr("kernel", "Gt", bound))).build()
    assert broken.errors == ()  # the API server accepts it
    assert message_of(na.filter(CycleState(), broken, cache.get("n"))) == AFFINITY
    # Another term still matches: the parse error only disables its own term.
    other = pod().required_terms(term(expr("kernel", "Gt", bound)), term(expr(ZONE, "In", "zoneA"))).build()
    assert na.filter(CycleState(), other, cache.get("n")) is None


# -- label requirement semantics -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "labels", "matches"),
    [
        pytest.param(expr("k", "In", "a", "b"), {"k": "b"}, True, id="in-member"),
        pytest.param(expr("k", "In", "a"), {"k": "c"}, False, id="in-other-value"),
        pytest.param(expr("k", "In", "a"), {}, False, id="in-absent"),
        pytest.param(expr("k", "NotIn", "a"), {}, True, id="notin-absent-key-matches"),
        pytest.param(expr("k", "NotIn", "a"), {"k": "b"}, True, id="notin-other-value"),
        pytest.param(expr("k", "NotIn", "a"), {"k": "a"}, False, id="notin-member"),
        pytest.param(expr("k", "Exists"), {"k": ""}, True, id="exists-empty-value"),
        pytest.param(expr("k", "Exists"), {}, False, id="exists-absent"),
        pytest.param(expr("k", "DoesNotExist"), {}, True, id="doesnotexist-absent"),
        pytest.param(expr("k", "DoesNotExist"), {"k": ""}, False, id="doesnotexist-present-empty"),
        pytest.param(expr("k", "In", ""), {"k": ""}, True, id="in-empty-value"),
    ],
)
def test_requirement_operators(requirement: dict[str, Any], labels: dict[str, str], matches: bool) -> None:
    node = make_node("n")
    for k, v in labels.items():
        node = node.label(k, v)
    na, cache = plugin(nodes=[node])
    p = pod().required_terms(term(requirement)).build()
    assert p.errors == ()
    assert code_of(na.filter(CycleState(), p, cache.get("n"))) is (Code.SUCCESS if matches else UNRESOLVABLE)


def test_match_fields_are_ignored_for_a_node_without_name() -> None:
    in_node1 = NodeSelectorTerm(None, (FieldRequirement("metadata.name", False, "node1"),))
    assert in_node1.matches("node1", {})
    assert not in_node1.matches("node2", {})
    assert in_node1.matches("", {})  # upstream quirk: no fields to compare with
    not_in_node1 = NodeSelectorTerm(None, (FieldRequirement("metadata.name", True, "node1"),))
    assert not not_in_node1.matches("node1", {})
    assert not_in_node1.matches("node2", {})


def test_requirement_dataclass_gt_uses_parsed_bound() -> None:
    req = Requirement("gen", Operator.GT, frozenset({"3"}), 3)
    assert req.matches({"gen": "4"})
    assert not req.matches({"gen": "3"})


# -- PreFilter + Filter (upstream TestNodeAffinity) --------------------------------------------------

IN_FOO_BAR = term(expr("foo", "In", "bar"))


@pytest.mark.parametrize(
    ("pod_b", "labels", "node_name", "pre_status", "pre_result", "want", "args", "run_pre_filter"),
    [
        pytest.param(
            pod().node_selector({"foo": "bar"}), {}, "n", None, None, AFFINITY, None, True, id="missing labels"
        ),
        pytest.param(
            pod().node_selector({"foo": "bar"}), {"foo": "bar"}, "n", None, None, None, None, True, id="same labels"
        ),
        pytest.param(
            pod().node_selector({"foo": "bar"}),
            {"foo": "bar", "baz": "blah"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="node labels are superset",
        ),
        pytest.param(
            pod().node_selector({"foo": "bar", "baz": "blah"}),
            {"foo": "bar"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id="node labels are subset",
        ),
        pytest.param(
            pod().required_terms(term(expr("foo", "In", "bar", "value2"))),
            {"foo": "bar"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="Pod with matchExpressions using In operator that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(expr("kernel-version", "Gt", "0204"))),
            {"kernel-version": "0206"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="Pod with matchExpressions using Gt operator that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
            {"mem-type": "DDR3"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="Pod with matchExpressions using NotIn operator that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(expr("GPU", "Exists"))),
            {"GPU": "NVIDIA-GRID-K1"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="Pod with matchExpressions using Exists operator that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(expr("foo", "In", "value1", "value2"))),
            {"foo": "bar"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id="Pod with affinity that don't match node's labels won't schedule onto the node",
        ),
        pytest.param(
            pod().required_terms({"matchExpressions": []}),
            {"foo": "bar"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id=(
                "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto "
                "the node"
            ),
        ),
        pytest.param(
            pod(),
            {"foo": "bar"},
            "n",
            Code.SKIP,
            None,
            None,
            None,
            True,
            id="Pod with no Affinity will schedule onto a node",
        ),
        pytest.param(
            pod().set("spec.affinity", {"nodeAffinity": {}}),
            {"foo": "bar"},
            "n",
            Code.SKIP,
            None,
            None,
            None,
            True,
            id="Pod with Affinity but nil NodeSelector will schedule onto a node",
        ),
        pytest.param(
            pod().required_terms(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
            {"GPU": "NVIDIA-GRID-K1"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id="Pod with multiple matchExpressions ANDed that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
            {"GPU": "NVIDIA-GRID-K1"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id="Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        ),
        pytest.param(
            pod().required_terms(
                term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))
            ),
            {"foo": "bar"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id=(
                "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule "
                "onto the node"
            ),
        ),
        pytest.param(
            pod().node_selector({"foo": "bar"}).required_terms(term(expr("foo", "Exists"))),
            {"foo": "bar"},
            "n",
            None,
            None,
            None,
            None,
            True,
            id=(
                "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
                "satisfied, will schedule onto the node"
            ),
        ),
        pytest.param(
            pod().node_selector({"foo": "bar"}).required_terms(term(expr("foo", "Exists"))),
            {"foo": "barrrrrr"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id=(
                "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
                "deprecating) is not satisfied, won't schedule onto the node"
            ),
        ),
        pytest.param(
            pod().required_terms(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
            {"foo": "bar"},
            "n",
            None,
            None,
            AFFINITY,
            None,
            True,
            id="Pod with an invalid value in Affinity term won't be scheduled onto the node",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1")])),
            {},
            "node1",
            None,
            {"node1"},
            None,
            None,
            True,
            id="Pod with matchFields using In operator that matches the existing node",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1")])),
            {},
            "node2",
            None,
            {"node1"},
            AFFINITY,
            None,
            True,
            id="Pod with matchFields using In operator that does not match the existing node",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1"), name_in("node2")]), IN_FOO_BAR),
            {"foo": "bar"},
            "node2",
            None,
            None,
            None,
            None,
            True,
            id="Pod with two terms: matchFields does not match, but matchExpressions matches",
        ),
        pytest.param(
            pod().required_terms(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
            {"foo": "bar"},
            "node2",
            None,
            {"node1"},
            AFFINITY,
            None,
            True,
            id="Pod with one term: matchFields does not match, but matchExpressions matches",
        ),
        pytest.param(
            pod().required_terms(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
            {"foo": "bar"},
            "node1",
            None,
            {"node1"},
            None,
            None,
            True,
            id="Pod with one term: both matchFields and matchExpressions match",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1")]), term(expr("foo", "In", "not-match-to-bar"))),
            {"foo": "bar"},
            "node2",
            None,
            None,
            AFFINITY,
            None,
            True,
            id="Pod with two terms: both matchFields and matchExpressions do not match",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
            {},
            "node2",
            None,
            {"node1", "node2"},
            None,
            None,
            True,
            id="Pod with two terms of node.Name affinity",
        ),
        pytest.param(
            pod().required_terms(term(fields=[name_in("node1"), name_in("node2")])),
            {"foo": "bar"},
            "node2",
            UNRESOLVABLE,
            None,
            AFFINITY,
            None,
            True,
            id="Pod with two conflicting mach field requirements",
        ),
        pytest.param(
            pod().required_terms(term(expr("zone", "In", "foo"))),
            {"zone": "foo"},
            "node2",
            None,
            None,
            None,
            required(term(fields=[name_in("node2")])),
            True,
            id="Matches added affinity and Pod's node affinity",
        ),
        pytest.param(
            pod().required_terms(term(expr("zone", "In", "bar"))),
            {"zone": "foo"},
            "node2",
            None,
            None,
            AFFINITY,
            required(term(fields=[name_in("node2")])),
            True,
            id="Matches added affinity but not Pod's node affinity",
        ),
        pytest.param(
            pod(),
            {"zone": "foo"},
            "node2",
            None,
            None,
            ENFORCED,
            required(term(expr("zone", "In", "bar"))),
            True,
            id="Doesn't match added affinity",
        ),
        pytest.param(
            pod().node_selector({"foo": "bar"}),
            {"foo": "bar", "baz": "blah"},
            "n",
            None,
            None,
            None,
            None,
            False,
            id="Matches node selector correctly even if PreFilter is not called",
        ),
        pytest.param(
            pod().required_terms(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
            {"GPU": "NVIDIA-GRID-K1"},
            "n",
            None,
            None,
            None,
            None,
            False,
            id="Matches node affinity correctly even if PreFilter is not called",
        ),
        pytest.param(
            pod().node_selector({"foo": "baz"}),
            {"foo": "bar"},
            "n",
            None,
            None,
            ENFORCED,
            required(term(expr("foo", "DoesNotExist"))),
            True,
            id="added affinity is checked before the pod's own affinity",
        ),
    ],
)
def test_pre_filter_and_filter(
    pod_b: PodBuilder,
    labels: dict[str, str],
    node_name: str,
    pre_status: Code | None,
    pre_result: set[str] | None,
    want: str | None,
    args: dict[str, Any] | None,
    run_pre_filter: bool,
) -> None:
    node = make_node(node_name).unlabel("kubernetes.io/hostname")
    for k, v in labels.items():
        node = node.label(k, v)
    na, cache = plugin({"addedAffinity": args} if args else None, [node])
    p = pod_b.build()
    state = CycleState()
    if run_pre_filter:
        result, status = na.pre_filter(state, p, cache.node_infos())
        assert (None if status is None else status.code) is pre_status
        assert (None if result is None else set(result.node_names or ())) == pre_result
        if pre_status is UNRESOLVABLE:
            assert status is not None
            assert status.message() == CONFLICT
    status = na.filter(state, p, cache.get(node_name))
    assert (None if status is None else status.message()) == want
    if status is not None:
        assert status.code is UNRESOLVABLE
        assert status.plugin == NA


@pytest.mark.parametrize(
    ("terms", "narrowed"),
    [
        pytest.param([term(fields=[name_in("a"), name_in("a")])], {"a"}, id="same-name-twice-intersects"),
        pytest.param(
            [term(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}])],
            None,
            id="notin-never-narrows",
        ),
        pytest.param([term(expr("k", "In", "a"))], None, id="label-expressions-never-narrow"),
        pytest.param([term(fields=[name_in("a")]), {}], None, id="empty-term-disables-narrowing"),
        pytest.param(
            [term(fields=[name_in("a")]), term(fields=[name_in("b")]), term(fields=[name_in("a")])],
            {"a", "b"},
            id="union-over-terms",
        ),
    ],
)
def test_pre_filter_narrowing(terms: list[dict[str, Any]], narrowed: set[str] | None) -> None:
    na, cache = plugin(nodes=[make_node("a"), make_node("b")])
    result, status = na.pre_filter(CycleState(), pod().required_terms(*terms).build(), cache.node_infos())
    assert status is None
    assert (None if result is None else set(result.node_names or ())) == narrowed


def test_pre_filter_empty_node_selector_map_does_not_skip() -> None:
    na, cache = plugin(nodes=[make_node("a")])
    state = CycleState()
    result, status = na.pre_filter(state, pod().node_selector({}).build(), cache.node_infos())
    assert (result, status) == (None, None)
    assert state.get("PreFilterNodeAffinity") is not None
    assert na.filter(state, pod().node_selector({}).build(), cache.get("a")) is None


def test_pre_filter_does_not_skip_when_added_affinity_is_configured() -> None:
    na, cache = plugin({"addedAffinity": required(term(expr("k", "Exists")))}, [make_node("a")])
    result, status = na.pre_filter(CycleState(), pod().build(), cache.node_infos())
    assert (result, status) == (None, None)


def test_all_terms_empty_matches_no_node() -> None:
    na, cache = plugin(nodes=[make_node("a").label("foo", "bar")])
    p = pod().required_terms({}, {"matchExpressions": [], "matchFields": []}).build()
    state = CycleState()
    result, status = na.pre_filter(state, p, cache.node_infos())
    assert (result, status) == (None, None)
    assert message_of(na.filter(state, p, cache.get("a"))) == AFFINITY


def test_invalid_added_affinity_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="addedAffinity"):
        plugin({"addedAffinity": required(term(expr("k", "Gt", "abc")))})


# -- through the pipeline ------------------------------------------------------------------------


def test_added_affinity_via_plugin_config_reason_and_message() -> None:
    cfg = config_with([{"name": NA, "args": {"addedAffinity": required(term(expr("pool", "In", "batch")))}}])
    nodes = [make_node("a").label("pool", "batch"), make_node("b"), make_node("c").label("pool", "web")]
    r = schedule(nodes, [], pod(), cfg)
    assert r.feasible == {"a"}
    assert r.reasons() == {"b": (ENFORCED, UNRESOLVABLE, NA), "c": (ENFORCED, UNRESOLVABLE, NA)}
    r = schedule(nodes[1:], [], pod(), cfg)
    assert r.message == "0/2 nodes are available: 2 node(s) didn't match scheduler-enforced node affinity."
    assert r.rejectors == {NA}


def test_node_selector_mismatch_through_the_pipeline() -> None:
    r = schedule([make_node("a"), make_node("b")], [], pod().node_selector({"disk": "ssd"}))
    assert r.message == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    assert r.rejectors == {NA}
    assert r.code is Code.UNSCHEDULABLE


@pytest.mark.parametrize(
    ("op", "values", "label", "matches"),
    [
        pytest.param("In", ["a", "b"], "a", True, id="in-member"),
        pytest.param("In", ["a"], None, False, id="in-absent"),
        pytest.param("NotIn", ["a"], None, True, id="notin-absent"),
        pytest.param("NotIn", ["a"], "a", False, id="notin-member"),
        pytest.param("NotIn", ["a"], "b", True, id="notin-other-value"),
        pytest.param("Exists", [], "", True, id="exists-empty-value"),
        pytest.param("Exists", [], None, False, id="exists-absent"),
        pytest.param("DoesNotExist", [], None, True, id="doesnotexist-absent"),
        pytest.param("DoesNotExist", [], "x", False, id="doesnotexist-present"),
        pytest.param("Gt", ["3"], "4", True, id="gt-greater"),
        pytest.param("Gt", ["3"], "3", False, id="gt-equal"),
        pytest.param("Lt", ["3"], "-1", True, id="lt-negative"),
        pytest.param("Lt", ["3"], "x", False, id="lt-not-an-integer"),
        pytest.param("Gt", ["3"], None, False, id="gt-absent"),
    ],
)
def test_node_selector_operators(op: str, values: list[str], label: str | None, matches: bool) -> None:
    """Each operator of a required term through the whole pipeline: the pod lands on n1 or nowhere."""
    node = make_node("n1")
    if label is not None:
        node.label("k", label)
    p = pod().required_terms({"matchExpressions": [{"key": "k", "operator": op, "values": values}]})
    assert (schedule([node], [], p).host == "n1") is matches


def test_gt_with_a_non_integer_bound_is_accepted_by_the_api_but_matches_nothing() -> None:
    p = pod().required_terms({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["abc"]}]})
    assert not p.build().errors
    r = schedule([make_node("n1").label("k", "5")], [], p)
    assert r.host is None and "didn't match Pod's node affinity/selector" in r.message


def test_match_fields_not_in_excludes_the_node_but_does_not_narrow() -> None:
    p = pod().required_terms({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]})
    r = schedule([make_node("n1"), make_node("n2")], [], p)
    assert r.feasible == {"n2"}
    assert r.reason("n1") == AFFINITY


def test_empty_term_matches_nothing_and_zero_terms_are_an_api_error() -> None:
    p = pod().required_terms({}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]})
    r = schedule([make_node("n1"), make_node("n2").label("a")], [], p)
    assert r.feasible == {"n2"}
    zero = make_pod("q").required_terms().build()
    assert any("nodeSelectorTerms" in e.path for e in zero.errors)


def test_added_affinity_is_checked_before_the_pods_own() -> None:
    """addedAffinity (required and preferred) from a profile without apiVersion/kind."""
    added = {
        **required(term(expr("pool", "In", "spread"))),
        **preferred((10, term(expr("fast", "Exists")))),
    }
    config = {
        "profiles": [
            {"schedulerName": "spread-scheduler", "pluginConfig": [{"name": NA, "args": {"addedAffinity": added}}]}
        ]
    }
    nodes = [
        make_node("n1"),
        make_node("n2").label("pool", "spread"),
        make_node("n3").label("pool", "spread").label("fast"),
    ]
    r = schedule(nodes, [], pod().node_selector({"x": "y"}), config=config)
    assert r.reason("n1") == ENFORCED
    assert r.reason("n2") == AFFINITY
    ok = schedule(nodes, [], pod(), config=config)
    assert ok.feasible == {"n2", "n3"} and ok.host == "n3"
    assert ok.raw(NA) == {"n2": 0, "n3": 10}


def test_pre_filter_conflict_status() -> None:
    na, cache = plugin(nodes=[make_node("a")])
    result, status = na.pre_filter(
        CycleState(), pod().required_terms(term(fields=[name_in("a"), name_in("b")])).build(), cache.node_infos()
    )
    assert result is None
    assert status == Status(UNRESOLVABLE, (CONFLICT,))


# -- PreScore / Score / NormalizeScore (upstream TestNodeAffinityPriority) -------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)


def _labelled(name: str, labels: dict[str, str]) -> Any:
    node = make_node(name)
    for k, v in labels.items():
        node = node.label(k, v)
    return node


@pytest.mark.parametrize(
    ("affinity", "nodes", "expected", "args"),
    [
        pytest.param(
            AFFINITY1,
            [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
            [0, 0, 0],
            None,
            id=(
                "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is "
                "zero"
            ),
        ),
        pytest.param(
            AFFINITY1,
            [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
            [100, 0, 0],
            None,
            id="only node1 matches the preferred scheduling requirements of pod",
        ),
        pytest.param(
            AFFINITY2,
            [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
            [18, 100, 36],
            None,
            id="all nodes matches the preferred scheduling requirements of pod but with different priorities ",
        ),
        pytest.param(
            None,
            [("node1", LABEL1), ("node2", LABEL2)],
            [100, 0],
            AFFINITY1,
            id="added affinity",
        ),
        pytest.param(
            AFFINITY1,
            [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
            [40, 60, 100],
            preferred((3, term(expr("key", "In", "value")))),
            id="added affinity and pod has default affinity",
        ),
    ],
)
def test_priority(
    affinity: dict[str, Any] | None,
    nodes: list[tuple[str, dict[str, str]]],
    expected: list[int],
    args: dict[str, Any] | None,
) -> None:
    built = [_labelled(n, labels) for n, labels in nodes]
    na, cache = plugin({"addedAffinity": args} if args else None, built)
    p = pod()
    if affinity is not None:
        p = p.set("spec.affinity", {"nodeAffinity": affinity})
    _, normalized = score_nodes(na, cache, p.build(), [n for n, _ in nodes])
    assert normalized == expected


def test_calculate_the_priorities_correctly_even_if_pre_score_is_not_called() -> None:
    nodes = [_labelled("node1", LABEL1), _labelled("node5", LABEL5), _labelled("node2", LABEL2)]
    na, cache = plugin(nodes=nodes)
    p = pod().set("spec.affinity", {"nodeAffinity": AFFINITY2}).build()
    state = CycleState()
    infos = [cache.get(n) for n in ("node1", "node5", "node2")]
    raw = [na.score(state, p, i) for i in infos]
    assert raw == [2, 11, 4]
    na.normalize_score(state, p, raw, infos)
    assert raw == [18, 100, 36]


def test_weights_of_matching_terms_add_up() -> None:
    p = pod().preferred_term(5, term(expr(ZONE, "In", "zoneA"))).preferred_term(3, term(expr("disk", "Exists")))
    p = p.preferred_term(1, term(expr("disk", "Exists")))
    na, cache = plugin(nodes=[make_node("n1").zone("zoneA").label("disk", ""), make_node("n2")])
    raw, normalized = score_nodes(na, cache, p.build(), ["n1", "n2"])
    assert raw == [9, 0]
    assert normalized == [100, 0]


def test_pre_score_skips_without_preferred_terms() -> None:
    na, cache = plugin(nodes=[make_node("a")])
    status = na.pre_score(CycleState(), pod().required_terms(IN_FOO_BAR).build(), cache.node_infos())
    assert status == Status(Code.SKIP)


def test_pre_score_does_not_skip_with_added_preferred_terms() -> None:
    na, cache = plugin({"addedAffinity": AFFINITY1}, [make_node("a")])
    assert na.pre_score(CycleState(), pod().build(), cache.node_infos()) is None


def test_pre_score_error_for_a_non_integer_gt_value() -> None:
    na, cache = plugin(nodes=[make_node("a")])
    p = pod().preferred_term(2, term(expr("gen", "Gt", "abc"))).build()
    assert p.errors == ()  # accepted by the API server
    status = na.pre_score(CycleState(), p, cache.node_infos())
    assert status is not None
    assert status.code is Code.ERROR
    assert "for 'Gt', 'Lt' operators, the value must be an integer" in status.message()


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        pytest.param(
            [(2, [("gen", "Gt", "abc")])],
            "[0].matchExpressions[0].values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, "
            "the value must be an integer",
            id="one-error-alone",
        ),
        pytest.param(
            [(0, [("gen", "Gt", "zero-weight-is-not-parsed")]), (3, [("a", "In", "ok"), ("gen", "Lt", "x y")])],
            "[[1].matchExpressions[1].values[0]: Invalid value: \"x y\": for 'Gt', 'Lt' operators, the value must "
            'be an integer, [1].matchExpressions[1].values[0][gen]: Invalid value: "x y": a valid label must be '
            "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
            id="several-aggregated-index-counts-skipped-terms",
        ),
    ],
)
def test_pre_score_error_text_is_upstreams(terms: list[tuple[int, list[tuple[str, str, str]]]], message: str) -> None:
    """``NewPreferredSchedulingTerms``' aggregate, byte for byte (paths relative to the list, the label
    value check's ``[key]``); the differential campaign found the old wording (seed 1000000)."""
    na, cache = plugin(nodes=[make_node("a")])
    builder = pod()
    for weight, exprs in terms:
        builder = builder.preferred_term(weight, term(*(expr(k, op, v) for k, op, v in exprs)))
    status = na.pre_score(CycleState(), builder.build(), cache.node_infos())
    assert status == Status.as_error(message)


def test_score_without_pre_score_fails_with_the_same_text() -> None:
    """PreScore disabled: Score parses the terms itself and fails with PreScore's aggregate, not another
    wording (the two paths read one helper)."""
    na, cache = plugin(nodes=[make_node("a")])
    p = pod().preferred_term(2, term(expr("gen", "Gt", "abc"), expr("gen", "Lt", "x"))).build()
    expected = na.pre_score(CycleState(), p, cache.node_infos())
    assert expected is not None and expected.message().startswith("[")
    with pytest.raises(StatusError) as info:
        na.score(CycleState(), p, cache.node_infos()[0])
    assert info.value.status == expected


@pytest.mark.parametrize(
    ("weight", "key"), [pytest.param(2, "gen", id="weight-2"), pytest.param(1, "k", id="weight-1")]
)
def test_pre_score_error_fails_the_cycle_only_with_two_feasible_nodes(weight: int, key: str) -> None:
    p = pod().preferred_term(weight, term(expr(key, "Gt", "abc")))
    r = schedule([make_node("a"), make_node("b")], [], p)
    assert r.code is Code.ERROR
    assert r.host is None
    assert r.message.startswith('running PreScore plugin "NodeAffinity": ')
    assert "for 'Gt', 'Lt' operators, the value must be an integer" in r.message
    assert r.rejectors == set()
    # One feasible node: no PreScore, so the broken preferred term never matters.
    assert schedule([make_node("a")], [], p).host == "a"


def test_preferred_scores_through_the_pipeline_with_weight_2() -> None:
    p = pod().preferred_term(10, term(expr("disk", "In", "ssd")))
    r = schedule([make_node("a").label("disk", "ssd"), make_node("b")], [], p)
    assert r.raw(NA) == {"a": 10, "b": 0}
    assert r.normalized(NA) == {"a": 100, "b": 0}
    assert r.totals == {"a": 300 + 200, "b": 300}
    assert r.scored_plugins == [TT, NA]
    assert r.host == "a"


def test_added_preferred_terms_via_plugin_config() -> None:
    cfg = config_with([{"name": NA, "args": {"addedAffinity": preferred((7, term(expr("tier", "In", "gold"))))}}])
    r = schedule([make_node("a"), make_node("b").label("tier", "gold")], [], pod(), cfg)
    assert r.raw(NA) == {"a": 0, "b": 7}
    assert r.host == "b"


def test_pre_filter_result_type() -> None:
    na, cache = plugin(nodes=[make_node("node1")])
    result, _ = na.pre_filter(CycleState(), pod().required_terms(term(fields=[name_in("node1")])).build(), [])
    assert result == PreFilterResult(frozenset({"node1"}))
    assert cache.get("node1") is not None


def test_zero_terms_match_no_node() -> None:
    na, cache = plugin(nodes=[make_node("a")])
    p = pod().set("spec.affinity", {"nodeAffinity": required()}).build()
    assert p.errors != ()  # the API server requires one term; the plugin still answers
    state = CycleState()
    assert na.pre_filter(state, p, cache.node_infos()) == (None, None)
    assert message_of(na.filter(state, p, cache.get("a"))) == AFFINITY


def test_empty_preferred_term_is_dropped() -> None:
    p = pod().preferred_term(50, {}).preferred_term(3, term(expr("disk", "Exists")))
    assert p.build().errors == ()
    na, cache = plugin(nodes=[make_node("n1").label("disk", "ssd"), make_node("n2")])
    raw, normalized = score_nodes(na, cache, p.build(), ["n1", "n2"])
    assert raw == [3, 0]
    assert normalized == [100, 0]


def test_preferred_term_uses_and_semantics_and_match_fields() -> None:
    p = pod().preferred_term(4, term(expr("disk", "In", "ssd"), fields=[name_in("n1")]))
    na, cache = plugin(nodes=[make_node("n1").label("disk", "ssd"), make_node("n2").label("disk", "ssd")])
    raw, _ = score_nodes(na, cache, p.build(), ["n1", "n2"])
    assert raw == [4, 0]
