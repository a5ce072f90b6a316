"""The deletion-cost keeper: which cache changes mark which workloads, what one pass patches, the
Lease fence, and the merge patch it sends (captured at ``writes.send_once``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler import cli
from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.errors import BindConflictError, NotLeadingError
from scheduler.kube import app
from scheduler.kube.controllers.deletion_cost import ApiCostWriter, DeletionCostKeeper
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.writes import ApiWriter
from scheduler.simulate import Simulation
from scheduler.spread.deletion_cost import COST_ANNOTATION, MARKER_ANNOTATION, CostChange
from scheduler.spread.workload import Workload
from scheduler.testing import make_node, make_pod
from tests.kube.test_writes import Sent, sent  # noqa: F401 - the fixture

ZONE = "topology.kubernetes.io/zone"
WEB = Workload("default", "ReplicaSet", "web-1", "uid-web-1")


def _pod(name: str, node: str, app: str = "web", owner: str = "web-1", **annotations: str) -> dict[str, Any]:
    builder = (
        make_pod(name)
        .labels({"app": app})
        .node(node)
        .phase("Running")
        .owner("ReplicaSet", owner)
        .spread(ZONE, 1, match={"app": app})
    )
    if annotations:
        builder.set("metadata.annotations", annotations)
    return builder.set("metadata.resourceVersion", "7").dict()


def _node(name: str, zone: str, version: str) -> dict[str, Any]:
    node = make_node(name).zone(zone).dict()
    node["metadata"]["resourceVersion"] = version
    return node


class FakeWriter:
    def __init__(self) -> None:
        self.written: list[tuple[str, str]] = []
        self.error: Exception | None = None

    async def write(self, change: CostChange) -> None:
        if self.error is not None:
            raise self.error
        self.written.append((change.pod.name, change.value))


def _keeper(fence: Any = lambda: True) -> tuple[Simulation, DeletionCostKeeper, FakeWriter]:
    sim = Simulation(load_config(None))
    sim.add_objects([make_node(f"{z}0").zone(z).dict() for z in "abc"])
    writer = FakeWriter()
    keeper = DeletionCostKeeper(sim.cache, sim.frameworks, writer, fence)  # type: ignore[arg-type]
    sim.scheduler.handlers.pod_changes.append(keeper.pod_changed)
    sim.scheduler.handlers.node_changes.append(keeper.node_changed)
    return sim, keeper, writer


def test_a_pass_patches_the_pods_whose_cost_must_change_and_then_nothing() -> None:
    sim, keeper, writer = _keeper()
    for obj in (_pod("p1", "a0"), _pod("p2", "a0"), _pod("p3", "b0")):
        sim.scheduler.on_object("ADDED", obj)
    assert keeper.dirty == {WEB}
    asyncio.run(keeper.sync_once())
    assert sorted(writer.written) == [("p1", "-1"), ("p2", "-2"), ("p3", "-1")]
    # The patches come back through the watch: nothing more to write.
    for name, node, cost in (("p1", "a0", "-1"), ("p2", "a0", "-2"), ("p3", "b0", "-1")):
        sim.scheduler.on_object("MODIFIED", _pod(name, node, **{COST_ANNOTATION: cost, MARKER_ANNOTATION: cost}))
    writer.written.clear()
    asyncio.run(keeper.sync_once())
    assert writer.written == []


def test_a_pod_of_another_workload_that_the_constraints_count_marks_it_too() -> None:
    sim, keeper, _ = _keeper()
    sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
    asyncio.run(keeper.sync_once())
    assert not keeper.dirty
    sim.scheduler.on_object("ADDED", _pod("q1", "a0", owner="web-2"))  # the next ReplicaSet, same app
    assert keeper.dirty == {WEB, Workload("default", "ReplicaSet", "web-2", "uid-web-2")}
    asyncio.run(keeper.sync_once())
    sim.scheduler.on_object("ADDED", _pod("x", "a0", app="other", owner="other-1"))
    assert WEB not in keeper.dirty  # its selector does not count app=other


def test_a_pod_naming_the_replica_set_with_another_uid_is_not_ranked_with_it() -> None:
    sim, keeper, writer = _keeper()
    stray = _pod("s0", "a0")  # ranked among web-1's, it would be a0's top pod (the last by name)
    stray["metadata"]["ownerReferences"][0]["uid"] = "uid-old-web-1"
    for obj in (_pod("p1", "a0"), _pod("p2", "a0"), _pod("p3", "b0"), stray):
        sim.scheduler.on_object("ADDED", obj)
    asyncio.run(keeper.sync_once())
    # web-1 counts s0 as another workload's pod in a0 (below its own), and s0 is ranked apart.
    written = dict(writer.written)
    assert {name: written.get(name) for name in ("p1", "p2", "p3")} == {"p1": "-2", "p2": "-3", "p3": "-1"}
    assert written.get("s0") == "-3"


def test_a_relabelled_node_marks_the_workloads_of_its_pods_a_heartbeat_does_not() -> None:
    sim, keeper, _ = _keeper()
    sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
    asyncio.run(keeper.sync_once())
    sim.scheduler.on_object("MODIFIED", _node("a0", "a", "2"))
    assert not keeper.dirty
    sim.scheduler.on_object("MODIFIED", _node("a0", "z", "3"))
    assert keeper.dirty == {WEB}


def test_not_sure_of_the_lease_nothing_is_written_and_the_workloads_wait() -> None:
    sim, keeper, writer = _keeper()
    sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
    writer.error = NotLeadingError("not sure")
    asyncio.run(keeper.sync_once())
    assert keeper.dirty == {WEB} and writer.written == []
    writer.error = None
    asyncio.run(keeper.sync_once())
    assert writer.written == [("p1", "-1")]


def test_run_waits_for_the_fence_before_ranking() -> None:
    leading = False
    sim, keeper, writer = _keeper(lambda: leading)
    keeper._debounce = 0.01

    async def scenario() -> None:
        nonlocal leading
        stop = asyncio.Event()
        task = asyncio.create_task(keeper.run(stop))
        sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
        await asyncio.sleep(0.2)
        assert writer.written == []
        leading = True
        for _ in range(60):
            await asyncio.sleep(0.05)
            if writer.written:
                break
        stop.set()
        await task

    asyncio.run(scenario())
    assert writer.written == [("p1", "-1")]


def test_a_cluster_that_is_never_quiet_is_still_served_after_the_max_delay() -> None:
    sim, keeper, writer = _keeper()
    keeper._debounce, keeper._max_delay = 0.2, 0.4

    async def scenario() -> float:
        stop = asyncio.Event()
        task = asyncio.create_task(keeper.run(stop))
        sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
        started = asyncio.get_running_loop().time()
        version = 10
        while not writer.written and asyncio.get_running_loop().time() - started < 3:
            version += 1  # an event every 50 ms: never the debounce's quiet
            obj = _pod("other", "b0", owner="web-9")
            obj["metadata"]["resourceVersion"] = str(version)
            sim.scheduler.on_object("MODIFIED", obj)
            await asyncio.sleep(0.05)
        stop.set()
        await task
        return asyncio.get_running_loop().time() - started

    took = asyncio.run(scenario())
    assert ("p1", "-1") in writer.written
    assert took < 1.5


def test_a_conflict_is_skipped_the_next_event_brings_it_back() -> None:
    sim, keeper, writer = _keeper()
    sim.scheduler.on_object("ADDED", _pod("p1", "a0"))
    writer.error = BindConflictError("409")
    asyncio.run(keeper.sync_once())
    assert not keeper.dirty


def test_the_patch_is_a_merge_patch_of_both_annotations_with_the_resource_version(sent: Sent) -> None:  # noqa: F811
    writer = ApiCostWriter(ApiWriter(None, RateLimiter(qps=0, burst=1)))  # type: ignore[arg-type]
    pod = Pod.from_dict(_pod("p1", "a0"))
    asyncio.run(writer.write(CostChange(pod, "-3")))
    ((method, path, body, content_type),) = sent
    assert (method, path, content_type) == (
        "PATCH",
        "/api/v1/namespaces/default/pods/p1",
        "application/merge-patch+json",
    )
    assert body == {
        "metadata": {"annotations": {COST_ANNOTATION: "-3", MARKER_ANNOTATION: "-3"}, "resourceVersion": "7"}
    }


def test_a_patch_is_fenced(sent: Sent) -> None:  # noqa: F811
    writer = ApiCostWriter(ApiWriter(None, RateLimiter(qps=0, burst=1), fence=lambda: False))  # type: ignore[arg-type]
    with pytest.raises(NotLeadingError):
        asyncio.run(writer.write(CostChange(Pod.from_dict(_pod("p1", "a0")), "-1")))
    assert not sent


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], True),
        (["--scale-down-spread=false"], False),
        (["--scale-down-spread"], True),
        (["--scale-down-spread=0"], False),
    ],
)
def test_the_flag_is_on_by_default_and_false_turns_it_off(
    args: list[str], expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_arguments(args, monkeypatch)["scale_down_spread"] is expected


def run_arguments(args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keyword arguments ``spread-scheduler run ARGS`` hands ``run_scheduler`` (which does not run)."""
    seen: dict[str, Any] = {}

    async def run_scheduler(config: object, kubeconfig: object, **kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(app, "run_scheduler", run_scheduler)
    assert cli.main(["run", *args]) == 0
    return seen


def test_a_bad_flag_value_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--scale-down-spread=maybe"])
    assert exited.value.code == 2
    assert 'argument --scale-down-spread: invalid boolean value "maybe"' in capsys.readouterr().err
