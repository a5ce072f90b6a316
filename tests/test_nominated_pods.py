"""Nominated pods through the whole scheduler (``run`` and ``simulate`` share it): the example in
docs/simulate.md, and what a failed cycle does to a pod's own nomination."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.config import load_config, parse_config
from scheduler.features import features_at
from scheduler.simulate import Simulation, load_objects
from scheduler.testing import make_node, make_pod

EXAMPLE = Path(__file__).parent.parent / "examples" / "nominated-pods.yaml"


def placements(objects: list[Any], config: dict[str, Any] | None = None) -> dict[str, str | None]:
    sim = Simulation(parse_config(config or {}), seed=0)
    sim.add_objects(objects)
    return {a.pod.name: a.host for a in sim.run()}


def test_the_documented_example_keeps_room_for_the_nominated_pod() -> None:
    objects = load_objects(EXAMPLE)
    assert placements(objects) == {"important": None, "web": "n2"}
    web = next(o for o in objects if o["metadata"]["name"] == "web")
    web["spec"]["priority"] = 2000  # outranks the nominated pod: the room is no longer kept
    assert placements(objects)["web"] == "n1"


def cluster() -> list[Any]:
    """n1 has 1 cpu; "waiting" (nominated to n1, 2 cpu, priority 10) fits nowhere; "small" (1 cpu) comes after."""
    return [
        make_node("n1").capacity(cpu="1", memory="1Gi", pods="110").dict(),
        make_pod("waiting").priority(10).requests(cpu="2").set("status.nominatedNodeName", "n1").dict(),
        make_pod("small").requests(cpu="1").created("2026-01-01T00:00:01Z").dict(),
    ]


def test_a_failed_pod_stays_nominated_when_postfilter_says_noop() -> None:
    """DynamicResources' PostFilter alone nominates nothing: Noop keeps the nomination."""
    config = {
        "profiles": [
            {
                "schedulerName": "spread-scheduler",
                "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}},
            }
        ]
    }
    assert placements(cluster(), config) == {"waiting": None, "small": None}


def test_a_failed_pod_is_no_longer_nominated_where_preemption_cannot_help() -> None:
    """The default profile's DefaultPreemption finds no node (2 cpu never fit on n1): it answers
    Override "", so "waiting" no longer keeps room and "small" takes n1, as upstream."""
    assert placements(cluster()) == {"waiting": None, "small": "n1"}


def test_a_failed_pod_is_no_longer_nominated_in_a_profile_without_postfilter() -> None:
    """Without PostFilter plugins upstream hands clearNominatedNode (Override "") to the failure handler."""
    config = {
        "profiles": [{"schedulerName": "spread-scheduler", "plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]
    }
    assert placements(cluster(), config) == {"waiting": None, "small": "n1"}


@pytest.mark.parametrize(
    ("minor", "priority", "want"),
    [
        ("1.35", 10, "n1"),
        ("1.36", 10, "n1"),
        ("1.37", 10, None),  # equal priority: the gated pod's room is kept
        ("1.37", 5, None),  # lower priority: kept too
        ("1.37", 20, "n1"),  # higher priority: nominated pods of lower priority do not count
    ],
)
def test_1_37_a_gated_pods_nomination_reserves_capacity(minor: str, priority: int, want: str | None) -> None:
    """Issue #47's row "1.37 gated pod's nominatedNodeName reserving capacity": n1 has 1 cpu; "gated"
    (priority 10, 1 cpu, a scheduling gate, nominated to n1) waits at PreEnqueue; "p" asks for 1 cpu.
    From 1.37 the queue's addPod records the nomination even of a gated pod (v1.37.2
    backend/queue/scheduling_queue.go ``addPod``, #139057), so Filter counts it on n1 against a pod of
    equal or lower priority; before (v1.36.3) only a pod entering activeQ was recorded."""
    sim = Simulation(load_config(None, features_at(minor)), seed=0)
    sim.add_objects(
        [
            make_node("n1").capacity(cpu="1", memory="1Gi", pods="10").dict(),
            make_pod("gated")
            .priority(10)
            .requests(cpu="1")
            .gate("example.com/wait")
            .set("status.nominatedNodeName", "n1")
            .dict(),
            make_pod("p").priority(priority).requests(cpu="1").created("2026-01-01T00:00:05Z").dict(),
        ]
    )
    hosts = {a.pod.name: (a.host, a.message) for a in sim.run()}
    assert hosts["gated"] == (None, "waiting for scheduling gates: [example.com/wait]")
    assert hosts["p"][0] == want
    if want is None:
        assert hosts["p"][1].startswith("0/1 nodes are available: 1 Insufficient cpu.")
