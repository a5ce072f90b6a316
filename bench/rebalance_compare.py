"""Rebalancing after a zone's return, measured: kube-scheduler alone, kube-scheduler with the
descheduler, and spread-scheduler's rebalancing controller, on the local control plane with kwok.

    .venv/bin/python -m bench.rebalance_compare --repeat 3

Each repeat starts a fresh cluster and runs every contestant at once, on one clock, in one namespace
(the setup of e2e/test_rebalance.py, e2e/zone_loss.py: ``Zones``, ``rebalance_workload``): six kwok nodes
in zones a/b/c shared by Deployments of 12 with a zone spread (maxSkew 1, ``nodeTaintsPolicy: Honor``), each
counting only its own pods (``app`` label):

- ``alone``: served by kube-scheduler; nothing evicts;
- ``desched``: served by kube-scheduler; the descheduler's ``RemovePodsViolatingTopologySpreadConstraint``
  runs every ``--interval`` seconds, limited to the ``desched*`` pods by its ``labelSelector``;
- ``spread``: served by spread-scheduler (rebalancing on by default), opted in by its annotation;
- ``desched-soft``, ``spread-soft``: the same two with ``whenUnsatisfiable: ScheduleAnyway``.

Zone c is lost (a NoExecute taint on its nodes: replacements land in a and b, 6/6/0), then comes back;
the clock starts there and runs ``--observe`` seconds. Beside them, the untolerated-taint case, on two
nodes of their own (zones a and b, 6/6) with the spread's default ``nodeTaintsPolicy: Ignore``:
``desched-tainted``, ``spread-tainted`` and ``desched-nofit-tainted`` (the descheduler with
``topologyBalanceNodeFit: false``). Their zone c joins at the same moment with a NoSchedule taint the
pods do not tolerate: under Ignore it is a domain (skew 6) that no replacement can reach, so every
eviction there is for nothing (and the evicted pod's replacement stays Pending).

Evictions are counted from the API server's audit log (e2e/ledger.py), by the user each process logs
in as. An eviction "did not lower the skew" when its replacement did not end in zone c (from 6/6/0 or
6/6 + an empty c, a move into c is the only one that lowers the skew): accepted evictions minus the
pods in zone c at the end. Writes bench/results/rebalance-compare.json (medians) and
rebalance-compare-runs.json (every run).

Fleet scale (issue #48), with ``--replicas`` (bench/rebalance_fleet.py; docs/rebalance.md says why):

    .venv/bin/python -m bench.rebalance_compare --replicas 300 --repeat 3
    .venv/bin/python -m bench.rebalance_compare --replicas 1200 --observe 3600 --repeat 3
    .venv/bin/python -m bench.rebalance_compare --workloads 50 --replicas 30 --repeat 3
    .venv/bin/python -m bench.rebalance_compare --workloads 50 --replicas 30 --pdb 10% --repeat 3
    .venv/bin/python -m bench.rebalance_compare --replicas 30 --nodes 15 --burst 100 --repeat 1   # a smoke

``--nodes`` kwok nodes (150) in zones a/b/c, 32 cpu and 256 pods each; ``--workloads`` Deployments (1) of
``--replicas`` with the hard zone spread above; ``--pdb`` a PodDisruptionBudget per workload
(``maxUnavailable``: ``10%`` or a count; none without it). One contestant per run, each on a fresh
cluster with the same nodes, workloads and steps, its order shuffled per repeat: ``alone``
(kube-scheduler), ``desched`` (kube-scheduler and the descheduler over the workloads) and ``spread``
(ours, opted in); ``--contestants`` picks some. Every scheduler runs with leader election at the
shipped timings and the client QPS and burst ``--qps`` (5000, the descheduler too). A burst of ``--burst``
unrelated pods (bench/e2e.py's four spread Deployments, 1000) is timed once with nothing to rebalance,
then again from the first eviction after the zone's return (or ``--burst-after`` s, 10). The run ends
``--linger`` s (15) after the last change once every workload is within maxSkew and the burst is bound
(kube-scheduler alone: after its burst), or at ``--observe`` s (600). Columns: time back within maxSkew,
evictions (the audit log) against the fewest that could do it, peak pods unavailable (from the pod
watch's events) against the budget, the burst's pods/s during and without rebalancing, the
scheduler's CPU (/proc) over the run, ``/healthz`` failures (probed every second, 1 s timeout), the
Lease's transitions (the audit log), and our planning slices (/metrics). Writes
bench/results/rebalance-fleet-<workloads>x<replicas>-<nodes>n[-pdb...].json and its -runs.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from bench.e2e import scheduler_config, start_contestant, stop_contestant
from bench.fleet import parse_max_unavailable
from e2e.build import ensure_descheduler
from e2e.cluster import Cluster
from e2e.kube_helpers import ZONE, create_node, is_ready
from e2e.zone_loss import REPLICAS, Zones, minimum_moves, rebalance_workload

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "compare"
KUBE_SCHEDULER_NAME = "default-scheduler"  # the pods that name no scheduler
SIDE_TAINT = "bench.spread-scheduler.io/side-c"
DEFAULT_OUT = "bench/results/rebalance-compare.json"

# app -> (served by, node set, opted in to our rebalancing, nodeTaintsPolicy Honor)
SCENARIOS: dict[str, tuple[str, str, bool, bool]] = {
    "alone": ("kube-scheduler", "main", False, True),
    "desched": ("kube-scheduler", "main", False, True),
    "spread": ("spread-scheduler", "main", True, True),
    "desched-soft": ("kube-scheduler", "main", False, True),
    "spread-soft": ("spread-scheduler", "main", True, True),
    "desched-tainted": ("kube-scheduler", "side", False, False),
    "spread-tainted": ("spread-scheduler", "side", True, False),
    "desched-nofit-tainted": ("kube-scheduler", "side", False, False),
}
# The descheduled apps -> its topologyBalanceNodeFit: the default (true), and off for one, to show what
# that check is worth when the emptier zone cannot take the replacement.
DESCHEDULED = {"desched": True, "desched-soft": True, "desched-tainted": True, "desched-nofit-tainted": False}
SOFT = ("desched-soft", "spread-soft")  # whenUnsatisfiable: ScheduleAnyway: the Score, not the Filter, decides


def descheduler_policy(node_fit: dict[str, bool]) -> dict[str, Any]:
    """DeschedulerPolicy v1alpha2 with the topology spread plugin alone, as upstream's README spells
    it (``constraints``: both kinds), one profile per ``topologyBalanceNodeFit`` value, each limited by
    its ``labelSelector`` to its apps so the other contestants' pods are never touched."""
    profiles = []
    for fit in sorted(set(node_fit.values()), reverse=True):
        apps = sorted(app for app, f in node_fit.items() if f == fit)
        args: dict[str, Any] = {
            "constraints": ["DoNotSchedule", "ScheduleAnyway"],
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": apps}]},
        }
        if not fit:
            args["topologyBalanceNodeFit"] = False
        profiles.append(
            {
                "name": "topology-spread" if fit else "topology-spread-no-node-fit",
                "pluginConfig": [
                    {"name": "DefaultEvictor"},
                    {"name": "RemovePodsViolatingTopologySpreadConstraint", "args": args},
                ],
                "plugins": {"balance": {"enabled": ["RemovePodsViolatingTopologySpreadConstraint"]}},
            }
        )
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": profiles}


