"""The worked vectors of the spec's section 10 (TV-1 .. TV-24), through the whole pipeline.

Messages end after the node histogram: our profile has no PostFilter (no preemption suffix).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.schedule_one import num_feasible_nodes_to_find
from scheduler.testing import make_node, make_pod
from tests.core.harness import FOO, HOSTNAME, ZONE, cluster_a, incoming, schedule

PTS = "PodTopologySpread"
TT = "TaintToleration"
NA = "NodeAffinity"
SPREAD = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
TAINTED = "node(s) had untolerated taint(s)"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def test_tv1_hard_zone_spread() -> None:
    nodes, pods = cluster_a()
    for seed in range(6):
        r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO), seed=seed)
        assert r.feasible == {"node3", "node4"}
        assert r.reason("node1") == r.reason("node2") == SPREAD
        assert r.plugin("node1") == PTS
        assert r.host in {"node3", "node4"}
        assert r.scores(PTS) == {}  # PreScore skipped: no soft constraints
        assert r.normalized(TT) == {"node3": 100, "node4": 100}


def test_tv1_ties_pick_each_tied_node_over_seeds() -> None:
    nodes, pods = cluster_a()
    hosts = {schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO), seed=s).host for s in range(20)}
    assert hosts == {"node3", "node4"}


def test_tv2_one_feasible_node_is_bound_without_scoring() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO).spread(HOSTNAME, 1, match=FOO))
    assert r.feasible == {"node4"} and r.host == "node4"
    assert r.attempt.scores == [] and r.attempt.totals == {}
    assert r.reason("node3") == SPREAD


def test_tv3_incoming_pod_without_the_label_fits_everywhere() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming(labels={}).spread(ZONE, 1, match=FOO).spread(HOSTNAME, 1, match=FOO))
    assert r.feasible == {"node1", "node2", "node3", "node4"}


def test_tv4_soft_zone() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, "ScheduleAnyway", match=FOO))
    assert r.raw(PTS) == {"node1": 3, "node2": 3, "node3": 1, "node4": 1}
    assert r.normalized(PTS) == {"node1": 33, "node2": 33, "node3": 100, "node4": 100}
    assert r.attempt.totals == {"node1": 366, "node2": 366, "node3": 500, "node4": 500}
    assert r.host in {"node3", "node4"}


def test_tv5_soft_hostname() -> None:
    nodes, pods = cluster_a()
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, "ScheduleAnyway", match=FOO))
    assert r.raw(PTS) == {"node1": 2, "node2": 2, "node3": 2, "node4": 0}
    assert r.normalized(PTS) == {"node1": 0, "node2": 0, "node3": 0, "node4": 100}
    assert r.host == "node4"


def test_tv6_soft_zone_and_hostname() -> None:
    nodes, pods = cluster_a()
    pod = incoming().spread(ZONE, 1, "ScheduleAnyway", match=FOO).spread(HOSTNAME, 1, "ScheduleAnyway", match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.raw(PTS) == {"node1": 5, "node2": 5, "node3": 3, "node4": 1}
    assert r.normalized(PTS) == {"node1": 20, "node2": 20, "node3": 60, "node4": 100}


def _rs_cluster(node4_zone: bool = True) -> tuple[list, list, list]:
    nodes, _ = cluster_a()
    if not node4_zone:
        nodes[3] = make_node("node4")
    pods = [make_pod(f"p{i}").labels(FOO).node(f"node{i}").owner("ReplicaSet", "rs1") for i in range(1, 4)]
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": FOO}},
    }
    return nodes, pods, [rs]


def test_tv7_system_default_spreading_through_the_replicaset() -> None:
    nodes, pods, objs = _rs_cluster()
    r = schedule(nodes, pods, incoming().owner("ReplicaSet", "rs1"), objects=objs)
    assert r.feasible == {"node1", "node2", "node3", "node4"}
    assert r.raw(PTS) == {"node1": 11, "node2": 11, "node3": 9, "node4": 7}
    assert r.normalized(PTS) == {"node1": 63, "node2": 63, "node3": 81, "node4": 100}
    assert r.host == "node4"


def test_tv7_without_owner_or_service_no_default_constraints_apply() -> None:
    nodes, pods, _ = _rs_cluster()
    r = schedule(nodes, pods, incoming())
    assert r.scores(PTS) == {}
    assert PTS in r.attempt.state.skip_score_plugins and PTS in r.attempt.state.skip_filter_plugins


def test_tv8_node_without_zone_gets_only_the_hostname_term_under_system_defaults() -> None:
    nodes, pods, objs = _rs_cluster(node4_zone=False)
    r = schedule(nodes, pods, incoming().owner("ReplicaSet", "rs1"), objects=objs)
    assert r.raw(PTS) == {"node1": 11, "node2": 11, "node3": 9, "node4": 2}
    assert r.normalized(PTS) == {"node1": 18, "node2": 18, "node3": 36, "node4": 100}


def test_tv9_explicit_constraints_ignore_nodes_missing_a_key() -> None:
    nodes, pods = cluster_a()
    nodes[3] = make_node("node4")
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, "ScheduleAnyway", match=FOO))
    assert r.normalized(PTS) == {"node1": 33, "node2": 33, "node3": 100, "node4": 0}
    assert r.raw(PTS)["node4"] == 0


def _three_hosts(pods_per_node: int = 1) -> tuple[list, list]:
    nodes = [make_node(f"n{i}") for i in range(1, 4)]
    pods = [make_pod(f"p{i}-{k}").labels(FOO).node(f"n{i}") for i in range(1, 4) for k in range(pods_per_node)]
    return nodes, pods


def test_tv10_min_domains_not_met_rejects_everywhere() -> None:
    nodes, pods = _three_hosts()
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO, minDomains=5))
    assert r.host is None
    assert r.message == f"0/3 nodes are available: 3 {SPREAD}."
    assert r.rejectors == {PTS}
    assert r.attempt.status.is_rejected()


@pytest.mark.parametrize(
    ("min_domains", "max_skew", "existing", "feasible"),
    [
        pytest.param(3, 1, True, {"n1", "n2", "n3"}, id="min-domains-met"),
        pytest.param(5, 1, False, {"n1", "n2", "n3"}, id="no-existing-pods"),
        pytest.param(5, 2, True, {"n1", "n2", "n3"}, id="max-skew-2"),
    ],
)
def test_tv10_variants(min_domains: int, max_skew: int, existing: bool, feasible: set[str]) -> None:
    nodes, pods = _three_hosts()
    r = schedule(
        nodes, pods if existing else [], incoming().spread(HOSTNAME, max_skew, match=FOO, minDomains=min_domains)
    )
    assert r.feasible == feasible


def _kind_cluster() -> tuple[list, list]:
    nodes = [
        make_node("kind-worker").zone("zoneA"),
        make_node("kind-worker2").zone("zoneA"),
        make_node("kind-worker3").zone("zoneB"),
    ]
    pause = {"app": "pause"}
    pods = [
        make_pod("a").labels(pause).node("kind-worker2"),
        make_pod("b").labels(pause).node("kind-worker2"),
        make_pod("c").labels(pause).node("kind-worker3"),
    ]
    return nodes, pods


@pytest.mark.parametrize(
    ("policy", "feasible"),
    [
        pytest.param(None, {"kind-worker"}, id="honor-by-default"),
        pytest.param("Ignore", {"kind-worker3"}, id="ignore-like-pre-1.24"),
    ],
)
def test_tv11_issue_106971_node_affinity_policy(policy: str | None, feasible: set[str]) -> None:
    nodes, pods = _kind_cluster()
    extra = {"nodeAffinityPolicy": policy} if policy else {}
    pod = (
        make_pod("new")
        .label("app", "pause")
        .spread(ZONE, 1, match={"app": "pause"}, **extra)
        .required_terms({"matchExpressions": [{"key": HOSTNAME, "operator": "NotIn", "values": ["kind-worker2"]}]})
    )
    r = schedule(nodes, pods, pod)
    assert r.feasible == feasible
    assert r.reason("kind-worker2") == AFFINITY
    for node in {"kind-worker", "kind-worker3"} - feasible:
        assert r.reason(node) == SPREAD


@pytest.mark.parametrize(
    ("cordon", "policy", "feasible"),
    [
        pytest.param(False, None, set(), id="taint-ignored-by-default"),
        pytest.param(False, "Honor", {"n1", "n2"}, id="taint-honored"),
        pytest.param(True, "Honor", {"n1", "n2"}, id="cordon-honored"),
    ],
)
def test_tv12_node_taints_policy(cordon: bool, policy: str | None, feasible: set[str]) -> None:
    nodes = [
        make_node("n1"),
        make_node("n2"),
        make_node("n3").unschedulable() if cordon else make_node("n3").taint("dedicated", "infra"),
    ]
    if cordon:  # a cordoned node carries the unschedulable taint as the node controller adds it
        nodes[2].taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
    pods = [make_pod("a").labels(FOO).node("n1"), make_pod("b").labels(FOO).node("n2")]
    extra = {"nodeTaintsPolicy": policy} if policy else {}
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO, **extra))
    assert r.feasible == feasible
    if not feasible:
        assert r.message == f"0/3 nodes are available: 1 {TAINTED}, 2 {SPREAD}."
        assert r.rejectors == {PTS, TT}


@pytest.mark.parametrize(("keys", "feasible"), [(["pod-template-hash"], {"n2", "n3"}), (None, {"n3"})])
def test_tv13_match_label_keys(keys: list[str] | None, feasible: set[str]) -> None:
    nodes = [make_node(f"n{i}") for i in range(1, 4)]
    pods = [
        make_pod("v2").labels({"app": "web", "pod-template-hash": "v2"}).node("n1"),
        make_pod("v1a").labels({"app": "web", "pod-template-hash": "v1"}).node("n2"),
        make_pod("v1b").labels({"app": "web", "pod-template-hash": "v1"}).node("n2"),
    ]
    extra = {"matchLabelKeys": keys} if keys else {}
    pod = (
        make_pod("new")
        .labels({"app": "web", "pod-template-hash": "v2"})
        .spread(HOSTNAME, 1, match={"app": "web"}, **extra)
    )
    assert schedule(nodes, pods, pod).feasible == feasible


def test_tv13_selector_already_merged_by_the_api_server_gives_the_same_answer() -> None:
    nodes = [make_node(f"n{i}") for i in range(1, 4)]
    pods = [
        make_pod("v2").labels({"app": "web", "pod-template-hash": "v2"}).node("n1"),
        make_pod("v1a").labels({"app": "web", "pod-template-hash": "v1"}).node("n2"),
    ]
    merged = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["v2"]}],
    }
    pod = (
        make_pod("new")
        .labels({"app": "web", "pod-template-hash": "v2"})
        .spread(HOSTNAME, 1, selector=merged, matchLabelKeys=["pod-template-hash"])
    )
    r = schedule(nodes, pods, pod)
    assert not r.attempt.pod.errors
    assert r.feasible == {"n2", "n3"}


@pytest.mark.parametrize(
    "selector",
    [pytest.param({}, id="empty-selects-everything-counts-zero"), pytest.param(None, id="nil-selects-nothing")],
)
def test_tv14_empty_and_nil_selectors_never_reject(selector: dict | None) -> None:
    nodes, pods = cluster_a()
    pod = incoming()
    pod.spec.setdefault("topologySpreadConstraints", []).append(
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            **({} if selector is None else {"labelSelector": selector}),
        }
    )
    assert schedule(nodes, pods, pod).feasible == {"node1", "node2", "node3", "node4"}


def test_tv15_terminating_pods_and_other_namespaces_do_not_count() -> None:
    nodes, pods = cluster_a()
    pods[1].terminating()
    pods.append(make_pod("q1", "other").labels(FOO).node("node1"))
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO))
    assert r.feasible == {"node1", "node2", "node3", "node4"}


def test_tv16_node_without_the_key_is_unresolvable() -> None:
    nodes, pods = cluster_a()
    nodes.append(make_node("node5"))
    pods += [make_pod(f"q{i}").labels(FOO).node("node5") for i in range(5)]
    r = schedule(nodes, pods, incoming().spread(ZONE, 1, match=FOO))
    assert r.feasible == {"node3", "node4"}
    assert r.reason("node5") == MISSING
    assert r.attempt.diagnosis.node_to_status["node5"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert r.attempt.diagnosis.node_to_status["node1"].code.name == "UNSCHEDULABLE"


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        pytest.param({"key": "dedicated", "operator": "Equal", "value": "gpu"}, True, id="a-equal"),
        pytest.param({"key": "dedicated", "operator": "Exists"}, True, id="b-exists"),
        pytest.param({"operator": "Exists"}, True, id="c-exists-everything"),
        pytest.param({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, True, id="d-effect"),
        pytest.param(
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute"}, False, id="e-other-effect"
        ),
        pytest.param({"key": "dedicated", "value": "cpu"}, False, id="f-other-value"),
        pytest.param({"key": "Dedicated", "operator": "Exists"}, False, id="g-keys-are-case-sensitive"),
        pytest.param(
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
            False,
            id="toleration-seconds-do-not-help",
        ),
    ],
)
def test_tv17_toleration_matrix(toleration: dict, tolerated: bool) -> None:
    node = make_node("n1").taint("dedicated", "gpu", "NoSchedule")
    pod = make_pod("p")
    pod.spec["tolerations"] = [toleration]
    r = schedule([node], [], pod)
    assert (r.host == "n1") is tolerated
    if not tolerated:
        assert r.message == f"0/1 nodes are available: 1 {TAINTED}."


def test_tv17_prefer_no_schedule_never_filters() -> None:
    r = schedule([make_node("n1").taint("dedicated", "gpu", "PreferNoSchedule")], [], make_pod("p"))
    assert r.host == "n1"


@pytest.mark.parametrize(
    ("toleration", "raw", "normalized"),
    [
        pytest.param(None, [0, 1, 2], [100, 50, 0], id="no-toleration"),
        pytest.param(
            {"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"},
            [0, 1, 1],
            [100, 0, 0],
            id="prefer-toleration-counts",
        ),
        pytest.param(
            {"key": "b", "operator": "Exists", "effect": "NoSchedule"},
            [0, 1, 2],
            [100, 50, 0],
            id="noschedule-toleration-ignored-for-scoring",
        ),
    ],
)
def test_tv18_taint_toleration_score(toleration: dict | None, raw: list[int], normalized: list[int]) -> None:
    nodes = [
        make_node("n1"),
        make_node("n2").taint("a", "1", "PreferNoSchedule"),
        make_node("n3").taint("a", "1", "PreferNoSchedule").taint("b", "2", "PreferNoSchedule"),
    ]
    pod = make_pod("p")
    if toleration:
        pod.spec["tolerations"] = [toleration]
    r = schedule(nodes, [], pod)
    assert [r.raw(TT)[n] for n in ("n1", "n2", "n3")] == raw
    assert [r.normalized(TT)[n] for n in ("n1", "n2", "n3")] == normalized


def _tv19_nodes() -> list[Any]:
    return [
        make_node("nA").label("disk", "ssd").label("zone", "zoneA").label("gen", "5"),
        make_node("nB").label("disk", "ssd").label("zone", "zoneB"),
        make_node("nC").label("disk", "hdd").label("zone", "zoneA"),
        make_node("nD").label("disk", "ssd").label("gen", "1_0"),
        make_node("nE").label("disk", "ssd").label("gen", "05"),
    ]


def test_tv19_required_node_affinity_with_go_integer_parsing() -> None:
    nodes = _tv19_nodes()
    pod = (
        make_pod("p")
        .node_selector({"disk": "ssd"})
        .required_terms(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zoneA"]}]},
            {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]},
        )
    )
    r = schedule(nodes, [], pod)
    assert r.feasible == {"nA", "nE"}
    for name in ("nB", "nC", "nD"):
        assert r.reason(name) == AFFINITY and r.plugin(name) == NA


def test_tv19_variant_not_in_and_does_not_exist() -> None:
    nodes = _tv19_nodes()
    pod = make_pod("p").required_terms(
        {
            "matchExpressions": [
                {"key": "zone", "operator": "NotIn", "values": ["zoneA"]},
                {"key": "gpu", "operator": "DoesNotExist"},
            ]
        }
    )
    assert schedule(nodes, [], pod).feasible == {"nB", "nD", "nE"}


def test_tv20_preferred_node_affinity() -> None:
    nodes = [
        make_node("n1").zone("zoneA").label("disk"),
        make_node("n2").zone("zoneA"),
        make_node("n3").zone("zoneB").label("disk"),
        make_node("n4").zone("zoneB"),
    ]
    pod = (
        make_pod("p")
        .preferred_term(5, {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zoneA"]}]})
        .preferred_term(3, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]})
    )
    r = schedule(nodes, [], pod)
    assert r.raw(NA) == {"n1": 8, "n2": 5, "n3": 3, "n4": 0}
    assert r.normalized(NA) == {"n1": 100, "n2": 62, "n3": 37, "n4": 0}
    assert r.host == "n1"


def test_tv20_no_preferred_terms_means_no_node_affinity_score() -> None:
    r = schedule([make_node("n1"), make_node("n2")], [], make_pod("p"))
    assert r.scores(NA) == {}


def test_tv21_match_fields_narrowing_with_a_tainted_target() -> None:
    nodes, pods = cluster_a()
    nodes[1].taint("dedicated", "infra")
    pod = incoming().required_terms({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node2"]}]})
    r = schedule(nodes, pods, pod)
    assert r.host is None
    assert r.message == (f"0/4 nodes are available: 1 {TAINTED}, 3 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    assert r.rejectors == {NA, TT}


def test_tv21_match_fields_single_candidate_is_bound_without_scoring() -> None:
    nodes, pods = cluster_a()
    pod = incoming().required_terms({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node2"]}]})
    r = schedule(nodes, pods, pod)
    assert r.host == "node2" and r.attempt.scores == []


@pytest.mark.parametrize(
    ("terms", "candidates"),
    [
        pytest.param([["node1"], ["node3"]], {"node1", "node3"}, id="two-terms-union"),
        pytest.param([["node1"], ["node3"], None], {"node1", "node2", "node3", "node4"}, id="term-without-fields"),
    ],
)
def test_tv21_narrowing_variants(terms: list[list[str] | None], candidates: set[str]) -> None:
    nodes, pods = cluster_a()
    built = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": t}]}
        if t
        else {"matchExpressions": [{"key": ZONE, "operator": "Exists"}]}
        for t in terms
    ]
    r = schedule(nodes, pods, incoming().required_terms(*built))
    assert r.feasible == candidates


def test_tv22_conflicting_match_fields_reject_at_prefilter() -> None:
    nodes, pods = cluster_a()
    pod = incoming().required_terms(
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node1"]},
                {"key": "metadata.name", "operator": "In", "values": ["node2"]},
            ]
        }
    )
    r = schedule(nodes, pods, pod)
    assert r.message == "0/4 nodes are available: pod affinity terms conflict."
    assert r.rejectors == {NA}


def test_tv23_histogram_is_sorted_as_strings() -> None:
    nodes = [make_node(f"t{i:02d}").taint("dedicated", "infra") for i in range(10)]
    nodes += [make_node("u1"), make_node("u2")]
    pods = [make_pod("a").labels(FOO).node("u1"), make_pod("b").labels(FOO).node("u2")]
    r = schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO))
    assert r.message == f"0/12 nodes are available: 10 {TAINTED}, 2 {SPREAD}."


@pytest.mark.parametrize(
    ("n", "expected"),
    [(50, 50), (100, 100), (200, 100), (1000, 420), (5000, 500), (6000, 300), (10000, 500)],
)
def test_tv24_num_feasible_nodes_to_find(n: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(None, n) == expected
    assert num_feasible_nodes_to_find(0, n) == expected


def test_tv24_percentage_of_nodes_to_score_from_the_profile() -> None:
    assert num_feasible_nodes_to_find(100, 1000) == 1000
    assert num_feasible_nodes_to_find(1, 1000) == 100  # never below 100
    assert num_feasible_nodes_to_find(50, 99) == 99  # fewer than 100 nodes: all of them
