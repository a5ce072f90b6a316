"""Rules of each plugin that the spec vectors do not pin: parsing, reasons, args, edge cases."""

from __future__ import annotations

import pytest

from scheduler.api.fields import parse_go_int64
from scheduler.api.objects import Node, Pod
from scheduler.api.taints import Taint, Toleration
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodeInfo
from scheduler.plugins.helper.math import go_round
from scheduler.plugins.helper.normalize_score import default_normalize_score
from scheduler.plugins.nodeaffinity import node_affinity
from scheduler.plugins.nodename import node_name
from scheduler.plugins.nodeunschedulable import node_unschedulable
from scheduler.plugins.podtopologyspread import filtering
from scheduler.plugins.podtopologyspread.scoring import score_for_count, topology_normalizing_weight
from scheduler.plugins.queuesort.priority_sort import PrioritySort
from scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.plugins.tainttoleration import taint_toleration
from scheduler.testing import make_node, make_pod
from tests.core.harness import FOO, HOSTNAME, ZONE, incoming, schedule


def test_reason_strings_are_upstream_text() -> None:
    assert node_affinity.ERR_REASON_POD == "node(s) didn't match Pod's node affinity/selector"
    assert node_affinity.ERR_REASON_ENFORCED == "node(s) didn't match scheduler-enforced node affinity"
    assert node_affinity.ERR_REASON_CONFLICT == "pod affinity terms conflict"
    assert taint_toleration.ERR_REASON_UNTOLERATED == "node(s) had untolerated taint(s)"
    assert filtering.ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert filtering.ERR_REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    assert node_unschedulable.ERR_REASON_UNSCHEDULABLE == "node(s) were unschedulable"
    assert node_name.ERR_REASON == "node(s) didn't match the requested node name"


def test_taint_toleration_filter_never_returns_the_unused_exported_constant() -> None:
    r = schedule([make_node("n1").taint("k", "v")], [], make_pod("p"))
    assert taint_toleration.ERR_REASON_NOT_MATCH not in r.message
    assert taint_toleration.ERR_REASON_UNTOLERATED in r.message


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5", 5),
        ("05", 5),
        ("+5", 5),
        ("-7", -7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("1_0", None),
        (" 5", None),
        ("5 ", None),
        ("", None),
        ("+", None),
        ("1.5", None),
        ("0x10", None),
        ("٣", None),
    ],
)
def test_go_parse_int(text: str, value: int | None) -> None:
    assert parse_go_int64(text) == value


@pytest.mark.parametrize(
    ("op", "values", "label", "matches"),
    [
        ("In", ["a", "b"], "a", True),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], None, True),
        ("NotIn", ["a"], "a", False),
        ("NotIn", ["a"], "b", True),
        ("Exists", [], "", True),
        ("Exists", [], None, False),
        ("DoesNotExist", [], None, True),
        ("DoesNotExist", [], "x", False),
        ("Gt", ["3"], "4", True),
        ("Gt", ["3"], "3", False),
        ("Lt", ["3"], "-1", True),
        ("Lt", ["3"], "x", False),
        ("Gt", ["3"], None, False),
    ],
)
def test_node_selector_operators(op: str, values: list[str], label: str | None, matches: bool) -> None:
    node = make_node("n1")
    if label is not None:
        node.label("k", label)
    pod = make_pod("p").required_terms({"matchExpressions": [{"key": "k", "operator": op, "values": values}]})
    assert (schedule([node], [], pod).host == "n1") is matches


def test_gt_with_a_non_integer_bound_is_accepted_by_the_api_but_matches_nothing() -> None:
    pod = make_pod("p").required_terms({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["abc"]}]})
    assert not pod.build().errors
    r = schedule([make_node("n1").label("k", "5")], [], pod)
    assert r.host is None and "didn't match Pod's node affinity/selector" in r.message


def test_preferred_term_with_a_non_integer_bound_is_a_prescore_error() -> None:
    pod = make_pod("p").preferred_term(1, {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["abc"]}]})
    r = schedule([make_node("n1"), make_node("n2")], [], pod)
    assert r.attempt.status.code is Code.ERROR
    assert r.message.startswith('running PreScore plugin "NodeAffinity": ')
    single = schedule([make_node("n1")], [], pod)
    assert single.host == "n1"  # one feasible node: no PreScore runs at all


def test_match_fields_not_in_excludes_the_node_but_does_not_narrow() -> None:
    pod = make_pod("p").required_terms(
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
    )
    r = schedule([make_node("n1"), make_node("n2")], [], pod)
    assert r.feasible == {"n2"}
    assert r.reason("n1") == node_affinity.ERR_REASON_POD