def start_descheduler(
    cluster: Cluster, kubeconfig: Path, interval: int, node_fit: dict[str, bool] | None = None, qps: int = 0
) -> subprocess.Popen[bytes]:
    """The descheduler in a loop, as its Deployment runs it (``--descheduling-interval``), over the
    apps of ``node_fit`` (``DESCHEDULED``); ``qps``: its client's QPS and burst (0: its defaults)."""
    policy = cluster.dir / "descheduler-policy.yaml"
    policy.write_text(yaml.safe_dump(descheduler_policy(DESCHEDULED if node_fit is None else node_fit)))
    log = cluster.dir / "descheduler.log"
    limits = [f"--client-connection-qps={qps}", f"--client-connection-burst={qps}"] if qps else []
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(ensure_descheduler()),
                f"--client-connection-kubeconfig={kubeconfig}",
                f"--policy-config-file={policy}",
                f"--descheduling-interval={interval}s",
                "--secure-port=0",  # no metrics server: nothing here scrapes it
                "--v=3",
                *limits,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    time.sleep(2)
    if proc.poll() is not None:
        raise RuntimeError(f"the descheduler exited {proc.returncode}: {log.read_text()[-3000:]}")
    return proc


def specs() -> dict[str, dict[str, Any]]:
    out = {}
    for app, (served_by, node_set, opt_in, honor) in SCENARIOS.items():
        body = rebalance_workload(app, node_set, 1, opt_in, honor)
        if served_by == "kube-scheduler":
            body["spec"]["template"]["spec"]["schedulerName"] = KUBE_SCHEDULER_NAME
        if app in SOFT:
            body["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"
        out[app] = body
    return out


def zone_counts(zones: Zones, app: str) -> tuple[dict[str, int], int, int]:
    """The app's live pods bound per zone (a/b/c), how many are not bound, how many bound are not Ready."""
    pods = zones.core.list_namespaced_pod(zones.namespace, label_selector=f"app={app}").items
    live = [p for p in pods if p.metadata.deletion_timestamp is None]
    bound = [p for p in live if p.spec.node_name]
    counts = collections.Counter(zones.zone_of[p.spec.node_name] for p in bound)
    return {z: counts.get(z, 0) for z in "abc"}, len(live) - len(bound), sum(1 for p in bound if not is_ready(p))


def skew(counts: dict[str, int]) -> int:
    """max - min over zones a, b and c: the domains of every scenario once zone c is back (under
    Honor the tainted scenarios' c would not count, but those run under Ignore)."""
    return max(counts.values()) - min(counts.values())


def run_once(run: int, observe: float, interval: int) -> dict[str, dict[str, Any]]:
    cluster = Cluster(ROOT / ".cluster" / "rebalance-compare")
    cluster.down(quiet=True)  # every run starts from an empty etcd
    cluster.up()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        users = {w: f"{w}-bench-{run}" for w in ("kube-scheduler", "spread-scheduler", "descheduler")}
        logins = {w: cluster.user_kubeconfig(user) for w, user in users.items()}
        for which in ("kube-scheduler", "spread-scheduler"):
            cfg = scheduler_config(logins[which], 50, 100)
            if which == "kube-scheduler":
                cfg["profiles"][0]["schedulerName"] = KUBE_SCHEDULER_NAME
            cfg_path = cluster.dir / f"{which}-config.yaml"
            cfg_path.write_text(yaml.safe_dump(cfg))
            procs.append(start_contestant(which, cluster, cfg_path, 50, 100))
        procs.append(start_descheduler(cluster, logins["descheduler"], interval))

        def make_node(name: str, **kwargs: Any) -> str:
            full = f"r{run}-{name}"  # Zones.lost finds zone c's main nodes by "-main-"
            create_node(core, full, **kwargs)
            return full

        zones = Zones(api, core, NAMESPACE, make_node)
        zones.create(specs())
        ledger = cluster.ledger
        during = zones.lose_zone_c()
        for app in SCENARIOS:
            if app not in SOFT and during[app] != {"a": 6, "b": 6, "c": 0}:  # the hard spread over a and b only
                raise RuntimeError(f"{app} before zone c's return: {during[app]}, expected 6/6/0")
        mark = ledger.mark()
        returned = time.monotonic()
        returned_at = datetime.now(UTC)  # the API server's clock too: the audit log's times are on it
        zones.bring_back_zone_c()
        side_c = make_node(
            "side-c",
            labels={ZONE: f"{zones.tag}-side-c", "rebalance-set": "side"},
            cpu="16",
            taints=[{"key": SIDE_TAINT, "effect": "NoSchedule"}],
        )
        zones.zone_of[side_c] = "c"
        return observe_return(zones, (returned, returned_at), observe, lambda: ledger.writes(mark), users, during)
    finally:
        for proc in reversed(procs):
            stop_contestant(proc)
        cluster.down(quiet=True)


def observe_return(
    zones: Zones,
    clock: tuple[float, datetime],
    observe: float,
    writes: Callable[[], list[Any]],
    users: dict[str, str],
    during: dict[str, dict[str, int]],
) -> dict[str, dict[str, Any]]:
    """Look at every app once a second for ``observe`` seconds after the zone's return (``clock``:
    then, monotonic and wall)."""
    returned, returned_at = clock
    within: dict[str, float | None] = dict.fromkeys(SCENARIOS)
    best = {app: skew(during[app] | {"c": 0}) for app in SCENARIOS}
    while (elapsed := time.monotonic() - returned) < observe:
        for app in SCENARIOS:
            counts, pending, unready = zone_counts(zones, app)
            if pending or unready or sum(counts.values()) != REPLICAS:
                continue  # pods evicted and not replaced lower the count, not the skew: not counted
            best[app] = min(best[app], skew(counts))
            if within[app] is None and skew(counts) <= 1:
                within[app] = round(elapsed, 1)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - returned - elapsed)))
    evictions = [w for w in writes() if w.kind == "eviction" and w.namespace == zones.namespace]
    rows = {}
    for app in SCENARIOS:
        counts, pending, unready = zone_counts(zones, app)
        mine = [w for w in evictions if w.name.rsplit("-", 2)[0] == app]  # Deployment-ReplicaSet hash-pod hash
        who = collections.Counter(w.user for w in mine)
        accepted = sum(1 for w in mine if w.ok)
        times = sorted(w.at for w in mine if w.ok)
        rows[app] = {
            "scenario": app,
            "within_max_skew_s": within[app],
            "evictions_sent": len(mine),
            "evictions_accepted": accepted,
            "evictions_not_lowering_skew": max(0, accepted - counts["c"]),
            # How the evictions were spread: all in one pass, or one at a time.
            "first_eviction_s": round((times[0] - returned_at).total_seconds(), 1) if times else None,
            "eviction_span_s": round((times[-1] - times[0]).total_seconds(), 1) if times else None,
            "minimum_evictions": minimum_moves(list(during[app].values())) if SCENARIOS[app][3] else 0,
            "at_return": during[app],
            "skew_at_return": skew(during[app] | {"c": 0}),
            "best_skew": best[app],  # with all 12 bound and Ready
            "final_skew": skew(counts),
            "final": counts,
            "final_pending": pending,
            "evicted_by": {next((w for w, u in users.items() if u == user), user): n for user, n in who.items()},
        }
    return rows


