"""Faults on the real control plane: the scheduler is killed with SIGKILL again and again during a burst.

Every pod must end bound exactly once (the watch sees nodeName set once and never changed) and the
spread must hold for the final placement. SPREAD_E2E_KILLS sets the number of kills (CI: 5).
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

from e2e.conftest import LOGS, SchedulerProcess
from e2e.kube_helpers import pod_body, pods_in, wait_for, watch_bindings, zone_spread, zoned_nodes

KILLS = int(os.environ.get("SPREAD_E2E_KILLS", "5"))
PODS = int(os.environ.get("SPREAD_E2E_KILL_PODS", "300"))


def test_sigkill_during_a_burst_loses_nothing_and_binds_nothing_twice(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
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

    def all_bound() -> list[client.V1Pod]:
        pods = [p for p in pods_in(core, namespace) if p.spec.node_name]
        return pods if len(pods) == PODS else []

    pods = wait_for(all_bound, 180, f"all {PODS} pods bound after {kills} kills")
    wait_for(lambda: sum(1 for h in seen.values() if h) >= PODS, 30, "the watch saw every binding")
    stop.set()
    assert kills == KILLS
    rebound = {name: history for name, history in seen.items() if len(history) != 1}
    assert not rebound, f"pods whose nodeName changed: {rebound}"
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    report = {"kills": kills, "pods": PODS, "bound_once": len(seen) - len(rebound), "double_binds": 0, "lost": 0}
    (LOGS / "kills.json").write_text(json.dumps(report, indent=1))
