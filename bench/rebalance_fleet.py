"""The fleet scenarios of bench/rebalance_compare.py (``--replicas``; its docstring and docs/rebalance.md
say what they measure and why): one contestant per run, on a fresh cluster of ``--nodes`` kwok nodes in
zones a/b/c, ``--workloads`` Deployments of ``--replicas``; zone c lost and back; the measuring parts in
bench/fleet.py."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from bench.e2e import (
    cpu_seconds,
    scheduler_config,
    start_contestant,
    stop_contestant,
    watch_until_bound,
    web_deployment,
)
from bench.fleet import (
    ZONES,
    Fleet,
    HealthProbe,
    allowed_unavailable,
    fewest_evictions,
    follow,
    scrape,
    skew,
    slice_histogram,
    workload_budget,
)
from bench.rebalance_compare import KUBE_SCHEDULER_NAME, ROOT, medians, start_descheduler
from e2e.cluster import Cluster, free_port
from e2e.kube_helpers import create_node, create_object, wait_for
from e2e.ledger import lease_terms
from e2e.zone_loss import Zones, rebalance_workload

NAMESPACE = "fleet"
QUIET, BUSY = "burst-quiet", "burst-busy"  # the burst without rebalancing, and during it
BURST_DEPLOYMENTS = 4  # bench/e2e.py's four spread Deployments (web-0..3), scaled up on the clock
# contestant -> the scheduler that serves its pods
CONTESTANTS = {"alone": "kube-scheduler", "desched": "kube-scheduler", "spread": "spread-scheduler"}
NAMES = {
    "alone": "kube-scheduler alone",
    "desched": "kube-scheduler + descheduler",
    "spread": "spread-scheduler",
}
# 1,200 pods fit in two zones of 50 such nodes with room for the burst; kwok has no pod limit of its own
# (the kubelet's 110 is a kubelet flag), the API server none per node: status.allocatable.pods, which
# both schedulers' NodeResourcesFit counts, is the limit.
NODE_CAPACITY = {"cpu": "32", "pods": "256"}
LEASE = (15, 10, 2)  # leaseDuration, renewDeadline, retryPeriod: kube-scheduler's defaults, and ours
LEASE_NAMESPACE = "kube-system"


@dataclass(frozen=True, slots=True)
class Scenario:
    """One fleet scenario, the same for every contestant."""

    nodes: int
    workloads: int
    replicas: int
    pdb: int | str | None  # each workload's maxUnavailable; None: no PodDisruptionBudget
    burst: int  # pods of the unrelated burst (0: none)
    qps: int  # every contestant's client QPS and burst
    interval: int  # the descheduler's --descheduling-interval, s
    observe: float  # the most seconds watched after the zone's return
    burst_after: float  # the burst starts at the first eviction, or this many seconds after the return
    linger: float  # seconds watched after the last change before a run ends early

    @property
    def apps(self) -> list[str]:
        return [f"w{i:02d}" for i in range(self.workloads)]

    @property
    def label(self) -> str:
        budget = f"PDB maxUnavailable {self.pdb}" if self.pdb is not None else "no PDB"
        return f"{self.workloads} x {self.replicas} on {self.nodes} nodes, {budget}"

    @property
    def settle_timeout(self) -> float:
        return 120 + 0.5 * self.workloads * self.replicas


def fleet_specs(contestant: str, scenario: Scenario) -> dict[str, dict[str, Any]]:
    """The workloads, the same for every contestant but for who schedules them and the opt-in."""
    out = {}
    for app in scenario.apps:
        body = rebalance_workload(app, "main", 1, contestant == "spread", True, scenario.replicas)
        if CONTESTANTS[contestant] == "kube-scheduler":
            body["spec"]["template"]["spec"]["schedulerName"] = KUBE_SCHEDULER_NAME
        out[app] = body
    return out


def burst_deployment(d: int, served_by: str) -> dict[str, Any]:
    body = web_deployment(d)
    if served_by == "kube-scheduler":
        body["spec"]["template"]["spec"]["schedulerName"] = KUBE_SCHEDULER_NAME
    return body


def fleet_config(which: str, kubeconfig: Path, qps: int) -> dict[str, Any]:
    """bench/e2e.py's configuration with leader election on (the Lease's story is measured) at the
    shipped timings, each scheduler on a Lease of its own name."""
    cfg = scheduler_config(kubeconfig, qps, qps)
    if which == "kube-scheduler":
        cfg["profiles"][0]["schedulerName"] = KUBE_SCHEDULER_NAME
    duration, renew, retry = LEASE
    cfg["leaderElection"] = {
        "leaderElect": True,
        "leaseDuration": f"{duration}s",
        "renewDeadline": f"{renew}s",
        "retryPeriod": f"{retry}s",
        "resourceNamespace": LEASE_NAMESPACE,
        "resourceName": which,
    }
    return cfg


def burst(kubeconfig: Path, namespace: str, pods: int, which: str) -> dict[str, float]:
    """Scale the burst's Deployments (created at 0) and time it as bench/e2e.py does: from the first
    scale to the last pod bound, followed by one raw watch."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # a client of this thread's own
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    started = time.monotonic()
    for d in range(BURST_DEPLOYMENTS):
        apps.patch_namespaced_deployment_scale(f"web-{d}", namespace, {"spec": {"replicas": pods // BURST_DEPLOYMENTS}})
    bound_at, created_at = watch_until_bound(core, pods, started, which, namespace)
    return {
        "started": started,
        "ended": bound_at,
        "pods_per_s": round(pods / (bound_at - started), 1),
        "all_created_s": round(created_at - started, 2),
    }


def clear(core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str, timeout: float) -> None:
    """Delete the quiet burst and wait for its pods to be gone: the zone is lost on the same pods as before it."""
    apps.delete_collection_namespaced_deployment(namespace, propagation_policy="Background")
    wait_for(lambda: not core.list_namespaced_pod(namespace, limit=1).items, timeout, f"{namespace} empty", 1.0)


def run_once(contestant: str, scenario: Scenario, run: int) -> dict[str, Any]:
    cluster = Cluster(ROOT / ".cluster" / "rebalance-compare")
    cluster.down(quiet=True)  # every run starts from an empty etcd
    cluster.up()
    procs: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()
    watcher: threading.Thread | None = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        for namespace in (NAMESPACE, QUIET, BUSY):
            core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            cluster.wait_for_service_account(namespace)
        served_by = CONTESTANTS[contestant]
        port = free_port()
        login = cluster.user_kubeconfig(f"{contestant}-scheduler-{run}")
        cfg_path = cluster.dir / f"{served_by}-config.yaml"
        cfg_path.write_text(yaml.safe_dump(fleet_config(served_by, login, scenario.qps)))
        scheduler = start_contestant(served_by, cluster, cfg_path, scenario.qps, scenario.qps, port=port)
        procs.append(scheduler)
        descheduler = None
        if contestant == "desched":
            kubeconfig = cluster.user_kubeconfig(f"descheduler-{run}")
            fit = dict.fromkeys(scenario.apps, True)
            descheduler = start_descheduler(cluster, kubeconfig, scenario.interval, fit, scenario.qps)
            procs.append(descheduler)

        def make_node(name: str, **kwargs: Any) -> str:
            full = f"f-{name}"  # the same names every run: Zones.lost finds zone c's by "-main-"
            create_node(core, full, **kwargs)
            return full

        zones = Zones(
            api,
            core,
            NAMESPACE,
            make_node,
            tag="fleet",
            nodes_per_zone=scenario.nodes // 3,
            capacity=dict(NODE_CAPACITY),
            labels={"pool": "general"},  # the burst's node affinity
        )
        zones.create(fleet_specs(contestant, scenario))
        if scenario.pdb is not None:
            for app in scenario.apps:
                create_object(api, workload_budget(app, NAMESPACE, scenario.pdb))
        for namespace in (QUIET, BUSY):
            for d in range(BURST_DEPLOYMENTS):
                apps.create_namespaced_deployment(namespace, burst_deployment(d, served_by))
        fleet = Fleet(dict.fromkeys(scenario.apps, scenario.replicas), zones.zone_of)
        watch_core = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
        watcher = threading.Thread(target=follow, args=(watch_core, NAMESPACE, fleet, stop), daemon=True)
        watcher.start()
        wait_for(fleet.settled, scenario.settle_timeout, "every workload bound and Ready", interval=0.5)
        quiet = burst(cluster.kubeconfig, QUIET, scenario.burst, served_by) if scenario.burst else None
        clear(core, apps, QUIET, scenario.settle_timeout)
        zones.taint_zone_c()

        def failed_over() -> dict[str, dict[str, int]] | None:
            now = fleet.settled()
            return now if now is not None and all(c["c"] == 0 for c in now.values()) else None

        at_return = wait_for(failed_over, scenario.settle_timeout, "zone c's pods replaced in a and b", interval=0.5)
        row = observe_return(cluster, contestant, scenario, fleet, zones, port, scheduler, descheduler)
        summed = {z: sum(c[z] for c in at_return.values()) for z in ZONES}
        busy = row.pop("busy")
        return {
            "contestant": contestant,
            "scenario": scenario.label,
            "nodes": 3 * (scenario.nodes // 3),
            "workloads": scenario.workloads,
            "replicas": scenario.replicas,
            "pdb": None if scenario.pdb is None else str(scenario.pdb),
            "budget": None if scenario.pdb is None else allowed_unavailable(scenario.pdb, scenario.replicas),
            "at_return": summed,
            "minimum_evictions": fewest_evictions(at_return),
            **row,
            "burst_quiet_pods_per_s": quiet["pods_per_s"] if quiet else None,
            "burst_busy_pods_per_s": busy["pods_per_s"] if busy else None,
            "burst_ratio": round(busy["pods_per_s"] / quiet["pods_per_s"], 2) if busy and quiet else None,
        }
    finally:
        stop.set()
        if watcher is not None:
            watcher.join(timeout=30)
        for proc in reversed(procs):
            stop_contestant(proc)
        cluster.down(quiet=True)


def observe_return(
    cluster: Cluster,
    contestant: str,
    scenario: Scenario,
    fleet: Fleet,
    zones: Zones,
    port: int,
    scheduler: subprocess.Popen[bytes],
    descheduler: subprocess.Popen[bytes] | None,
) -> dict[str, Any]:
    """Bring zone c back and watch until everything is done (every workload within maxSkew, the burst
    bound, nothing changed for ``linger`` s; kube-scheduler alone never rebalances, so its run ends
    ``linger`` s after its burst) or ``observe`` s have passed."""
    ledger = cluster.ledger
    mark = ledger.mark()
    pids = {"scheduler": scheduler.pid} | ({"descheduler": descheduler.pid} if descheduler else {})
    cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    busy: Future[dict[str, float]] | None = None
    burst_at: float | None = None
    ours = CONTESTANTS[contestant] == "spread-scheduler"
    slices_before = scrape(port) if ours else ""  # the slices from the zone's return on
    with HealthProbe(port) as probe, ThreadPoolExecutor(max_workers=1) as pool:
        fleet.arm()
        returned, returned_at = time.monotonic(), datetime.now(UTC)  # the audit log's times are the server's
        zones.bring_back_zone_c()
        while (elapsed := time.monotonic() - returned) < scenario.observe:
            if (
                busy is None
                and scenario.burst
                and (fleet.first_disruption is not None or elapsed >= scenario.burst_after)
            ):
                burst_at = elapsed
                busy = pool.submit(burst, cluster.kubeconfig, BUSY, scenario.burst, CONTESTANTS[contestant])
            if _done(contestant, scenario, fleet, busy, returned, elapsed):
                break
            time.sleep(0.2)
        window = time.monotonic() - returned
        used = {name: round(cpu_seconds(pid) - cpu[name], 2) for name, pid in pids.items()}
        metrics = scrape(port) if ours else None
        health = probe.summary()
        busy_result = _result(busy)
    writes = ledger.writes(mark)
    evictions = [w for w in writes if w.kind == "eviction" and w.namespace == NAMESPACE]
    times = sorted(w.at for w in evictions if w.ok)
    terms = lease_terms(ledger.writes(), LEASE_NAMESPACE, CONTESTANTS[contestant], timedelta(seconds=LEASE[0]))
    final = fleet.counts()
    return {
        "within_max_skew_s": round(fleet.within_at, 1) if fleet.within_at is not None else None,
        "evictions_sent": len(evictions),
        "evictions_accepted": len(times),
        "evictions_refused_429": sum(1 for w in evictions if w.code == 429),
        "first_eviction_s": round((times[0] - returned_at).total_seconds(), 1) if times else None,
        "eviction_span_s": round((times[-1] - times[0]).total_seconds(), 1) if times else None,
        "peak_unavailable": max(fleet.peak.values()),
        "peak_unavailable_total": fleet.peak_total,
        "burst_started_s": round(burst_at, 1) if burst_at is not None else None,
        "window_s": round(window, 1),
        **{f"{name}_cpu_s": value for name, value in used.items()},
        **health,
        "lease_terms": len(terms),
        "lease_transitions": max(0, len(terms) - 1),
        "scheduler_exited": scheduler.poll() is not None,
        **(slice_histogram(metrics, slices_before) if metrics is not None else {}),
        "final": {z: sum(c[z] for c in final.values()) for z in ZONES},
        "final_max_skew": max(skew(c) for c in final.values()),
        "workloads_within_at_end": fleet.within(),
        "busy": busy_result,
    }


def _done(
    contestant: str,
    scenario: Scenario,
    fleet: Fleet,
    busy: Future[dict[str, float]] | None,
    returned: float,
    elapsed: float,
) -> bool:
    if scenario.burst and (busy is None or not busy.done()):
        return False
    if contestant != "alone" and fleet.within_at is None:
        return False
    ended = busy.result()["ended"] - returned if busy is not None and busy.exception() is None else None
    changes = [fleet.within_at, fleet.last_disruption, ended]
    return elapsed - max((t for t in changes if t is not None), default=0.0) >= scenario.linger


def _result(busy: Future[dict[str, float]] | None) -> dict[str, float] | None:
    """The burst's figures, or None: none ran, or it failed (logged: the row shows no pods/s)."""
    if busy is None:
        return None
    try:
        return busy.result(timeout=900)
    except Exception as exc:  # a failed burst is a missing figure, not a failed run
        print(f"the burst failed: {exc!r}", flush=True)
        return None


def _bound(most: float | None) -> str:
    return f"<= {most * 1000:g} ms" if most is not None else "> 1 s"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| contestant | scenario | back within maxSkew | evictions sent (accepted) / fewest | peak unavailable "
        "(budget) | burst pods/s during / without (ratio) | scheduler CPU s (window s) | /healthz failures "
        "(probes) | Lease transitions | planning slices: most, over 100 ms (wall; own CPU; GC pauses) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        # A run ends early once done (kube-scheduler alone: after its burst): "not in" its own window.
        within = row["within_max_skew_s"]
        took = f"{within} s" if within is not None else f"not in {row['window_s']} s"
        budget = f" ({row['budget']})" if row["budget"] is not None else ""
        busy, quiet, ratio = row["burst_busy_pods_per_s"], row["burst_quiet_pods_per_s"], row["burst_ratio"]
        cpu = f"{row['scheduler_cpu_s']}" + (f" + {row['descheduler_cpu_s']}" if "descheduler_cpu_s" in row else "")
        slices = "-"
        if "plan_slices" in row:
            slices = f"{row['plan_slices']}: {_bound(row['plan_slice_max_le_s'])}, {row['plan_slices_over_100ms']}"
            if "plan_slice_cpu_max_le_s" in row:  # runs from before the CPU histogram have the wall time only
                slices += (
                    f"; own CPU {_bound(row['plan_slice_cpu_max_le_s'])}, {row['plan_slices_cpu_over_100ms']}"
                    f"; GC {row['gc_pause_s']} s"
                )
        lines.append(
            f"| {NAMES[row['contestant']]} | {row['scenario']} | {took} "
            f"| {row['evictions_sent']} ({row['evictions_accepted']}) / {row['minimum_evictions']} "
            f"| {row['peak_unavailable']}{budget} | {busy} / {quiet} ({ratio}) | {cpu} ({row['window_s']}) "
            f"| {row['healthz_failures']} ({row['healthz_probes']}) | {row['lease_transitions']} | {slices} |"
        )
    return "\n".join(lines)


def default_out(scenario: Scenario) -> Path:
    budget = f"-pdb{str(scenario.pdb).replace('%', 'pct')}" if scenario.pdb is not None else ""
    return Path(
        f"bench/results/rebalance-fleet-{scenario.workloads}x{scenario.replicas}-{scenario.nodes}n{budget}.json"
    )


def main(scenario: Scenario, contestants: list[str], repeat: int, out: Path | None) -> int:
    """Every contestant once per repeat, in an order shuffled per repeat (none always runs first on a
    cold machine); rows are each figure's median over the repeats."""
    runs: list[dict[str, Any]] = []
    for run in range(repeat):
        order = list(contestants)
        random.Random(run).shuffle(order)
        for contestant in order:
            runs.append(run_once(contestant, scenario, run) | {"run": run})
            print(json.dumps(runs[-1]), flush=True)
    rows = [medians([r for r in runs if r["contestant"] == c]) for c in contestants]
    print(table(rows))
    path = out or default_out(scenario)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=2) + "\n")
    path.with_name(path.stem + "-runs.json").write_text(json.dumps(runs, indent=2) + "\n")
    return 0
