"""The deletion-cost keeper under load (issue #48): what one pod of another workload costs in patches,
whether a cost backlog slows a burst of Bindings, and how many re-ranks a burst of events makes.
The first four use only the keeper's first API, so that they run unchanged against the code before it."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from structlog.testing import capture_logs

from scheduler.api.objects import Pod
from scheduler.config import load_config
from scheduler.errors import BindConflictError
from scheduler.kube.controllers.deletion_cost import PATCHES_PER_RERANK, REBASE_AFTER, ApiCostWriter, DeletionCostKeeper
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.writes import ApiWriter
from scheduler.simulate import Simulation
from scheduler.spread.deletion_cost import COST_ANNOTATION, MARKER_ANNOTATION, CostChange
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeClock
from tests.kube.controllers.test_deletion_cost import _pod
from tests.kube.test_writes import Sent, sent  # noqa: F401 - the fixture


class EchoWriter:
    """Records every patch and applies it to the cache as the watch would bring it back."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.objects: dict[str, dict[str, Any]] = {}
        self.written: list[tuple[str, str]] = []

    def add(self, obj: dict[str, Any]) -> None:
        self.objects[obj["metadata"]["name"]] = obj
        self.sim.scheduler.on_object("ADDED", obj)

    def delete(self, name: str) -> None:
        self.sim.scheduler.on_object("DELETED", self.objects.pop(name))

    async def write(self, change: CostChange) -> None:
        self.written.append((change.pod.name, change.value))
        obj = copy.deepcopy(self.objects[change.pod.name])
        obj["metadata"].setdefault("annotations", {}).update(
            {COST_ANNOTATION: change.value, MARKER_ANNOTATION: change.value}
        )
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        self.objects[change.pod.name] = obj
        self.sim.scheduler.on_object("MODIFIED", obj)


def _workload(pods: int) -> tuple[DeletionCostKeeper, EchoWriter]:
    sim = Simulation(load_config(None))
    sim.add_objects([make_node(f"{z}0").zone(z).dict() for z in "abc"])
    writer = EchoWriter(sim)
    keeper = DeletionCostKeeper(sim.cache, sim.frameworks, writer)  # type: ignore[arg-type]
    sim.scheduler.handlers.pod_changes.append(keeper.pod_changed)
    for i in range(pods):
        writer.add(_pod(f"p{i:03}", "abc"[i % 3] + "0"))
    return keeper, writer


def _settle(keeper: DeletionCostKeeper, writer: EchoWriter, passes: int = 50) -> int:
    """Re-rank until nothing more is written (the cap leaves the rest to later windows); the patches."""
    before = len(writer.written)
    for _ in range(passes):
        if not keeper.dirty:
            break
        asyncio.run(keeper.sync_once())
    return len(writer.written) - before


def test_one_bare_pod_labelled_like_a_300_pod_workload_patches_o1_pods() -> None:
    keeper, writer = _workload(300)
    assert _settle(keeper, writer) == 300  # the first pass: every pod once
    assert not keeper.dirty
    bare = make_pod("bare").labels({"app": "web"}).node("a0").phase("Running").set("metadata.resourceVersion", "7")
    writer.add(bare.dict())
    arrived = _settle(keeper, writer)
    writer.delete("bare")
    left = _settle(keeper, writer)
    assert (arrived, left) == (0, 0)  # was 100 and 100: every pod of zone a shifted one rank, twice


def test_one_more_pod_of_the_workload_patches_that_pod_alone() -> None:
    keeper, writer = _workload(300)
    _settle(keeper, writer)
    writer.add(_pod("p300", "a0"))
    assert _settle(keeper, writer) == 1
    assert writer.written[-1] == ("p300", "-101")


def test_a_burst_of_bindings_is_not_slowed_by_a_cost_backlog(sent: Sent) -> None:  # noqa: F811
    """50 Bindings at once, within the bucket's burst (qps 100, burst 50): they go out at once, with
    200 cost patches waiting as without them, and no patch goes out between the first and the last."""
    writer = ApiWriter(None, RateLimiter(qps=100, burst=50))  # type: ignore[arg-type]
    costs = ApiCostWriter(writer)
    target = Pod.from_dict(_pod("p0", "a0"))
    pods = [Pod.from_dict(make_pod(f"b{i}").dict()) for i in range(50)]

    async def burst() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(writer.post_to_pod("binding", p, "binding", {"target": {"name": "n"}}) for p in pods))
        return loop.time() - start

    async def backlog() -> None:
        for i in range(200):
            await costs.write(CostChange(target, str(-i - 1)))

    async def scenario() -> tuple[float, float]:
        alone = await burst()
        await asyncio.sleep(0.6)  # the bucket refills
        task = asyncio.create_task(backlog())
        await asyncio.sleep(0.6)  # the backlog is under way
        beside = await burst()
        task.cancel()
        return alone, beside

    alone, beside = asyncio.run(scenario())
    order = [method for method, *_ in sent]
    first = order.index("POST", 50)  # the second burst's first Binding
    last = len(order) - 1 - order[::-1].index("POST")
    assert order[first:last].count("PATCH") <= 1  # one may hold its token already
    assert beside <= alone + 0.1  # was 0.5 s: the backlog had spent the burst's tokens


def test_a_burst_of_events_makes_one_rerank() -> None:
    keeper, writer = _workload(30)
    _settle(keeper, writer)
    keeper._debounce, keeper._max_delay = 0.2, 2.0

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(keeper.run(stop))
        for i in range(15):  # 30 events within the window: 15 new pods, 15 pods changed
            writer.add(_pod(f"q{i:02}", "abc"[i % 3] + "0"))
            changed = copy.deepcopy(writer.objects[f"p{i:03}"])
            changed["metadata"]["resourceVersion"] = str(100 + i)
            changed["metadata"]["labels"]["tier"] = "front"
            writer.objects[f"p{i:03}"] = changed
            writer.sim.scheduler.on_object("MODIFIED", changed)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        stop.set()
        await task

    with capture_logs() as logs:
        asyncio.run(scenario())
    reranks = [entry for entry in logs if entry["event"] == "deletion costs updated"]
    assert len(reranks) == 1
    assert len(writer.written) == 30 + 15  # the first pass, then each new pod once


