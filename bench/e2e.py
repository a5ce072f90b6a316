"""End-to-end benchmark: spread-scheduler and the upstream kube-scheduler, one after the other, on the
same local control plane, with the same profile (our plugins, our weights) and the same client QPS.

    .venv/bin/python -m bench.e2e --nodes 500 2000 --pods 1000 --qps 5000 50

Measures the time from the first Deployment create to the last bound pod, pods/s, the ratio
ours/upstream, and each scheduler's peak RSS. Writes bench/results/e2e.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines

from e2e.cluster import Cluster, start_kube_scheduler
from e2e.kube_helpers import HOSTNAME, ZONE, node_body, pod_body, wait_for
from scheduler.config import upstream_config

ROOT = Path(__file__).resolve().parent.parent


def scheduler_config(kubeconfig: Path, qps: int, burst: int) -> dict[str, Any]:
    """One file both schedulers read: the same profile, no leader election, the same client limits."""
    return upstream_config(
        clientConnection={"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        leaderElection={"leaderElect": False},
    )


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _watch_until_bound(core: client.CoreV1Api, pods: int, started: float, which: str) -> tuple[float, float]:
    """Follow the pods with one raw watch (a repeated list of 1000 pods would cost the API server,
    on the same two cores, more than the schedulers being compared): when the last pod was bound,
    and when the last one was created (if that is late, pod creation and not the scheduler set the pace)."""
    bound: set[str] = set()
    seen: set[str] = set()
    created_at = bound_at = 0.0
    deadline = started + 600
    while len(bound) < pods:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(bound)}/{pods} pods bound by {which} after 600 s")
        stream = core.list_namespaced_pod("default", watch=True, _preload_content=False, timeout_seconds=60)
        for line in iter_resp_lines(stream):
            event = json.loads(line)
            obj = event.get("object", {})
            name = obj.get("metadata", {}).get("name", "")
            if event.get("type") == "ADDED" and name not in seen:
                seen.add(name)
                if len(seen) == pods:
                    created_at = time.monotonic()
            if obj.get("spec", {}).get("nodeName") and name not in bound:
                bound.add(name)
                if len(bound) == pods:
                    bound_at = time.monotonic()
                    break
        stream.close()
    return bound_at, created_at


def start_profiler(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    """py-spy on our scheduler (``--profile``): collapsed stacks, for the closing note's "where the time goes"."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        print("--profile needs py-spy in the venv (pip install py-spy)", file=sys.stderr)
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(spy), "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--nonblocking", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_once(which: str, nodes: int, pods: int, qps: int, burst: int, profile: Path | None = None) -> dict[str, Any]:
    cluster = Cluster(ROOT / ".cluster" / "bench")
    cluster.down(quiet=True)  # every run starts from an empty etcd
    cluster.up()
    proc: subprocess.Popen[bytes] | None = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        for i in range(nodes):
            core.create_node(node_body(f"node-{i:05d}", labels={ZONE: f"zone-{i % 3}", "pool": "general"}))
        cfg_path = cluster.dir / f"{which}-config.yaml"
        cfg_path.write_text(yaml.safe_dump(scheduler_config(cluster.kubeconfig, qps, burst)))
        log = cluster.dir / f"{which}.log"
        if which == "spread-scheduler":
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [
                        str(Path(sys.executable).parent / "spread-scheduler"),
                        "run",
                        "--config",
                        str(cfg_path),
                        "--secure-port=0",  # as start_kube_scheduler runs upstream: neither serves
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            wait_for(lambda: b"cache synced" in log.read_bytes(), 60, "spread-scheduler ready")
        else:
            proc = start_kube_scheduler(cluster, cfg_path, log)
            wait_for(
                lambda: (
                    b"Successfully acquired" in log.read_bytes() or b"Starting Kubernetes Scheduler" in log.read_bytes()
                ),
                60,
                "kube-scheduler ready",
            )
        spy = None
        if profile is not None and which == "spread-scheduler" and proc is not None:
            spy = start_profiler(proc.pid, profile / f"spread-scheduler-{nodes}-{qps}.txt")
        per_deployment = pods // 4
        labels = [{"app": f"web-{d}"} for d in range(4)]
        started = time.monotonic()
        for d, lab in enumerate(labels):
            spec = pod_body(
                "x",
                lab,
                topologySpreadConstraints=[
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": lab},
                    },
                    {
                        "maxSkew": 1,
                        "topologyKey": HOSTNAME,
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": lab},
                    },
                ],
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["general"]}]}
                            ]
                        }
                    }
                },
            )["spec"]
            apps.create_namespaced_deployment(
                "default",
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"web-{d}"},
                    "spec": {
                        "replicas": per_deployment,
                        "selector": {"matchLabels": lab},
                        "template": {"metadata": {"labels": lab}, "spec": spec},
                    },
                },
            )

        bound_at, created_at = _watch_until_bound(core, pods, started, which)
        elapsed = bound_at - started
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        assert proc is not None
        return {
            "scheduler": which,
            "nodes": nodes,
            "pods": pods,
            "qps": qps,
            "seconds": round(elapsed, 2),
            "all_created_s": round(created_at - started, 2),
            "cpu_s": round(cpu_seconds(proc.pid), 2),
            "pods_per_s": round(pods / elapsed, 1),
            "peak_rss_mb": round(peak_rss_mb(proc.pid), 1),
        }
    finally:
        try:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            cluster.down(quiet=True)


