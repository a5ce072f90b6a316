"""The envelope row: a cluster at the size Kubernetes supports, and what a scheduler pays there.

    .venv/bin/python -m bench.envelope --nodes 5000 --running 10000 20000 30000 --repeat 3

For each size, one local cluster (kwok as the kubelet: every node heartbeats through its Lease, every
pod runs): ``--nodes`` nodes and ``--running`` pods already Running on them (bound round-robin by
``nodeName``, in a namespace of their own, as bench/e2e.py's memory rows). Then each contestant in
turn, alternated over ``--repeat`` runs, on that same cluster:

- **sync**: seconds from starting the process to its caches synced and ready to schedule
  (kube-scheduler's ``/readyz``, our "cache synced" line): what a scheduler pays at start before it can
  schedule (a standby replica syncs before it leads, in both, so a failover does not pay it again);
- **pods/s** for ``--pods`` new pods (four Deployments with bench/e2e.py's spread, scaled up once
  the contestant is ready), from the first scale to the last bound pod;
- **peak RSS** of the process over the whole run, and its CPU per new pod.

The new pods are scaled away between runs (kwok ends them within seconds), so every run meets the
same cluster. kwok's CPU over each run is reported beside it. Rows are medians per contestant; with
two sizes or more, sync time and RSS are fitted as ``a + b * running`` (least squares, ``fits`` in
the JSON), for sizes this machine cannot hold. Writes bench/results/envelope.json (medians) and
envelope-runs.json (every run).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from bench.e2e import (
    cpu_seconds,
    create_existing_pods,
    median_row,
    peak_rss_mb,
    scheduler_config,
    start_contestant,
    stop_contestant,
    watch_until_bound,
    web_deployment,
)
from e2e.cluster import Cluster
from e2e.kube_helpers import ZONE, node_body, wait_for

ROOT = Path(__file__).resolve().parent.parent
DEPLOYMENTS = 4


def _create_nodes(core: client.CoreV1Api, names: list[str]) -> None:
    def create(item: tuple[int, str]) -> None:
        i, name = item
        core.create_node(node_body(name, labels={ZONE: f"zone-{i % 3}", "pool": "general"}, cpu="32", pods="110"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        for _ in pool.map(create, enumerate(names)):
            pass


def _wait_running(core: client.CoreV1Api, namespace: str, timeout: float) -> float:
    """Seconds until no pod of ``namespace`` is Pending any more (kwok has run them all)."""
    started = time.monotonic()

    def none_pending() -> bool:
        pending = core.list_namespaced_pod(namespace, field_selector="status.phase=Pending", limit=1)
        return not pending.items

    wait_for(none_pending, timeout, f"every pod of {namespace} Running", interval=2)
    return time.monotonic() - started


def _scale(apps: client.AppsV1Api, replicas: int) -> None:
    for d in range(DEPLOYMENTS):
        apps.patch_namespaced_deployment_scale(f"web-{d}", "default", {"spec": {"replicas": replicas}})


def run_once(
    which: str, cluster: Cluster, core: client.CoreV1Api, apps: client.AppsV1Api, pods: int, qps: int
) -> dict[str, Any]:
    cfg_path = cluster.dir / f"{which}-envelope.yaml"
    cfg_path.write_text(yaml.safe_dump(scheduler_config(cluster.kubeconfig, qps, qps)))
    kubelet = cluster.alive().get("kwok")
    kubelet_before = cpu_seconds(kubelet) if kubelet else 0.0
    started = time.monotonic()
    proc = start_contestant(which, cluster, cfg_path, qps, qps)
    sync = time.monotonic() - started
    try:
        cpu_before = cpu_seconds(proc.pid)
        clock = time.monotonic()
        _scale(apps, pods // DEPLOYMENTS)
        bound_at, _ = watch_until_bound(core, pods, clock, which)
        cpu = cpu_seconds(proc.pid) - cpu_before
        rss = peak_rss_mb(proc.pid)
    finally:
        stop_contestant(proc)
    _scale(apps, 0)
    wait_for(lambda: not core.list_namespaced_pod("default", limit=1).items, 180, "the new pods gone", interval=1)
    return {
        "scheduler": which,
        "sync_s": round(sync, 2),
        "pods_per_s": round(pods / (bound_at - clock), 1),
        "cpu_ms_per_pod": round(cpu * 1000 / pods, 2),
        "peak_rss_mb": round(rss, 1),
        "kwok_cpu_s": round(cpu_seconds(kubelet) - kubelet_before, 2) if kubelet else 0.0,
    }


def run_size(
    nodes: int, running: int, pods: int, qps: int, repeat: int, contestants: list[str]
) -> list[dict[str, Any]]:
    cluster = Cluster(ROOT / ".cluster" / "envelope")
    cluster.down(quiet=True)
    cluster.up()
    rows: list[dict[str, Any]] = []
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        names = [f"node-{i:05d}" for i in range(nodes)]
        t0 = time.monotonic()
        _create_nodes(core, names)
        setup = {"nodes_s": round(time.monotonic() - t0, 1)}
        t0 = time.monotonic()
        create_existing_pods(core, names, running)
        setup["pods_created_s"] = round(time.monotonic() - t0, 1)
        setup["pods_running_s"] = round(_wait_running(core, "existing", 1800), 1)
        for d in range(DEPLOYMENTS):
            apps.create_namespaced_deployment("default", web_deployment(d))
        print(f"# {nodes} nodes, {running} running pods: setup {setup}", flush=True)
        for run in range(repeat):
            order = list(contestants)
            random.Random(run).shuffle(order)
            for which in order:
                row = {
                    "nodes": nodes,
                    "running": running,
                    "pods": pods,
                    "run": run,
                    **run_once(which, cluster, core, apps, pods, qps),
                }
                rows.append(row)
                _print(row)
    finally:
        cluster.down(quiet=True)
    return rows


def _print(row: dict[str, Any]) -> None:
    print(
        f"{row['nodes']:>6} {row['running']:>7} {row['scheduler']:<30} {row['sync_s']:>7} {row['pods_per_s']:>7} "
        f"{row['cpu_ms_per_pod']:>8} {row['peak_rss_mb']:>8} {row['kwok_cpu_s']:>7}",
        flush=True,
    )


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size and contestant, each figure's own median, as bench/e2e.py takes them."""
    groups: dict[tuple[int, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["nodes"], row["running"], row["scheduler"]), []).append(row)
    return [median_row(runs) for runs in groups.values()]


