"""Property: the rebalancing plan, on generated clusters, against the skew report and a brute force.

Clusters are generated as API objects (2-3 zones of 1-3 nodes, some tainted, some with room for few
pods; a ReplicaSet's pods bound anywhere, other pods matching its selector; one or two constraints
over zone and hostname, hard or soft, maxSkew 1-2) and loaded into the scheduler's cache as the
``rebalance`` command loads a dump. Checked, for every plan:

- no move raises any constraint's skew, and each lowers one (so the skew vector strictly falls,
  lexicographically too);
- the skews the plan reports, before and after its moves, are those ``skew`` reports on the objects
  with the moved pods on their new nodes (an independent count: the report's own grouping and path);
- the cache is left as found;
- against a brute force over every sequence of moves the scheduler would make (any pod of the
  workload as victim, each move judged by the same ``try_move``: our cycle places the replacement
  and every tied top node leaves no skew higher and one lower): when some sequence of at most
  ``DEPTH`` moves brings every constraint within its maxSkew, the plan does too, and with exactly
  as many moves as the shortest such sequence.

What would make them red: a victim taken from a domain that is not the most crowded (more moves
than the brute force), a move kept when its replacement lands where it does not help (a skew up),
counting that differs from the Filter's (the report disagrees), a working state not undone (the
cache differs), a stop before the skew is within reach (the brute force finds a way).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config
from scheduler.framework.runtime import Framework
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.simulate import Simulation
from scheduler.skew.report import skew_report
from scheduler.spread.moves import Move, Spec, Working, measure, over, try_move, workload_spec
from scheduler.spread.rebalance import PLANNED, Plan, check_batch, plan_rebalance, plan_workload
from scheduler.spread.search import finish
from scheduler.spread.workload import Workload
from scheduler.testing import make_node, make_pod
from tests.fuzz_seed import FUZZ_SEED

SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APP = {"app": "web"}
WEB = Workload("default", "ReplicaSet", "web-1", "uid-web-1")
DEPTH = 4  # the brute force's horizon: moves in a sequence
CONSTRAINTS = [(ZONE, "DoNotSchedule"), (HOST, "DoNotSchedule"), (ZONE, "ScheduleAnyway"), (HOST, "ScheduleAnyway")]


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    zones = "abc"[: draw(st.integers(2, 3))]
    nodes: list[str] = []
    objects: list[dict[str, Any]] = []
    for z in zones:
        for i in range(draw(st.integers(1, 3))):
            name = f"{z}{i}"
            node = make_node(name).zone(z).capacity(cpu="4", memory="8Gi", pods=str(draw(st.integers(2, 8))))
            if draw(st.integers(0, 5)) == 0:
                node = node.taint("dedicated", "x")
            nodes.append(name)
            objects.append(node.dict())
    chosen = draw(st.lists(st.sampled_from(CONSTRAINTS), min_size=1, max_size=2, unique=True))
    skews = [draw(st.integers(1, 2)) for _ in chosen]
    tolerates = draw(st.booleans())
    placed = draw(st.lists(st.sampled_from(nodes), min_size=2, max_size=7))
    for i, node in enumerate(placed):
        pod = (
            make_pod(f"p{i}")
            .labels(APP)
            .node(node)
            .phase("Running")
            .condition("Ready", "True")
            .owner("ReplicaSet", "web-1")
            .created(f"2026-01-01T00:00:{i:02d}Z")
        )
        for (key, when), max_skew in zip(chosen, skews, strict=True):
            pod = pod.spread(key, max_skew, when=when, match=APP)
        if tolerates:
            pod = pod.toleration("dedicated", "Equal", "x", "NoSchedule")
        objects.append(pod.dict())
    # Pods of no workload that match the selector: they count, and never move.
    for i, node in enumerate(draw(st.lists(st.sampled_from(nodes), max_size=2))):
        objects.append(make_pod(f"job-{i}").labels(APP).node(node).phase("Running").owner("Job", "batch").dict())
    return objects


def _load(objects: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(load_config(None))
    sim.add_objects(objects)
    return sim


def _state(cache: Cache) -> Any:
    pods = sorted((p.key, cache.pod_node(p.key), cache.is_assumed(p.key), id(p)) for p in cache.pods())
    nodes = sorted(
        (info.name, sorted(info.pods), info.requested_milli_cpu, info.non0_cpu) for info in cache.node_infos()
    )
    return pods, nodes


def _reported(objects: list[dict[str, Any]]) -> dict[tuple[str, bool], int]:
    """(topology key, hard) -> skew, as ``spread-scheduler skew`` reports the workload."""
    (workload,) = [w for w in skew_report(objects, load_config(None)) if w.name == "web-1"]
    return {(c.topology_key, c.when_unsatisfiable == "DoNotSchedule"): c.skew for c in workload.constraints}


def _moved(objects: list[dict[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """The objects after the plan's moves: each moved pod's replacement on its new node."""
    where = {m.pod: m.to_node for m in plan.moves}
    out = []
    for obj in objects:
        key = f"default/{obj['metadata']['name']}"
        moved = obj["kind"] == "Pod" and key in where
        out.append({**obj, "spec": {**obj["spec"], "nodeName": where[key]}} if moved else obj)
    return out


def _shortest(spec: Spec, pods: Sequence[Pod], cache: Cache, framework: Framework) -> int | None:
    """The fewest moves (at most ``DEPTH``) that bring every constraint within its maxSkew, trying
    every pod of the workload as the next victim (iterative deepening); None beyond the horizon."""
    algorithm = SchedulingAlgorithm(random.Random(0))
    working = Working(cache)
    failed: set[tuple[Any, int]] = set()

    def within(movable: tuple[Pod, ...], left: int) -> bool:
        now = measure(spec, cache)
        if not over(spec, now.skews):
            return True
        state = (tuple(sorted(cache.pod_node(p.key) or "" for p in movable)), now.counts, left)
        key = (repr(state), left)
        if left == 0 or key in failed:
            return False
        tried_nodes: set[str] = set()
        for victim in movable:
            node = cache.pod_node(victim.key) or ""
            if node in tried_nodes:
                continue  # a ReplicaSet's pods on one node are alike
            tried_nodes.add(node)
            tried = try_move(spec, 0, victim, now, cache, framework, algorithm, DEPTH - left + 1)
            if tried.move is None or tried.replacement is None:
                continue
            working.apply(victim, tried.replacement, tried.move.to_node)
            try:
                if within(tuple(p for p in movable if p is not victim), left - 1):
                    return True
            finally:
                working.undo()
        failed.add(key)
        return False

    for depth in range(DEPTH + 1):
        if within(tuple(pods), depth):
            return depth
    return None


@seed(FUZZ_SEED)  # the run's seed (pytest's header): SPREAD_FUZZ_SEED=N replays it
@SETTINGS
@given(clusters())
def test_a_plan_only_lowers_skews_and_the_report_agrees(objects: list[dict[str, Any]]) -> None:
    sim = _load(objects)
    before = _state(sim.cache)
    plans = plan_rebalance(sim.cache, sim.frameworks, default=True)
    assert _state(sim.cache) == before
    if not plans:
        return
    (plan,) = plans
    if not plan.skews:
        return
    skews = tuple(s.skew for s in plan.skews)
    keys = [(s.topology_key, s.hard) for s in plan.skews]
    assert dict(zip(keys, skews, strict=True)) == _reported(objects)
    for move in plan.moves:
        assert all(a <= b for a, b in zip(move.skews_after, skews, strict=True)), (move, skews)
        assert move.skews_after < skews and move.skews_after != skews
        skews = move.skews_after
    if plan.moves:
        assert plan.reason == PLANNED
        assert dict(zip(keys, skews, strict=True)) == _reported(_moved(objects, plan))


@seed(FUZZ_SEED)  # the run's seed (pytest's header): SPREAD_FUZZ_SEED=N replays it
@settings(SETTINGS, max_examples=600)
@given(clusters())
def test_a_plan_is_as_short_as_the_brute_forces_and_gets_there(objects: list[dict[str, Any]]) -> None:
    sim = _load(objects)
    plans = plan_rebalance(sim.cache, sim.frameworks, default=True)
    if not plans or not plans[0].skews:
        return
    (plan,) = plans
    framework = sim.frameworks["spread-scheduler"]
    pods = sorted((p for p in sim.cache.pods() if p.name.startswith("p")), key=lambda p: p.key)
    spec = workload_spec(pods, framework, sim.cache)
    assert isinstance(spec, Spec)
    before = _state(sim.cache)
    shortest = _shortest(spec, pods, sim.cache, framework)
    assert _state(sim.cache) == before
    event(f"fewest moves: {shortest}, plan: {len(plan.moves)}")
    if shortest is None:
        return
    final = plan.moves[-1].skews_after if plan.moves else tuple(s.skew for s in plan.skews)
    assert not over(spec, final), (plan, shortest)
    assert len(plan.moves) == shortest, (plan, shortest)


def _budget(allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": APP}},
        "status": {"disruptionsAllowed": allowed},
    }


def _carry_out(sim: Simulation, live: dict[str, dict[str, Any]], moves: Sequence[Move], round_: int) -> None:
    """A batch as the API server and the ReplicaSet make it: every victim deleted, then each
    replacement (the victim's object under a new name) bound where our check placed it, Ready.
    ``live``: the workload's pod objects by key."""
    victims = [live.pop(m.pod) for m in moves]
    for victim in victims:
        sim.scheduler.on_object("DELETED", victim)
    for victim, move in zip(victims, moves, strict=True):
        meta = victim["metadata"]
        name = f"{meta['name']}-{round_}"
        replacement = {
            **victim,
            "metadata": {**meta, "name": name, "uid": f"{meta.get('uid', name)}-{round_}"},
            "spec": {**victim["spec"], "nodeName": move.to_node},
        }
        live[f"default/{name}"] = replacement
        sim.scheduler.on_object("ADDED", replacement)


@seed(FUZZ_SEED)  # the run's seed (pytest's header): SPREAD_FUZZ_SEED=N replays it
@settings(SETTINGS, max_examples=300)
@given(clusters(), st.integers(1, 3))
def test_batches_within_the_budget_take_as_few_evictions_as_the_brute_force(
    objects: list[dict[str, Any]], allowed: int
) -> None:
    """Issue #48 item 2: the plan carried out in batches of at most ``allowed`` moves, each batch
    checked as one (every victim gone, the replacements placed by our cycle in turn) and made as
    checked; planned again whenever a batch does not hold. Every eviction is one our check placed,
    no batch is larger than the budget, and the evictions in all are the brute force's fewest."""
    sim = _load([*objects, _budget(allowed)])
    framework = sim.frameworks["spread-scheduler"]
    pods = sorted((p for p in sim.cache.pods() if p.name.startswith("p")), key=lambda p: p.key)
    spec = workload_spec(pods, framework, sim.cache)
    if not isinstance(spec, Spec):
        return
    shortest = _shortest(spec, pods, sim.cache, framework)
    live = {f"default/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    evictions, batches, rounds = 0, [], 0
    while rounds < 12:
        plan = plan_workload(sim.cache, framework, WEB)
        if plan.reason != PLANNED:
            break
        kept = list(plan.moves)
        while kept and rounds < 12:
            rounds += 1
            batch = finish(check_batch(sim.cache, framework, WEB, kept))
            if batch.reason != PLANNED:
                break
            assert 1 <= len(batch.moves) <= allowed, batch
            _carry_out(sim, live, batch.moves, rounds)
            evictions += len(batch.moves)
            batches.append(len(batch.moves))
            done = {m.pod for m in batch.moves}
            kept = [m for m in kept if m.pod not in done]
    event(f"fewest moves: {shortest}, batches: {batches}")
    if shortest is None:
        return
    final = measure(spec, sim.cache).skews
    assert not over(spec, final), (final, batches)
    assert evictions == shortest, (evictions, shortest, batches)
