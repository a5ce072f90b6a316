"""The Karpenter steps of e2e/test_karpenter.py repeated under spread-scheduler and kube-scheduler v1.35.4
(issue #50): how often a zone spread breaks, or a zone is lost, while Karpenter scales from zero and
consolidates.

    python -m bench.karpenter_contrast --runs 20
    python -m bench.karpenter_contrast --runs 5 --scheduler kube-scheduler

One local control plane with kwok, Karpenter's kwok provider (e2e/karpenter.py) and the schedulers,
kube-scheduler with our profile spelled out (bench/e2e.py's ``scheduler_config``) under its own
scheduler name. Each round gives every contestant its own NodePool (examples/karpenter-nodepool.yaml's,
``consolidateAfter: 10s``) and its own copy of the example's workload pinned to it, side by side:

1. scale-up: 9 replicas from zero nodes, until every pod is Running (3/3/3 expected);
2. scale-down to 3 (after our deletion costs are written, for ours), until Karpenter has settled: every
   pod Running, no node empty or being deleted, and nothing changed for ``QUIET`` s (longer than
   ``consolidateAfter`` plus Karpenter's 15 s validation).

A watch records every placement state (e2e/karpenter.py ``SpreadWatch``); a run *breaks* the spread when
some judged state has a zone skew above maxSkew, and *loses a zone* when it ends with a zone of no pod.
Prints per contestant how many runs did either; every run goes to bench/results/karpenter-contrast.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from bench.e2e import scheduler_config, start_contestant, stop_contestant
from e2e.cluster import Cluster
from e2e.karpenter import NODE_POOL_LABEL, Karpenter, SpreadWatch, max_skew, node_pool, workload, zones
from e2e.kube_helpers import create_namespace, create_object, is_ready, wait_for
from scheduler.spread.deletion_cost import MARKER_ANNOTATION

ROOT = Path(__file__).resolve().parent.parent
CONTESTANTS = {"spread-scheduler": "spread-scheduler", "kube-scheduler": "kube-scheduler"}  # name -> schedulerName
APP = "web"
QUIET = 30.0  # s without a change: consolidateAfter (10 s) + Karpenter's validation wait (15 s) + slack
SETTLE_TIMEOUT = 300.0


class Contestant:
    """One scheduler's workload and NodePool in one round."""

    def __init__(self, which: str, api: client.ApiClient, karpenter: Karpenter, run: int) -> None:
        self.which = which
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.api = api
        self.karpenter = karpenter
        short = which.partition("-")[0]
        self.namespace = f"{short}-{run}-{uuid.uuid4().hex[:4]}"
        self.pool = f"{short}-{run}"
        self.watch = SpreadWatch(self.core, self.namespace, APP, 9)
        self.last_change = time.monotonic()
        self.fingerprint: Any = None

    def nodes(self) -> list[Any]:
        return list(self.core.list_node(label_selector=f"{NODE_POOL_LABEL}={self.pool}").items)

    def pods(self) -> list[Any]:
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=f"app={APP}").items)

    def start(self) -> None:
        self.karpenter.apply_node_pool(node_pool(self.pool))
        create_namespace(self.core, self.namespace)
        deploy, budget = workload(self.namespace, APP, 9, CONTESTANTS[self.which])
        deploy["spec"]["template"]["spec"]["nodeSelector"] = {NODE_POOL_LABEL: self.pool}
        self.watch.__enter__()
        for doc in (deploy, budget):
            create_object(self.api, doc)

    def running(self, replicas: int) -> bool:
        pods = [p for p in self.pods() if p.metadata.deletion_timestamp is None]
        return len(pods) == replicas and all(p.status.phase == "Running" and is_ready(p) for p in pods)

    def costs_written(self) -> bool:
        return self.which != "spread-scheduler" or all(
            MARKER_ANNOTATION in (p.metadata.annotations or {}) for p in self.pods()
        )

    def scale_down(self) -> None:
        self.watch.expect(3)
        self.apps.patch_namespaced_deployment_scale(APP, self.namespace, {"spec": {"replicas": 3}})
        self.last_change = time.monotonic()

    def settled(self) -> bool:
        """Every pod Running, no node empty or deleting, nothing changed for QUIET s."""
        nodes, pods = self.nodes(), self.pods()
        placed = sorted((p.metadata.name, p.spec.node_name or "", p.status.phase or "") for p in pods)
        fingerprint = (sorted(n.metadata.name for n in nodes), placed)
        if fingerprint != self.fingerprint:
            self.fingerprint, self.last_change = fingerprint, time.monotonic()
            return False
        used = {p.spec.node_name for p in pods}
        return (
            self.running(3)
            and all(n.metadata.deletion_timestamp is None and n.metadata.name in used for n in nodes)
            and time.monotonic() - self.last_change >= QUIET
        )

    def result(self, scaled_up: float, settled: float) -> dict[str, Any]:
        self.watch.__exit__()
        worst = self.watch.worst()
        final = self.watch.states[-1].counts if self.watch.states else {}
        return {
            "scheduler": self.which,
            "worst_skew": worst.skew() if worst else None,
            "worst_state": worst.counts if worst else None,
            "final": final,
            "broke_spread": worst is not None and worst.skew() > max_skew(),
            "lost_zone": any(final.get(z, 0) == 0 for z in zones()),
            "scale_up_s": round(scaled_up, 1),
            "settle_s": round(settled, 1),
            "states": len(self.watch.states),
        }

    def remove_workload(self) -> None:
        self.apps.delete_collection_namespaced_deployment(self.namespace)
        wait_for(lambda: not self.pods(), 120, f"{self.namespace}: pods gone")
        self.core.delete_namespace(self.namespace)


