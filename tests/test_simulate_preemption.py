"""``simulate`` shows DefaultPreemption's decision (in the default profile, as upstream's): the
example in docs/preemption.md, JSON and table."""

from __future__ import annotations

from pathlib import Path

from scheduler.config import load_config, parse_config
from scheduler.simulate import Simulation, attempt_to_json, load_objects, render_table

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
