"""Issue #7, API faults: kube-apiserver restarted in the middle of a burst; etcd stopped for seconds.

Watches reconnect, the informer resumes them (or lists again), no pod is lost or bound twice, and while the
server is away the scheduler neither busy-loops (CPU time measured) nor floods it (its own request
counter, ``spread_scheduler_api_requests_total``, measured). The scheduler under test runs without
leader election: with a lease shorter than the outage it would (correctly) exit, as kube-scheduler
does, and that path is covered by the SIGKILL test.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import LOGS, SchedulerProcess, insecure_tls
from e2e.kube_helpers import bound_pods, pod_body, pods_in, wait_for, watch_bindings, zone_spread, zoned_nodes

OUTAGE_SECONDS = 5.0
REPORT = LOGS / "api-faults.json"


@pytest.fixture
def riding_scheduler(kubeconfig: str, scheduler: SchedulerProcess, tmp_path: Path) -> Iterator[SchedulerProcess]:
    """Our scheduler without leader election, in place of the session's one for this test.

    Client QPS 20 stretches the burst's bindings over seconds, so the fault lands on writes in flight.
    """
    scheduler.stop()
    config = tmp_path / "no-leader.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\nclientConnection: {qps: 20, burst: 20}\n"
    )
    # Scraped during the outage: /metrics always allowed, so no TokenReview is needed to read it.
    own = SchedulerProcess(
        kubeconfig,
        str(config),
        name="riding",
        extra_args=("--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",),
    )
    own.start()
    try:
        yield own
    finally:
        if own.proc is not None:
            own.stop()
        scheduler.start()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _requests(proc: SchedulerProcess) -> float:
    return sum(v for k, v in proc.metrics().items() if k.startswith("spread_scheduler_api_requests_total"))


def _record(name: str, values: dict[str, object]) -> None:
    report = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    report[name] = values
    REPORT.write_text(json.dumps(report, indent=1))


def _burst_through(
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    sched: SchedulerProcess,
    fault: Callable[[], None],
    total: int,
) -> tuple[list[client.V1Pod], dict[str, list[str]]]:
    """Create ``total`` zone-spread pods, running ``fault`` after a third; wait until all are bound."""
    zone_of = zoned_nodes(nodes, {"zone-a": 2, "zone-b": 2, "zone-c": 2})
    labels = {"app": "fault"}
    seen: dict[str, list[str]] = {}
    stop = threading.Event()
    threading.Thread(target=watch_bindings, args=(core, namespace, stop, seen), daemon=True).start()
    for i in range(total):
        if i == total // 3:
            fault()
        body = pod_body(f"fault-{i:03d}", labels, topologySpreadConstraints=[zone_spread(1, labels)])
        wait_for(lambda b=body: _created(core, namespace, b), 60, f"pod {i} created")

    pods = wait_for(lambda: bound_pods(core, namespace, total), 120, f"all {total} pods bound")
    wait_for(lambda: sum(1 for h in seen.values() if h) >= total, 60, "the watch saw every binding")
    stop.set()
    assert sched.proc is not None and sched.proc.poll() is None, "the scheduler rode out the fault"
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    rebound = {name: history for name, history in seen.items() if len(history) != 1}
    assert not rebound, f"pods whose nodeName changed: {rebound}"
    return pods, seen


def _created(core: client.CoreV1Api, namespace: str, body: dict[str, object]) -> bool:
    """Create, riding out a server that is still coming back (a 409 means an earlier try landed)."""
    try:
        core.create_namespaced_pod(namespace, body)
    except client.ApiException as exc:
        return exc.status == 409
    except Exception:  # connection refused / reset while the server restarts
        return False
    return True


def test_apiserver_restart_in_the_middle_of_a_burst(
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    control_plane: Cluster,
    riding_scheduler: SchedulerProcess,
) -> None:
    timing: dict[str, float] = {}

    def restart() -> None:
        started = time.monotonic()
        control_plane.stop_component("kube-apiserver")
        timing["down_at"] = time.monotonic()
        control_plane.start_component("kube-apiserver")
        timing["down_seconds"] = time.monotonic() - timing["down_at"]
        timing["restart_seconds"] = time.monotonic() - started

    _burst_through(core, namespace, nodes, riding_scheduler, restart, 150)
    log = riding_scheduler.log()
    failed = [json.loads(line) for line in log.splitlines() if '"Failed to watch"' in line]
    _record(
        "apiserver_restart",
        {"pods": 150, "down_seconds": round(timing["down_seconds"], 1), "watch_failures": len(failed), "lost": 0},
    )
    # The informer saw the server go from its own watches' errors, and resumed them (the burst bound).
    assert failed and all(line["type"].startswith("*v1.") for line in failed), log[-3000:]


def test_etcd_stopped_for_seconds(
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    control_plane: Cluster,
    riding_scheduler: SchedulerProcess,
) -> None:
    assert riding_scheduler.proc is not None
    pid = riding_scheduler.proc.pid
    measured: dict[str, float] = {}

    def etcd_away() -> None:
        cpu, requests, started = _cpu_seconds(pid), _requests(riding_scheduler), time.monotonic()
        control_plane.stop_component("etcd")
        wait_for(lambda: not control_plane.is_ready(), 30, "the API server to notice etcd is gone")
        # The fault itself lasts a fixed time; nothing waits on it for synchronisation.
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - started)))
        measured["seconds"] = time.monotonic() - started
        measured["cpu_seconds"] = _cpu_seconds(pid) - cpu
        measured["requests"] = _requests(riding_scheduler) - requests
        measured["outage_requests"] = riding_scheduler.metrics().get(
            'spread_scheduler_api_requests_total{outcome="outage"}', 0.0
        )
        control_plane.start_component("etcd")

    _burst_through(core, namespace, nodes, riding_scheduler, etcd_away, 90)
    _record(
        "etcd_stopped",
        {
            "outage_seconds": round(measured["seconds"], 1),
            "scheduler_cpu_seconds": round(measured["cpu_seconds"], 2),
            "scheduler_requests": measured["requests"],
            "scheduler_failed_requests": measured["outage_requests"],
            "lost": 0,
        },
    )
    # No busy loop: well under a fifth of one core while the store is away.
    assert measured["cpu_seconds"] < 0.2 * measured["seconds"], measured
    # No flood: each write gives up after 5 tries spread by tenacity's backoff (0.2 s doubling), and the
    # pod goes back to the queue with its own backoff; far below the client's 20 requests a second.
    assert measured["requests"] <= 10 * measured["seconds"], measured


def _status(address: str, path: str) -> int:
    try:
        with urllib.request.urlopen(f"https://{address}{path}", timeout=5, context=insecure_tls()) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_start_with_the_apiserver_down_waits_for_it_then_schedules(
    kubeconfig: str,
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    control_plane: Cluster,
    scheduler: SchedulerProcess,
    tmp_path: Path,
) -> None:
    """kube-scheduler starts with its API server away and its informers retry until it answers: so do
    we, one JSON line per failed list and kind (client-go's "Failed to watch"), /healthz served
    meanwhile, /readyz not ready; then it schedules."""
    node = nodes("n0")
    scheduler.stop()
    config = tmp_path / "no-leader.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
    )
    waiting = SchedulerProcess(kubeconfig, str(config), name="starts-while-down")
    control_plane.stop_component("kube-apiserver")
    try:
        waiting.start(wait_for_line=b'"failed to list *v1.Pod: ')
        wait_for(lambda: waiting.log().count('"failed to list *v1.Pod: ') >= 2, 30, "a second retry")
        assert _status(waiting.address, "/healthz") == 200
        assert _status(waiting.address, "/readyz") != 200
    finally:
        control_plane.start_component("kube-apiserver")
    try:
        wait_for(lambda: '"cache synced"' in waiting.log(), 60, "the start once the API server answers")
        core.create_namespaced_pod(namespace, pod_body("after-the-wait"))
        wait_for(lambda: pods_in(core, namespace)[0].spec.node_name == node, 30, "the pod bound")
        entries = [json.loads(line) for line in waiting.log().splitlines()]  # every line JSON: no traceback
        retries = [e for e in entries if e["msg"] == "Failed to watch" and e["type"] == "*v1.Pod"]
        assert [e["attempt"] for e in retries] == list(range(1, len(retries) + 1))
        assert all(e["err"].startswith("failed to list *v1.Pod: ") for e in retries), retries
        assert waiting.proc is not None and waiting.proc.poll() is None
        assert waiting.stop() == 0
    finally:
        if waiting.proc is not None:
            waiting.stop()
        scheduler.start()
