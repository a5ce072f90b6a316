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
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client

from e2e.conftest import LOGS, SchedulerProcess
from e2e.kube_helpers import pod_body, pods_in, wait_for, watch_bindings
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
def pair(scheduler: SchedulerProcess, kubeconfig: str, tmp_path: Path) -> Iterator[tuple[SchedulerProcess, ...]]:
    """Two replicas on their own Lease; the session's scheduler is stopped so it competes for nothing."""
    scheduler.stop()
    lease, renew, retry = DURATIONS
    config = tmp_path / "pair.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: true, leaseDuration: {lease}s, renewDeadline: {renew}s,"
        f" retryPeriod: {retry}s, resourceNamespace: {LEASE_NS}, resourceName: {LEASE_NAME}}}\n"
    )
    first = SchedulerProcess(kubeconfig, str(config), name="pair-a")
    second = SchedulerProcess(kubeconfig, str(config), name="pair-b")
    try:
        yield first, second
    finally:
        for proc in (first, second):
            if proc.proc is not None:
                proc.proc.send_signal(signal.SIGCONT)
                proc.stop()
        scheduler.start()


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

    def all_bound() -> list[client.V1Pod]:
        pods = [p for p in pods_in(core, namespace) if p.spec.node_name]
        return pods if len(pods) == PODS else []

    pods = wait_for(all_bound, 120, f"all {PODS} pods bound")
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
