"""Two replicas and the Lease, judged from the API server's record (the ledger, e2e/ledger.py).

A leader paused (SIGSTOP: a VM freeze, a long GC, a stopped container) for longer than its lease
wakes up with Bindings half-way through its pipeline. Its follower has taken the lease and is binding
the same pods. What must hold: the old leader sends nothing once it could have lost the lease, every
pod is bound once, no node holds more than its allocatable. The server's audit log says who sent what
when, so "nothing" is counted, not assumed.

SPREAD_E2E_STOP_PODS sets the burst (CI: 200; ``make reliability``: 1,000), SPREAD_E2E_LEASE the
durations (``short``: 4 s / 3 s / 1 s, CI; ``shipped``: 15 s / 10 s / 2 s).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client

from e2e.cluster import Cluster
from e2e.conftest import LOGS, SchedulerProcess
from e2e.kube_helpers import bound_pods, pod_body, pods_in, wait_for, watch_bindings
from e2e.ledger import (
    Ledger,
    binding_attempts,
    lease_terms,
    rebinds_by_one_process,
    summary,
    writes_after_losing,
    writes_without_lease,
)

PODS = int(os.environ.get("SPREAD_E2E_STOP_PODS", "200"))
DURATIONS = {"short": (4, 3, 1), "shipped": (15, 10, 2)}[os.environ.get("SPREAD_E2E_LEASE", "short")]
LEASE_NS, LEASE_NAME = "kube-system", "spread-scheduler-e2e-pair"
CPU_PER_POD_M = 100
NODE_CPU = 2  # 20 pods a node by CPU: room for every pod, with 20 % to spare


@pytest.fixture
def replicas(scheduler: SchedulerProcess, kubeconfig: str, tmp_path: Path) -> Iterator[Callable[..., SchedulerProcess]]:
    """Replicas on a Lease of their own (``make(name, skew=SECONDS)``: a wall clock that far off);
    the session's scheduler is stopped meanwhile so it competes for nothing."""
    scheduler.stop()
    lease, renew, retry = DURATIONS
    config = tmp_path / "pair.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: true, leaseDuration: {lease}s, renewDeadline: {renew}s,"
        f" retryPeriod: {retry}s, resourceNamespace: {LEASE_NS}, resourceName: {LEASE_NAME}}}\n"
    )
    made: list[SchedulerProcess] = []

    def make(name: str, skew: float = 0) -> SchedulerProcess:
        prefix = [sys.executable, "-m", "e2e.skewed_clock", str(skew)] if skew else []
        made.append(SchedulerProcess(kubeconfig, str(config), name=name, prefix=prefix))
        return made[-1]

    try:
        yield make
    finally:
        for proc in made:
            if proc.proc is not None:
                proc.proc.send_signal(signal.SIGCONT)
                proc.stop()
        scheduler.start()


@pytest.fixture
def pair(replicas: Callable[..., SchedulerProcess]) -> tuple[SchedulerProcess, SchedulerProcess]:
    return replicas("pair-a"), replicas("pair-b")


