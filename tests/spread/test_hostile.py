"""A tenant's hostile workload (issue #48's goals): pods created with ``nodeName`` preset (no
scheduler placed them), the opt-in annotation, and ownerReferences to a ReplicaSet that does not
exist. To the planner it is a workload like any other: it costs no more than a real one of the same
size, and none of its pods is planned as moved unless our own cycle placed the replacement."""

from __future__ import annotations

import time

import pytest

from bench.rebalance_plan import WORKLOAD, zone_returned, zone_returned_objects
from scheduler.config import load_config
from scheduler.simulate import Simulation
from scheduler.spread.rebalance import NO_IMPROVING_MOVE, PLANNED, STALE, Move, Plan, check_batch, plan_steps
from scheduler.spread.search import MAX_CYCLES, MAX_TRIES_PER_MOVE, finish
from scheduler.spread.workload import Workload
from scheduler.testing import make_node
from tests.kube.controllers.test_rebalance import Cycles
from tests.spread.test_rebalance import drive

GHOST = Workload("default", "ReplicaSet", "ghost", "uid-ghost")  # no such ReplicaSet exists
ZONE = "topology.kubernetes.io/zone"


def _hostile(pods: int, nodes: int) -> Simulation:
    """The bench's zone return, its pods created by hand: on their nodes (nodeName preset), with
    the opt-in annotation and a controller reference to a ReplicaSet ``ghost`` never created."""
    objects = zone_returned_objects(pods, nodes)
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost", "uid": "uid-ghost", "controller": True}
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["metadata"]["ownerReferences"] = [ref]
    sim = Simulation(load_config(None))
    sim.add_objects(objects)
    return sim


def _cost(sim: Simulation, workload: Workload, cycles: Cycles) -> tuple[Plan, int, int, float]:
    """The plan in slices (a slice always spent), its scheduling cycles, slices and CPU."""
    before, cpu = cycles.count, time.thread_time()
    plan, slices = drive(plan_steps(sim.cache, sim.frameworks["spread-scheduler"], workload, due=lambda: True))
    return plan, cycles.count - before, slices, time.thread_time() - cpu


def test_a_hostile_workload_costs_the_planner_what_a_real_one_of_its_size_costs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = zone_returned(300, 30)
    hostile = _hostile(300, 30)
    cycles = Cycles(monkeypatch)
    planned, real_cycles, real_slices, real_cpu = _cost(real, WORKLOAD, cycles)
    ghost, ghost_cycles, ghost_slices, ghost_cpu = _cost(hostile, GHOST, cycles)
    assert planned.reason == ghost.reason == PLANNED
    assert [m.pod for m in ghost.moves] == [m.pod for m in planned.moves]
    assert (ghost_cycles, ghost_slices) == (real_cycles, real_slices)
    assert ghost_cpu < 2 * real_cpu + 0.05, (ghost_cpu, real_cpu)


def test_a_hostile_workload_that_cannot_move_costs_at_most_the_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its empty zone's nodes carry a taint its pods do not tolerate (they were put on their nodes
    by hand): no replacement lands there, nothing is planned, and the cycles spent are capped."""
    real = zone_returned(300, 30)
    hostile = _hostile(300, 30)
    for sim in (real, hostile):
        for info in list(sim.cache.node_infos()):
            if info.name.startswith("c"):
                sim.cache.update_node(info.node, make_node(info.name).zone("c").taint("dedicated", "x").build())
    cycles = Cycles(monkeypatch)
    stuck, real_cycles, _, _ = _cost(real, WORKLOAD, cycles)
    ghost, ghost_cycles, _, _ = _cost(hostile, GHOST, cycles)
    assert stuck.reason == ghost.reason == NO_IMPROVING_MOVE and not ghost.moves
    assert ghost_cycles == real_cycles <= MAX_TRIES_PER_MOVE + MAX_CYCLES


def test_a_pod_with_its_node_preset_is_never_moved_where_our_cycle_would_not_place_it() -> None:
    """A forged plan (moves into the tainted zone) checked as a batch: our cycle places none of
    the replacements there, so none is sent."""
    hostile = _hostile(30, 6)
    framework = hostile.frameworks["spread-scheduler"]
    plan = finish(plan_steps(hostile.cache, framework, GHOST))
    assert plan.reason == PLANNED
    for info in list(hostile.cache.node_infos()):
        if info.name.startswith("c"):
            hostile.cache.update_node(info.node, make_node(info.name).zone("c").taint("dedicated", "x").build())
    forged: list[Move] = list(plan.moves)
    batch = finish(check_batch(hostile.cache, framework, GHOST, forged))
    assert batch.reason == STALE and not batch.moves, batch