def per_object_fit(rows: list[dict[str, Any]], key: str, which: str) -> dict[str, float]:
    """Least squares ``key = a + b * running`` over the sizes (nodes fixed): the cost per running pod,
    to extrapolate to a size this machine cannot hold."""
    points = [(r["running"], r[key]) for r in rows if r["scheduler"] == which]
    if len({x for x, _ in points}) < 2:
        return {}
    slope, intercept = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return {"per_running_pod": slope, "intercept": intercept}


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.envelope", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, nargs="+", default=[10000, 20000, 30000])
    parser.add_argument("--pods", type=int, default=1000, help="new pods to schedule in each run")
    parser.add_argument("--qps", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--contestants", nargs="+", default=["kube-scheduler", "spread-scheduler"])
    parser.add_argument("--out", default="bench/results/envelope.json")
    args = parser.parse_args()
    print(
        f"{'nodes':>6} {'running':>7} {'contestant':<30} {'sync s':>7} {'pods/s':>7} {'CPU ms/pod':>8} "
        f"{'RSS MB':>8} {'kwok s':>7}"
    )
    rows: list[dict[str, Any]] = []
    for running in args.running:
        rows += run_size(args.nodes, running, args.pods, args.qps, args.repeat, args.contestants)
    table = medians(rows)
    for row in table:
        _print(row | {"scheduler": f"{row['scheduler']} (median of {row['runs']})"})
    fits = {
        which: {key: per_object_fit(table, key, which) for key in ("sync_s", "peak_rss_mb")}
        for which in args.contestants
    }
    print(json.dumps(fits, indent=1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"medians": table, "fits": fits}, indent=2))
    out.with_name(out.stem + "-runs.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
