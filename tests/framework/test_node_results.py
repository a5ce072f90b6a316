"""Per-node results reused across pods of one signature must never change a decision."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.objects import Node
from scheduler.backend.cache.cache import Cache
from scheduler.config import upstream_config
from scheduler.framework.node_results import NodeResults
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node, make_pod
from tests.differential.generator import replicated
from tests.differential.runner import python_side


@pytest.mark.parametrize("seed", range(2_000_000, 2_000_150))
def test_reusing_results_decides_exactly_as_computing_them(seed: int) -> None:
    objects, config = replicated(seed)
    assert python_side(objects, config, seed, reuse=True) == python_side(objects, config, seed, reuse=False)


def test_every_change_to_a_node_info_gives_it_a_new_generation() -> None:
    info = NodeInfo(Node.from_dict(make_node("n1").dict()))
    seen = {info.generation}
    pod = make_pod("p").requests(cpu="1").node("n1").build()
    info.add_pod(pod)
    seen.add(info.generation)
    info.remove_pod(pod.key)
    seen.add(info.generation)
    info.set_node(Node.from_dict(make_node("n1").label("disk", "ssd").dict()))
    seen.add(info.generation)
    assert len(seen) == 4
    # A node deleted and created again is a new NodeInfo: it never repeats an old generation.
    cache = Cache()
    cache.add_node(Node.from_dict(make_node("n1").dict()))
    first = cache.get("n1")
    assert first is not None
    before = first.generation
    cache.remove_node("n1")
    cache.add_node(Node.from_dict(make_node("n1").dict()))
    again = cache.get("n1")
    assert again is not None and again.generation != before and again.generation not in seen


def test_results_are_kept_for_a_bounded_number_of_signatures() -> None:
    results = NodeResults(max_signatures=2)
    results.table("a", 10)[1] = None
    results.table("b", 10)
    results.table("a", 10)  # "a" used last: "b" is the least recently used
    results.table("c", 10)
    assert len(results) == 2
    assert results.table("a", 10) == {1: None}
    assert results.table("b", 10) == {}  # dropped, starts empty


def test_a_table_grown_past_the_cluster_by_old_node_states_is_emptied() -> None:
    results = NodeResults()
    table = results.table("sig", 1)
    for generation in range(70):
        table[generation] = None
    assert results.table("sig", 1) == {}


@pytest.mark.parametrize("seed", [1, 2])
def test_the_written_out_filter_loop_decides_as_the_node_filter_at_a_size_where_the_search_stops_early(
    seed: int,
) -> None:
    """``Framework.filter_in_turn`` writes the node filter out for the default profile; clusters of
    the generator are under 100 nodes, where every node is examined. At 300 nodes (3 zones, some
    tainted, some cordoned, some full) the search stops at 144 feasible nodes and its rotating start
    index carries over between pods, so a loop that examined one node more or less, or recorded a
    status differently, would decide otherwise than the plain node filter (reuse off)."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    for i in range(300):
        node = make_node(f"n{i:03d}").zone(f"zone-{i % 3}").label("pool", "general").capacity(cpu="4", pods="110")
        roll = rng.random()
        if roll < 0.1:
            node.taint("dedicated", "db")
        elif roll < 0.15:
            node.unschedulable()
        elif roll < 0.2:
            node.capacity(cpu="100m", pods="110")
        objects.append(node.dict() | {"kind": "Node", "apiVersion": "v1"})
    for k in range(60):
        for d in range(4):
            labels = {"app": f"web-{d}"}
            pod = (
                make_pod(f"web-{d}-{k:02d}")
                .labels(labels)
                .requests(cpu="200m")
                .spread("topology.kubernetes.io/zone", 1, "DoNotSchedule", match=labels)
                .spread("kubernetes.io/hostname", 1, "ScheduleAnyway", match=labels)
                .required_terms({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["general"]}]})
                .created(f"2026-01-01T00:{k:02d}:{d:02d}Z")
            )
            if d == 3:
                pod.toleration("dedicated", "Equal", "db", "NoSchedule")
            objects.append(pod.dict() | {"kind": "Pod", "apiVersion": "v1"})
    config = upstream_config()
    reused = python_side(objects, config, seed, reuse=True)
    assert sum(1 for attempt in reused if attempt.get("node")) > 200
    assert reused == python_side(objects, config, seed, reuse=False)
