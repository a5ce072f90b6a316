"""Run one batch of generated scenarios through spread-scheduler and through the upstream oracle,
and list every difference.

    .venv/bin/python -m tests.differential.runner --count 100000 --start 0   # a long campaign
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler.config import parse_config
from scheduler.simulate import Simulation, attempt_to_json
from tests.differential import apiserver
from tests.differential.generator import scenario


def oracle_binary() -> Path:
    from e2e.cluster import ensure_oracle  # noqa: PLC0415 - the build helper lives with the control plane

    return ensure_oracle()


def python_side(
    objects: list[dict[str, Any]], config: dict[str, Any], seed: int, *, reuse: bool = True
) -> list[dict[str, Any]]:
    """Every attempt as JSON; ``reuse=False`` turns off results reused across pods of one signature."""
    sim = Simulation(parse_config(config), seed=seed)
    for fwk in sim.frameworks.values():
        fwk.reuse_node_results = reuse
    sim.add_objects(objects)
    out = []
    for attempt in sim.run():
        entry = attempt_to_json(attempt, sim.cache)
        entry["code"] = (
            "Success" if attempt.host else ("Error" if attempt.status.code.name == "ERROR" else "Unschedulable")
        )
        out.append(entry)
    return out


def compare(py: list[dict[str, Any]], go: list[dict[str, Any]]) -> list[str]:
    """Differences that matter: outcome, message, every node's verdict and scores, the chosen node."""
    problems: list[str] = []
    if [r["pod"] for r in py] != [r["pod"] for r in go]:
        return [f"pod order differs: {[r['pod'] for r in py]} vs {[r['pod'] for r in go]}"]
    for p, g in zip(py, go, strict=True):
        pod = p["pod"]
        g_code = "Unschedulable" if g["code"] == "UnschedulableAndUnresolvable" else g["code"]
        if p["code"] != g_code:
            problems.append(f"{pod}: outcome {p['code']} ({p['message']}) vs upstream {g_code} ({g['message']})")
            continue
        if p["code"] == "Unschedulable" and p["message"] != g["message"]:
            problems.append(f"{pod}: message\n  ours:     {p['message']}\n  upstream: {g['message']}")
        if p["code"] == "Error":
            if p["message"].split(":")[0] != g["message"].split(":")[0]:
                problems.append(f"{pod}: error {p['message']!r} vs {g['message']!r}")
            continue
        if p["code"] == "Success" and p["node"] not in g["best"]:
            problems.append(f"{pod}: chose {p['node']}, upstream's best: {g['best']}")
        if not g["nodes"]:
            continue
        for node, gn in g["nodes"].items():
            pn = p["nodes"].get(node)
            if pn is None:
                problems.append(f"{pod}/{node}: missing on our side")
                continue
            if pn["filter"] != gn["filter"]:
                problems.append(f"{pod}/{node}: filter {pn['filter']} vs {gn['filter']}")
            if pn["scores"] != gn["scores"] or pn["total"] != gn["total"]:
                problems.append(
                    f"{pod}/{node}: scores {pn['scores']} total {pn['total']} vs {gn['scores']} total {gn['total']}"
                )
    return problems


def run_batch(
    seeds: range, oracle: Path, make: Callable[[int], tuple[list[dict[str, Any]], dict[str, Any]]] = scenario
) -> dict[int, list[str]]:
    """Mismatches per seed (empty lists are dropped)."""
    lines, ours = [], {}
    for seed in seeds:
        objects, config = make(seed)
        py = python_side(objects, config, seed)
        ours[seed] = py
        placements = {r["pod"]: r["node"] for r in py}
        lines.append(json.dumps({"id": str(seed), "objects": objects, "config": config, "placements": placements}))
    done = subprocess.run(
        [str(oracle)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True, timeout=3600
    )
    mismatches: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        seed = int(result["id"])
        if result.get("error"):
            mismatches[seed] = [f"oracle error: {result['error']}"]
            continue
        found = compare(ours[seed], result["results"] or [])
        if found:
            mismatches[seed] = found
    missing = set(seeds) - {int(json.loads(line)["id"]) for line in done.stdout.splitlines()}
    for seed in missing:
        mismatches[seed] = ["no answer from the oracle"]
    return mismatches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--through-apiserver",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of clusters sent through a real kube-apiserver first",
    )
    args = parser.parse_args()
    oracle = oracle_binary()
    trip = apiserver.start(args.through_apiserver)
    make = trip.wrap(scenario, args.through_apiserver) if trip else scenario
    started, total, bad = time.monotonic(), 0, 0
    for first in range(args.start, args.start + args.count, args.batch):
        seeds = range(first, min(first + args.batch, args.start + args.count))
        mismatches = run_batch(seeds, oracle, make)
        total += len(seeds)
        bad += len(mismatches)
        for seed, problems in sorted(mismatches.items())[:5]:
            print(f"seed {seed}:\n  " + "\n  ".join(problems[:6]), flush=True)
        print(f"{total} clusters compared, {bad} with mismatches ({time.monotonic() - started:.0f}s)", flush=True)
    refused = apiserver.finish(trip)  # any refusal is a generator bug
    return 1 if bad or refused else 0


if __name__ == "__main__":
    sys.exit(main())
