"""Opportunistic batching through the scheduling cycles (``ScheduleOne`` + ``SchedulingAlgorithm``, as
upstream's schedulePod / findNodesThatFitPod / evaluateNominatedNode use GetNodeHint and
StoreScheduleResults). v1.35.4's schedule_one_test.go has no batching case, so these are ours.

The cluster (``cluster``) is built so that the batched hint and a fresh scoring disagree:
replicas with hostPort 80 fit one per node and prefer n1 (weight 10), n3 (6), n2 (2); n3 carries a
PreferNoSchedule taint; TaintToleration weighs 1, NodeAffinity 2. Every other score ties:
NodeResourcesFit gives 96 everywhere (the pods request nothing, so the 100m / 200Mi defaults count:
cpu (4000-100)*100//4000 = 97, memory (4096-200)*100//4096 = 95, (97+95)//2 = 96), the rest 0.

- r-0, all three feasible: NodeAffinity normalized 10/10, 2/10, 6/10 -> 100, 20, 60, x2 -> 200, 40,
  120; TaintToleration 100, 100, 0. Totals n1 396, n2 236, n3 216: n1, and [n2, n3] are stored.
- r-1, same signature, n1 now rejects it (the port): the hint n2 passes Filter and is taken unscored.
  A fresh scoring of n2, n3 would give NodeAffinity 2*100//6 = 33 and 100, x2 -> 66 and 200, plus
  100 and 0, plus 96: n2 262, n3 296, i.e. n3.
"""

from __future__ import annotations

from typing import Any

from scheduler.config import parse_config, upstream_config
from scheduler.features import features_at
from scheduler.framework import batch as batching
from scheduler.schedule_one import Attempt
from scheduler.simulate import Simulation, attempt_to_json
from scheduler.testing import PodBuilder, make_node, make_pod

LIST_DEFAULTING = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]


def config(**weights: int) -> dict[str, Any]:
    cfg = upstream_config(LIST_DEFAULTING)
    for entry in cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"]:
        if entry["name"] in weights:
            entry["weight"] = weights[entry["name"]]
    return cfg


def replica(i: int) -> PodBuilder:
    pod = make_pod(f"r-{i}").label("app", "web").host_port(80).created(f"2026-01-01T00:00:{i:02d}Z")
    for weight, value in ((10, "1"), (2, "2"), (6, "3")):
        pod.preferred_term(weight, {"matchExpressions": [{"key": "pref", "operator": "In", "values": [value]}]})
    return pod


def cluster(*pods: PodBuilder) -> list[dict[str, Any]]:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="4Gi", pods="110").label("pref", str(i)) for i in (1, 2, 3)]
    nodes[2].taint("spot", effect="PreferNoSchedule")
    return [n.dict() for n in nodes] + [p.dict() for p in pods]


def simulation(objects: list[dict[str, Any]], cfg: dict[str, Any] | None = None) -> Simulation:
    sim = Simulation(parse_config(cfg or config(TaintToleration=1)), seed=0)
    sim.add_objects(objects)
    return sim


def run(objects: list[dict[str, Any]], cfg: dict[str, Any] | None = None) -> list[Attempt]:
    return simulation(objects, cfg).run()


def placements(attempts: list[Attempt]) -> list[tuple[str, str | None, bool]]:
    return [(a.pod.name, a.host, a.batched) for a in attempts]


def test_a_replica_takes_the_hint_where_a_fresh_scoring_would_not() -> None:
    attempts = run(cluster(replica(0), replica(1)))
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n2", True)]
    first, second = attempts
    assert first.totals == {"n1": 396, "n2": 236, "n3": 216}
    assert first.other_nodes == ["n2", "n3"]
    assert second.hint == "n2"
    assert second.scores == []  # nothing was scored
    assert second.evaluated_nodes == 1


def test_the_pure_algorithm_computes_afresh() -> None:
    """Without a cycle count (explain, benchmarks) no state is read or written: n3 wins on scores."""
    sim = simulation(cluster(replica(0)))
    sim.run()
    (fwk,) = sim.frameworks.values()
    second = sim.algorithm.schedule_pod(fwk, sim.cache, replica(1).build())
    assert (second.host, second.batched, second.totals) == ("n3", False, {"n2": 262, "n3": 296})


def test_simulate_json_says_batched() -> None:
    sim = simulation(cluster(replica(0), replica(1)))
    results = [attempt_to_json(a, sim.cache) for a in sim.run()]
    assert [r["batched"] for r in results] == [False, True]
    assert results[1]["nodes"]["n2"] == {"filter": None, "scores": {}, "total": None}
    assert results[1]["nodes"]["n3"]["evaluated"] is False


def test_the_remaining_list_serves_the_next_replica() -> None:
    """r-2: n1 and n2 are taken; the hint is n3, the last one stored."""
    attempts = run(cluster(replica(0), replica(1), replica(2)))
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n2", True), ("r-2", "n3", True)]


def test_system_defaulting_never_batches() -> None:
    cfg = upstream_config()
    for entry in cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"]:
        if entry["name"] == "TaintToleration":
            entry["weight"] = 1
    attempts = run(cluster(replica(0), replica(1)), cfg)
    assert [a.batched for a in attempts] == [False, False]


