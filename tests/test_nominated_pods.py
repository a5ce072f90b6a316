"""Nominated pods through the whole scheduler (``run`` and ``simulate`` share it): the example in
docs/simulate.md, and what a failed cycle does to a pod's own nomination."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scheduler.config import parse_config
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