def one_round(run: int, which: list[str], api: client.ApiClient, karpenter: Karpenter) -> list[dict[str, Any]]:
    contestants = [Contestant(w, api, karpenter, run) for w in which]
    try:
        started = time.monotonic()
        for c in contestants:
            c.start()
        wait_for(lambda: all(c.running(9) for c in contestants), 180, "9 Running each", interval=0.5)
        wait_for(lambda: all(c.costs_written() for c in contestants), 60, "our deletion costs", interval=0.5)
        scaled_up = time.monotonic() - started
        started = time.monotonic()
        for c in contestants:
            c.scale_down()
        wait_for(lambda: all(c.settled() for c in contestants), SETTLE_TIMEOUT, "Karpenter settled", interval=1.0)
        settled = time.monotonic() - started - QUIET
        return [c.result(scaled_up, settled) for c in contestants]
    finally:
        for c in contestants:
            c.watch.__exit__()
            c.remove_workload()
        for c in contestants:
            c.karpenter.remove_node_pool(c.pool, timeout=180)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.karpenter_contrast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scheduler", nargs="+", choices=sorted(CONTESTANTS), default=sorted(CONTESTANTS))
    parser.add_argument("--dir", type=Path, default=ROOT / ".cluster" / "karpenter-contrast")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "karpenter-contrast.json")
    args = parser.parse_args(argv)
    cluster = Cluster(args.dir)
    cluster.down(quiet=True)
    cluster.up()
    procs = []
    runs: list[dict[str, Any]] = []
    karpenter = Karpenter(cluster)
    try:
        for which in args.scheduler:
            cfg = scheduler_config(cluster.user_kubeconfig(which), 50, 100)
            cfg["profiles"][0]["schedulerName"] = CONTESTANTS[which]
            cfg_path = cluster.dir / f"{which}-config.yaml"
            cfg_path.write_text(yaml.safe_dump(cfg))
            procs.append(start_contestant(which, cluster, cfg_path, 50, 100))
        karpenter.install()
        karpenter.start()
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        for run in range(args.runs):
            for row in one_round(run, args.scheduler, api, karpenter):
                row["run"] = run
                runs.append(row)
                print(json.dumps(row), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(runs, indent=1) + "\n")
    finally:
        karpenter.stop()
        for proc in procs:
            stop_contestant(proc)
        cluster.down(quiet=True)
    for which in args.scheduler:
        mine = [r for r in runs if r["scheduler"] == which]
        broke = sum(r["broke_spread"] for r in mine)
        lost = sum(r["lost_zone"] for r in mine)
        either = sum(r["broke_spread"] or r["lost_zone"] for r in mine)
        print(
            f"{which}: {either}/{len(mine)} runs broke the spread or lost a zone "
            f"(skew above {max_skew()} in {broke}, a zone lost in {lost})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
