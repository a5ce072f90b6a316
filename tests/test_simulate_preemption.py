"""``simulate`` shows DefaultPreemption's decision (issue #19, first increment): the example in
docs/preemption.md, JSON and table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.api.objects import Pod, PodKey
from scheduler.cli import main
from scheduler.config import load_config, parse_config
from scheduler.features import features_at
from scheduler.framework.status import Code, Status
from scheduler.schedule_one import Attempt
from scheduler.simulate.dump import load_objects
from scheduler.simulate.json_output import attempt_to_json
from scheduler.simulate.simulation import Simulation
from scheduler.simulate.table import render_table
from scheduler.testing import make_node, make_pod

EXAMPLES = Path(__file__).parent.parent / "examples"


WITHOUT_PREEMPTION = {
    "profiles": [
        {"schedulerName": "spread-scheduler", "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}
    ]
}


def run(seed: int = 1, *, preemption: bool = True) -> Simulation:
    config = load_config(None) if preemption else parse_config(WITHOUT_PREEMPTION)
    sim = Simulation(config, seed=seed)
    sim.add_objects(load_objects(EXAMPLES / "preemption.yaml"))
    return sim


def test_the_pdb_covered_node_is_spared_and_the_latest_started_pod_goes() -> None:
    """node-a's pods are covered by a PDB allowing no disruption (criterion 1: fewest violations);
    on node-b one victim is enough, and the reprieve keeps the earlier-started batch-0."""
    for seed in range(8):  # whatever the random offset
        sim = run(seed=seed)
        (attempt,) = sim.run()
        data = attempt_to_json(attempt, sim.cache)
        assert (data["nominatedNode"], data["victims"]) == ("node-b", ["shop/batch-1"])
        assert data["message"] == "0/2 nodes are available: 2 Insufficient cpu."  # Success adds no text
        assert sim.preemption.decisions == {"shop/web": ("node-b", ["shop/batch-1"])}


def test_the_table_names_the_node_and_the_victims() -> None:
    sim = run()
    lines = render_table(sim.run(), sim.cache).splitlines()
    assert lines[1] == "  preemption: nominated to node-b, evicting shop/batch-1"


def test_without_default_preemption_the_result_has_no_preemption_keys() -> None:
    sim = run(preemption=False)
    (attempt,) = sim.run()
    data = attempt_to_json(attempt, sim.cache)
    assert "nominatedNode" not in data and "victims" not in data


def test_a_pod_that_may_not_preempt_gets_null_and_the_reason() -> None:
    sim = Simulation(load_config(None), seed=0)
    objects = load_objects(EXAMPLES / "preemption.yaml")
    web = next(o for o in objects if o["metadata"]["name"] == "web")
    web["spec"]["preemptionPolicy"] = "Never"
    sim.add_objects(objects)
    (attempt,) = sim.run()
    data = attempt_to_json(attempt, sim.cache)
    assert (data["nominatedNode"], data["victims"]) == (None, [])
    assert data["message"].endswith(
        "2 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )


# -- applied preemption (the ``simulate`` and ``explain`` commands) ---------------------------------


def applied(objects: list[dict[str, Any]], seed: int = 1) -> tuple[Simulation, dict[str, dict[str, Any]]]:
    """Run with the preemption carried out; every result's JSON by pod."""
    sim = Simulation(load_config(None), seed=seed, apply_preemption=True)
    sim.add_objects(objects)
    attempts = sim.run()
    return sim, {a.pod.key: attempt_to_json(a, sim.cache, history=sim.history) for a in attempts}


