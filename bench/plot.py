"""Pods/s against nodes, ours and upstream's, from the JSON the benchmarks wrote: one PNG next to them.

.venv/bin/python -m bench.plot            # bench/results/{inprocess,e2e}.json -> bench/results/pods_per_s.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

COLORS = {
    "SchedulingBasic": "tab:gray",
    "TopologySpreading": "tab:blue",
    "PreferredTopologySpreading": "tab:green",
    "DefaultSpreading": "tab:orange",
    "SchedulingPodAntiAffinity": "tab:red",
    "SchedulingPreferredPodAffinity": "tab:purple",
    "SchedulingPreferredPodAntiAffinity": "tab:brown",
}


def _load(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else []


def plot(inprocess: list[dict[str, Any]], e2e: list[dict[str, Any]], out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    series: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for row in inprocess:
        if not row.get("scaling"):
            series[row["workload"]].append((row["nodes"], row["pods_per_s"], row["upstream_pods_per_s"]))
    for workload, points in series.items():
        points.sort()
        nodes = [p[0] for p in points]
        color = COLORS.get(workload, "black")
        left.plot(nodes, [p[1] for p in points], "o-", color=color, label=f"{workload}: spread-scheduler")
        left.plot(nodes, [p[2] for p in points], "s--", color=color, label=f"{workload}: kube-scheduler")
    left.set(title="In-process: scheduling algorithm only", xlabel="nodes", ylabel="pods/s", xscale="log", yscale="log")
    left.legend(fontsize=7)
    left.grid(True, which="both", alpha=0.3)

    by_qps: dict[tuple[int, str], list[tuple[int, float]]] = defaultdict(list)
    for row in e2e:
        by_qps[(row["qps"], row["scheduler"])].append((row["nodes"], row["pods_per_s"]))
    for (qps, scheduler), points in sorted(by_qps.items()):
        points.sort()
        style = {"spread-scheduler": "o-", "null-binder": "x:"}.get(scheduler, "s--" if "@" not in scheduler else "^-.")
        color = "tab:blue" if qps >= 1000 else "tab:red"
        right.plot([p[0] for p in points], [p[1] for p in points], style, color=color, label=f"{scheduler}, QPS {qps}")
    right.set(title="End to end: local control plane, 1000 pods", xlabel="nodes", ylabel="pods/s", ylim=(0, None))
    right.legend(fontsize=8)
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    inprocess, e2e = _load(args.results / "inprocess.json"), _load(args.results / "e2e.json")
    if not inprocess and not e2e:
        print(f"no benchmark results in {args.results}", file=sys.stderr)
        return 1
    out = args.results / "pods_per_s.png"
    plot(inprocess, e2e, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
