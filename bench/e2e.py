"""End-to-end benchmark: spread-scheduler, the upstream kube-scheduler and a null binder, one after
the other on the same local control plane, with the same profile (our plugins, our weights) and the
same client QPS/burst.

    .venv/bin/python -m bench.e2e --nodes 500 2000 --pods 1000 --qps 5000 50 --repeat 3

Each contestant's clock starts once it is ready (its caches synced: kube-scheduler's /readyz, our
"cache synced" line, the null binder's "caches synced" line) and runs from the first Deployment
create to the last bound pod. kwok is the nodes' kubelet (``--kubelet none`` for static node
objects): it renews each node's Lease every 10 s, reports its status every 5 minutes on average, and
runs every pod bound (Running and Ready). Node churn runs throughout, the same for every contestant:
one label/taint change a second, and without kwok a status write per node at 17/s per 5,000 nodes
(kwok's own rate), ``--no-churn`` to turn both off. kwok's CPU is reported beside each row (its
column and ``kwok_cpu_ms_per_pod``), apart from the control plane's and the contestant's. The null
binder (e2e/controlplane/cmd/nullbinder) decides nothing: it binds each pending pod round-robin over
Ready nodes and records the Scheduled event, the least any scheduler must do here.
Rows are medians of ``--repeat`` runs per contestant, alternated; the ratio columns compare medians.
Writes bench/results/e2e.json (medians) and e2e-runs.json (every run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines

from bench.churn import CHANGE_STRIDE, CHURN_KEY, STATUS_STRIDE, status_rate
from e2e.build import ensure_tool
from e2e.cluster import Cluster, free_port, start_kube_scheduler
from e2e.kube_helpers import ZONE, deployment, node_body, pod_body, wait_for, zone_and_host_spread
from scheduler.config import upstream_config
from scheduler.features import DEFAULT_FEATURES, Features, features_at, supported_minor

ROOT = Path(__file__).resolve().parent.parent


FEATURES: Features = DEFAULT_FEATURES  # --kube-version: the control plane, kube-scheduler and our profile


def use_version(minor: str) -> None:
    """Run on ``minor``'s control plane beside its kube-scheduler, both with its default profile (ours
    reads the server's version and decides as it)."""
    global FEATURES  # noqa: PLW0603 - a command's one setting, read by every run
    FEATURES = features_at(supported_minor(minor))


def scheduler_config(kubeconfig: Path, qps: int, burst: int) -> dict[str, Any]:
    """One file both schedulers read: the same profile, no leader election, the same client limits."""
    return upstream_config(
        clientConnection={"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        leaderElection={"leaderElect": False},
        features=FEATURES,
    )


CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch_until_bound(
    core: client.CoreV1Api, pods: int, started: float, which: str, namespace: str = "default"
) -> tuple[float, float]:
    """Follow the pods of ``namespace`` with one raw watch (a repeated list of 1000 pods would cost the
    API server, on the same two cores, more than the schedulers being compared): when the last pod was
    bound, and when the last one was created (if that is late, pod creation and not the scheduler set the pace)."""
    bound: set[str] = set()
    seen: set[str] = set()
    created_at = bound_at = 0.0
    deadline = started + 600
    while len(bound) < pods:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(bound)}/{pods} pods bound by {which} after 600 s")
        stream = core.list_namespaced_pod(namespace, watch=True, _preload_content=False, timeout_seconds=60)
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


