"""Moves in parallel within the disruption budget (scheduler/spread/batch.py and ``check_batch``):
the budget, a batch as many moves as it allows, checked as one with every victim gone, cut where a
replacement would land elsewhere, the cache left as found."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.simulate import Simulation
from scheduler.spread.batch import Budget, disruption_budget
from scheduler.spread.rebalance import PDB, PLANNED, STALE, Plan, check_batch, plan_workload
from scheduler.spread.search import finish
from scheduler.testing import PodBuilder, make_node
from tests.spread.test_rebalance import APP, WEB, ZONE, _pdb, _pod, _state, _world, _zone_down, drive

SIX_SIX_ZERO = ["b0", "b1"] * 3 + ["c0", "c1"] * 3  # zone a empty: four moves to 4/4/4


def _check(sim: Simulation, plan: Plan, **kw: Any) -> Plan:
    return finish(check_batch(sim.cache, sim.frameworks["spread-scheduler"], WEB, plan.moves, **kw))


def _plan(sim: Simulation) -> Plan:
    plan = plan_workload(sim.cache, sim.frameworks["spread-scheduler"], WEB)
    assert plan.reason == PLANNED
    return plan


def test_the_budget_is_the_tightest_covering_budgets_disruptions_allowed() -> None:
    sim = _world(
        [
            *_zone_down(SIX_SIX_ZERO),
            _pdb("wide", {}, 5),
            _pdb("narrow", {"matchLabels": APP}, 2),
            _pdb("other", {"matchLabels": {"app": "api"}}, 0),
        ]
    )
    pods = list(sim.cache.pods())
    assert disruption_budget("ReplicaSet", pods, sim.cache) == Budget(
        2, "PodDisruptionBudget default/narrow allows 2 disruptions", True
    )


@pytest.mark.parametrize(("pods", "allowed"), [(1, 1), (4, 1), (7, 1), (8, 2), (12, 3), (1200, 300)])
def test_without_a_budget_a_quarter_of_the_pods_rounded_down_at_least_one(pods: int, allowed: int) -> None:
    sim = _world([])
    members = [_pod(f"p{i}", "a0").build() for i in range(pods)]
    budget = disruption_budget("ReplicaSet", members, sim.cache)
    assert (budget.allowed, budget.pdb) == (allowed, False)
    assert budget.source == f"no PodDisruptionBudget: 25% of {pods} pods"


def test_without_a_budget_a_stateful_sets_pods_go_one_at_a_time() -> None:
    members = [_pod(f"p{i}", "a0", kind="StatefulSet").build() for i in range(12)]
    assert disruption_budget("StatefulSet", members, _world([]).cache).allowed == 1


@pytest.mark.parametrize(("allowed", "moves"), [(1, 1), (2, 2), (3, 3), (10, 4)])
def test_a_batch_is_as_many_moves_as_the_budget_allows_each_landing_in_the_empty_zone(allowed: int, moves: int) -> None:
    sim = _world([*_zone_down(SIX_SIX_ZERO), _pdb("web", {"matchLabels": APP}, allowed)])
    plan = _plan(sim)
    assert len(plan.moves) == 4
    before = _state(sim.cache)
    batch = _check(sim, plan)
    assert _state(sim.cache) == before
    assert batch.reason == PLANNED and len(batch.moves) == moves
    assert [m.pod for m in batch.moves] == [m.pod for m in plan.moves[:moves]]
    assert {m.to_domain for m in batch.moves} == {"a"} and {m.to_node for m in batch.moves} <= {"a0", "a1"}
    assert f"(PodDisruptionBudget default/web allows {allowed} disruptions)" in batch.message


def test_a_budget_at_zero_checks_nothing() -> None:
    sim = _world([*_zone_down(SIX_SIX_ZERO), _pdb("web", {"matchLabels": APP}, 3)])
    plan = _plan(sim)
    sim = _world([*_zone_down(SIX_SIX_ZERO), _pdb("web", {"matchLabels": APP}, 0)])
    assert _check(sim, plan).reason == PDB


def test_a_batch_whose_later_replacement_would_not_land_is_cut_and_checked_again() -> None:
    """Planned when zone a had room for four; now a0 holds one more pod and a1 is gone: with three
    victims gone at once, the second replacement has nowhere to go (a is full, b and c would break
    the spread). Only the first move is sent, checked again alone."""
    nodes = [
        make_node(f"{z}{i}").zone(z).capacity(cpu="4", memory="8Gi", pods="2").dict() for z in "abc" for i in (0, 1)
    ]
    pods = _zone_down(SIX_SIX_ZERO[:4] + SIX_SIX_ZERO[6:10])  # 2/2 per node of b and c: 4/4/0
    for obj in pods:
        obj["spec"]["resources"] = {}
    sim = Simulation(load_config(None))
    sim.add_objects([*nodes, *pods])
    plan = _plan(sim)
    assert len(plan.moves) == 2 and {m.to_domain for m in plan.moves} == {"a"}
    later = Simulation(load_config(None))
    filler = _pod("x", "a0", owner="other").dict()
    filler["metadata"]["labels"] = {"app": "other"}
    later.add_objects([*nodes[:1], *nodes[2:], *pods, filler])  # a1 gone, a0 holds one other pod
    before = _state(later.cache)
    batch = finish(
        check_batch(later.cache, later.frameworks["spread-scheduler"], WEB, plan.moves[:2])
    )  # no budget object: 25% of 8 pods = 2
    assert _state(later.cache) == before
    assert batch.reason == PLANNED and [m.pod for m in batch.moves] == [plan.moves[0].pod], batch


def test_a_batch_stops_before_a_pod_that_is_no_longer_where_the_plan_found_it() -> None:
    sim = _world([*_zone_down(SIX_SIX_ZERO), _pdb("web", {"matchLabels": APP}, 4)])
    plan = _plan(sim)
    moved = sim.cache.pod(plan.moves[2].pod)
    assert moved is not None
    sim.cache.remove_pod(moved)  # the third pod went (a replacement is not Ready yet: in flight)
    batch = _check(sim, plan, placed=[p for p in sim.cache.pods() if p.key != moved.key])
    assert batch.reason == PLANNED and [m.pod for m in batch.moves] == [m.pod for m in plan.moves[:2]]
    first = sim.cache.pod(plan.moves[0].pod)
    assert first is not None
    sim.cache.remove_pod(first)
    assert _check(sim, plan, placed=[p for p in sim.cache.pods()]).reason == STALE


def test_a_batch_checked_in_slices_leaves_the_cache_as_found_at_every_yield() -> None:
    sim = _world([*_zone_down(SIX_SIX_ZERO), _pdb("web", {"matchLabels": APP}, 4)])
    plan = _plan(sim)
    before = _state(sim.cache)
    steps = check_batch(sim.cache, sim.frameworks["spread-scheduler"], WEB, plan.moves, due=lambda: True)

    def as_found() -> None:
        assert _state(sim.cache) == before

    batch, yields = drive(steps, as_found)
    assert yields >= 4 and batch == _check(sim, plan)
    assert _state(sim.cache) == before


def test_a_batch_whose_replacement_would_land_elsewhere_is_never_sent() -> None:
    """A soft zone spread planned into the empty zone a; since then a's nodes took a taint the pods
    do not tolerate (seen by the cache only). With the victims gone our cycle would put their
    replacements back into b or c: not where the plan says, so nothing of the batch holds."""
    soft = [make_pod_soft(f"p{i}", node, i).dict() for i, node in enumerate(SIX_SIX_ZERO)]
    sim = _world(soft)
    plan = _plan(sim)
    assert len(plan.moves) >= 2 and {m.to_domain for m in plan.moves} == {"a"}
    for name in ("a0", "a1"):
        info = sim.cache.get(name)
        assert info is not None
        sim.cache.update_node(info.node, make_node(name).zone("a").taint("dedicated", "x").build())
    before = _state(sim.cache)
    batch = _check(sim, plan)
    assert _state(sim.cache) == before
    assert batch.reason == STALE and not batch.moves, batch
    assert "would land in topology.kubernetes.io/zone=b" in batch.message or "zone=c" in batch.message


def make_pod_soft(name: str, node: str, created: int) -> PodBuilder:
    """A pod of web-1 under a ScheduleAnyway zone spread (maxSkew 1)."""
    pod = _pod(name, node, created=created)
    pod.spec["topologySpreadConstraints"] = []
    return pod.spread(ZONE, 1, when="ScheduleAnyway", match=APP)