def _print(row: dict[str, Any]) -> None:
    print(
        f"{row['nodes']:>6} {row['pods']:>6} {row['qps']:>6} {row['scheduler']:<18} {row['seconds']:>8} "
        f"{row['pods_per_s']:>8} {row['cpu_s']:>7} {row['peak_rss_mb']:>7} {row.get('ratio', ''):>6}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.e2e", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[500])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--qps", type=int, nargs="+", default=[5000])
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per scheduler, alternating; the table adds the medians"
    )
    parser.add_argument("--out", default="bench/results/e2e.json")
    parser.add_argument("--ours-only", action="store_true", help="skip kube-scheduler (for profiling runs)")
    parser.add_argument("--profile", type=Path, help="py-spy our scheduler during each run; stacks go here")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    print(
        f"{'nodes':>6} {'pods':>6} {'qps':>6} {'scheduler':<18} {'seconds':>8} {'pods/s':>8} {'CPU s':>7} "
        f"{'RSS MB':>7} {'ratio':>6}"
    )
    which = ["spread-scheduler"] if args.ours_only else ["kube-scheduler", "spread-scheduler"]
    for nodes in args.nodes:
        for qps in args.qps:
            burst = qps if qps >= 1000 else qps * 2
            mine: dict[str, list[dict[str, Any]]] = {w: [] for w in which}
            for run in range(args.repeat):
                for w in which:
                    row = run_once(w, nodes, args.pods, qps, burst, args.profile) | {"run": run}
                    mine[w].append(row)
                    runs.append(row)
                    _print(row)
            medians = {w: _median_row(mine[w]) for w in which}
            if not args.ours_only:
                ours, upstream = medians["spread-scheduler"], medians["kube-scheduler"]
                ours["ratio"] = round(ours["pods_per_s"] / upstream["pods_per_s"], 2)
            for w in which:
                rows.append(medians[w])
                if args.repeat > 1:
                    _print(medians[w] | {"scheduler": f"{w} (median)"})
            if not args.ours_only:
                print(f"{'':>21} ratio ours/upstream {medians['spread-scheduler']['ratio']}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    out.with_name(out.stem + "-runs.json").write_text(json.dumps(runs, indent=2))
    return 0


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median time (for an even count, the slower of the middle two)."""
    ordered = sorted(rows, key=lambda r: r["seconds"])
    return dict(ordered[len(ordered) // 2]) | {"runs": len(rows)}


if __name__ == "__main__":
    sys.exit(main())