def test_the_victim_leaves_and_the_preemptor_lands_on_its_nominated_node() -> None:
    """The end state of the example: batch-1 gone, web on node-b, nothing else deleted; the first
    cycle (the decision) is kept in ``earlierCycles``."""
    for seed in range(4):
        sim, results = applied([dict(o) for o in load_objects(EXAMPLES / "preemption.yaml")], seed)
        web = results["shop/web"]
        assert (web["node"], web["code"]) == ("node-b", "Success")
        assert (web["nominatedNode"], web["victims"]) == ("node-b", ["shop/batch-1"])
        (first,) = web["earlierCycles"]
        assert (first["node"], first["message"]) == (None, "0/2 nodes are available: 2 Insufficient cpu.")
        assert (first["nominatedNode"], first["victims"]) == ("node-b", ["shop/batch-1"])
        assert "pod" not in first
        on_nodes = {pod.key for pod in sim.cache.pods()}
        assert on_nodes == {"shop/db-0", "shop/db-1", "shop/batch-0", "shop/web"}
        assert sim.history.preempted_by == {"shop/batch-1": "shop/web"}
        assert sim.binder.bindings == {"shop/web": "node-b"}


def test_the_table_shows_each_cycle_and_the_last_cycles_nodes() -> None:
    sim = Simulation(load_config(None), seed=1, apply_preemption=True)
    sim.add_objects(load_objects(EXAMPLES / "preemption.yaml"))
    lines = render_table(sim.run(), sim.cache, history=sim.history).splitlines()
    assert lines[:4] == [
        "pod shop/web: -> node-b",
        "  cycle 1: UNSCHEDULABLE: 0/2 nodes are available: 2 Insufficient cpu.",
        "    preemption: nominated to node-b, evicting shop/batch-1",
        "  cycle 2: -> node-b",
    ]
    assert lines[5].split() == ["node-a", "not", "evaluated"]  # tried on its nominated node alone


def big_victim_cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """node-b holds one 2-cpu pod of priority 100; web (1000, 1 cpu) evicts it and leaves 1 cpu free."""
    return [
        make_node("node-b").allocatable(cpu="2", memory="4Gi", pods="110").dict(),
        make_pod("big").node("node-b").priority(100).requests(cpu="2").dict(),
        make_pod("web").priority(1000).requests(cpu="1").created("2026-01-01T00:00:00Z").dict(),
        *extra,
    ]


def test_room_the_victims_free_beyond_the_preemptors_goes_to_a_requeued_pod() -> None:
    """``small`` (priority 50) fits nowhere in the first round and may not preempt; the victim's
    deletion requeues it (NodeResourcesFit's hint), and it takes the cpu web left, as upstream."""
    small = make_pod("small").priority(50).requests(cpu="1").created("2026-01-01T00:00:01Z").dict()
    sim, results = applied(big_victim_cluster(small))
    assert (results["default/web"]["node"], results["default/small"]["node"]) == ("node-b", "node-b")
    assert results["default/small"]["earlierCycles"][0]["code"] == "Unschedulable"
    assert {pod.key for pod in sim.cache.pods()} == {"default/web", "default/small"}


def test_without_apply_preemption_each_pod_has_one_cycle() -> None:
    """The library default (what the differential oracle compares): the decision only."""
    sim = Simulation(load_config(None), seed=1)
    sim.add_objects(big_victim_cluster())
    (attempt,) = sim.run()
    data = attempt_to_json(attempt, sim.cache, history=sim.history)
    assert (data["node"], data["nominatedNode"], "earlierCycles" in data) == (None, "node-b", False)
    assert sim.cache.pod("default/big") is not None


def test_a_lower_priority_nomination_on_the_node_is_cleared() -> None:
    """``waiting`` (priority 10) was nominated to node-b; web's preemption there clears it
    (``prepareCandidate``), as a status patch the watch reports."""
    waiting = (
        make_pod("waiting")
        .priority(10)
        .requests(cpu="2")
        .set("status.nominatedNodeName", "node-b")
        .created("2026-01-01T00:00:01Z")
        .dict()
    )
    sim, results = applied(big_victim_cluster(waiting))
    assert results["default/web"]["node"] == "node-b"
    assert sim.scheduler.pending["default/waiting"].nominated_node_name == ""
    assert sim.scheduler.queue.nominator.nominated_node("default/waiting") is None


