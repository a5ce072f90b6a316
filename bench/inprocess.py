""" "In-process benchmark: the framework alone on a snapshot, no API. Prints a table, writes JSON.

.venv/bin/python -m bench.inprocess --nodes 500 1000 5000 --pods 2000
.venv/bin/python -m bench.inprocess --nodes 500 5000 --runs 3 --workloads SchedulingPodAntiAffinity

Each side runs ``--runs`` times (ours in this process on a fresh Simulation, upstream's in a fresh
schedbench process); a row shows the medians. Pending pods marked ``UNMEASURED`` (scheduler_perf's init
pods) are scheduled first, by the scheduler under test, outside the clock, on both sides alike. Our side
runs under the collector policy of the scheduler process (``scheduler.kube.gc_policy``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.churn import CHANGE_STRIDE, Churn, status_rate
from bench.workloads import UNMEASURED, WORKLOADS
from e2e.build import ensure_tool
from scheduler.api.objects import Pod
from scheduler.config import parse_config, upstream_config
from scheduler.features import DEFAULT_FEATURES, Features, features_at, supported_minor
from scheduler.kube.gc_policy import FREEZE_EVERY, GCPolicy
from scheduler.simulate import Simulation

FEATURES: Features = DEFAULT_FEATURES  # --kube-version: both sides decide as that release
PROFILE = upstream_config(features=FEATURES)


def use_version(minor: str) -> None:
    """Both sides at ``minor``: its default profile, our features, upstream's schedbench built from it."""
    global FEATURES, PROFILE  # noqa: PLW0603 - a command's one setting, read by every run
    FEATURES = features_at(supported_minor(minor))
    PROFILE = upstream_config(features=FEATURES)


