"""1.37 counts an assigned pod resized in place by the max of its summed spec, actuated and allocated
requests (component-helpers v0.37.2 ``AggregateContainerRequests``), where 1.35 and 1.36 sum each
container's own max, read only statuses that have ``resources``, and only sidecars among init containers.

Each case is one assigned pod on a node and a pending pod that fits beside it under one rule and not
the other, decided by ``simulate`` as each minor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.testing import make_node, make_pod

MINORS = ("1.35", "1.36", "1.37")


def _container(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "image": "i", "resources": {"requests": {"cpu": cpu}}}


def _bound(containers: list[dict[str, Any]], status: dict[str, Any], init: list[dict[str, Any]] | None = None) -> Any:
    b = make_pod("resized").node("n").set("spec.containers", containers).set("status", {"phase": "Running", **status})
    if init:
        b = b.set("spec.initContainers", init)
    return b.dict()


CASES = [
    pytest.param(
        _bound(
            [_container("c1", "1"), _container("c2", "500m")],
            {
                "containerStatuses": [
                    {"name": "c1", "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "c2", "resources": {"requests": {"cpu": "1"}}},
                ]
            },
        ),
        "2500m",
        "600m",
        {"1.35": False, "1.36": False, "1.37": True},
        id="each-container-max-summed-2-vs-max-of-sums-1.5",
    ),
    pytest.param(
        _bound([_container("c1", "500m")], {"containerStatuses": [{"name": "c1", "allocatedResources": {"cpu": "1"}}]}),
        "1500m",
        "800m",
        {"1.35": True, "1.36": True, "1.37": False},
        id="allocated-without-runtime-resources-counts-from-1.37",
    ),
    pytest.param(
        _bound(
            [_container("c1", "500m")],
            {"initContainerStatuses": [{"name": "i1", "resources": {"requests": {"cpu": "3"}}}]},
            init=[_container("i1", "2")],
        ),
        "3500m",
        "1",
        {"1.35": True, "1.36": True, "1.37": False},
        id="regular-init-container-status-counts-from-1.37",
    ),
    pytest.param(
        _bound(
            [_container("c1", "1")],
            {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]},
        ),
        "1500m",
        "1",
        {"1.35": False, "1.36": False, "1.37": True},
        id="infeasible-without-container-statuses-counts-nothing-from-1.37",
    ),
    pytest.param(
        _bound(
            [_container("c1", "500m")],
            {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}},
        ),
        "3",
        "1500m",
        {"1.35": True, "1.36": True, "1.37": False},
        id="pod-level-status-stands-for-the-sums-from-1.37-without-pod-level-spec",
    ),
]


@pytest.mark.parametrize(("bound", "node_cpu", "pending_cpu", "fits"), CASES)
def test_a_resized_pod_counts_by_its_minors_rule(
    bound: dict[str, Any],
    node_cpu: str,
    pending_cpu: str,
    fits: dict[str, bool],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects: list[Any] = [
        make_node("n").capacity(cpu=node_cpu, memory="1Gi", pods="10").dict(),
        bound,
        make_pod("p").requests(cpu=pending_cpu).dict(),
    ]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    got = {}
    for minor in MINORS:
        assert main(["simulate", str(path), "-o", "json", "--kube-version", minor]) == 0
        (result,) = json.loads(capsys.readouterr().out)["results"]
        got[minor] = result["node"] == "n"
    assert got == fits
