"""Issue #7, load: thousands of pending pods over hundreds of nodes, a fifth of them infeasible.

Throughout: ``/healthz`` answers over HTTPS within 1 s (polled every 0.25 s; p50/p99 recorded), every
feasible pod is bound, every infeasible one carries PodScheduled=False and a FailedScheduling Event
(retries with the message last posted post nothing new). The scheduler's peak RSS stays under the memory
limit manifests/deployment.yaml gives it, every hard-spread ReplicaSet holds its maxSkew over the zones,
and the API server's audit log shows one Binding request per bound pod and none without the Lease.
Sizes: SPREAD_E2E_LOAD_PODS and SPREAD_E2E_LOAD_NODES (CI 1,000 over 200; ``make reliability`` 10,000 over 2,000).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.conftest import LOGS, SchedulerProcess, session_counts
from e2e.kube_helpers import ZONE, pod_body, wait_for
from e2e.ledger import Ledger
from scheduler.api.quantity import parse_quantity

PODS = int(os.environ.get("SPREAD_E2E_LOAD_PODS", "1000"))
NODES = int(os.environ.get("SPREAD_E2E_LOAD_NODES", "200"))
REPLICA_SETS = 10  # 8 feasible (zone spread, soft and hard), 2 infeasible (a pool no node has)
INFEASIBLE = ("stuck-0", "stuck-1")
MAX_SKEW = 5
DEPLOYMENT = Path(__file__).resolve().parent.parent / "manifests" / "deployment.yaml"


def memory_limit_mib() -> float:
    """The scheduler container's ``resources.limits.memory`` in the shipped Deployment, in MiB."""
    for doc in yaml.safe_load_all(DEPLOYMENT.read_text()):
        if doc and doc.get("kind") == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            return float(parse_quantity(container["resources"]["limits"]["memory"])) / 2**20
    raise AssertionError(f"no Deployment in {DEPLOYMENT}")


PROBE = """
import json, ssl, sys, time, urllib.request
from pathlib import Path
address, out, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
tls = ssl.create_default_context()
tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE  # as a kubelet's HTTPS probe: no verification
latencies, failures = [], []
while not stop.exists():
    started = time.monotonic()
    try:  # a new connection (and TLS handshake) each time, as the kubelet probes
        with urllib.request.urlopen(f"https://{address}/healthz", timeout=1.0, context=tls) as response:
            if response.status != 200:
                failures.append(f"HTTP {response.status}")
    except Exception as exc:  # a timeout is exactly what this probe exists to catch
        failures.append(repr(exc))
    latencies.append(time.monotonic() - started)
    time.sleep(0.25)
latencies.sort()
at = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0.0
out.write_text(json.dumps({"slowest": at(1.0), "p50": at(0.5), "p99": at(0.99), "failures": failures,
                           "probes": len(latencies)}))
"""


class HealthProbe:
    """Polls /healthz like a kubelet would (timeout 1 s) from its own process: a thread of the test
    would wait for the GIL while the test parses its own 10,000-pod lists, and blame the scheduler."""

    def __init__(self, address: str, workdir: Path) -> None:
        self.out, self.stop_file = workdir / "probe.json", workdir / "probe.stop"
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, address, str(self.out), str(self.stop_file)])

    def finish(self) -> dict[str, Any]:
        self.stop_file.touch()
        self.proc.wait(timeout=30)
        result: dict[str, Any] = json.loads(self.out.read_text())
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def health_probe(scheduler: SchedulerProcess, tmp_path: Path) -> Iterator[Callable[[], HealthProbe]]:
    """Starts the probe when the test asks, and stops it however the test ends: a probe left running
    by a failed wait, its Popen collected during a later test, warns (ResourceWarning) and fails that
    test instead of this one."""
    started: list[HealthProbe] = []

    def start() -> HealthProbe:
        started.append(HealthProbe(scheduler.address, tmp_path))
        return started[-1]

    yield start
    for probe in started:
        probe.close()


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _replica_set(name: str, replicas: int, spec: dict[str, Any]) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_body("x", labels, **spec)["spec"]},
        },
    }


def _spec(name: str, index: int) -> dict[str, Any]:
    if name in INFEASIBLE:
        return {"nodeSelector": {"pool": "does-not-exist"}}
    when = "DoNotSchedule" if index % 2 else "ScheduleAnyway"
    selector = {"matchLabels": {"app": name}}
    spread = {"maxSkew": MAX_SKEW, "topologyKey": ZONE, "whenUnsatisfiable": when, "labelSelector": selector}
    return {"topologySpreadConstraints": [spread]}