def test_a_failed_pod_in_between_breaks_the_run() -> None:
    """The failure stores nothing, so r-1's cycle is not the next one after r-0's."""
    stranger = make_pod("x").node_selector({"none": "such"}).created("2026-01-01T00:00:00.500Z")
    attempts = run(cluster(replica(0), stranger, replica(1)))
    assert placements(attempts) == [("r-0", "n1", False), ("x", None, False), ("r-1", "n3", False)]
    assert attempts[2].hint is None


def test_another_signature_in_between_takes_over() -> None:
    """A pod signed differently stores its own ranking; r-1 then is not compatible with it."""
    other = make_pod("o").label("app", "db").created("2026-01-01T00:00:00.500Z")
    attempts = run(cluster(replica(0), other, replica(1)))
    assert [a.batched for a in attempts] == [False, False, False]
    assert attempts[2].host == "n3"


def test_a_nominated_node_goes_first_and_the_hint_is_spent() -> None:
    """r-1 is nominated to n3: it is tried first and fits; one feasible node clears the state."""
    attempts = run(cluster(replica(0), replica(1).set("status.nominatedNodeName", "n3"), replica(2)))
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n3", False), ("r-2", "n2", False)]
    assert attempts[1].hint == "n2"


def test_a_hint_that_fails_filter_falls_back_to_the_full_search() -> None:
    """A pod bound by someone else takes port 80 on n2 between the cycles: the hint n2 is rejected,
    its verdict stays in the diagnosis, and n3 is found by the full search."""
    sim = simulation(cluster(replica(0), replica(1)))
    squatter = make_pod("squatter").node("n2").host_port(80).build()

    def bind_squatter(attempt: Attempt, _seconds: float) -> None:
        if attempt.pod.name == "r-0":
            sim.scheduler.handlers.pod_event(None, squatter)

    sim.scheduler.cycles.attempt_observers.insert(0, bind_squatter)
    _first, second = sim.run()
    assert (second.hint, second.host, second.batched) == ("n2", "n3", False)
    n2 = second.diagnosis.node_to_status["n2"]
    assert n2.plugin == "NodePorts"
    (fwk,) = sim.frameworks.values()
    assert fwk.batch is not None
    assert fwk.batch.state is None  # n3 was the only feasible node: nothing to store


def test_state_older_than_500ms_is_not_used() -> None:
    """The live scheduler's clock moves: 0.6 s between two cycles expires the state."""
    sim = simulation(cluster(replica(0), replica(1)))
    now = [0.0]

    def ticking() -> float:
        now[0] += 0.6
        return now[0]

    (fwk,) = sim.frameworks.values()
    assert fwk.batch is not None
    fwk.batch.clock = ticking
    attempts = sim.run()
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n3", False)]
    assert fwk.batch.last_flush_reason == batching.FLUSH_EXPIRED


def stackable(i: int) -> PodBuilder:
    """A replica without the host port: any number fit one node."""
    pod = make_pod(f"r-{i}").label("app", "web").created(f"2026-01-01T00:00:{i:02d}Z")
    for weight, value in ((10, "1"), (2, "2"), (6, "3")):
        pod.preferred_term(weight, {"matchExpressions": [{"key": "pref", "operator": "In", "values": [value]}]})
    return pod


def test_1_35_a_replica_that_still_fits_the_chosen_node_is_scored_afresh() -> None:
    sim = Simulation(parse_config(config(TaintToleration=1), features=features_at("1.35")), seed=0)
    sim.add_objects(cluster(stackable(0), stackable(1)))
    attempts = sim.run()
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n1", False)]
    assert attempts[1].hint is None
    assert attempts[1].totals == {"n1": 392, "n2": 236, "n3": 216}


def test_1_37_the_chosen_node_is_rescored_and_offered_again() -> None:
    """#140289: n1 still fits r-1, so it is scored afresh against the stored n2 and n3 (392 against
    236 and 216, as a full scoring finds) and is the hint; r-1 takes it unscored, and r-2 too."""
    sim = Simulation(parse_config(config(TaintToleration=1), features=features_at("1.37")), seed=0)
    sim.add_objects(cluster(stackable(0), stackable(1), stackable(2)))
    attempts = sim.run()
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n1", True), ("r-2", "n1", True)]
    assert [a.hint for a in attempts] == [None, "n1", "n1"]
    fwk = next(iter(sim.frameworks.values()))
    assert fwk.batch is not None and fwk.batch.state is not None
    assert fwk.batch.state.sorted_nodes.names() == ["n1", "n2", "n3"][1:]


def test_1_37_a_nominated_replica_gets_no_hint() -> None:
    sim = Simulation(parse_config(config(TaintToleration=1), features=features_at("1.37")), seed=0)
    sim.add_objects(cluster(replica(0), replica(1).set("status.nominatedNodeName", "n3")))
    attempts = sim.run()
    assert placements(attempts) == [("r-0", "n1", False), ("r-1", "n3", False)]
    assert attempts[1].hint is None