def run_upstream(objects: list[dict[str, object]], workdir: Path, churn: tuple[float, float]) -> dict[str, float]:
    """The same workload through upstream's scheduler.New + SchedulePod + AssumePod (cmd/schedbench)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "objects.json").write_text(json.dumps(objects))
    (workdir / "config.json").write_text(json.dumps(PROFILE))
    out = subprocess.run(
        [
            str(ensure_tool("schedbench", FEATURES.release)),
            "-config",
            str(workdir / "config.json"),
            "-objects",
            str(workdir / "objects.json"),
            f"-status-per-s={churn[0]}",
            f"-changes-per-s={churn[1]}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def run_one(
    name: str,
    nodes: int,
    pods: int | None,
    existing: int | None = None,
    runs: int = 1,
    changes_per_s: float | None = None,
) -> dict[str, Any]:
    """One row: the medians of ``runs`` runs of each side on the same objects (``pods``/``existing``:
    None keeps the workload's own counts). With ``changes_per_s``, node churn (bench/churn.py) runs
    on both sides: status updates at 17/s per 5,000 nodes and that many label/taint changes a second."""
    kwargs = {"measured": pods} if pods is not None else {}
    objects = WORKLOADS[name](nodes, existing=existing, **kwargs)
    churn = (0.0, 0.0) if changes_per_s is None else (status_rate(nodes), changes_per_s)
    ours, upstream = [], []
    for _ in range(runs):  # alternated, so both sides share the machine's drift
        ours.append(_schedule_all(objects, churn))
        upstream.append(run_upstream(objects, Path("bench/results/work"), churn))
    total = statistics.median(r[0] for r in ours)
    count, scheduled = ours[0][3], ours[0][2]
    ours_rate = count / total
    up_rate = statistics.median(u["pods_per_s"] for u in upstream)
    p50 = statistics.median(statistics.median(r[1]) for r in ours)
    p99 = statistics.median(r[1][int(len(r[1]) * 0.99) - 1] for r in ours)
    existing_pods = sum(1 for o in objects if o.get("kind") == "Pod" and o.get("spec", {}).get("nodeName"))
    return {
        "upstream_pods_per_s": round(up_rate, 1),
        "upstream_p50_ms": statistics.median(u["p50_ms"] for u in upstream),
        "upstream_p99_ms": statistics.median(u["p99_ms"] for u in upstream),
        "upstream_peak_rss_mb": round(max(u["peak_rss_mb"] for u in upstream), 1),
        "upstream_runs_pods_per_s": [round(u["pods_per_s"], 1) for u in upstream],
        "upstream_scheduled": int(upstream[0]["scheduled"]),
        "ratio": round(ours_rate / up_rate, 3),
        "workload": name,
        "nodes": nodes,
        "existing": existing_pods,
        "unmeasured": ours[0][4],
        "pods": count,
        "scheduled": scheduled,
        "runs": runs,
        "pods_per_s": round(ours_rate, 1),
        "runs_pods_per_s": [round(count / r[0], 1) for r in ours],
        "p50_ms": round(p50 * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "churn": changes_per_s is not None,
        "node_updates": statistics.median(r[5] for r in ours),
        "upstream_node_updates": statistics.median(u.get("node_updates", 0) for u in upstream),
    }


def _schedule_all(
    objects: list[dict[str, object]], churn_rates: tuple[float, float]
) -> tuple[float, list[float], int, int, int, int]:
    """Every pending pod in queue order, each placement assumed before the next: (seconds, sorted
    per-pod durations, pods placed, pods tried, unmeasured pods, node updates applied) of the measured
    pods. The unmeasured ones come first in the queue and are scheduled the same way before the clock
    starts. The node updates due are applied before each pod, inside the total, outside its duration."""
    sim = _simulation(objects)
    order = sim.queue_order()
    unmeasured = [pod for pod in order if _unmeasured(pod.raw)]
    measured = order[len(unmeasured) :]
    assert order[: len(unmeasured)] == unmeasured, "unmeasured pods must be queued before measured ones"
    for pod in unmeasured:
        _schedule(sim, pod)
    names = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == "Node"]  # type: ignore[index]
    churn = Churn(names, *churn_rates)
    durations: list[float] = []
    scheduled = 0
    collector = _ShippedCollector()
    start = time.perf_counter()
    for pod in measured:
        t0 = time.perf_counter()
        churn.apply_due(sim.cache, t0 - start)
        collector.due(t0)
        t0 = time.perf_counter()
        scheduled += _schedule(sim, pod)
        durations.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    collector.end()
    durations.sort()
    return total, durations, scheduled, len(measured), len(unmeasured), churn.status_updates + churn.changes


def node_update_cost(nodes: int, pods: int = 1000, rounds: int = 6) -> dict[str, float]:
    """What one node label change costs us, the next cycle's extra work included: the same
    TopologySpreading pods scheduled without changes and with a change before every pod, alternated;
    the cost is the difference of the totals over the pods (medians over ``rounds``). Label changes
    only, so both runs make the same decisions."""
    objects = WORKLOADS["TopologySpreading"](nodes, measured=pods)
    names = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == "Node"]  # type: ignore[index]
    costs: list[float] = []
    calls: list[float] = []
    for r in range(rounds):
        totals = {}
        for changing in (False, True) if r % 2 else (True, False):  # neither always runs on the older heap
            gc.collect()
            sim = _simulation(objects)
            churn = Churn(names, 0.0, 0.0)
            in_update = 0.0
            start = time.perf_counter()
            for i, pod in enumerate(sim.queue_order()):
                if changing:
                    t0 = time.perf_counter()
                    _label_change(churn, sim, i)
                    in_update += time.perf_counter() - t0
                _schedule(sim, pod)
            totals[changing] = time.perf_counter() - start
        costs.append((totals[True] - totals[False]) / pods)
        calls.append(in_update / pods)
    return {
        "nodes": nodes,
        "update_cost_us": round(statistics.median(costs) * 1e6, 1),
        "update_call_us": round(statistics.median(calls) * 1e6, 1),
        "update_calls": _update_calls(objects, names, min(pods, 300)),
        "update_loop_us": _update_loop(objects, names),
    }


def allocation_share(nodes: int, pods: int) -> dict[str, float]:
    """Our side's SchedulingDynamicResources cycle, and the part of it the structured allocator's
    ``search`` calls take (what Filter calls; upstream's Filter spends its time in ``Allocate``
    too): per pod, ms."""
    from scheduler.plugins.dynamicresources.structured import allocator  # noqa: PLC0415 - timed here only

    objects = WORKLOADS["SchedulingDynamicResources"](nodes, measured=pods)
    sim = _simulation(objects)
    spent = [0.0]
    original = allocator.Allocator.search

    def timed(self: allocator.Allocator, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(self, *args)
        finally:
            spent[0] += time.perf_counter() - t0

    allocator.Allocator.search = timed  # type: ignore[method-assign]
    collector = _ShippedCollector()
    try:
        start = time.perf_counter()
        for pod in sim.queue_order():
            collector.due(time.perf_counter())
            _schedule(sim, pod)
        total = time.perf_counter() - start
    finally:
        allocator.Allocator.search = original  # type: ignore[method-assign]
        collector.end()
    return {
        "nodes": nodes,
        "pods": pods,
        "cycle_ms": round(total / pods * 1000, 2),
        "allocate_ms": round(spent[0] / pods * 1000, 2),
        "share": round(spent[0] / total, 3),
    }


def _update_loop(objects: list[dict[str, object]], names: list[str], updates: int = 2000) -> float:
    """One update's own time with nothing between updates (median of 5 loops of ``updates``): the
    interleaved figure above also pays the cache misses a cycle over 5,000 nodes leaves behind."""
    sim = _simulation(objects)
    for pod in sim.queue_order()[:200]:
        _schedule(sim, pod)
    churn = Churn(names, 0.0, 0.0)
    loops = []
    for r in range(5):
        start = time.perf_counter()
        for i in range(updates):
            _label_change(churn, sim, i + r * updates)
        loops.append((time.perf_counter() - start) / updates)
    return round(statistics.median(loops) * 1e6, 1)


def _update_calls(objects: list[dict[str, object]], names: list[str], pods: int) -> float:
    """The work one update adds, counted instead of timed: Python function calls of the same pods
    scheduled with a change before each and without, the difference per change. Time at 5,000 nodes
    also pays for a bigger heap (cache misses); the count is what the code does, so an update path that
    walks the nodes shows here as a count growing with them."""
    totals = {}
    for changing in (False, True):
        sim = _simulation(objects)
        churn = Churn(names, 0.0, 0.0)
        profiler = cProfile.Profile()
        for i, pod in enumerate(sim.queue_order()[:pods]):
            profiler.enable()
            if changing:
                _label_change(churn, sim, i)
            _schedule(sim, pod)
            profiler.disable()
        totals[changing] = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return round((totals[True] - totals[False]) / pods, 1)


class _ShippedCollector:
    """The collector as the scheduler process runs it (``gc_policy``): what the first sync loaded is
    frozen, then every ``FREEZE_EVERY`` seconds the young are collected and the survivors frozen,
    inside the clock (the binary's housekeeping takes its turn between cycles too). ``end``, outside
    the clock, unfreezes and collects, so the next run starts on a heap without this one's."""

    def __init__(self) -> None:
        self.policy = GCPolicy(time.perf_counter)
        self.policy.start()
        self.next = time.perf_counter() + FREEZE_EVERY

    def due(self, now: float) -> None:
        if now >= self.next:
            self.policy.step()
            self.next = now + FREEZE_EVERY

    def end(self) -> None:
        gc.unfreeze()
        gc.collect()


def _simulation(objects: list[dict[str, object]]) -> Simulation:
    sim = Simulation(parse_config(PROFILE, features=FEATURES), seed=1)
    sim.add_objects(objects)
    return sim


def _label_change(churn: Churn, sim: Simulation, j: int) -> None:
    """Label change ``2 * j`` (even: a label, never a taint, so decisions stay the same) to the node
    bench/churn.py's stride picks for change ``j``."""
    churn.update(sim.cache, churn.names[j * CHANGE_STRIDE % len(churn.names)], 2 * j)


def _unmeasured(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(UNMEASURED) == "true")


def _schedule(sim: Simulation, pod: Pod) -> int:
    """One scheduling cycle's algorithm and assume: 1 if placed."""
    fwk = sim.frameworks[pod.scheduler_name]
    attempt = sim.algorithm.schedule_pod(fwk, sim.cache, pod)
    if attempt.host is None:
        return 0
    sim.cache.assume_pod(pod, attempt.host)
    if pod.resource_claims:
        # Reserve: DynamicResources keeps the allocation in flight, so the next pod finds its device
        # taken (no PreBind here, as on upstream's side: the claim is never written).
        fwk.run_reserve_plugins_reserve(attempt.state, pod, attempt.host)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess", description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 5000])
    parser.add_argument(
        "--pods", type=int, default=None, help="measured pods (default: the workload's own; 2000 for the first four)"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs per side; rows show the medians")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    parser.add_argument("--out", default="bench/results/inprocess.json")
    parser.add_argument(
        "--scaling", action="store_true", help="also: existing pods x10 at fixed N (per-pod cost must stay flat)"
    )
    parser.add_argument(
        "--churn",
        type=float,
        nargs="?",
        const=1.0,
        default=None,
        metavar="CHANGES_PER_S",
        help="node churn on both sides: status updates at 17/s per 5,000 nodes and CHANGES_PER_S (default 1) "
        "label/taint changes a second (bench/churn.py)",
    )
    parser.add_argument("--kube-version", default="1.35", help="both sides decide as this minor (1.35, 1.36, 1.37)")
    parser.add_argument(
        "--update-cost",
        action="store_true",
        help="only: what one node label/taint change costs us at each --nodes, and the ratio to the smallest",
    )
    args = parser.parse_args()
    use_version(args.kube_version)
    if args.update_cost:
        costs = [node_update_cost(n) for n in args.nodes]
        for cost in costs:
            ratio = cost["update_cost_us"] / costs[0]["update_cost_us"]
            print(
                f"node update at {cost['nodes']:>6} nodes: {cost['update_cost_us']:>7} us with the next cycle's "
                f"extra work ({ratio:.2f}x); the cache update alone {cost['update_call_us']} us; "
                f"{cost['update_calls']} function calls ({cost['update_calls'] / costs[0]['update_calls']:.2f}x); "
                f"in a loop of updates {cost['update_loop_us']} us "
                f"({cost['update_loop_us'] / costs[0]['update_loop_us']:.2f}x)",
                flush=True,
            )
        Path(args.out).write_text(json.dumps(costs, indent=2))
        return 0
    rows = []
    print(
        f"{'workload':<28} {'nodes':>6} {'pods':>6} {'pods/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'RSS MB':>7} "
        f"{'upstream/s':>10} {'up p50':>8} {'up p99':>8} {'up RSS':>7} {'ratio':>6}"
    )
    for name in args.workloads:
        for n in args.nodes:
            row = run_one(name, n, args.pods, runs=args.runs, changes_per_s=args.churn)
            rows.append(row)
            print(
                f"{name:<28} {n:>6} {row['pods']:>6} {row['pods_per_s']:>9} {row['p50_ms']:>8} "
                f"{row['p99_ms']:>8} {row['peak_rss_mb']:>7} {row['upstream_pods_per_s']:>10} "
                f"{row['upstream_p50_ms']:>8} {row['upstream_p99_ms']:>8} {row['upstream_peak_rss_mb']:>7} "
                f"{row['ratio']:>6}"
                + (f"  node updates {row['node_updates']} / {row['upstream_node_updates']}" if args.churn else ""),
                flush=True,
            )
    if args.scaling:
        n = args.nodes[0]
        print(f"\nscaling at {n} nodes: existing pods x10 (TopologySpreading; medians of 3 runs per side)")
        scaled = []
        for existing in (2 * n, 20 * n):
            row = run_one("TopologySpreading", n, args.pods, existing, runs=max(3, args.runs))
            scaled.append(row)
            rows.append(row | {"scaling": True})
            print(
                f"  existing {existing:>7}: ours p50 {row['p50_ms']} ms, upstream p50 {row['upstream_p50_ms']} ms",
                flush=True,
            )
        ours_change = float(scaled[1]["p50_ms"]) / float(scaled[0]["p50_ms"]) - 1
        up_change = float(scaled[1]["upstream_p50_ms"]) / float(scaled[0]["upstream_p50_ms"]) - 1
        print(f"  per-pod p50 with existing pods x10: ours {ours_change:+.0%}, upstream {up_change:+.0%}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