class NodeChurn:
    """Node updates while a contestant runs, the same for all (bench/churn.py's rules, through the API):
    a status write (the Ready condition's heartbeat, as a kubelet does) at ``status_rate(nodes)`` per
    second, and label/taint changes at ``changes_per_s``, from one thread with its own client."""

    def __init__(self, kubeconfig: Path, names: list[str], changes_per_s: float, statuses: bool = True) -> None:
        """``statuses``: write the heartbeats too (False when kwok, the nodes' kubelet, writes them)."""
        self._core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        self._names = names
        self._status_per_s = status_rate(len(names)) if statuses else 0.0
        self._changes_per_s = changes_per_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-churn", daemon=True)
        self._tainted: set[str] = set()
        self.writes = 0
        self.errors = 0

    def __enter__(self) -> NodeChurn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        started = time.monotonic()
        statuses = changes = 0
        while not self._stop.is_set():
            elapsed = time.monotonic() - started
            if statuses < int(elapsed * self._status_per_s):
                self._write(self._status, self._names[statuses * STATUS_STRIDE % len(self._names)])
                statuses += 1
            elif changes < int(elapsed * self._changes_per_s):
                self._write(self._change, self._names[changes * CHANGE_STRIDE % len(self._names)], changes)
                changes += 1
            else:
                self._stop.wait(0.01)

    def _write(self, how: Any, *args: Any) -> None:
        try:
            how(*args)
            self.writes += 1
        except client.ApiException:
            self.errors += 1

    def _status(self, name: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        condition = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
        body = {"status": {"conditions": [condition | {"lastHeartbeatTime": now}]}}
        self._core.patch_node_status(name, body)

    def _change(self, name: str, change: int) -> None:
        if change % 2 == 0:
            self._core.patch_node(name, {"metadata": {"labels": {CHURN_KEY: str(change)}}})
            return
        node = self._core.read_node(name)
        taints = [
            {"key": t.key, "value": t.value, "effect": t.effect} for t in (node.spec.taints or []) if t.key != CHURN_KEY
        ]
        if name not in self._tainted:
            taints.append({"key": CHURN_KEY, "effect": "PreferNoSchedule"})
            self._tainted.add(name)
        else:
            self._tainted.discard(name)
        self._core.patch_node(name, {"spec": {"taints": taints}})


def insecure_tls() -> ssl.SSLContext:
    """Like ``curl -k``: a scheduler's serving certificate here is self-signed."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _readyz(port: int) -> bool:
    """kube-scheduler's /readyz: ok once its informers have synced and its handlers run."""
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=insecure_tls(), timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


# What a bench scrapes without a token: the health checks, and /metrics (our plan-slice histogram).
BENCH_ALWAYS_ALLOW = "/healthz,/readyz,/livez,/metrics"


def start_contestant(
    which: str, cluster: Cluster, cfg_path: Path, qps: int, burst: int, port: int = 0
) -> subprocess.Popen[bytes]:
    """Start one contestant and wait until it is ready to schedule (its caches synced).

    ``port``: the schedulers serve HTTPS on 127.0.0.1 there (our /metrics without a token); 0: ours
    serves nothing, kube-scheduler a free port (its /readyz is how the start is awaited)."""
    log = cluster.dir / f"{which}.log"
    if which == "spread-scheduler":
        serving = (
            [
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--authorization-always-allow-paths={BENCH_ALWAYS_ALLOW}",
            ]
            if port
            else ["--secure-port=0"]
        )
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "spread-scheduler"), "run", "--config", str(cfg_path), *serving],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: b"cache synced" in log.read_bytes(), 120, "spread-scheduler ready")
    elif which == "null-binder":
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    str(ensure_tool("nullbinder", FEATURES.release)),
                    f"-kubeconfig={cluster.kubeconfig}",
                    "-scheduler-name=spread-scheduler",
                    f"-qps={qps}",
                    f"-burst={burst}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: b"caches synced" in log.read_bytes(), 120, "null binder ready")
    else:
        port = port or free_port()
        cores = which.partition("@")[2]
        env = {"GOMAXPROCS": cores} if cores else {}
        args = [f"--secure-port={port}", f"--cert-dir={cluster.dir / 'kube-scheduler-certs'}"]
        with _environment(env):
            proc = start_kube_scheduler(cluster, cfg_path, log, extra_args=args)
        wait_for(lambda: _readyz(port), 120, "kube-scheduler /readyz")
    return proc


