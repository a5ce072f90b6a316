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

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.cli import main
from scheduler.eventhandlers import EventHandlers, HeldChanges
from scheduler.features import features_at
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.plugins.noderesources.fit import Fit
from scheduler.testing import make_node, make_pod

MINORS = ("1.35", "1.36", "1.37")


def _container(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "image": "i", "resources": {"requests": {"cpu": cpu}}}


def _bound(containers: list[dict[str, Any]], status: dict[str, Any], init: list[dict[str, Any]] | None = None) -> Any:
    b = make_pod("resized").node("n").set("spec.containers", containers).set("status", {"phase": "Running", **status})
    if init:
        b = b.set("spec.initContainers", init)
    return b.dict()


def _row(bound: dict[str, Any], node_cpu: str, pending_cpu: str, *, fits_at_1_37: bool, id: str) -> Any:
    """One case: the pending pod fits beside ``bound`` at 1.37 as ``fits_at_1_37`` says, and the
    other way round at 1.35 and 1.36."""
    fits = {"1.35": not fits_at_1_37, "1.36": not fits_at_1_37, "1.37": fits_at_1_37}
    return pytest.param(bound, node_cpu, pending_cpu, fits, id=id)


CASES = [
    _row(
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
        fits_at_1_37=True,
        id="each-container-max-summed-2-vs-max-of-sums-1.5",
    ),
    _row(
        _bound([_container("c1", "500m")], {"containerStatuses": [{"name": "c1", "allocatedResources": {"cpu": "1"}}]}),
        "1500m",
        "800m",
        fits_at_1_37=False,
        id="allocated-without-runtime-resources-counts-from-1.37",
    ),
    _row(
        _bound(
            [_container("c1", "500m")],
            {"initContainerStatuses": [{"name": "i1", "resources": {"requests": {"cpu": "3"}}}]},
            init=[_container("i1", "2")],
        ),
        "3500m",
        "1",
        fits_at_1_37=False,
        id="regular-init-container-status-counts-from-1.37",
    ),
    _row(
        _bound(
            [_container("c1", "1")],
            {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]},
        ),
        "1500m",
        "1",
        fits_at_1_37=True,
        id="infeasible-without-container-statuses-counts-nothing-from-1.37",
    ),
    _row(
        _bound(
            [_container("c1", "500m")],
            {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}},
        ),
        "3",
        "1500m",
        fits_at_1_37=False,
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


def _allocated_only(cpu: str, version: str) -> Pod:
    """An assigned pod asking for 1 cpu whose kubelet allocated ``cpu`` (no runtime ``resources``)."""
    status = {"phase": "Running", "containerStatuses": [{"name": "c1", "allocatedResources": {"cpu": cpu}}]}
    b = make_pod("resized").node("n").set("metadata.uid", "u-resized").set("spec.containers", [_container("c1", "1")])
    return b.set("status", status).set("metadata.resourceVersion", version).build()


@pytest.mark.parametrize(("minor", "queued"), [("1.35", False), ("1.36", False), ("1.37", True)])
def test_a_resize_settling_frees_room_by_the_minors_rule(minor: str, queued: bool) -> None:
    """The kubelet lowers an assigned pod's allocation from 2 cpus to its spec's 1: from 1.37 that
    pod counted 2 and now 1 (NodeResourcesFit's hint and the scale-down event); before, a status
    without ``resources`` never counted, so nothing was freed."""
    features = features_at(minor)
    old, new = _allocated_only("2", "1"), _allocated_only("1", "2")
    target = make_pod("p").requests(cpu="500m").build()
    fit = Fit({}, Handle(Cache()), features)
    hint = fit.is_schedulable_after_pod_event(target, old, new)
    assert (hint is QueueingHint.QUEUE) is queued

    cache, queue = Cache(), _RecordingQueue()
    handlers = EventHandlers(cache, queue, {}, HeldChanges(), features=features)  # type: ignore[arg-type]
    handlers.pod_event("ADDED", old)
    handlers.pod_event("MODIFIED", new)
    scaled_down = [e for e, _, _ in queue.moves if e.action == ActionType.UPDATE_POD_SCALE_DOWN]
    assert bool(scaled_down) is queued


class _RecordingQueue:
    def __init__(self) -> None:
        self.moves: list[tuple[ClusterEvent, object, object]] = []

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: object, new: object) -> None:
        self.moves.append((event, old, new))

    def delete(self, key: object) -> None:
        pass