def _zone_skews(core: client.CoreV1Api, namespace: str, zone_of: dict[str, str], names: list[str]) -> dict[str, int]:
    """Per ReplicaSet: the most pods in a zone minus the fewest (zones without a pod count 0)."""
    response = core.list_namespaced_pod(namespace, _preload_content=False)
    per_zone: dict[str, dict[str, int]] = {name: dict.fromkeys(set(zone_of.values()), 0) for name in names}
    for pod in json.loads(response.data)["items"]:
        app, node = (pod["metadata"].get("labels") or {}).get("app"), pod["spec"].get("nodeName")
        if app in per_zone and node:
            per_zone[app][zone_of[node]] += 1
    return {name: max(zones.values()) - min(zones.values()) for name, zones in per_zone.items()}


def _count(core: client.CoreV1Api, namespace: str) -> tuple[int, int, int]:
    """(pods, bound, refused with PodScheduled=False); raw JSON: typed models of 10,000 pods cost seconds."""
    response = core.list_namespaced_pod(namespace, _preload_content=False)
    pods = json.loads(response.data)["items"]
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    refused = sum(
        1
        for p in pods
        if not p["spec"].get("nodeName")
        and any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in (p.get("status") or {}).get("conditions") or []
        )
    )
    return len(pods), bound, refused


def _unsettled(core: client.CoreV1Api, namespace: str) -> dict[str, Any]:
    """For a timed-out wait: the unbound pods per ReplicaSet, and a few of them with their PodScheduled."""
    response = core.list_namespaced_pod(namespace, _preload_content=False)
    unbound = [p for p in json.loads(response.data)["items"] if not p["spec"].get("nodeName")]
    per_set: dict[str, int] = {}
    for pod in unbound:
        app = (pod["metadata"].get("labels") or {}).get("app", "")
        per_set[app] = per_set.get(app, 0) + 1
    conditions = {
        p["metadata"]["name"]: [
            c for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"
        ]
        for p in unbound
        if not (p["metadata"].get("labels") or {}).get("app", "").startswith("stuck-")
    }
    return {"unbound_per_set": per_set, "feasible_unbound": dict(list(conditions.items())[:5])}


def _message_changes(log: str) -> dict[str, int]:
    """Per pod, how many times the message of its failed attempts changed (the first one counts), from
    the scheduler's log: upstream's line "Unable to schedule pod; no fit; waiting" with its err."""
    last: dict[str, str] = {}
    changes: dict[str, int] = {}
    for line in log.splitlines():
        if '"Unable to schedule pod; no fit; waiting"' not in line:
            continue
        entry = json.loads(line)
        pod, message = entry["pod"]["name"], entry["err"]
        if last.get(pod) != message:
            last[pod] = message
            changes[pod] = changes.get(pod, 0) + 1
    return changes


def _queue_incoming(scheduler: SchedulerProcess) -> dict[str, float]:
    """``scheduler_queue_incoming_pods_total`` by its labels, when the scheduler still answers."""
    try:
        metrics = scheduler.metrics()
    except Exception as exc:  # a scheduler that exited: the report says so instead
        return {"unavailable": 0.0, repr(exc)[:200]: 0.0}
    prefix = "scheduler_queue_incoming_pods_total{"
    return {name[len(prefix) - 1 :]: value for name, value in metrics.items() if name.startswith(prefix)}


def _failed_scheduling_per_pod(api: client.ApiClient, namespace: str) -> dict[str, list[str]]:
    """The notes of the FailedScheduling events recorded so far, per pod they regard, in the order of
    their eventTime (microseconds)."""
    response = client.EventsV1Api(api).list_namespaced_event(namespace, _preload_content=False)
    per_pod: dict[str, list[tuple[str, str]]] = {}
    for event in json.loads(response.data)["items"]:
        if event.get("reason") == "FailedScheduling":
            pod = (event.get("regarding") or {}).get("name", "")
            per_pod.setdefault(pod, []).append((event.get("eventTime") or "", event.get("note", "")))
    return {pod: [note for _, note in sorted(notes)] for pod, notes in per_pod.items()}


