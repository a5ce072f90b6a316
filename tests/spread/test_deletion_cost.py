"""Deletion costs on the scheduler's own cache: which pods get one, what is left alone, the diff."""

from __future__ import annotations

from collections import Counter
from typing import Any

from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.simulate import Simulation
from scheduler.spread.deletion_cost import (
    COST_ANNOTATION,
    MARKER_ANNOTATION,
    cost_changes,
    rank_workload,
    workload_costs,
)
from scheduler.spread.workload import Workload, workload_of
from scheduler.testing import PodBuilder, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APP = {"app": "web"}


def _pod(name: str, node: str, created: int = 0) -> PodBuilder:
    return (
        make_pod(name)
        .labels(APP)
        .node(node)
        .phase("Running")
        .owner("ReplicaSet", "web-1")
        .created(f"2026-01-01T00:00:{created:02d}Z")
        .spread(ZONE, 1, match=APP)
    )


def _world(pods: list[dict[str, Any]], extra: list[dict[str, Any]] | None = None) -> Simulation:
    sim = Simulation(load_config(None))
    nodes = [make_node(f"{z}{i}").zone(z).dict() for z in "abc" for i in range(2)]
    sim.add_objects([*nodes, *pods, *(extra or [])])
    return sim


def _costs(sim: Simulation, pods: list[Pod]) -> dict[str, int]:
    return {str(k): v for k, v in workload_costs(pods, sim.cache, sim.frameworks).items()}


def _bound(sim: Simulation) -> list[Pod]:
    return sorted(sim.cache.pods(), key=lambda p: p.name)


def test_four_per_zone_rank_one_to_four_in_each_zone_youngest_on_top() -> None:
    objects = [_pod(f"{z}-{i}", f"{z}{i % 2}", created=i).dict() for z in "abc" for i in range(4)]
    sim = _world(objects)
    costs = _costs(sim, _bound(sim))
    for z in "abc":
        assert [costs[f"default/{z}-{i}"] for i in range(4)] == [-1, -2, -3, -4]


def test_deleting_by_cost_keeps_the_zone_skew_at_most_one() -> None:
    sim = _world([_pod(f"p{i}", f"{'abc'[i % 3]}{i % 2}", created=i).dict() for i in range(12)])
    pods = _bound(sim)
    costs = _costs(sim, pods)
    order = sorted(pods, key=lambda p: (costs[str(p.key)], -p.created))
    for k in range(12):
        zones = Counter(p.node_name[0] for p in order[k:])
        counts = [zones.get(z, 0) for z in "abc"]
        assert max(counts) - min(counts) <= 1, (k, counts)


def _zone_a_alone() -> list[dict[str, Any]]:
    """One pod in zone a (the oldest), three each in zones b and c."""
    return [
        _pod("a", "a0").dict(),
        *(_pod(f"{z}-{i}", f"{z}{i % 2}", created=i + 1).dict() for z in "bc" for i in range(3)),
    ]


def test_a_zones_last_pod_costs_the_most_of_its_workload() -> None:
    """Issue #50: deleting a zone's last pod empties a domain of the hard spread (and may leave its
    node empty for an autoscaler); rank 1 in the zone is the top cost, so it goes last."""
    sim = _world(_zone_a_alone())
    costs = _costs(sim, _bound(sim))
    assert costs["default/a"] == max(costs.values()) == -1


def test_a_zones_last_pod_costs_the_most_while_a_departed_pod_of_another_workload_is_held() -> None:
    """The held count of other pods (FOREIGN_SLACK) would keep the pod one rank up after the pod
    beside it left, a tie with the second pods of zones b and c that the controller may break by
    emptying zone a. A domain's last pod is ranked on the count now: one patch."""
    bare = make_pod("bare").labels(APP).node("a1").phase("Running").dict()
    sim = _world(_zone_a_alone(), [bare])
    ours = [p for p in _bound(sim) if p.name != "bare"]
    first = rank_workload(ours, sim.cache, sim.frameworks, {})
    assert first.costs[ours[0].key] == -2  # above the bare pod
    sim.scheduler.on_object("DELETED", bare)
    again = rank_workload(ours, sim.cache, sim.frameworks, first.held)
    assert again.costs[ours[0].key] == max(again.costs.values()) == -1  # was -2: held above the departed pod
    assert sum(again.costs[k] != v for k, v in first.costs.items()) == 1  # that pod alone changes