def stop_contestant(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL after a minute."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def _affinity(cpus: set[int] | None) -> Iterator[None]:
    """Children started inside the block run on ``cpus`` (a fork inherits the calling thread's CPU
    set; a Go runtime sizes GOMAXPROCS from it); this thread's own set is restored after."""
    if cpus is None:
        yield
        return
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def own_core_layout() -> tuple[set[int], set[int]]:
    """``--own-core``: the control plane, this driver (clock, node churn) on the first CPU, the
    contestant on the others; the same for every contestant."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--own-core needs at least 2 CPUs")
    return {cpus[0]}, set(cpus[1:])


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Environment variables set for a child started inside the block."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def web_deployment(d: int) -> dict[str, Any]:
    """Deployment ``web-D`` (no replicas yet: the run scales it): zone and hostname spread on the general pool."""
    lab = {"app": f"web-{d}"}
    spec = pod_body(
        "x",
        lab,
        topologySpreadConstraints=zone_and_host_spread(lab),
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
    return deployment(f"web-{d}", 0, spec)


EXISTING_NAMESPACE = "existing"


def create_existing_pods(core: client.CoreV1Api, names: list[str], count: int) -> None:
    """``count`` running-workload pods already bound round-robin over the nodes, in a namespace of
    their own (the clock's watch follows only ``default``): what a scheduler caches at start in a
    real cluster. Each has requests, an app label among 100 and a default-scheduler name; nothing
    schedules them, they only weigh on the caches and on the first LIST."""
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": EXISTING_NAMESPACE}})
    resources = {"requests": {"cpu": "100m", "memory": "128Mi"}}

    def create(i: int) -> None:
        body = pod_body(
            f"existing-{i:05d}",
            {"app": f"existing-{i % 100}"},
            scheduler="default-scheduler",
            nodeName=names[i % len(names)],
            containers=[{"name": "c", "image": "registry.invalid/pause:3.10", "resources": resources}],
        )
        core.create_namespaced_pod(EXISTING_NAMESPACE, body)

    with ThreadPoolExecutor(max_workers=16) as pool:
        for _ in pool.map(create, range(count)):
            pass


def run_once(
    which: str,
    nodes: int,
    pods: int,
    qps: int,
    burst: int,
    profile: Path | None = None,
    changes_per_s: float | None = 1.0,
    existing: int = 0,
    contestant_cpus: set[int] | None = None,
    kwok: bool = True,
) -> dict[str, Any]:
    cluster = Cluster(ROOT / ".cluster" / "bench", kwok=kwok, version=FEATURES.release)
    cluster.down(quiet=True)  # every run starts from an empty etcd
    cluster.up()
    proc: subprocess.Popen[bytes] | None = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        names = [f"node-{i:05d}" for i in range(nodes)]
        for i, name in enumerate(names):
            core.create_node(node_body(name, labels={ZONE: f"zone-{i % 3}", "pool": "general"}, kubelet=kwok))
        if existing:
            create_existing_pods(core, names, existing)
        per_deployment = pods // 4
        for d in range(4):  # created at 0 replicas before the contestant starts; scaled up on the clock
            apps.create_namespaced_deployment("default", web_deployment(d))
        cfg_path = cluster.dir / f"{which}-config.yaml"
        cfg_path.write_text(yaml.safe_dump(scheduler_config(cluster.kubeconfig, qps, burst)))
        with _affinity(contestant_cpus):
            proc = start_contestant(which, cluster, cfg_path, qps, burst)
        spy = None
        if profile is not None and which == "spread-scheduler":
            spy = start_profiler(proc.pid, profile / f"spread-scheduler-{nodes}-{qps}.txt")
        churn = (
            NodeChurn(cluster.kubeconfig, names, changes_per_s or 0.0, statuses=not kwok)
            if changes_per_s is not None
            else None
        )
        alive = cluster.alive()
        plane = {name: pid for name, pid in alive.items() if name in CONTROL_PLANE}
        kubelet = alive.get("kwok")
        cpu_before = cpu_seconds(proc.pid)
        plane_before = {name: cpu_seconds(pid) for name, pid in plane.items()}
        kubelet_before = cpu_seconds(kubelet) if kubelet else 0.0
        with churn if churn is not None else contextlib.nullcontext():
            started = time.monotonic()
            for d in range(4):
                apps.patch_namespaced_deployment_scale(f"web-{d}", "default", {"spec": {"replicas": per_deployment}})
            bound_at, created_at = watch_until_bound(core, pods, started, which)
        elapsed = bound_at - started
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        cpu = cpu_seconds(proc.pid) - cpu_before
        plane_cpu = {name: cpu_seconds(pid) - plane_before[name] for name, pid in plane.items()}
        kubelet_cpu = cpu_seconds(kubelet) - kubelet_before if kubelet else 0.0
        return {
            "scheduler": which,
            "nodes": nodes,
            "pods": pods,
            "existing_pods": existing,
            "qps": qps,
            "seconds": round(elapsed, 2),
            "all_created_s": round(created_at - started, 2),
            "cpu_s": round(cpu, 2),
            "cpu_ms_per_pod": round(cpu * 1000 / pods, 2),
            "pods_per_s": round(pods / elapsed, 1),
            # What the API server, etcd and the controller-manager spent meanwhile: on a shared
            # machine a contestant's requests and watches cost there too.
            "plane_cpu_ms_per_pod": {name: round(s * 1000 / pods, 2) for name, s in sorted(plane_cpu.items())},
            # kwok's leases, node statuses and pod lifecycles over the same time: the kubelets' share.
            "kwok_cpu_ms_per_pod": round(kubelet_cpu * 1000 / pods, 2),
            "kubelet": "kwok" if kwok else "none",
            "peak_rss_mb": round(peak_rss_mb(proc.pid), 1),
            "node_writes": churn.writes if churn is not None else 0,
            "node_write_errors": churn.errors if churn is not None else 0,
            "layout": "own-core" if contestant_cpus is not None else "shared",
        }
    finally:
        try:
            if proc is not None:
                stop_contestant(proc)
        finally:
            cluster.down(quiet=True)


def _print(row: dict[str, Any]) -> None:
    print(
        f"{row['nodes']:>6} {row['pods']:>6} {row['qps']:>6} {row['scheduler']:<22} {row['seconds']:>8} "
        f"{row['all_created_s']:>8} {row['pods_per_s']:>8} {row['cpu_ms_per_pod']:>7} {row['peak_rss_mb']:>7} "
        f"{sum(row.get('plane_cpu_ms_per_pod', {}).values()):>8.2f} {row.get('kwok_cpu_ms_per_pod', 0.0):>7.2f}",
        flush=True,
    )


def _ratios(medians: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Ours against each other contestant: pods/s (higher is better), CPU per pod and peak RSS (lower)."""
    ours = medians.get("spread-scheduler")
    out: dict[str, float] = {}
    if ours is None:
        return out
    for which, row in medians.items():
        if which == "spread-scheduler":
            continue
        out[f"pods_per_s ours/{which}"] = round(ours["pods_per_s"] / row["pods_per_s"], 2)
        if which != "null-binder":
            out[f"cpu_per_pod ours/{which}"] = round(ours["cpu_ms_per_pod"] / max(row["cpu_ms_per_pod"], 1e-9), 2)
            out[f"peak_rss ours/{which}"] = round(ours["peak_rss_mb"] / row["peak_rss_mb"], 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.e2e", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[500])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--qps", type=int, nargs="+", default=[5000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per contestant, alternated; rows are medians")
    parser.add_argument("--out", default="bench/results/e2e.json")
    parser.add_argument("--kube-version", default="1.35", help="the control plane's and kube-scheduler's minor")
    parser.add_argument(
        "--contestants",
        nargs="+",
        default=["kube-scheduler", "spread-scheduler", "null-binder"],
        help="kube-scheduler, kube-scheduler@N (GOMAXPROCS=N), spread-scheduler, null-binder",
    )
    parser.add_argument(
        "--existing-pods", type=int, default=0, help="pods already bound before the contestant starts (memory rows)"
    )
    parser.add_argument("--no-churn", action="store_true", help="no node status writes or label/taint changes")
    parser.add_argument(
        "--kubelet",
        choices=("kwok", "none"),
        default="kwok",
        help="kwok runs the nodes (Leases, statuses, pods Running); none: static node objects, pods stay Pending",
    )
    parser.add_argument("--profile", type=Path, help="py-spy our scheduler during each run; stacks go here")
    parser.add_argument(
        "--own-core",
        action="store_true",
        help="the control plane and this driver on the first CPU, the contestant on the others",
    )
    args = parser.parse_args()
    use_version(args.kube_version)
    contestant_cpus = None
    if args.own_core:
        plane_cpus, contestant_cpus = own_core_layout()
        os.sched_setaffinity(0, plane_cpus)  # before the control plane starts: its processes inherit it
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    print(
        f"{'nodes':>6} {'pods':>6} {'qps':>6} {'contestant':<22} {'seconds':>8} {'created':>8} {'pods/s':>8} "
        f"{'CPU ms/pod':>7} {'RSS MB':>7} {'plane ms':>8} {'kwok ms':>7}"
    )
    changes = None if args.no_churn else 1.0
    for nodes in args.nodes:
        for qps in args.qps:
            burst = qps if qps >= 1000 else qps * 2
            mine: dict[str, list[dict[str, Any]]] = {w: [] for w in args.contestants}
            for run in range(args.repeat):
                order = list(args.contestants)
                random.Random(run).shuffle(order)  # no contestant always runs first on a cold machine
                for w in order:
                    row = run_once(
                        w,
                        nodes,
                        args.pods,
                        qps,
                        burst,
                        args.profile,
                        changes,
                        args.existing_pods,
                        contestant_cpus,
                        kwok=args.kubelet == "kwok",
                    )
                    row["run"] = run
                    mine[w].append(row)
                    runs.append(row)
                    _print(row)
            medians = {w: median_row(mine[w]) for w in args.contestants}
            ratios = _ratios(medians)
            for w in args.contestants:
                rows.append(medians[w] | ({"ratios": ratios} if w == "spread-scheduler" else {}))
                _print(medians[w] | {"scheduler": f"{w} (median of {args.repeat})"})
            for name, value in ratios.items():
                print(f"{'':>21} {name} {value}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    out.with_name(out.stem + "-runs.json").write_text(json.dumps(runs, indent=2))
    return 0


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's own median over the runs (for an even count, the worse of the middle two).

    Not the run with the median time: its CPU and peak RSS were one run's, the best or the worst of
    three as it happened. pods/s stays the median time's (``median_low`` of a rate is ``median_high``
    of its time).
    """
    return {key: _median(key, [r[key] for r in rows]) for key in rows[0] if key != "run"} | {"runs": len(rows)}


def _median(key: str, values: list[Any]) -> Any:
    """One figure's median: per part for a mapping (the control plane's processes); labels as they are."""
    if isinstance(values[0], dict):
        return {part: _median(part, [v[part] for v in values]) for part in values[0]}
    if not isinstance(values[0], (int, float)) or isinstance(values[0], bool):
        return values[0]
    return (statistics.median_low if key == "pods_per_s" else statistics.median_high)(values)


if __name__ == "__main__":
    sys.exit(main())