@pytest.mark.timeout(300 + PODS // 10)
def test_thousands_of_pending_pods(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
    health_probe: Callable[[], HealthProbe],
    ledger: Ledger,
) -> None:
    mark = ledger.mark()
    zones = ("zone-a", "zone-b", "zone-c", "zone-d")
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda i: nodes(f"load-{i:05d}", labels={ZONE: zones[i % len(zones)]}), range(NODES)))
    zone_of = {name: zones[i % len(zones)] for i, name in enumerate(made)}
    probe = health_probe()
    started = time.monotonic()
    apps = client.AppsV1Api(api)
    per_set = PODS // REPLICA_SETS
    names = [f"feasible-{i}" for i in range(REPLICA_SETS - len(INFEASIBLE))] + list(INFEASIBLE)
    for i, name in enumerate(names):
        apps.create_namespaced_replica_set(namespace, _replica_set(name, per_set, _spec(name, i)))
    infeasible = per_set * len(INFEASIBLE)
    feasible = per_set * REPLICA_SETS - infeasible

    last: list[tuple[int, int, int]] = []

    def settled() -> tuple[int, int, int] | None:
        last[:] = [_count(core, namespace)]
        return last[0] if last[0] == (per_set * REPLICA_SETS, feasible, infeasible) else None

    # Each poll makes the API server serialize every pod: not more often than needed, on a 2-core machine.
    try:
        wait_for(settled, 60 + PODS * 0.12, f"{feasible} pods bound and {infeasible} refused", interval=5.0)
    except AssertionError as timed_out:
        unsettled = _unsettled(core, namespace)
        alive = scheduler.proc is not None and scheduler.proc.poll() is None
        raise AssertionError(
            f"{timed_out}; (pods, bound, refused) {last}; not yet either: {unsettled}; scheduler running: {alive}"
        ) from None
    elapsed = time.monotonic() - started
    health = probe.finish()
    assert scheduler.proc is not None
    rss = _peak_rss_mib(scheduler.proc.pid)
    limit = memory_limit_mib()
    hard = [name for i, name in enumerate(names) if name not in INFEASIBLE and i % 2]
    skews = _zone_skews(core, namespace, zone_of, hard)
    counts = session_counts(ledger, mark, namespace, scheduler.users)

    # Events have a rate limit of their own (as kube-scheduler's event client): at 10,000 pods they
    # run seconds behind the pods' conditions, so wait until every refused pod has one (or the time is up).
    deadline = time.monotonic() + 120
    per_pod = _failed_scheduling_per_pod(api, namespace)
    while len(per_pod) < infeasible and time.monotonic() < deadline:
        time.sleep(5.0)  # the assertion below says what is missing
        per_pod = _failed_scheduling_per_pod(api, namespace)
    report = {
        "pods": PODS,
        "nodes": NODES,
        "feasible_bound": feasible,
        "infeasible_refused": infeasible,
        "seconds": round(elapsed, 1),
        "healthz_probes": health["probes"],
        "healthz_p50_seconds": round(health["p50"], 4),
        "healthz_p99_seconds": round(health["p99"], 4),
        "healthz_slowest_seconds": round(health["slowest"], 3),
        "peak_rss_mib": round(rss, 1),
        "memory_limit_mib": limit,
        "max_zone_skew": max(skews.values()),
        "zone_skews": skews,
        "failed_scheduling_events": sum(map(len, per_pod.values())),
        # Why pods went back to the queue (event, queue): a retry storm of the refused pods shows here.
        "queue_incoming": _queue_incoming(scheduler),
        **counts,
    }
    (LOGS / f"load-{PODS}.json").write_text(json.dumps(report, indent=1))
    print(f"load: {report}")

    assert not health["failures"], health["failures"][:5]
    assert health["slowest"] < 1.0
    assert rss < limit, f"peak RSS {rss:.0f} MiB over the Deployment's limit of {limit:g} MiB"
    assert len(hard) == 4 and max(skews.values()) <= MAX_SKEW, skews
    # From the server's record: one Binding request per feasible pod, each answered 201, all leased.
    assert (counts["binding_requests"], counts["pods_bound"]) == (feasible, feasible), counts
    assert counts["writes_without_lease"] == 0 and counts["rebinds_by_one_process"] == 0, counts
    # Deduplicated: every refused pod has its FailedScheduling, and a retry whose message is the one last
    # posted posts nothing, however often the pod is retried. A new message is a new event (the scheduler
    # saw, say, more nodes by then), and so is an earlier one coming back: under load the node lifecycle
    # controller's not-ready taints come and go, and a refused pod's message with them (A, B, A). So a
    # pod has at most as many events as its attempts, in the scheduler's log, had changes of message
    # (not judged from the events' order: each is written after its PodScheduled patch, and those of
    # A, B, A may land A, A, B).
    assert len(per_pod) == infeasible, f"{infeasible - len(per_pod)} refused pods without a FailedScheduling event"
    changes = _message_changes(scheduler.log())
    flooded = {pod: (notes, changes.get(pod, 0)) for pod, notes in per_pod.items() if len(notes) > changes.get(pod, 0)}
    assert not flooded, list(flooded.items())[:3]