def test_a_pod_alone_on_its_node_under_a_second_hard_constraint_goes_after_its_zone_mates_only() -> None:
    """Zone, then hostname, both hard: the zone decides first (its skew is the optimum for every
    number of deletions), so a pod alone on its node is not the workload's top cost; inside its
    zone it goes after the pods that share a node and before the zone's bottom pod."""
    pods = [
        _pod(name, node, created=t).spread(HOST, 1, match=APP).dict()
        for name, node, t in [
            ("a-0", "a0", 0),
            ("a-1", "a0", 1),
            ("a-2", "a0", 2),
            ("a-lone", "a1", 3),
            ("b-0", "b0", 4),
            ("b-1", "b1", 5),
            ("c-0", "c0", 6),
            ("c-1", "c1", 7),
        ]
    ]
    sim = _world(pods)
    costs = {k.removeprefix("default/"): v for k, v in _costs(sim, _bound(sim)).items()}
    assert costs["a-2"] < costs["a-1"] < costs["a-lone"] < costs["a-0"] == max(costs.values())
    assert costs["a-lone"] == costs["b-1"] == costs["c-1"]  # zone rank 2, host rank 1


def test_a_cost_someone_else_set_is_neither_ranked_nor_rewritten_but_counts() -> None:
    theirs = _pod("theirs", "a0").set("metadata.annotations", {COST_ANNOTATION: "100"}).dict()
    pods = [theirs, _pod("a", "a1").dict(), _pod("b", "b0").dict()]
    sim = _world(pods)
    costs = _costs(sim, _bound(sim))
    assert "default/theirs" not in costs
    assert costs == {"default/a": -2, "default/b": -1}  # a is above theirs in zone a
    assert [c.pod.name for c in cost_changes(_bound(sim), workload_costs(_bound(sim), sim.cache, sim.frameworks))] == [
        "a",
        "b",
    ]


def test_a_cost_of_ours_is_rewritten_only_when_it_must_change() -> None:
    same = _pod("same", "a0").set("metadata.annotations", {COST_ANNOTATION: "-1", MARKER_ANNOTATION: "-1"}).dict()
    stale = _pod("stale", "b0").set("metadata.annotations", {COST_ANNOTATION: "-7", MARKER_ANNOTATION: "-7"}).dict()
    other = _pod("other", "c0").set("metadata.annotations", {COST_ANNOTATION: "-1", MARKER_ANNOTATION: "-3"}).dict()
    sim = _world([same, stale, other])
    pods = _bound(sim)
    changes = cost_changes(pods, workload_costs(pods, sim.cache, sim.frameworks))
    assert [(c.pod.name, c.value) for c in changes] == [("stale", "-1")]


def test_pods_not_ours_unbound_assumed_or_terminating_get_no_cost() -> None:
    pods = [
        _pod("theirs", "a0").scheduler("default-scheduler").dict(),
        _pod("going", "b0").terminating().dict(),
        _pod("ours", "c0").dict(),
    ]
    sim = _world(pods)
    assumed = _pod("assumed", "c1").build()
    sim.cache.assume_pod(assumed, "c1")
    unbound = make_pod("pending").labels(APP).owner("ReplicaSet", "web-1").spread(ZONE, 1, match=APP).build()
    costs = _costs(sim, [*_bound(sim), assumed, unbound])
    assert set(costs) == {"default/ours"}
    assert costs["default/ours"] == -2  # the assumed pod counts in zone c, below ours


def test_system_default_constraints_rank_pods_without_their_own() -> None:
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": APP}},
    }
    pods = [
        make_pod(f"p{i}").labels(APP).node(f"a{i % 2}").phase("Running").owner("ReplicaSet", "web-1").dict()
        for i in range(3)
    ]
    sim = _world(pods, [replica_set])
    costs = _costs(sim, _bound(sim))
    # System defaults: hostname (maxSkew 3) then zone (maxSkew 5), both soft: a0 holds two, a1 one.
    assert len(costs) == 3
    top = min(costs, key=lambda k: costs[k])
    assert sim.cache.pod_node(top) == "a0"


def test_workloads_are_replica_sets_and_replication_controllers_only() -> None:
    assert workload_of(_pod("p", "a0").build()) == Workload("default", "ReplicaSet", "web-1", "uid-web-1")
    rc = make_pod("q").owner("ReplicationController", "old", api_version="v1").build()
    assert workload_of(rc) == Workload("default", "ReplicationController", "old", "uid-old")
    assert workload_of(make_pod("s").owner("StatefulSet", "db").build()) is None
    assert workload_of(make_pod("bare").build()) is None
