"""The spread report on hand-made clusters; every expected count is worked out by hand in the comments.

Semantics pinned here (upstream's counting, ``calPreFilterState``): eligible domains (a node missing
a key, nodeAffinityPolicy/nodeTaintsPolicy Honor), minDomains' global minimum, matchLabelKeys,
terminating pods and other namespaces not counted, System default spreading through a Service.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.labels import Operator, Requirement, make_selector
from scheduler.config import load_config
from scheduler.skew import WorkloadReport, skew_report
from scheduler.skew.report import selector_string
from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
WEB = {"app": "web"}


def zoned(**zones: str) -> list[dict[str, Any]]:
    """Nodes by name -> zone ("" for a node without the zone label)."""
    return [(make_node(n).zone(z) if z else make_node(n)).dict() for n, z in zones.items()]


def replica(name: str, node: str, rs: str = "web-abc", **spread: Any) -> dict[str, Any]:
    pod = make_pod(name).labels(WEB).node(node).owner("ReplicaSet", rs)
    return pod.spread(spread.pop("key", ZONE), spread.pop("max_skew", 1), match=WEB, **spread).dict()


def replica_set(name: str, deployment: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "controller": True}
            ],
        },
        "spec": {"selector": {"matchLabels": WEB}},
    }


def report(objects: list[dict[str, Any]], namespace: str | None = None) -> list[WorkloadReport]:
    return skew_report(objects, load_config(None), namespace)


def only(workloads: list[WorkloadReport]) -> WorkloadReport:
    assert len(workloads) == 1, [(w.kind, w.name) for w in workloads]
    return workloads[0]


def test_even_deployment_has_no_skew_and_is_named_after_its_deployment() -> None:
    # 2 pods in each of 3 zones: skew 2 - 2 = 0.
    nodes = zoned(a1="a", b1="b", c1="c")
    pods = [replica(f"web-{i}", node) for i, node in enumerate(["a1", "a1", "b1", "b1", "c1", "c1"])]
    w = only(report([*nodes, replica_set("web-abc"), *pods]))
    assert (w.namespace, w.kind, w.name) == ("default", "Deployment", "web")
    assert w.pods == [f"default/web-{i}" for i in range(6)]
    (c,) = w.constraints
    assert (c.topology_key, c.max_skew, c.when_unsatisfiable, c.source) == (ZONE, 1, "DoNotSchedule", "pod")
    assert c.domains == {"a": 2, "b": 2, "c": 2}
    assert (c.global_minimum, c.skew, c.violated, c.violating_pods) == (2, 0, False, [])


def test_scale_down_that_empties_a_zone_leaves_the_other_pods_in_violation() -> None:
    # Was 2/2/2; the scale-down to 4 removed both zone-c pods: a=2, b=2, c=0, minimum 0, so a and b
    # are 2 - 0 = 2 > maxSkew 1: all four remaining pods are in violation (each was fine when placed).
    nodes = zoned(a1="a", b1="b", c1="c")
    pods = [replica(f"web-{i}", node) for i, node in enumerate(["a1", "a1", "b1", "b1"])]
    (c,) = only(report([*nodes, replica_set("web-abc"), *pods])).constraints
    assert c.domains == {"a": 2, "b": 2, "c": 0}
    assert (c.global_minimum, c.skew, c.violated) == (0, 2, True)
    assert c.violating_pods == [f"default/web-{i}" for i in range(4)]


def test_only_the_fuller_domain_violates() -> None:
    # a=3, b=1, c=1: minimum 1; a: 3 - 1 = 2 > 1 (violating), b and c: 0.
    nodes = zoned(a1="a", b1="b", c1="c")
    pods = [replica(f"web-{i}", node) for i, node in enumerate(["a1", "a1", "a1", "b1", "c1"])]
    (c,) = only(report([*nodes, *pods])).constraints
    assert (c.domains, c.global_minimum, c.skew) == ({"a": 3, "b": 1, "c": 1}, 1, 2)
    assert c.violating_pods == ["default/web-0", "default/web-1", "default/web-2"]


def test_fewer_domains_than_min_domains_make_the_global_minimum_zero() -> None:
    # Two zones, minDomains 3: the global minimum is 0, not min(2, 1) = 1. a: 2 - 0 = 2 > 1 violates;
    # b: 1 - 0 = 1 does not. With minDomains 1 (the next case) the minimum is 1 and nothing violates.
    nodes = zoned(a1="a", b1="b")
    placement = ["a1", "a1", "b1"]
    pods = [replica(f"web-{i}", node, minDomains=3) for i, node in enumerate(placement)]
    (c,) = only(report([*nodes, *pods])).constraints
    assert (c.min_domains, c.domains, c.global_minimum, c.skew) == (3, {"a": 2, "b": 1}, 0, 2)
    assert c.violating_pods == ["default/web-0", "default/web-1"]
    pods = [replica(f"web-{i}", node) for i, node in enumerate(placement)]
    (c,) = only(report([*nodes, *pods])).constraints
    assert (c.global_minimum, c.skew, c.violated) == (1, 1, False)


def test_a_node_without_the_key_is_no_domain_and_its_pods_count_nowhere() -> None:
    # x1 has no zone label: its 2 pods are outside every domain; a=1, b=1, skew 0. The second
    # (hostname) constraint leaves x1 out too: a node must carry every key of the pod's hard
    # constraints (nodeLabelsMatchSpreadConstraints), so hostname domains are a1 and b1 only.
    nodes = zoned(a1="a", b1="b", x1="")
    placement = ["a1", "b1", "x1", "x1"]
    objects = [*nodes]
    for i, node in enumerate(placement):
        pod = make_pod(f"web-{i}").labels(WEB).node(node).owner("ReplicaSet", "web-abc")
        objects.append(pod.spread(ZONE, 1, match=WEB).spread(HOSTNAME, 1, match=WEB).dict())
    host, zone = only(report(objects)).constraints
    assert (zone.topology_key, zone.domains, zone.skew, zone.violated) == (ZONE, {"a": 1, "b": 1}, 0, False)
    assert zone.pods_outside_domains == ["default/web-2", "default/web-3"]
    assert (host.topology_key, host.domains) == (HOSTNAME, {"a1": 1, "b1": 1})
    assert host.pods_outside_domains == ["default/web-2", "default/web-3"]


def test_terminating_pods_and_other_namespaces_are_not_counted() -> None:
    # a=1, b=1, c=0 counting only live pods of the namespace: the terminating pod on c1 and the
    # matching pod of namespace "other" on c1 count nowhere, so c stays 0 and the skew is 1.
    nodes = zoned(a1="a", b1="b", c1="c")
    live = [replica("web-0", "a1"), replica("web-1", "b1")]
    dying = make_pod("web-2").labels(WEB).node("c1").owner("ReplicaSet", "web-abc").spread(ZONE, 1, match=WEB)
    elsewhere = make_pod("web-0", namespace="other").labels(WEB).node("c1").spread(ZONE, 1, match=WEB)
    workloads = report([*nodes, *live, dying.terminating().dict(), elsewhere.dict()])
    mine = next(w for w in workloads if w.namespace == "default")
    (c,) = mine.constraints
    assert (c.domains, c.global_minimum, c.skew, c.violated) == ({"a": 1, "b": 1, "c": 0}, 0, 1, False)
    assert mine.pods == ["default/web-0", "default/web-1"]  # the terminating pod is not listed either
    theirs = next(w for w in workloads if w.namespace == "other")
    assert theirs.constraints[0].domains == {"a": 0, "b": 0, "c": 1}
    assert [w.namespace for w in report([*nodes, *live, elsewhere.dict()], namespace="other")] == ["other"]


def test_node_taints_policy_honor_drops_a_tainted_node() -> None:
    # c1 carries a NoSchedule taint the pods do not tolerate: with nodeTaintsPolicy Honor zone c is
    # no domain, so a=1, b=1 and nothing is skewed; with the default (Ignore) c=0 makes the skew 1.
    nodes = [make_node("a1").zone("a").dict(), make_node("b1").zone("b").dict()]
    nodes.append(make_node("c1").zone("c").taint("gpu", "yes").dict())
    honor = [replica(f"web-{i}", n, nodeTaintsPolicy="Honor") for i, n in enumerate(["a1", "b1"])]
    (c,) = only(report([*nodes, *honor])).constraints
    assert (c.node_taints_policy, c.domains, c.skew) == ("Honor", {"a": 1, "b": 1}, 0)
    ignore = [replica(f"web-{i}", n) for i, n in enumerate(["a1", "b1"])]
    (c,) = only(report([*nodes, *ignore])).constraints
    assert (c.node_taints_policy, c.domains, c.skew) == ("Ignore", {"a": 1, "b": 1, "c": 0}, 1)


def test_node_affinity_policy_honor_keeps_only_the_nodes_the_pod_may_use() -> None:
    # nodeSelector zone=a|b via required affinity: c is no domain (Honor, the default), a=2, b=1,
    # minimum 1, skew 1; with nodeAffinityPolicy Ignore c=0 counts, minimum 0 and a violates (2 > 1).
    nodes = zoned(a1="a", b1="b", c1="c")
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}

    def pods(**extra: Any) -> list[dict[str, Any]]:
        out = []
        for i, n in enumerate(["a1", "a1", "b1"]):
            pod = make_pod(f"web-{i}").labels(WEB).node(n).required_terms(term).spread(ZONE, 1, match=WEB, **extra)
            out.append(pod.dict())
        return out

    (c,) = only(report([*nodes, *pods()])).constraints
    assert (c.domains, c.global_minimum, c.violated) == ({"a": 2, "b": 1}, 1, False)
    (c,) = only(report([*nodes, *pods(nodeAffinityPolicy="Ignore")])).constraints
    assert (c.domains, c.global_minimum, c.violating_pods) == (
        {"a": 2, "b": 1, "c": 0},
        0,
        ["default/web-0", "default/web-1"],
    )


def test_match_label_keys_count_each_revision_apart() -> None:
    # A rollout in progress: old ReplicaSet (hash 1) has 2 pods in zone a, new (hash 2) 1 in b.
    # With matchLabelKeys [pod-template-hash] each revision is its own selector: old a=2 b=0 c=0
    # (skew 2, violating), new a=0 b=1 c=0 (skew 1). Both rows belong to Deployment/web.
    nodes = zoned(a1="a", b1="b", c1="c")
    objects: list[dict[str, Any]] = [*nodes, replica_set("web-1"), replica_set("web-2")]
    for i, (node, h) in enumerate([("a1", "1"), ("a1", "1"), ("b1", "2")]):
        pod = make_pod(f"web-{i}").labels({**WEB, "pod-template-hash": h}).node(node).owner("ReplicaSet", f"web-{h}")
        objects.append(pod.spread(ZONE, 1, match=WEB, matchLabelKeys=["pod-template-hash"]).dict())
    w = only(report(objects))
    assert (w.kind, w.name) == ("Deployment", "web")
    old, new = w.constraints
    assert (old.selector, old.domains, old.skew) == ("app=web,pod-template-hash=1", {"a": 2, "b": 0, "c": 0}, 2)
    assert old.violating_pods == ["default/web-0", "default/web-1"]
    assert (new.selector, new.domains, new.skew, new.violated) == (
        "app=web,pod-template-hash=2",
        {"a": 0, "b": 1, "c": 0},
        1,
        False,
    )


def test_system_default_spreading_through_a_service() -> None:
    # No explicit constraints; Service "db" selects app=db, so System defaulting applies: hostname
    # maxSkew 3 and zone maxSkew 5, ScheduleAnyway, selector app=db. All 4 pods on n1: hostname
    # n1=4 n2=0 n3=0 (skew 4), zone a=4 b=0 (skew 4). Preferences are never "violated" (None).
    # Without the Service (and no controller object) the pods have no selector and are not reported.
    nodes = [make_node("n1").zone("a").dict(), make_node("n2").zone("a").dict(), make_node("n3").zone("b").dict()]
    pods = [make_pod(f"db-{i}").labels({"app": "db"}).node("n1").owner("StatefulSet", "db").dict() for i in range(4)]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default"}}
    service["spec"] = {"selector": {"app": "db"}}
    w = only(report([*nodes, *pods, service]))
    assert (w.kind, w.name) == ("StatefulSet", "db")
    host, zone = w.constraints
    assert (host.topology_key, host.max_skew, host.when_unsatisfiable, host.source) == (
        HOSTNAME,
        3,
        "ScheduleAnyway",
        "system-default",
    )
    assert (host.selector, host.domains, host.skew, host.violated) == ("app=db", {"n1": 4, "n2": 0, "n3": 0}, 4, None)
    assert (zone.topology_key, zone.max_skew, zone.domains, zone.skew, zone.violated) == (
        ZONE,
        5,
        {"a": 4, "b": 0},
        4,
        None,
    )
    assert host.violating_pods == zone.violating_pods == []
    assert report([*nodes, *pods]) == []


def test_system_defaults_let_a_node_without_the_zone_key_count_for_hostname() -> None:
    # Score's rule under System defaulting: a node may lack some keys. n3 has no zone: it is a
    # hostname domain (n3=1) but in no zone domain, where its pod is outside.
    nodes = [make_node("n1").zone("a").dict(), make_node("n3").dict()]
    pods = [make_pod(f"db-{i}").labels({"app": "db"}).node(n).dict() for i, n in enumerate(["n1", "n3"])]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}}}
    host, zone = only(report([*nodes, *pods, service])).constraints
    assert host.domains == {"n1": 1, "n3": 1}
    assert (zone.domains, zone.pods_outside_domains) == ({"a": 1}, ["default/db-1"])


def test_a_list_defaulting_config_reports_its_own_defaults(tmp_path: Any) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: spread-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
        "      defaultingType: List\n      defaultConstraints:\n"
        "      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"
    )
    # Hard default, zone maxSkew 1, selector from the Service: a=2, b=0 -> both pods violate.
    nodes = zoned(a1="a", b1="b")
    pods = [make_pod(f"db-{i}").labels({"app": "db"}).node("a1").dict() for i in range(2)]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}}}
    (w,) = skew_report([*nodes, *pods, service], load_config(config))
    (c,) = w.constraints
    assert (w.kind, w.name) == ("Pods", "app=db")
    assert (c.source, c.when_unsatisfiable, c.domains, c.violating_pods) == (
        "default",
        "DoNotSchedule",
        {"a": 2, "b": 0},
        ["default/db-0", "default/db-1"],
    )


def test_pods_without_owner_are_named_by_their_selector_and_pending_pods_are_not_counted() -> None:
    nodes = zoned(a1="a", b1="b")
    bound = make_pod("p0").labels(WEB).node("a1").spread(ZONE, 1, match=WEB).dict()
    pending = make_pod("p1").labels(WEB).spread(ZONE, 1, match=WEB).dict()
    w = only(report([*nodes, bound, pending]))
    assert (w.kind, w.name, w.pods) == ("Pods", "app=web", ["default/p0"])
    assert w.constraints[0].domains == {"a": 1, "b": 0}


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        pytest.param([Requirement("app", Operator.IN, frozenset({"web"}))], "app=web", id="one-value-in"),
        pytest.param([Requirement("tier", Operator.IN, frozenset({"b", "a"}))], "tier in (a,b)", id="in"),
        pytest.param([Requirement("tier", Operator.NOT_IN, frozenset({"x"}))], "tier notin (x)", id="notin"),
        pytest.param(
            [Requirement("a", Operator.EXISTS), Requirement("b", Operator.DOES_NOT_EXIST)], "a,!b", id="exists"
        ),
        pytest.param([], "", id="everything"),
    ],
)
def test_selector_string(requirements: list[Requirement], expected: str) -> None:
    assert selector_string(make_selector(requirements)) == expected