def test_a_leader_paused_past_its_lease_writes_nothing_after_the_takeover(
    core: client.CoreV1Api,
    pair: tuple[SchedulerProcess, SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    first, second = pair
    lease, _renew, _retry = DURATIONS
    node_count = -(-PODS * CPU_PER_POD_M * 6 // 5 // (NODE_CPU * 1000))
    made = {nodes(f"n{i:03d}", cpu=str(NODE_CPU)) for i in range(node_count)}
    mark = ledger.mark()
    first.start(wait_for_line=b"Successfully acquired lease")
    second.start()
    seen: dict[str, list[str]] = {}
    stop_watch = threading.Event()
    threading.Thread(target=watch_bindings, args=(core, namespace, stop_watch, seen), daemon=True).start()

    def create(start: int, end: int) -> None:
        resources = {"requests": {"cpu": f"{CPU_PER_POD_M}m"}}
        for i in range(start, end):
            body = pod_body(f"p-{i:04d}")
            body["spec"]["containers"][0]["resources"] = resources
            core.create_namespaced_pod(namespace, body)

    # Pause the leader while it has a backlog of pods: some decided, some Bindings waiting for tokens.
    third = PODS // 3
    create(0, third)
    wait_for(lambda: sum(1 for h in seen.values() if h) >= third // 4, 60, "the leader binding")
    assert first.proc is not None
    create(third, 2 * third)
    first.proc.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    wait_for(lambda: b"Successfully acquired lease" in second.log_path.read_bytes(), lease * 3 + 5, "takeover")
    took_over = time.monotonic() - stopped
    create(2 * third, PODS)
    time.sleep(1)  # the new leader is binding; now the old one wakes up in the middle of it
    first.proc.send_signal(signal.SIGCONT)
    # It finds it is no longer sure, sends nothing, and steps down: exit 1, "Leaderelection lost".
    assert first.proc.wait(timeout=lease * 3 + 10) == 1, first.log()[-3000:]
    first.proc = None
    assert "Leaderelection lost" in first.log()

    pods = wait_for(lambda: bound_pods(core, namespace, PODS), 120, f"all {PODS} pods bound")
    wait_for(lambda: sum(1 for h in seen.values() if h) >= PODS, 30, "the watch saw every binding")
    stop_watch.set()
    assert not {n: h for n, h in seen.items() if len(h) != 1}
    per_node = collections.Counter(p.spec.node_name for p in pods)
    assert set(per_node) <= made
    assert max(per_node.values()) * CPU_PER_POD_M <= NODE_CPU * 1000, per_node  # no node over allocatable

    users = first.users + second.users
    writes = ledger.writes(mark)
    terms = lease_terms(writes, LEASE_NS, LEASE_NAME, timedelta(seconds=lease))
    assert [t.user for t in terms][:2] == [first.users[0], second.users[0]], terms
    unleased = writes_without_lease(writes, terms, users)
    after = writes_after_losing(writes, terms)
    again = rebinds_by_one_process(writes, namespace)
    by_first = sum(
        sum(c.values()) for c in binding_attempts((w for w in writes if w.user in first.users), namespace).values()
    )
    report = {
        "pods": PODS,
        "lease_seconds": list(DURATIONS),
        "takeover_seconds": round(took_over, 1),
        "bindings_by_the_paused_leader": by_first,
        **summary(writes, namespace, users),
        "writes_without_lease": len(unleased),
        "writes_after_losing_lease": len(after),
    }
    (LOGS / f"sigstop-{PODS}.json").write_text(json.dumps(report, indent=1))
    assert by_first > 0, "the first leader bound nothing: the pause tested nothing"
    assert not unleased, "\n".join(map(str, unleased[:20]))
    assert not after, "\n".join(map(str, after[:20]))
    assert not again, "\n".join(map(str, again[:20]))


@pytest.mark.parametrize(
    ("holder_skew", "follower_skew"), [(-30, 0), (0, 30)], ids=["holder-30s-behind", "follower-30s-ahead"]
)
def test_a_skewed_clock_never_takes_a_live_lease(
    core: client.CoreV1Api,
    replicas: Callable[..., SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
    holder_skew: float,
    follower_skew: float,
) -> None:
    """A holder 30 s behind writes a renewTime that looks expired to anyone comparing it with their own
    clock; a follower 30 s ahead sees every renewTime as old. Neither may hand the follower a live
    lease: expiry counts from when the follower saw the record change (client-go's observedTime).
    The rule this replaced (the holder's renewTime against the follower's clock) fails the first case;
    the second guards any rule that would read the follower's wall clock."""
    lease, _renew, retry = DURATIONS
    nodes("n1")
    holder, follower = replicas("skew-holder", holder_skew), replicas("skew-follower", follower_skew)
    mark = ledger.mark()
    holder.start(wait_for_line=b"Successfully acquired lease")
    follower.start()
    # Three lease durations with both alive, pods arriving all along: only the holder may bind them.
    deadline = time.monotonic() + 3 * lease
    created = 0
    while time.monotonic() < deadline:
        core.create_namespaced_pod(namespace, pod_body(f"s-{created:03d}"))
        created += 1
        time.sleep(0.5)
    wait_for(lambda: all(p.spec.node_name for p in pods_in(core, namespace)), 30, "every pod bound")
    assert b"Successfully acquired lease" not in follower.log_path.read_bytes(), follower.log()[-2000:]
    # The follower can lead: kill the holder and it takes over once the lease has gone silent.
    assert holder.proc is not None
    holder.proc.kill()
    holder.proc.wait()
    holder.proc = None
    wait_for(
        lambda: b"Successfully acquired lease" in follower.log_path.read_bytes(),
        lease + 2 * retry * 2.2 + 5,
        "the follower takes a dead lease",
    )
    writes = ledger.writes(mark)
    terms = lease_terms(writes, LEASE_NS, LEASE_NAME, timedelta(seconds=lease))
    assert [t.user for t in terms] == [holder.users[0], follower.users[0]], terms
    assert terms[1].start >= terms[0].end, terms  # taken after the last renewal's lease ran out, not before
    users = holder.users + follower.users
    unleased = writes_without_lease(writes, terms, users)
    assert not unleased, "\n".join(map(str, unleased[:20]))
    counts = summary(writes, namespace, users)
    assert summary(writes, namespace, holder.users)["pods_bound"] == created
    skewed = "holder" if holder_skew else "follower"
    report = {
        "skewed": skewed,
        "skew_seconds": holder_skew or follower_skew,
        "pods": created,
        "lease_terms": [t.user for t in terms],
        "follower_acquired_after_holder_died_seconds": round((terms[1].start - terms[0].end).total_seconds(), 1),
        **counts,
        "writes_without_lease": len(unleased),
        "writes_after_losing_lease": len(writes_after_losing([w for w in writes if w.user in users], terms)),
    }
    (LOGS / f"skew-{skewed}.json").write_text(json.dumps(report, indent=1))


def test_etcd_away_longer_than_renew_deadline_the_leader_steps_down_and_nothing_is_lost(
    core: client.CoreV1Api,
    pair: tuple[SchedulerProcess, SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    control_plane: Cluster,
    ledger: Ledger,
) -> None:
    """etcd stopped for longer than renewDeadline while the leader binds a burst: the leader cannot
    renew, stops writing and exits 1 (as kube-scheduler: "leaderelection lost"); it is started again as
    its Deployment would. Once etcd is back one replica leads, every pod is bound once, and the ledger
    shows no write without the lease."""
    first, second = pair
    lease, renew, retry = DURATIONS
    outage = renew + 2 * retry + 3
    for i in range(6):
        nodes(f"n{i}")
    mark = ledger.mark()
    first.start(wait_for_line=b"Successfully acquired lease")
    second.start()
    total = 90
    for i in range(total // 3):
        core.create_namespaced_pod(namespace, pod_body(f"e-{i:03d}"))
    stopped, stopped_wall = time.monotonic(), time.time()
    control_plane.stop_component("etcd")
    # The leader's renewals fail from now on: it must step down within renewDeadline (and a retry).
    assert first.proc is not None
    code = first.proc.wait(timeout=renew + 2 * retry + 30)
    exited = time.monotonic() - stopped
    assert code == 1 and "Leaderelection lost" in first.log(), first.log()[-2000:]
    lost_line = next(json.loads(line) for line in first.log().splitlines() if '"Leaderelection lost"' in line)
    stepped_down = lost_line["ts"] / 1000 - stopped_wall
    first.proc = None
    time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
    control_plane.start_component("etcd")
    first.start(wait_for_line=b"cache synced")  # restarted, as the Deployment's kubelet would
    for i in range(total // 3, total):
        wait_for(lambda i=i: _create(core, namespace, pod_body(f"e-{i:03d}")), 60, f"pod {i} created")

    def all_bound() -> list[client.V1Pod]:
        pods = [p for p in pods_in(core, namespace) if p.spec.node_name]
        return pods if len(pods) == total else []

    wait_for(all_bound, 120, f"all {total} pods bound")
    users = first.users + second.users
    writes = ledger.writes(mark)
    terms = lease_terms(writes, LEASE_NS, LEASE_NAME, timedelta(seconds=lease))
    unleased = writes_without_lease(writes, terms, users)
    attempts = binding_attempts((w for w in writes if w.user in users), namespace)
    report = {
        "pods": total,
        "outage_seconds": outage,
        "leader_stepped_down_after_seconds": round(stepped_down, 1),
        "leader_exited_after_seconds": round(exited, 1),
        "lease_terms": [t.user for t in terms],
        **summary(writes, namespace, users),
        "binding_requests_failed_5xx": sum(n for c in attempts.values() for code, n in c.items() if code >= 500),
        "writes_without_lease": len(unleased),
        "writes_after_losing_lease": len(writes_after_losing([w for w in writes if w.user in users], terms)),
    }
    (LOGS / "etcd-outage-leader.json").write_text(json.dumps(report, indent=1))
    # renewDeadline after the last renewal it sent (at most a retry period before etcd went), plus slack.
    assert stepped_down <= renew + 2 * retry + 1, report
    assert not unleased, "\n".join(map(str, unleased[:20]))
    assert all(c[201] == 1 for c in attempts.values()) and len(attempts) == total, attempts


def _create(core: client.CoreV1Api, namespace: str, body: dict[str, object]) -> bool:
    """Create, or find it already created by an earlier try whose answer was lost."""
    try:
        core.create_namespaced_pod(namespace, body)
    except client.ApiException as exc:
        if exc.status == 409:
            return True
        if exc.status in (429, 500, 503, 504):
            return False
        raise
    return True
