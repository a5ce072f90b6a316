"""Planning cost of one workload whose zone came back (issue #48): ``plan_workload`` on a simulated
cache, pods over nodes in zones a/b/c, every pod in a and b (a hard zone spread, maxSkew 1), zone c
empty. Prints, per size, the moves planned (at most ``MAX_PLANNED`` a plan), the CPU of the whole
plan, and its slices: the planner yields to the caller once a slice passes ``PLAN_SLICE`` of wall
time, as the rebalancer runs it on the scheduling loop (docs/rebalance.md has the figures). The
longest slice in wall time and in the thread's CPU time: on a loaded machine the wall time adds
what the OS gave other processes, which no slicing can cut.

    python -m bench.rebalance_plan [--sizes 200/25,600/75,1200/150,3000/375] [--max-planned 100]
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from typing import Any

from scheduler.config import load_config
from scheduler.kube.controllers.rebalance import PLAN_SLICE
from scheduler.simulate import Simulation
from scheduler.spread.rebalance import REBALANCE_ANNOTATION, plan_steps
from scheduler.spread.search import MAX_PLANNED
from scheduler.spread.workload import Workload
from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
APP = {"app": "web"}
WORKLOAD = Workload("default", "ReplicaSet", "web-1", "uid-web-1")
SIZES = "200/25,600/75,1200/150,3000/375"
SLICE_BUDGET = PLAN_SLICE


def zone_returned(pods: int, nodes: int) -> Simulation:
    """``nodes`` nodes a third per zone, ``pods`` pods of one ReplicaSet on the nodes of a and b."""
    sim = Simulation(load_config(None))
    sim.add_objects(zone_returned_objects(pods, nodes))
    return sim


def zone_returned_objects(pods: int, nodes: int) -> list[dict[str, Any]]:
    """The objects of ``zone_returned``."""
    objects: list[dict[str, Any]] = []
    names = {z: [f"{z}{i}" for i in range(nodes // 3 + (1 if k < nodes % 3 else 0))] for k, z in enumerate("abc")}
    for z, zone_nodes in names.items():
        objects += [make_node(n).zone(z).capacity(cpu="64", memory="256Gi", pods="500").dict() for n in zone_nodes]
    crowded = names["a"] + names["b"]
    for i in range(pods):
        pod = (
            make_pod(f"web-{i:05d}")
            .labels(APP)
            .node(crowded[i % len(crowded)])
            .phase("Running")
            .condition("Ready", "True")
            .owner("ReplicaSet", WORKLOAD.name)
            .created(f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z")
            .spread(ZONE, 1, match=APP)
            .requests(cpu="10m", memory="16Mi")
            .set("metadata.uid", f"uid-web-{i}")
            .set("metadata.annotations", {REBALANCE_ANNOTATION: "true"})
        )
        objects.append(pod.dict())
    return objects


def measure(pods: int, nodes: int, budget: float = SLICE_BUDGET, max_planned: int = MAX_PLANNED) -> dict[str, Any]:
    """One plan of the workload in slices of ``budget`` wall time: its moves, the CPU of the whole
    plan, how many slices and the longest (wall)."""
    sim = zone_returned(pods, nodes)
    framework = sim.frameworks["spread-scheduler"]
    deadline = math.inf
    steps = plan_steps(
        sim.cache, framework, WORKLOAD, due=lambda: time.perf_counter() >= deadline, max_planned=max_planned
    )
    slices: list[float] = []
    slices_cpu: list[float] = []
    gc.collect()
    gc.freeze()  # as gc_policy.gc_housekeeping does in the scheduler: collections walk what is new
    cpu = time.process_time()
    try:
        while True:
            start, start_cpu = time.perf_counter(), time.thread_time()
            deadline = start + budget
            try:
                next(steps)
            except StopIteration as done:
                plan = done.value
                break
            finally:
                slices.append(time.perf_counter() - start)
                slices_cpu.append(time.thread_time() - start_cpu)
    finally:
        cpu = time.process_time() - cpu
        gc.unfreeze()
    return {
        "pods": pods,
        "nodes": nodes,
        "reason": plan.reason,
        "moves": len(plan.moves),
        "cpu_s": round(cpu, 3),
        "slices": len(slices),
        "max_slice_ms": round(1000 * max(slices), 1),
        "max_slice_cpu_ms": round(1000 * max(slices_cpu), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--max-planned", type=int, default=MAX_PLANNED, help="moves a plan looks ahead")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        pods, nodes = (int(x) for x in size.split("/"))
        print(measure(pods, nodes, max_planned=args.max_planned), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
