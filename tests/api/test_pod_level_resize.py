"""Pods resized in place with pod-level resources (InPlacePodLevelResourcesVerticalScaling, beta on
from 1.36): a NodeInfo counts their pod-level requests as the max of spec, status.resources and
status.allocatedResources (``determineEffectiveRequests``; Infeasible: status only).

The first cases are upstream v1.36.3 ``framework/types_test.go`` TestCalculatePodResourcesWithResize
(same ids, ``cpu500m``... as there); the others are a resize not actuated yet, where 1.35 and 1.36 differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.objects import Pod
from scheduler.cli import main
from scheduler.features import PodRequestsRule
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node, make_pod

MI = 1024 * 1024


def resized_dict(
    pod_level: dict[str, str],
    containers: dict[str, str],
    pod_status: dict[str, str],
    container_status: dict[str, str],
    reason: str = "",
    allocated: dict[str, str] | None = None,
) -> Pod:
    b = (
        make_pod("testpod")
        .node("n")
        .set("spec.resources", {"requests": pod_level})
        .set("spec.containers", [{"name": "c1", "image": "i", "resources": {"requests": containers}}])
        .set("status.phase", "Running")
        .set("status.resources", {"requests": pod_status})
        .set("status.containerStatuses", [{"name": "c1", "resources": {"requests": container_status}}])
    )
    if allocated is not None:
        b = b.set("status.allocatedResources", allocated)
    if reason:
        b = b.set("status.conditions", [{"type": "PodResizePending", "status": "True", "reason": reason}])
    return b.dict()


def resized(*args: Any, **kwargs: Any) -> Pod:
    pod = Pod.from_dict(resized_dict(*args, **kwargs))
    assert not pod.errors, pod.error_message
    return pod


def counted(pod: Pod, *, pod_level_resize: bool) -> tuple[int, int, int, int]:
    rule = PodRequestsRule(pod_level_status=pod_level_resize)
    info = NodeInfo(make_node("n").build(), {pod.key: pod}, requests_rule=rule)
    return info.requested_milli_cpu, info.requested_memory, info.non0_cpu, info.non0_mem


M500, M800 = {"memory": "500Mi"}, {"memory": "800Mi"}


@pytest.mark.parametrize(
    ("pod", "want_1_35", "want_1_36"),
    [
        pytest.param(
            resized({"cpu": "700m", **M500}, {"cpu": "500m", **M500}, {"cpu": "500m", **M500}, {"cpu": "700m", **M500}),
            (700, 500 * MI, 700, 500 * MI),
            (700, 500 * MI, 700, 500 * MI),
            id="Pod with pod-level resources no pending resize",
        ),
        pytest.param(
            resized(
                {"cpu": "700m", **M800}, {"cpu": "500m", **M500}, {"cpu": "500m", **M500}, {"cpu": "500m", **M500},
                reason="Deferred",
            ),
            (700, 800 * MI, 700, 800 * MI),
            (700, 800 * MI, 700, 800 * MI),
            id="Pod with pod-level resources and with deferred resize",
        ),
        pytest.param(
            resized({"cpu": "500m", **M500}, {"cpu": "500m", **M500}, {"cpu": "700m", **M500}, {"cpu": "500m", **M500}),
            (500, 500 * MI, 500, 500 * MI),
            (700, 500 * MI, 700, 500 * MI),
            id="shrunk in spec, not yet actuated: the larger status counts",
        ),
        pytest.param(
            resized(
                {"cpu": "900m", **M500}, {"cpu": "500m", **M500}, {"cpu": "700m", **M500}, {"cpu": "500m", **M500},
                reason="Infeasible", allocated={"cpu": "600m", **M500},
            ),
            (900, 500 * MI, 900, 500 * MI),
            (700, 500 * MI, 700, 500 * MI),
            id="infeasible: the status counts, not the spec",
        ),
    ],
)  # fmt: skip
def test_counted(pod: Pod, want_1_35: tuple[int, ...], want_1_36: tuple[int, ...]) -> None:
    assert counted(pod, pod_level_resize=False) == want_1_35
    assert counted(pod, pod_level_resize=True) == want_1_36


def test_a_pod_without_pod_level_status_has_no_alternative() -> None:
    pod = make_pod("p").node("n").set("spec.resources", {"requests": {"cpu": "1"}}).build()
    assert not pod.resources.variants


def test_simulate_counts_the_resize_from_1_36(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 1-cpu node holds a pod shrunk to 500m in spec but still running at 700m: 400m more fits at
    1.35 (500 + 400), not at 1.36 (700 + 400)."""
    bound = resized_dict({"cpu": "500m"}, {"cpu": "500m"}, {"cpu": "700m"}, {"cpu": "700m"}, allocated={"cpu": "700m"})
    objects: list[Any] = [
        make_node("n").capacity(cpu="1", memory="1Gi", pods="10").dict(),
        bound,
        make_pod("p").requests(cpu="400m").dict(),
    ]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    hosts = {}
    for version in ("1.35", "1.36"):
        assert main(["simulate", str(path), "-o", "json", "--kube-version", version]) == 0
        (result,) = json.loads(capsys.readouterr().out)["results"]
        hosts[version] = result["node"] or result["nodes"]["n"]["filter"]["reason"]
    assert hosts == {"1.35": "n", "1.36": "Insufficient cpu"}
