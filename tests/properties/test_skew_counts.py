"""Property: the spread report's counts equal a direct recount from the objects, on random clusters.

The recount below reads only the dicts it generated (no scheduler code): a domain is the topology
value of a node that carries every key of the pod's constraints and, under nodeTaintsPolicy Honor,
has no untolerated NoSchedule/NoExecute taint; a domain's count is the live (not terminating) pods of
the same namespace on its nodes whose labels match; the global minimum is 0 when there are fewer
domains than minDomains (DoNotSchedule only); a pod violates when its domain's count minus that
minimum exceeds maxSkew.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.config import load_config
from scheduler.skew import skew_report
from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CONFIG = load_config(None)


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    node_count = draw(st.integers(1, 6))
    nodes = []
    for i in range(node_count):
        zone = draw(st.sampled_from(["a", "b", "c", None]))
        tainted = draw(st.booleans())
        nodes.append({"name": f"n{i}", "zone": zone, "tainted": tainted})
    when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
    constraint = {
        "keys": draw(st.sampled_from([[ZONE], [HOSTNAME], [ZONE, HOSTNAME]])),
        "max_skew": draw(st.integers(1, 3)),
        "when": when,
        "min_domains": draw(st.integers(1, 5)) if when == "DoNotSchedule" else None,
        "taints": draw(st.sampled_from(["Honor", "Ignore"])),
    }
    pods = []
    for i in range(draw(st.integers(0, 14))):
        pods.append(
            {
                "name": f"p{i}",
                "namespace": draw(st.sampled_from(["default", "default", "other"])),
                "app": draw(st.sampled_from(["web", "web", "db"])),
                "node": draw(st.sampled_from([n["name"] for n in nodes] + ["gone"])),
                "terminating": draw(st.integers(0, 5)) == 0,
                "owner": draw(st.sampled_from(["rs-1", "rs-2"])),
            }
        )
    return {"nodes": nodes, "constraint": constraint, "pods": pods}


def objects(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for n in cluster["nodes"]:
        node = make_node(n["name"])
        if n["zone"] is not None:
            node.zone(n["zone"])
        if n["tainted"]:
            node.taint("dedicated", "x")
        out.append(node.dict())
    c = cluster["constraint"]
    for p in cluster["pods"]:
        pod = make_pod(p["name"], p["namespace"]).labels({"app": p["app"]}).node(p["node"])
        pod.owner("ReplicaSet", p["owner"])
        if p["app"] == "web":  # only web pods carry the constraints; db pods are just counted (or not)
            for key in c["keys"]:
                extra: dict[str, Any] = {"nodeTaintsPolicy": c["taints"]}
                if c["min_domains"] is not None:
                    extra["minDomains"] = c["min_domains"]
                pod.spread(key, c["max_skew"], c["when"], match={"app": "web"}, **extra)
        if p["terminating"]:
            pod.terminating()
        out.append(pod.dict())
    return out


def recount(cluster: dict[str, Any], namespace: str, key: str) -> tuple[dict[str, int], int, dict[str, str | None]]:
    """Domains with counts, the global minimum, and each node's domain (None: in none)."""
    c = cluster["constraint"]
    domain_of: dict[str, str | None] = {}
    for n in cluster["nodes"]:
        labels = {HOSTNAME: n["name"], **({ZONE: n["zone"]} if n["zone"] is not None else {})}
        eligible = all(k in labels for k in c["keys"]) and not (c["taints"] == "Honor" and n["tainted"])
        domain_of[n["name"]] = labels[key] if eligible else None
    counts = Counter({d: 0 for d in domain_of.values() if d is not None})
    for p in cluster["pods"]:
        d = domain_of.get(p["node"])
        if p["namespace"] == namespace and p["app"] == "web" and not p["terminating"] and d is not None:
            counts[d] += 1
    minimum = min(counts.values(), default=0)
    if c["min_domains"] is not None and len(counts) < c["min_domains"]:
        minimum = 0
    return dict(counts), minimum, domain_of


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_report_counts_equal_a_direct_recount(cluster: dict[str, Any]) -> None:
    c = cluster["constraint"]
    workloads = skew_report(objects(cluster), CONFIG)
    expected_workloads = {
        (p["namespace"], p["owner"]) for p in cluster["pods"] if p["app"] == "web" and not p["terminating"]
    }
    assert {(w.namespace, w.name) for w in workloads} == expected_workloads
    for w in workloads:
        assert w.kind == "ReplicaSet"
        members = [
            p
            for p in cluster["pods"]
            if (p["namespace"], p["owner"]) == (w.namespace, w.name) and p["app"] == "web" and not p["terminating"]
        ]
        assert w.pods == sorted(f"{p['namespace']}/{p['name']}" for p in members)
        assert sorted(r.topology_key for r in w.constraints) == sorted(c["keys"])
        for row in w.constraints:
            counts, minimum, domain_of = recount(cluster, w.namespace, row.topology_key)
            assert row.domains == counts
            assert row.global_minimum == minimum
            assert row.skew == (max(counts.values()) - minimum if counts else 0)
            outside = sorted(f"{p['namespace']}/{p['name']}" for p in members if domain_of.get(p["node"]) is None)
            assert row.pods_outside_domains == outside
            if c["when"] == "ScheduleAnyway":
                assert row.violated is None and row.violating_pods == []
                continue
            violating = sorted(
                f"{p['namespace']}/{p['name']}"
                for p in members
                if (d := domain_of.get(p["node"])) is not None and counts[d] - minimum > c["max_skew"]
            )
            assert row.violating_pods == violating
            assert row.violated is bool(violating)