def test_empty_term_matches_nothing_and_zero_terms_are_an_api_error() -> None:
    pod = make_pod("p").required_terms({}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]})
    r = schedule([make_node("n1"), make_node("n2").label("a")], [], pod)
    assert r.feasible == {"n2"}
    zero = make_pod("q").required_terms().build()
    assert any("nodeSelectorTerms" in e.path for e in zero.errors)


def test_added_affinity_is_checked_before_the_pods_own() -> None:
    config = {
        "profiles": [
            {
                "schedulerName": "spread-scheduler",
                "pluginConfig": [
                    {
                        "name": "NodeAffinity",
                        "args": {
                            "addedAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["spread"]}]}
                                    ]
                                },
                                "preferredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "weight": 10,
                                        "preference": {"matchExpressions": [{"key": "fast", "operator": "Exists"}]},
                                    }
                                ],
                            }
                        },
                    }
                ],
            }
        ]
    }
    nodes = [
        make_node("n1"),
        make_node("n2").label("pool", "spread"),
        make_node("n3").label("pool", "spread").label("fast"),
    ]
    r = schedule(nodes, [], make_pod("p").node_selector({"x": "y"}), config=config)
    assert r.reason("n1") == node_affinity.ERR_REASON_ENFORCED
    assert r.reason("n2") == node_affinity.ERR_REASON_POD
    ok = schedule(nodes, [], make_pod("p"), config=config)
    assert ok.feasible == {"n2", "n3"} and ok.host == "n3"
    assert ok.raw("NodeAffinity") == {"n2": 0, "n3": 10}


def test_node_unschedulable_and_its_toleration() -> None:
    nodes = [make_node("n1").unschedulable()]
    assert schedule(nodes, [], make_pod("p")).message == "0/1 nodes are available: 1 node(s) were unschedulable."
    tolerant = make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
    assert schedule(nodes, [], tolerant).host == "n1"


def test_node_name_filter() -> None:
    plugin = node_name.NodeName({}, None)  # type: ignore[arg-type]
    pod = Pod.from_dict(make_pod("p").dict() | {"spec": {"nodeName": "n2", "containers": []}})
    status = plugin.filter(CycleState(), pod, NodeInfo(make_node("n1").build()))
    assert status is not None and status.message() == node_name.ERR_REASON
    assert plugin.filter(CycleState(), pod, NodeInfo(make_node("n2").build())) is None


def test_priority_sort_orders_by_priority_then_time() -> None:
    less = PrioritySort({}, None).less  # type: ignore[arg-type]
    high, low = make_pod("h").priority(10).build(), make_pod("l").priority(1).build()
    assert less(high, 5.0, low, 1.0) and not less(low, 1.0, high, 5.0)
    assert less(low, 1.0, make_pod("l2").priority(1).build(), 2.0)


def test_scheduling_gates_message() -> None:
    gates = SchedulingGates({}, None)  # type: ignore[arg-type]
    status = gates.pre_enqueue(make_pod("p").gate("g1").gate("g2").build())
    assert status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [g1 g2]"
    assert gates.pre_enqueue(make_pod("q").build()) is None


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([8, 5, 3, 0], False, [100, 62, 37, 0]),
        ([0, 0], False, [0, 0]),
        ([0, 0], True, [100, 100]),
        ([0, 1, 2], True, [100, 50, 0]),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    default_normalize_score(scores, reverse=reverse)
    assert scores == expected


def test_go_rounding_and_spread_score_formulas() -> None:
    assert [go_round(x) for x in (0.5, 1.5, 2.5, 2.4999, 3.5)] == [1, 2, 3, 2, 4]
    assert topology_normalizing_weight(2) == pytest.approx(1.3862943611198906)
    assert score_for_count(2, 5, 1.0) == 6.0


def test_status_has_no_truth_value_and_joins_reasons() -> None:
    status = Status(Code.UNSCHEDULABLE, ("a", "b"), "P", "boom")
    with pytest.raises(TypeError):
        bool(status)
    assert status.message() == "boom, a, b"
    assert str(Code.UNSCHEDULABLE_AND_UNRESOLVABLE) == "UnschedulableAndUnresolvable"
    assert Status(Code.PENDING).is_rejected() and not Status(Code.ERROR).is_rejected()


def test_fit_error_counts_absent_nodes_with_the_shared_status() -> None:
    diagnosis = Diagnosis(absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("shared",)))
    diagnosis.node_to_status["a"] = Status(Code.UNSCHEDULABLE, ("own",))  # type: ignore[index]
    fit = FitError(make_pod("p").build(), 5, diagnosis)
    assert str(fit) == "0/5 nodes are available: 1 own, 4 shared."