def _median(values: list[Any]) -> Any:
    if any(v is None for v in values):  # "not within": a run that never got there counts as the worst
        middle = statistics.median_high([float("inf") if v is None else v for v in values])
        return None if middle == float("inf") else middle
    if isinstance(values[0], dict):
        return {k: _median([v[k] for v in values]) for k in values[0]}
    if isinstance(values[0], (int, float)):
        return statistics.median_high(values)
    return values[0]


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in runs[0] if k not in ("run", "evicted_by")]
    return {k: _median([r[k] for r in runs]) for k in keys} | {"runs": len(runs)}


def table(rows: list[dict[str, Any]], observe: float) -> str:
    lines = [
        "| contestant | scenario | within maxSkew after the zone's return | evictions sent (accepted) "
        "| first eviction, span | not lowering the skew | best / final skew | final a/b/c (+pending) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "alone": ("kube-scheduler alone", "zone lost, back"),
        "desched": ("kube-scheduler + descheduler", "zone lost, back"),
        "spread": ("spread-scheduler", "zone lost, back"),
        "desched-soft": ("kube-scheduler + descheduler", "the same, ScheduleAnyway"),
        "spread-soft": ("spread-scheduler", "the same, ScheduleAnyway"),
        "desched-tainted": ("kube-scheduler + descheduler", "zone c back with an untolerated taint"),
        "spread-tainted": ("spread-scheduler", "zone c back with an untolerated taint"),
        "desched-nofit-tainted": (
            "kube-scheduler + descheduler, topologyBalanceNodeFit: false",
            "zone c back with an untolerated taint",
        ),
    }
    for row in rows:
        who, what = names[row["scenario"]]
        took = f"{row['within_max_skew_s']} s" if row["within_max_skew_s"] is not None else f"not in {observe:.0f} s"
        final = row["final"]
        first, span = row.get("first_eviction_s"), row.get("eviction_span_s")
        when = f"{first} s, {span} s" if first is not None else "-"
        pending = f" (+{row['final_pending']})" if row["final_pending"] else ""
        lines.append(
            f"| {who} | {what} | {took} | {row['evictions_sent']} ({row['evictions_accepted']}) "
            f"| {when} | {row['evictions_not_lowering_skew']} | {row['best_skew']} / {row['final_skew']} "
            f"| {final['a']}/{final['b']}/{final['c']}{pending} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.rebalance_compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=3, help="fresh clusters; rows are medians")
    parser.add_argument(
        "--observe", type=float, help="seconds watched after the zone's return (default 180; fleet: 600, at most)"
    )
    parser.add_argument("--interval", type=int, default=10, help="the descheduler's --descheduling-interval, s")
    parser.add_argument("--out", help="default bench/results/rebalance-compare.json (fleet: rebalance-fleet-...)")
    fleet = parser.add_argument_group("fleet scenarios (with --replicas: one contestant per run)")
    fleet.add_argument("--replicas", type=int, help="pods per workload: the fleet scenarios instead of the six nodes")
    fleet.add_argument("--workloads", type=int, help="Deployments at once (default 1)")
    fleet.add_argument("--nodes", type=int, help="kwok nodes, a third per zone (default 150)")
    fleet.add_argument(
        "--pdb", type=_max_unavailable, help="a PodDisruptionBudget per workload: maxUnavailable 10%%, 3"
    )
    fleet.add_argument("--burst", type=int, help="pods of the unrelated burst, a multiple of 4; 0: none (default 1000)")
    fleet.add_argument("--contestants", nargs="+", choices=("alone", "desched", "spread"), help="default: all three")
    fleet.add_argument("--qps", type=int, help="every contestant's client QPS and burst (default 5000)")
    fleet.add_argument("--burst-after", type=float, help="s after the return, without an eviction by then (default 10)")
    fleet.add_argument("--linger", type=float, help="s without a change before a finished run ends (default 15)")
    args = parser.parse_args()
    fleet_only = ("workloads", "nodes", "pdb", "burst", "contestants", "qps", "burst_after", "linger")
    if args.replicas is None:
        if given := [f"--{k.replace('_', '-')}" for k in fleet_only if getattr(args, k) is not None]:
            parser.error(f"{', '.join(given)}: only with --replicas")
        return main_six_nodes(args.repeat, args.observe or 180.0, args.interval, Path(args.out or DEFAULT_OUT))
    from bench import rebalance_fleet  # noqa: PLC0415 - it builds on this module (the descheduler, medians)

    scenario = rebalance_fleet.Scenario(
        nodes=args.nodes or 150,
        workloads=args.workloads or 1,
        replicas=args.replicas,
        pdb=args.pdb,
        burst=1000 if args.burst is None else args.burst,
        qps=args.qps or 5000,
        interval=args.interval,
        observe=args.observe or 600.0,
        burst_after=10.0 if args.burst_after is None else args.burst_after,
        linger=15.0 if args.linger is None else args.linger,
    )
    if scenario.nodes < 3 or scenario.replicas < 1 or scenario.workloads < 1:
        parser.error("--nodes 3 or more, --replicas and --workloads 1 or more")
    if scenario.burst % 4:
        parser.error(f"--burst {scenario.burst}: a multiple of 4 (four Deployments)")
    ensure_descheduler()  # built (or found cached) before any clock runs
    contestants = args.contestants or list(rebalance_fleet.CONTESTANTS)
    return rebalance_fleet.main(scenario, contestants, args.repeat, Path(args.out) if args.out else None)


def _max_unavailable(text: str) -> int | str:
    try:
        return parse_max_unavailable(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main_six_nodes(repeat: int, observe: float, interval: int, out: Path) -> int:
    ensure_descheduler()  # built (or found cached) before any clock runs
    runs: list[dict[str, Any]] = []
    for run in range(repeat):
        for row in run_once(run, observe, interval).values():
            runs.append(row | {"run": run})
            print(json.dumps(runs[-1]), flush=True)
    rows = [medians([r for r in runs if r["scenario"] == app]) for app in SCENARIOS]
    print(table(rows, observe))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    out.with_name(out.stem + "-runs.json").write_text(json.dumps(runs, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