# -- the keeper's cap, held counts and metrics (new in issue #48) ---------------------------------


def _measured(pods: int, clock: FakeClock) -> tuple[DeletionCostKeeper, EchoWriter, SchedulerMetrics]:
    keeper, writer = _workload(0)
    metrics = SchedulerMetrics(process=False)
    keeper = DeletionCostKeeper(keeper._cache, keeper._frameworks, writer, metrics=metrics, clock=clock)  # type: ignore[arg-type]
    writer.sim.scheduler.handlers.pod_changes.append(keeper.pod_changed)
    for i in range(pods):
        writer.add(_pod(f"p{i:03}", "abc"[i % 3] + "0"))
    return keeper, writer, metrics


def _sample(metrics: SchedulerMetrics, name: str, labels: dict[str, str] | None = None) -> float:
    return metrics.registry.get_sample_value(name, labels or {}) or 0.0


def test_a_rerank_patches_at_most_the_cap_those_deleted_first_first_the_rest_next_window() -> None:
    keeper, writer, metrics = _measured(300, FakeClock())
    asyncio.run(keeper.sync_once())
    assert len(writer.written) == PATCHES_PER_RERANK
    # The lowest costs: the top of each zone, which a scale-down deletes first.
    assert [value for _, value in writer.written] == [str(-100)] * 3 + [str(-99)] * 3 + [str(-98)] * 3 + [
        str(-97)
    ] * 3 + [str(-96)] * 3 + [str(-95)] * 3 + [str(-94)] * 2
    assert keeper.dirty  # the rest next window
    assert _sample(metrics, "spread_scheduler_deletion_cost_queue_depth") == 280
    assert _settle(keeper, writer) == 280
    assert _sample(metrics, "spread_scheduler_deletion_cost_queue_depth") == 0
    assert _sample(metrics, "spread_scheduler_deletion_cost_patches_total", {"result": "patched"}) == 300
    # 15 re-ranks of 20, and one that found nothing left (the last patches came back)
    assert _sample(metrics, "spread_scheduler_deletion_cost_patches_per_rerank_count") == 16
    assert _sample(metrics, "spread_scheduler_deletion_cost_patches_per_rerank_sum") == 300


def test_a_conflict_is_counted_by_its_result() -> None:
    keeper, writer, metrics = _measured(1, FakeClock())

    async def refuse(change: CostChange) -> None:
        raise BindConflictError("409")

    writer.write = refuse  # type: ignore[method-assign]
    asyncio.run(keeper.sync_once())
    assert _sample(metrics, "spread_scheduler_deletion_cost_patches_total", {"result": "conflict"}) == 1


def test_another_workloads_pod_that_stays_is_counted_after_a_minute_one_that_goes_never() -> None:
    clock = FakeClock()
    keeper, writer, _ = _measured(300, clock)
    _settle(keeper, writer)
    writer.add(make_pod("flap").labels({"app": "web"}).node("b0").set("metadata.resourceVersion", "7").dict())
    assert _settle(keeper, writer) == 0
    clock.advance(30)
    writer.delete("flap")
    assert _settle(keeper, writer) == 0
    clock.advance(REBASE_AFTER)
    assert keeper._idle_timeout() is None  # nothing held apart from the counts now
    writer.add(make_pod("bare").labels({"app": "web"}).node("a0").set("metadata.resourceVersion", "7").dict())
    assert _settle(keeper, writer) == 0
    assert keeper._idle_timeout() == REBASE_AFTER
    clock.advance(REBASE_AFTER)
    asyncio.run(keeper.sync_once())  # due without a mark: zone a's pods one rank up, 20 at a time
    assert len(writer.written) == 300 + PATCHES_PER_RERANK
    assert _settle(keeper, writer) == 100 - PATCHES_PER_RERANK
    assert dict(writer.written[-100:])["p000"] == "-2"  # a's oldest, above the bare pod
    assert keeper._idle_timeout() is None


def test_two_more_pods_of_another_workload_in_a_domain_are_counted_at_once() -> None:
    keeper, writer, _ = _measured(30, FakeClock())
    _settle(keeper, writer)
    for name in ("x1", "x2"):
        writer.add(make_pod(name).labels({"app": "web"}).node("a0").set("metadata.resourceVersion", "7").dict())
    assert _settle(keeper, writer) == 10  # beyond the slack: a's ten pods two ranks up


def test_when_another_workloads_pod_leaves_a_zones_last_pod_is_patched_to_the_top_at_once() -> None:
    """Issue #50: the held count would keep zone a's only pod one rank up for a minute, tied with
    the second pods of zones b and c, so a scale-down could empty zone a. It is patched at once, alone."""
    keeper, writer, _ = _measured(0, FakeClock())
    writer.add(_pod("lone", "a0"))
    for i in range(6):
        writer.add(_pod(f"p{i:03}", "bc"[i % 2] + "0"))
    writer.add(make_pod("bare").labels({"app": "web"}).node("a0").set("metadata.resourceVersion", "7").dict())
    _settle(keeper, writer)
    assert dict(writer.written)["lone"] == "-2"  # above the bare pod
    writer.delete("bare")
    assert _settle(keeper, writer) == 1  # was 0: held at -2
    assert writer.written[-1] == ("lone", "-1")