def test_invalid_pod_is_refused_with_the_field_and_never_raises() -> None:
    pod = make_pod("p").spread(ZONE, 0, match=FOO)
    r = schedule([make_node("n1").zone("a")], [], pod)
    assert r.host is None
    assert r.message == "invalid pod: spec.topologySpreadConstraints[0].maxSkew: must be greater than zero"


def test_no_nodes_at_all() -> None:
    r = schedule([], [], make_pod("p"))
    assert r.message == "no nodes available to schedule pods"


def test_pods_of_other_schedulers_count_for_spreading() -> None:
    nodes = [make_node("n1"), make_node("n2")]
    pods = [make_pod("x").labels(FOO).node("n1").scheduler("default-scheduler")]
    assert schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO)).feasible == {"n2"}


def test_terminal_pods_are_not_in_the_cache() -> None:
    nodes = [make_node("n1"), make_node("n2")]
    pods = [make_pod("x").labels(FOO).node("n1").phase("Succeeded")]
    assert schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO)).feasible == {"n1", "n2"}


def test_service_selector_drives_system_default_spreading() -> None:
    nodes = [make_node("n1").zone("a"), make_node("n2").zone("b")]
    pods = [make_pod(f"w{i}").label("app", "web").node("n1") for i in range(3)]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    r = schedule(nodes, pods, make_pod("new").label("app", "web"), objects=[svc])
    assert r.host == "n2"
    assert r.normalized("PodTopologySpread")["n2"] == 100
    no_svc = schedule(nodes, pods, make_pod("new").label("app", "web"))
    assert no_svc.scores("PodTopologySpread") == {}


def test_list_defaulting_with_a_hard_default_constraint() -> None:
    config = {
        "profiles": [
            {
                "schedulerName": "spread-scheduler",
                "pluginConfig": [
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [
                                {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule"}
                            ],
                        },
                    }
                ],
            }
        ]
    }
    nodes = [make_node("n1"), make_node("n2")]
    pods = [make_pod("w").label("app", "web").node("n1")]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    r = schedule(nodes, pods, make_pod("new").label("app", "web"), objects=[svc], config=config)
    assert r.feasible == {"n2"}


def test_toleration_comparison_operators_need_the_alpha_gate() -> None:
    taint = Taint("gen", "5", "NoSchedule")
    assert not Toleration("gen", "Gt", "3").tolerates(taint)
    assert Toleration("gen", "Gt", "3").tolerates(taint, comparison_operators=True)
    assert not Toleration("gen", "Lt", "3").tolerates(taint, comparison_operators=True)
    assert not Toleration("gen", "Gt", "3").tolerates(Taint("gen", "05", "NoSchedule"), comparison_operators=True)


def test_node_parse_keeps_going_on_garbage() -> None:
    node = Node.from_dict({"metadata": {"name": "n", "labels": "oops"}, "spec": {"taints": {"a": 1}}})
    assert node.name == "n" and node.labels == {} and node.taints == ()
    assert {e.path for e in node.errors} == {"metadata.labels", "spec.taints"}


def test_a_nominated_node_that_fits_is_taken_without_evaluating_others() -> None:
    nodes = [make_node("n1"), make_node("n2"), make_node("n3").taint("k", "v")]
    pod = make_pod("p").set("status.nominatedNodeName", "n2")
    r = schedule(nodes, [], pod)
    assert r.host == "n2" and r.attempt.evaluated_nodes == 1 and r.attempt.scores == []
    tainted = schedule(nodes, [], make_pod("q").set("status.nominatedNodeName", "n3"))
    assert tainted.host in {"n1", "n2"}  # the nominated node fails: every node is searched as usual


def test_sampled_cycles_report_plugin_durations_and_others_do_not() -> None:
    import random as _random  # noqa: PLC0415 - local to this test

    from scheduler.backend.cache.cache import Cache  # noqa: PLC0415
    from scheduler.schedule_one import SchedulingAlgorithm  # noqa: PLC0415
    from tests.core.harness import framework  # noqa: PLC0415

    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_node(make_node(name).zone("a").build())
    fwk = framework()
    seen: list[tuple[str, str, str]] = []
    fwk.plugin_observer = lambda plugin, point, status, seconds: seen.append((plugin, point, status))
    pod = make_pod("p").labels(FOO).spread(ZONE, 1, "ScheduleAnyway", match=FOO).build()
    SchedulingAlgorithm(_random.Random(0), plugin_metrics_sample_percent=0).schedule_pod(fwk, cache, pod)
    assert seen == []
    fwk = framework()  # nothing remembered: every plugin runs
    fwk.plugin_observer = lambda plugin, point, status, seconds: seen.append((plugin, point, status))
    sampled = SchedulingAlgorithm(_random.Random(0), plugin_metrics_sample_percent=100)
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