def test_a_victim_the_simulation_placed_says_who_preempted_it() -> None:
    """``preemptedBy`` in JSON and a line in the table for a pod evicted after it was placed; the
    command's exit code counts it as not placed."""
    sim, _ = applied(big_victim_cluster())
    attempt = Attempt(Pod.from_dict(make_pod("big").dict()), Status(Code.SUCCESS), host="node-b")
    sim.history.preempted_by["default/big"] = PodKey("default/web")
    data = attempt_to_json(attempt, sim.cache, history=sim.history)
    assert data["preemptedBy"] == "default/web"
    table = render_table([attempt], sim.cache, history=sim.history).splitlines()
    assert table[:2] == ["pod default/big: -> node-b", "  preempted by default/web: deleted from node-b"]


def test_every_round_deletes_a_pod_so_many_preemptors_end() -> None:
    """Ten nodes full of priority-0 pods, twenty pending pods of rising priority: the run ends, and
    every pod either landed or says why not."""
    objects: list[dict[str, Any]] = []
    for i in range(10):
        objects.append(make_node(f"n{i}").allocatable(cpu="2", memory="4Gi", pods="110").dict())
        objects += [make_pod(f"low-{i}-{j}").node(f"n{i}").requests(cpu="1").dict() for j in range(2)]
    objects += [
        make_pod(f"p{k}").priority(100 + k).requests(cpu="1").created(f"2026-01-01T00:00:{k:02d}Z").dict()
        for k in range(20)
    ]
    sim, results = applied(objects)
    placed = [key for key, data in results.items() if data["node"]]
    assert len(placed) == 20
    assert len(sim.history.preempted_by) == 20
    assert {pod.key for pod in sim.cache.pods()} == set(placed)


def test_the_documented_output_is_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/preemption.md shows what ``simulate`` prints for the example, byte for byte."""
    command = "$ spread-scheduler simulate examples/preemption.yaml\n"
    doc = (EXAMPLES.parent / "docs" / "preemption.md").read_text()
    shown = doc[doc.index(command) + len(command) :].split("```")[0]
    assert main(["simulate", str(EXAMPLES / "preemption.yaml")]) == 0
    assert capsys.readouterr().out.rstrip("\n") == shown.rstrip("\n")


@pytest.mark.parametrize(
    ("minor", "message"),
    [
        ("1.35", "0/2 nodes are available: 2 Insufficient cpu."),
        ("1.36", "0/2 nodes are available: 2 Insufficient cpu."),
        # preemption.go Preempt at v1.37.2 (#140180): Success names the node and counts the victims.
        (
            "1.37",
            "0/2 nodes are available: 2 Insufficient cpu. "
            "preemption: found a potential placement for pod on node node-b, preempting 1 victims",
        ),
    ],
)
def test_a_successful_preemption_says_so_from_1_37(minor: str, message: str) -> None:
    sim = Simulation(load_config(None, features_at(minor)), seed=1)
    sim.add_objects(load_objects(EXAMPLES / "preemption.yaml"))
    (attempt,) = sim.run()
    data = attempt_to_json(attempt, sim.cache)
    assert (data["nominatedNode"], data["message"]) == ("node-b", message)


def test_evicting_one_of_two_pods_on_a_host_port_frees_it_as_upstreams_port_set_does() -> None:
    """Upstream's ``HostPortInfo`` is a set: on a node where ``low`` and ``peer`` (bound directly) both
    hold hostPort 80, removing ``low`` frees the port though ``peer`` keeps it. So web (priority 100,
    port 80) may preempt ``low`` there (``peer`` has web's priority: no victim), and lands once it
    is gone (differential seed 440640)."""
    objects = [
        make_node("n1").allocatable(cpu="2", memory="4Gi", pods="110").dict(),
        make_pod("low").node("n1").priority(0).requests(cpu="100m").host_port(80).dict(),
        make_pod("peer").node("n1").priority(100).requests(cpu="100m").host_port(80).dict(),
        make_pod("web").priority(100).requests(cpu="100m").host_port(80).created("2026-01-01T00:00:00Z").dict(),
    ]
    sim, results = applied(objects)
    web = results["default/web"]
    assert (web["node"], web["code"]) == ("n1", "Success")
    assert (web["earlierCycles"][0]["nominatedNode"], web["earlierCycles"][0]["victims"]) == ("n1", ["default/low"])
    assert sim.history.preempted_by == {"default/low": "default/web"}
