"""Faults on the real control plane: the scheduler is killed with SIGKILL again and again during a burst.

Every pod must end bound exactly once (the watch sees nodeName set once and never changed) and the
spread must hold for the final placement. That much the API server enforces by itself (a second
Binding gets 409); what the scheduler *attempted* is read from the server's audit log (the ledger,
e2e/ledger.py): Binding requests per pod, and no write by an incarnation that did not hold the Lease
at that moment (a restarted process must wait for the killed one's lease to expire). SPREAD_E2E_KILLS
sets the number of kills (CI: 5).
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import threading
from collections.abc import Callable

from kubernetes import client

from e2e.conftest import LEASE_DURATION, LEASE_NAME, LEASE_NAMESPACE, LOGS, SchedulerProcess
from e2e.kube_helpers import bound_pods, pod_body, wait_for, watch_bindings, zone_spread, zoned_nodes
from e2e.ledger import (
    Ledger,
    binding_attempts,
    lease_terms,
    rebinds_by_one_process,
    summary,
    writes_after_losing,
    writes_without_lease,
)

KILLS = int(os.environ.get("SPREAD_E2E_KILLS", "5"))
PODS = int(os.environ.get("SPREAD_E2E_KILL_PODS", "300"))


def test_sigkill_during_a_burst_loses_nothing_and_binds_nothing_twice(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str], ledger: Ledger
) -> None:
    mark = ledger.mark()
    # Room for every pod: the fake nodes take 110 pods each, and NodeResourcesFit counts them.
    per_zone_nodes = max(2, -(-PODS // 300))
    zone_of = zoned_nodes(nodes, {zone: per_zone_nodes for zone in ("zone-a", "zone-b", "zone-c")})
    labels = {"app": "crash"}
    seen: dict[str, list[str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_bindings, args=(core, namespace, stop, seen), daemon=True)
    watcher.start()
    rng = random.Random(7)
    kill_at = sorted(rng.sample(range(10, PODS - 10), KILLS))
    spread = zone_spread(1, labels)
    kills = 0
    for i in range(PODS):
        if kill_at and i == kill_at[0]:
            kill_at.pop(0)
            scheduler.stop(signal.SIGKILL)
            kills += 1
            scheduler.start()
        core.create_namespaced_pod(namespace, pod_body(f"crash-{i:03d}", labels, topologySpreadConstraints=[spread]))

    pods = wait_for(lambda: bound_pods(core, namespace, PODS), 180, f"all {PODS} pods bound after {kills} kills")
    wait_for(lambda: sum(1 for h in seen.values() if h) >= PODS, 30, "the watch saw every binding")
    stop.set()
    assert kills == KILLS
    rebound = {name: history for name, history in seen.items() if len(history) != 1}
    assert not rebound, f"pods whose nodeName changed: {rebound}"
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    writes = ledger.writes(mark)
    counts = summary(writes, namespace, scheduler.users)
    attempts = binding_attempts((w for w in writes if w.user in scheduler.users), namespace)
    assert set(attempts) == {p.metadata.name for p in pods}, "a Binding for every pod, all sent by our processes"
    # A pod bound by a process killed before it saw the answer may get one more request from the next
    # incarnation (409); the same process asking again after its own 201 or 409 is a bug.
    again = rebinds_by_one_process(writes, namespace)
    assert not again, "Bindings sent again by the process that had its answer:\n" + "\n".join(map(str, again[:20]))
    # The Lease's story from the start of the session: the first incarnation took it before this test.
    terms = lease_terms(ledger.writes(), LEASE_NAMESPACE, LEASE_NAME, LEASE_DURATION)
    unleased = writes_without_lease(writes, terms, scheduler.users)
    assert not unleased, "writes by an incarnation that did not hold the Lease:\n" + "\n".join(map(str, unleased[:20]))
    report = {
        "kills": kills,
        "pods": PODS,
        "lost": PODS - len(pods),
        "pods_bound_twice": len(rebound),
        **counts,
        "lease_terms": len(terms),
        "writes_without_lease": len(unleased),
        "writes_after_losing_lease": len(writes_after_losing(writes, terms)),
    }
    (LOGS / "kills.json").write_text(json.dumps(report, indent=1))
