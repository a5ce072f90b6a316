"""The worked vectors TV-1 .. TV-24 of the spec (section 10), through the whole pipeline.

Our profile has no PostFilter plugin (no DefaultPreemption), so every FitError message ends after
the filter histogram. Scores are checked raw and normalized per plugin, plus the weighted totals
(TaintToleration x3, NodeAffinity x2, PodTopologySpread x2). Ties are checked over several seeds.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.taints import Taint, Toleration
from scheduler.framework.status import Code
from scheduler.schedule_one import num_feasible_nodes_to_find
from scheduler.testing import make_node, make_pod
from tests.helpers import (
    AFFINITY,
    FOO,
    HOSTNAME,
    MISSING_LABEL,
    NA,
    NU,
    PTS,
    SPREAD,
    TT,
    UNSCHEDULABLE_NODE,
    UNTOLERATED,
    ZONE,
    cluster_a,
    config_with,
    expr,
    framework,
    hosts_over_seeds,
    incoming,
    name_in,
    schedule,
    term,
)

ALL_A = {"node1", "node2", "node3", "node4"}
SEEDS = range(16)
RS1 = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "rs1", "namespace": "default"},
    "spec": {"selector": {"matchLabels": FOO}},
}


# -- TV-1 .. TV-3: hard spreading on cluster A ----------------------------------------------


def test_tv1_hard_zone_spread_filters_zone_a_and_ties_between_node3_node4() -> None:
    nodes, pods = cluster_a()
    pod = incoming().spread(ZONE, 1, match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"node3", "node4"}
    assert r.reasons() == {
        "node1": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "node2": (SPREAD, Code.UNSCHEDULABLE, PTS),
    }
    # No soft constraint and no defaults used: PTS PreScore skips, NodeAffinity has nothing to score.
    assert r.scored_plugins == [TT]
    assert PTS in r.attempt.state.skip_score_plugins
    assert NA in r.attempt.state.skip_score_plugins
    assert r.raw(TT) == {"node3": 0, "node4": 0}
    assert r.normalized(TT) == {"node3": 100, "node4": 100}
    assert r.totals == {"node3": 300, "node4": 300}
    hosts = set()
    for seed in range(20):  # the seed only breaks the tie: the verdicts and scores never change
        rs = schedule(nodes, pods, pod, seed=seed)
        assert rs.feasible == {"node3", "node4"} and rs.reasons() == r.reasons()
        assert rs.scored_plugins == [TT] and rs.normalized(TT) == {"node3": 100, "node4": 100}
        hosts.add(rs.host)
    assert hosts == {"node3", "node4"}


def test_tv2_hard_zone_and_hostname_leaves_one_node_bound_without_scoring() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO).spread(HOSTNAME, 1, match=FOO))
    assert r.feasible == {"node4"}
    assert r.host == "node4"
    assert r.reasons() == {
        "node1": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "node2": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "node3": (SPREAD, Code.UNSCHEDULABLE, PTS),
    }
    # One feasible node: no PreScore/Score/Normalize at all.
    assert r.attempt.scores == []
    assert r.totals == {}
    assert r.attempt.scored_nodes == []
    assert r.attempt.state.skip_score_plugins == set()


def test_tv3_incoming_pod_without_the_label_fits_everywhere() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming({}).spread(ZONE, 1, match=FOO).spread(HOSTNAME, 1, match=FOO))
    assert r.feasible == ALL_A
    assert r.reasons() == {}
    assert r.host in ALL_A


# -- TV-4 .. TV-6: soft spreading scores ------------------------------------------------------


@pytest.mark.parametrize(
    ("spreads", "raw", "normalized"),
    [
        pytest.param(
            [(ZONE, 1)],
            {"node1": 3, "node2": 3, "node3": 1, "node4": 1},
            {"node1": 33, "node2": 33, "node3": 100, "node4": 100},
            id="tv4-soft-zone",
        ),
        pytest.param(
            [(HOSTNAME, 1)],
            {"node1": 2, "node2": 2, "node3": 2, "node4": 0},
            {"node1": 0, "node2": 0, "node3": 0, "node4": 100},
            id="tv5-soft-hostname",
        ),
        pytest.param(
            [(ZONE, 1), (HOSTNAME, 1)],
            {"node1": 5, "node2": 5, "node3": 3, "node4": 1},
            {"node1": 20, "node2": 20, "node3": 60, "node4": 100},
            id="tv6-soft-zone-and-hostname",
        ),
    ],
)
def test_tv4_to_tv6_soft_spread_scores(
    spreads: list[tuple[str, int]], raw: dict[str, int], normalized: dict[str, int]
) -> None:
    nodes, pods = cluster_a()
    pod = incoming()
    for key, skew in spreads:
        pod = pod.spread(key, skew, "ScheduleAnyway", match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.feasible == ALL_A
    assert r.scored_plugins == [TT, PTS]
    assert r.raw(PTS) == raw
    assert r.normalized(PTS) == normalized
    assert r.normalized(TT) == dict.fromkeys(ALL_A, 100)
    assert r.totals == {n: 300 + 2 * v for n, v in normalized.items()}
    best = max(normalized.values())
    tied = {n for n, v in normalized.items() if v == best}
    assert hosts_over_seeds(nodes, pods, pod, seeds=SEEDS) == tied


# -- TV-7 .. TV-9: system default constraints and requireAllTopologies -----------------------


def _rs_pods() -> tuple[list[Any], list[Any]]:
    nodes, pods = cluster_a()
    return nodes, [p.owner("ReplicaSet", "rs1") for p in pods]


def test_tv7_system_defaults_from_replicaset_selector() -> None:
    nodes, pods = _rs_pods()
    r = schedule(nodes, pods, incoming().owner("ReplicaSet", "rs1"), objects=[RS1])
    assert r.feasible == ALL_A
    assert PTS in r.attempt.state.skip_filter_plugins  # defaults are soft only: no PTS filtering
    assert r.raw(PTS) == {"node1": 11, "node2": 11, "node3": 9, "node4": 7}
    assert r.normalized(PTS) == {"node1": 63, "node2": 63, "node3": 81, "node4": 100}
    assert r.totals == {"node1": 426, "node2": 426, "node3": 462, "node4": 500}
    assert r.host == "node4"


@pytest.mark.parametrize(
    ("with_owner", "objects"),
    [
        pytest.param(True, [], id="owner-not-found"),
        pytest.param(False, [RS1], id="no-owner-reference"),
        pytest.param(False, [], id="no-owner-no-objects"),
    ],
)
def test_tv7_without_owner_or_service_no_default_constraints(with_owner: bool, objects: list[dict[str, Any]]) -> None:
    nodes, pods = _rs_pods()
    pending = incoming().owner("ReplicaSet", "rs1") if with_owner else incoming()
    r = schedule(nodes, pods, pending, objects=objects)
    assert PTS in r.attempt.state.skip_filter_plugins
    assert PTS in r.attempt.state.skip_score_plugins
    assert r.scored_plugins == [TT]


def test_tv8_system_defaults_node_without_zone_is_not_ignored() -> None:
    nodes = [make_node(f"node{i}").zone("zoneA" if i <= 2 else "zoneB") for i in (1, 2, 3)] + [make_node("node4")]
    _, pods = _rs_pods()
    r = schedule(nodes, pods, incoming().owner("ReplicaSet", "rs1"), objects=[RS1])
    assert r.raw(PTS) == {"node1": 11, "node2": 11, "node3": 9, "node4": 2}
    assert r.normalized(PTS) == {"node1": 18, "node2": 18, "node3": 36, "node4": 100}
    assert r.host == "node4"


def test_tv9_explicit_soft_constraint_ignores_node_without_zone() -> None:
    nodes = [make_node(f"node{i}").zone("zoneA" if i <= 2 else "zoneB") for i in (1, 2, 3)] + [make_node("node4")]
    _, pods = cluster_a()
    pod = incoming().spread(ZONE, 1, "ScheduleAnyway", match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.feasible == ALL_A  # ignored for scoring, still feasible
    assert r.raw(PTS) == {"node1": 3, "node2": 3, "node3": 1, "node4": 0}
    assert r.normalized(PTS) == {"node1": 33, "node2": 33, "node3": 100, "node4": 0}
    assert r.host == "node3"


# -- TV-10: minDomains ---------------------------------------------------------------------------


def _three_hosts(with_pods: bool = True) -> tuple[list[Any], list[Any]]:
    nodes = [make_node(f"n{i}") for i in (1, 2, 3)]
    pods = [make_pod(f"p{i}").labels(FOO).node(f"n{i}") for i in (1, 2, 3)] if with_pods else []
    return nodes, pods


def test_tv10_min_domains_above_domain_count_rejects_every_node() -> None:
    nodes, pods = _three_hosts()
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO, minDomains=5))
    assert r.host is None
    assert r.feasible == set()
    assert r.code is Code.UNSCHEDULABLE
    assert r.message == "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."
    assert r.rejectors == {PTS}
    assert {n: v[1] for n, v in r.reasons().items()} == dict.fromkeys(("n1", "n2", "n3"), Code.UNSCHEDULABLE)


@pytest.mark.parametrize(
    ("with_pods", "max_skew", "min_domains"),
    [
        pytest.param(True, 1, 3, id="min-domains-3-reached"),
        pytest.param(False, 1, 5, id="no-existing-pods"),
        pytest.param(True, 2, 5, id="max-skew-2"),
    ],
)
def test_tv10_variants_all_feasible(with_pods: bool, max_skew: int, min_domains: int) -> None:
    nodes, pods = _three_hosts(with_pods)
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, max_skew, match=FOO, minDomains=min_domains))
    assert r.feasible == {"n1", "n2", "n3"}


# -- TV-11: nodeAffinityPolicy (issue #106971) ---------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "feasible", "reasons"),
    [
        pytest.param(
            None,
            {"kind-worker"},
            {
                "kind-worker2": (AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NA),
                "kind-worker3": (SPREAD, Code.UNSCHEDULABLE, PTS),
            },
            id="honor-by-default",
        ),
        pytest.param(
            "Ignore",
            {"kind-worker3"},
            {
                "kind-worker": (SPREAD, Code.UNSCHEDULABLE, PTS),
                "kind-worker2": (AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NA),
            },
            id="ignore",
        ),
    ],
)
def test_tv11_node_affinity_policy(
    policy: str | None, feasible: set[str], reasons: dict[str, tuple[str, Code, str]]
) -> None:
    app = {"app": "pause"}
    nodes = [
        make_node("kind-worker").zone("zoneA"),
        make_node("kind-worker2").zone("zoneA"),
        make_node("kind-worker3").zone("zoneB"),
    ]
    pods = [
        make_pod("a1").labels(app).node("kind-worker2"),
        make_pod("a2").labels(app).node("kind-worker2"),
        make_pod("a3").labels(app).node("kind-worker3"),
    ]
    extra = {} if policy is None else {"nodeAffinityPolicy": policy}
    pod = (
        make_pod("incoming")
        .labels(app)
        .spread(ZONE, 1, match=app, **extra)
        .required_terms(term(expr(HOSTNAME, "NotIn", "kind-worker2")))
    )
    r = schedule(nodes, pods, pod)
    assert r.feasible == feasible
    assert r.host == next(iter(feasible))
    assert r.reasons() == reasons


# -- TV-12: nodeTaintsPolicy ---------------------------------------------------------------------


def _tv12(n3: Any) -> tuple[list[Any], list[Any]]:
    nodes = [make_node("n1"), make_node("n2"), n3]
    pods = [make_pod("p1").labels(FOO).node("n1"), make_pod("p2").labels(FOO).node("n2")]
    return nodes, pods


def test_tv12_taints_ignored_by_default_makes_tainted_node_an_empty_domain() -> None:
    nodes, pods = _tv12(make_node("n3").taint("dedicated", "infra"))
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO))
    assert r.feasible == set()
    assert r.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match pod topology spread constraints."
    )
    assert r.reasons() == {
        "n1": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "n2": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "n3": (UNTOLERATED, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, TT),
    }
    assert r.rejectors == {PTS, TT}


def test_tv12_taints_honored_excludes_the_tainted_domain() -> None:
    nodes, pods = _tv12(make_node("n3").taint("dedicated", "infra"))
    pod = incoming().spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"n1", "n2"}
    assert r.reasons() == {"n3": (UNTOLERATED, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, TT)}
    assert hosts_over_seeds(nodes, pods, pod, seeds=SEEDS) == {"n1", "n2"}


@pytest.mark.parametrize(
    ("policy", "feasible"),
    [pytest.param(None, set(), id="ignore"), pytest.param("Honor", {"n1", "n2"}, id="honor")],
)
def test_tv12_cordoned_node_behaves_the_same(policy: str | None, feasible: set[str]) -> None:
    cordoned = make_node("n3").unschedulable().taint("node.kubernetes.io/unschedulable")
    nodes, pods = _tv12(cordoned)
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO, **extra))
    assert r.feasible == feasible
    assert r.reasons()["n3"] == (UNSCHEDULABLE_NODE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NU)
    if not feasible:
        assert r.message == (
            "0/3 nodes are available: 1 node(s) were unschedulable, "
            "2 node(s) didn't match pod topology spread constraints."
        )


# -- TV-13: matchLabelKeys -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "feasible"),
    [
        pytest.param(["pod-template-hash"], {"n2", "n3"}, id="with-match-label-keys"),
        pytest.param(None, {"n3"}, id="without-match-label-keys"),
    ],
)
def test_tv13_match_label_keys(keys: list[str] | None, feasible: set[str]) -> None:
    v1 = {"app": "web", "pod-template-hash": "v1"}
    v2 = {"app": "web", "pod-template-hash": "v2"}
    nodes = [make_node(f"n{i}") for i in (1, 2, 3)]
    pods = [
        make_pod("a").labels(v2).node("n1"),
        make_pod("b").labels(v1).node("n2"),
        make_pod("c").labels(v1).node("n2"),
    ]
    extra = {} if keys is None else {"matchLabelKeys": keys}
    r = schedule(nodes, pods, make_pod("incoming").labels(v2).spread(HOSTNAME, 1, match={"app": "web"}, **extra))
    assert r.feasible == feasible


@pytest.mark.parametrize("v1_pods", [pytest.param(2, id="two-v1-pods"), pytest.param(1, id="one-v1-pod")])
def test_tv13_selector_already_merged_by_the_api_server_gives_the_same_result(v1_pods: int) -> None:
    v1 = {"app": "web", "pod-template-hash": "v1"}
    v2 = {"app": "web", "pod-template-hash": "v2"}
    nodes = [make_node(f"n{i}") for i in (1, 2, 3)]
    pods = [make_pod("a").labels(v2).node("n1")] + [make_pod(n).labels(v1).node("n2") for n in "bc"[:v1_pods]]
    merged = {"matchLabels": {"app": "web"}, "matchExpressions": [expr("pod-template-hash", "In", "v2")]}
    pod = make_pod("incoming").labels(v2).spread(HOSTNAME, 1, selector=merged, matchLabelKeys=["pod-template-hash"])
    assert pod.build().errors == ()
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"n2", "n3"}


# -- TV-14 .. TV-16 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [pytest.param({}, id="empty-selector"), pytest.param(None, id="nil-selector")],
)
def test_tv14_empty_or_nil_selector_never_rejects(selector: dict[str, Any] | None) -> None:
    nodes, pods = cluster_a()
    pod = incoming().spread(ZONE, 1, selector=selector)
    assert ("labelSelector" in pod.spec["topologySpreadConstraints"][0]) is (selector is not None)
    r = schedule(nodes, pods, pod)
    assert r.feasible == ALL_A


def test_tv15_terminating_pods_and_other_namespaces_do_not_count() -> None:
    nodes, pods = cluster_a()
    pods[1] = pods[1].terminating()
    pods.append(make_pod("q1", "other").labels(FOO).node("node1"))
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO))
    assert r.feasible == ALL_A


def test_tv16_node_without_the_topology_key_is_unresolvable() -> None:
    nodes, pods = cluster_a()
    nodes.append(make_node("node5"))
    pods += [make_pod(f"q{i}").labels(FOO).node("node5") for i in range(5)]
    pod = incoming().spread(ZONE, 1, match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"node3", "node4"}
    assert r.reasons() == {
        "node1": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "node2": (SPREAD, Code.UNSCHEDULABLE, PTS),
        "node5": (MISSING_LABEL, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, PTS),
    }
    assert hosts_over_seeds(nodes, pods, pod, seeds=SEEDS) == {"node3", "node4"}


# -- TV-17: toleration matrix --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        pytest.param({"key": "dedicated", "operator": "Equal", "value": "gpu"}, True, id="a-equal"),
        pytest.param({"key": "dedicated", "operator": "Exists"}, True, id="b-key-exists"),
        pytest.param({"operator": "Exists"}, True, id="c-exists-everything"),
        pytest.param({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, True, id="d-empty-operator-effect"),
        pytest.param(
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute"}, False, id="e-other-effect"
        ),
        pytest.param({"key": "dedicated", "value": "cpu"}, False, id="f-other-value"),
        pytest.param({"key": "Dedicated", "operator": "Exists"}, False, id="g-keys-case-sensitive"),
        pytest.param(
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
            False,
            id="toleration-seconds-do-not-help",
        ),
    ],
)
def test_tv17_toleration_matrix(toleration: dict[str, str], tolerated: bool) -> None:
    nodes = [make_node("gpu").taint("dedicated", "gpu", "NoSchedule")]
    pod = make_pod("incoming").toleration(**toleration)
    assert pod.build().errors == ()
    r = schedule(nodes, [], pod)
    if tolerated:
        assert r.host == "gpu"
    else:
        assert r.host is None
        assert r.message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
        assert r.reasons() == {"gpu": (UNTOLERATED, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, TT)}
        assert r.rejectors == {TT}


def test_tv17_prefer_no_schedule_only_node_always_passes() -> None:
    r = schedule([make_node("soft").taint("dedicated", "gpu", "PreferNoSchedule")], [], make_pod("incoming"))
    assert r.host == "soft"


def test_tv17_toleration_seconds_does_not_change_the_answer() -> None:
    nodes = [make_node("n").taint("dedicated", "gpu", "NoExecute")]
    pod = make_pod("incoming").toleration("dedicated", "Exists", effect="NoExecute", tolerationSeconds=0)
    assert pod.build().errors == ()
    assert schedule(nodes, [], pod).host == "n"


@pytest.mark.parametrize(
    ("operator", "value", "taint_value", "tolerated"),
    [
        pytest.param("Gt", "3", "5", True, id="gt-5-over-3"),
        pytest.param("Lt", "3", "5", False, id="lt-5-not-under-3"),
        pytest.param("Gt", "3", "05", False, id="gt-leading-zero-taint-not-strict-decimal"),
    ],
)
def test_tv17_comparison_operators_with_gate_on(operator: str, value: str, taint_value: str, tolerated: bool) -> None:
    toleration = Toleration("gen", operator, value, "NoSchedule")
    taint = Taint("gen", taint_value, "NoSchedule")
    assert toleration.tolerates(taint, comparison_operators=True) is tolerated
    # Gate off (our default): Gt/Lt never tolerate.
    assert toleration.tolerates(taint) is False


def test_tv17_comparison_operators_gate_off_never_tolerate_through_the_pipeline() -> None:
    nodes = [make_node("n").taint("gen", "5")]
    pod = make_pod("incoming").toleration("gen", "Gt", "3", "NoSchedule")
    # The API server rejects Gt/Lt tolerations while the gate is off; the pod is reported invalid.
    assert any(e.path == "spec.tolerations[0].operator" for e in pod.build().errors)
    assert schedule(nodes, [], pod).host is None


# -- TV-18: TaintToleration score ----------------------------------------------------------------


def _tv18_nodes() -> list[Any]:
    return [
        make_node("n1"),
        make_node("n2").taint("a", "1", "PreferNoSchedule"),
        make_node("n3").taint("a", "1", "PreferNoSchedule").taint("b", "2", "PreferNoSchedule"),
    ]


@pytest.mark.parametrize(
    ("toleration", "raw", "normalized"),
    [
        pytest.param(None, [0, 1, 2], [100, 50, 0], id="no-tolerations"),
        pytest.param(
            {"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"}, [0, 1, 1], [100, 0, 0], id="tolerate-b"
        ),
        pytest.param(
            {"key": "b", "operator": "Exists", "effect": "NoSchedule"}, [0, 1, 2], [100, 50, 0], id="noschedule-ignored"
        ),
    ],
)
def test_tv18_taint_toleration_score(toleration: dict[str, str] | None, raw: list[int], normalized: list[int]) -> None:
    pod = make_pod("incoming")
    if toleration is not None:
        pod = pod.toleration(**toleration)
    r = schedule(_tv18_nodes(), [], pod)
    names = ["n1", "n2", "n3"]
    assert r.raw(TT) == dict(zip(names, raw, strict=True))
    assert r.normalized(TT) == dict(zip(names, normalized, strict=True))
    assert r.totals == {n: 3 * v for n, v in zip(names, normalized, strict=True)}
    assert r.host == "n1"


def test_tv18_no_prefer_no_schedule_taint_gives_every_node_100() -> None:
    r = schedule([make_node("n1"), make_node("n2").taint("x", "y", "NoSchedule"), make_node("n3")], [], make_pod("i"))
    assert r.raw(TT) == {"n1": 0, "n3": 0}
    assert r.normalized(TT) == {"n1": 100, "n3": 100}


# -- TV-19 .. TV-22: NodeAffinity ----------------------------------------------------------------


def _tv19_nodes(zone_key: str) -> list[Any]:
    return [
        make_node("nA").label("disk", "ssd").label(zone_key, "zoneA").label("gen", "5"),
        make_node("nB").label("disk", "ssd").label(zone_key, "zoneB"),
        make_node("nC").label("disk", "hdd").label(zone_key, "zoneA"),
        make_node("nD").label("disk", "ssd").label("gen", "1_0"),
        make_node("nE").label("disk", "ssd").label("gen", "05"),
    ]


TV19_ZONE_KEYS = [pytest.param(ZONE, id="well-known-zone-key"), pytest.param("zone", id="plain-zone-key")]


@pytest.mark.parametrize("zone_key", TV19_ZONE_KEYS)
def test_tv19_required_affinity_with_node_selector_and_go_integers(zone_key: str) -> None:
    pod = (
        make_pod("incoming")
        .node_selector({"disk": "ssd"})
        .required_terms(term(expr(zone_key, "In", "zoneA")), term(expr("gen", "Gt", "3")))
    )
    r = schedule(_tv19_nodes(zone_key), [], pod)
    assert r.feasible == {"nA", "nE"}
    unresolvable = (AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NA)
    assert r.reasons() == {"nB": unresolvable, "nC": unresolvable, "nD": unresolvable}
    assert r.scored_plugins == [TT]  # NodeAffinity has no preferred terms: PreScore Skip


@pytest.mark.parametrize("zone_key", TV19_ZONE_KEYS)
def test_tv19_variant_not_in_and_does_not_exist_match_absent_keys(zone_key: str) -> None:
    pod = make_pod("incoming").required_terms(term(expr(zone_key, "NotIn", "zoneA"), expr("gpu", "DoesNotExist")))
    r = schedule(_tv19_nodes(zone_key), [], pod)
    assert r.feasible == {"nB", "nD", "nE"}


@pytest.mark.parametrize("n1_disk", [pytest.param("ssd", id="n1-disk-ssd"), pytest.param("", id="n1-disk-empty")])
def test_tv20_preferred_affinity_scores(n1_disk: str) -> None:
    nodes = [
        make_node("n1").zone("zoneA").label("disk", n1_disk),
        make_node("n2").zone("zoneA"),
        make_node("n3").zone("zoneB").label("disk", ""),  # Exists matches an empty value
        make_node("n4").zone("zoneB"),
    ]
    pod = (
        make_pod("incoming")
        .preferred_term(5, term(expr(ZONE, "In", "zoneA")))
        .preferred_term(3, term(expr("disk", "Exists")))
    )
    r = schedule(nodes, [], pod)
    assert r.raw(NA) == {"n1": 8, "n2": 5, "n3": 3, "n4": 0}
    assert r.normalized(NA) == {"n1": 100, "n2": 62, "n3": 37, "n4": 0}
    assert r.totals == {"n1": 500, "n2": 424, "n3": 374, "n4": 300}
    assert r.host == "n1"


def test_tv20_no_preferred_terms_means_no_node_affinity_score() -> None:
    r = schedule([make_node("n1"), make_node("n2")], [], make_pod("p"))
    assert NA not in r.scored_plugins


# The incoming pod's own labels (foo=bar like cluster A's pods, or none) play no part in TV-21/22.
INCOMING_LABELS = [pytest.param({}, id="unlabelled"), pytest.param(FOO, id="foo-bar")]


@pytest.mark.parametrize("labels", INCOMING_LABELS)
def test_tv21_match_fields_narrowing_with_tainted_target(labels: dict[str, str]) -> None:
    nodes, pods = cluster_a()
    nodes[1] = nodes[1].taint("dedicated", "infra")
    r = schedule(nodes, pods, make_pod("incoming").labels(labels).required_terms(term(fields=[name_in("node2")])))
    assert r.host is None
    assert r.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert r.rejectors == {NA, TT}
    assert r.reasons() == {"node2": (UNTOLERATED, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, TT)}
    absent = r.attempt.diagnosis.absent_nodes_status
    assert absent is not None
    assert absent.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert absent.message() == "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    assert r.attempt.evaluated_nodes == 1


@pytest.mark.parametrize("labels", INCOMING_LABELS)
def test_tv21_without_the_taint_the_single_candidate_is_bound_without_scoring(labels: dict[str, str]) -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, make_pod("incoming").labels(labels).required_terms(term(fields=[name_in("node2")])))
    assert r.host == "node2"
    assert r.attempt.evaluated_nodes == 1
    assert r.attempt.scores == []


@pytest.mark.parametrize("labels", INCOMING_LABELS)
def test_tv21_two_terms_narrow_to_their_union(labels: dict[str, str]) -> None:
    nodes, pods = cluster_a()
    pod = (
        make_pod("incoming")
        .labels(labels)
        .required_terms(term(fields=[name_in("node1")]), term(fields=[name_in("node3")]))
    )
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"node1", "node3"}
    assert r.attempt.evaluated_nodes == 2
    assert r.reasons() == {}


@pytest.mark.parametrize(
    ("labels", "third", "feasible", "reasons"),
    [
        pytest.param(
            {},
            expr(ZONE, "In", "zoneB"),
            {"node1", "node3", "node4"},
            {"node2": (AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NA)},
            id="zone-in-zone-b",
        ),
        pytest.param(FOO, expr(ZONE, "Exists"), ALL_A, {}, id="term-without-fields"),
    ],
)
def test_tv21_a_term_without_match_fields_disables_narrowing(
    labels: dict[str, str], third: dict[str, Any], feasible: set[str], reasons: dict[str, tuple[str, Code, str]]
) -> None:
    nodes, pods = cluster_a()
    pod = (
        make_pod("incoming")
        .labels(labels)
        .required_terms(term(fields=[name_in("node1")]), term(fields=[name_in("node3")]), term(third))
    )
    r = schedule(nodes, pods, pod)
    assert r.feasible == feasible
    assert r.attempt.evaluated_nodes == 4
    assert r.reasons() == reasons


@pytest.mark.parametrize("labels", INCOMING_LABELS)
def test_tv22_conflicting_match_fields_fail_at_prefilter(labels: dict[str, str]) -> None:
    nodes, pods = cluster_a()
    pod = make_pod("incoming").labels(labels).required_terms(term(fields=[name_in("node1"), name_in("node2")]))
    r = schedule(nodes, pods, pod)
    assert r.host is None
    assert r.code is Code.UNSCHEDULABLE
    assert r.message == "0/4 nodes are available: pod affinity terms conflict."
    assert r.rejectors == {NA}
    assert r.reasons() == {}
    assert r.attempt.evaluated_nodes == 0


# -- TV-23, TV-24 --------------------------------------------------------------------------------


def test_tv23_histogram_sorted_as_strings() -> None:
    nodes = [make_node(f"t{i:02d}").taint("dedicated", "infra") for i in range(10)]
    nodes += [make_node("free1"), make_node("free2")]
    pods = [make_pod("p1").labels(FOO).node("free1"), make_pod("p2").labels(FOO).node("free2")]
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO))
    assert r.message == (
        "0/12 nodes are available: 10 node(s) had untolerated taint(s), "
        "2 node(s) didn't match pod topology spread constraints."
    )
    assert r.rejectors == {TT, PTS}


@pytest.mark.parametrize(
    ("num_nodes", "expected"),
    [
        pytest.param(1, 1, id="1"),
        pytest.param(50, 50, id="50"),
        pytest.param(99, 99, id="99"),
        pytest.param(100, 100, id="100"),
        pytest.param(200, 100, id="200-floored-to-100"),
        pytest.param(1000, 420, id="1000"),
        pytest.param(5000, 500, id="5000"),
        pytest.param(6000, 300, id="6000-5-percent-floor"),
        pytest.param(10000, 500, id="10000"),
    ],
)
def test_tv24_num_feasible_nodes_to_find_adaptive(num_nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(None, num_nodes) == expected
    assert num_feasible_nodes_to_find(0, num_nodes) == expected


@pytest.mark.parametrize(
    ("percentage", "num_nodes", "expected"),
    [
        pytest.param(10, 1000, 100, id="10pct-of-1000"),
        pytest.param(50, 1000, 500, id="50pct-of-1000"),
        pytest.param(30, 200, 100, id="floored-to-min-100"),
        pytest.param(100, 5000, 5000, id="all"),
        pytest.param(5, 99, 99, id="below-100-searches-all"),
        pytest.param(100, 1000, 1000, id="100pct-of-1000"),
        pytest.param(1, 1000, 100, id="never-below-100"),
        pytest.param(50, 99, 99, id="fewer-than-100-nodes-all-of-them"),
    ],
)
def test_tv24_num_feasible_nodes_to_find_configured(percentage: int, num_nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, num_nodes) == expected


def test_tv24_profile_percentage_reaches_the_framework() -> None:
    assert framework(config_with(percentageOfNodesToScore=30)).percentage_of_nodes_to_score == 30
    assert framework().percentage_of_nodes_to_score is None
