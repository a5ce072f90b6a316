"""The API server throttles our writes with 429s (API Priority and Fairness): we wait what it asks.

A control plane of its own with API Priority and Fairness on (the shared one runs with it off, for
throughput). Rather than starving the whole server with tiny in-flight limits (which throttles every
client, the controllers too, into timeouts), a PriorityLevelConfiguration with 1 share and
``limitResponse: Reject`` and a FlowSchema that sends only our Bindings and pod status writes to it:
beyond its one seat, a write is refused at once with 429 and ``Retry-After``. A burst of pods at client
QPS 5000 then meets hundreds of 429s; the server's audit log (the ledger) shows how we came back.
"""

from __future__ import annotations

import collections
import json
import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client, config

from e2e.cluster import Cluster
from e2e.conftest import LOGS, ROOT, SchedulerProcess
from e2e.kube_helpers import create_node, pod_body, pods_in, wait_for
from e2e.ledger import summary

PODS = int(os.environ.get("SPREAD_E2E_THROTTLED_PODS", "120"))
USER = "spread-throttled"


@pytest.fixture(scope="module")
def apf_cluster() -> Iterator[Cluster]:
    if os.environ.get("SPREAD_E2E_KUBECONFIG"):
        pytest.skip("starts a control plane of its own")
    base = Path(os.environ.get("SPREAD_E2E_DIR") or ROOT / ".cluster" / "e2e")
    cluster = Cluster(
        base.parent / f"{base.name}-apf",
        controller_manager=False,
        api_flags={
            "--enable-priority-and-fairness": "true",
            # 60 seats over the levels' shares: our level (1 share in about 250) gets one.
            "--max-requests-inflight": "40",
            "--max-mutating-requests-inflight": "20",
        },
    )
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def _throttle_our_writes(api: client.ApiClient) -> None:
    flow = client.FlowcontrolApiserverV1Api(api)
    flow.create_priority_level_configuration(
        {
            "metadata": {"name": USER},
            "spec": {
                "type": "Limited",
                "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}},
            },
        }
    )
    flow.create_flow_schema(
        {
            "metadata": {"name": USER},
            "spec": {
                "priorityLevelConfiguration": {"name": USER},
                "matchingPrecedence": 500,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": USER}}],
                        "resourceRules": [
                            {
                                "verbs": ["create", "patch"],
                                "apiGroups": [""],
                                "resources": ["pods/binding", "pods/status"],
                                "namespaces": ["*"],
                            }
                        ],
                    }
                ],
            },
        }
    )
    client.RbacAuthorizationV1Api(api).create_cluster_role_binding(
        {
            "metadata": {"name": USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        }
    )


def test_429s_are_waited_out_as_retry_after_asks_and_every_pod_binds(apf_cluster: Cluster, tmp_path: Path) -> None:
    api = config.new_client_from_config(config_file=str(apf_cluster.kubeconfig))
    core = client.CoreV1Api(api)
    _throttle_our_writes(api)
    for i in range(6):
        create_node(core, f"apf-{i}", labels={"topology.kubernetes.io/zone": f"zone-{i % 3}"})
    namespace = f"apf-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    scheduler_config = tmp_path / "throttled.yaml"
    scheduler_config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\nclientConnection: {qps: 5000, burst: 5000}\n"
    )
    proc = SchedulerProcess(str(apf_cluster.user_kubeconfig(USER, group="e2e")), str(scheduler_config), name="apf")
    mark = apf_cluster.ledger.mark()
    for i in range(PODS):  # all pending before the scheduler starts: its Bindings go out in a burst
        core.create_namespaced_pod(namespace, pod_body(f"t-{i:03d}"))
    proc.start()
    try:
        wait_for(lambda: all(p.spec.node_name for p in pods_in(core, namespace)) or None, 240, "every pod bound")
    finally:
        proc.stop()
    writes = [w for w in apf_cluster.ledger.writes(mark) if w.user == USER and w.namespace == namespace]
    bindings = sorted((w for w in writes if w.kind == "binding"), key=lambda w: w.at)
    throttled = [w for w in writes if w.code == 429]
    # After a 429 for a pod, how long until we asked again for the same pod (any write of ours for it).
    gaps: list[float] = []
    last_429: dict[tuple[str, str], object] = {}
    for w in sorted(writes, key=lambda w: w.at):
        key = (w.kind, w.name)
        if key in last_429:
            gaps.append((w.at - last_429.pop(key)).total_seconds())  # type: ignore[operator]
        if w.code == 429:
            last_429[key] = w.at
    per_second = collections.Counter(int((w.at - bindings[0].at).total_seconds()) for w in writes)
    seconds = max((bindings[-1].at - bindings[0].at) / timedelta(seconds=1), 1.0)
    report = {
        "pods": PODS,
        "writes": len(writes),
        "throttled_429": len(throttled),
        "binding_requests": len(bindings),
        "bound": sum(1 for w in bindings if w.code == 201),
        "shortest_retry_after_a_429_seconds": round(min(gaps), 3) if gaps else None,
        "median_retry_after_a_429_seconds": round(sorted(gaps)[len(gaps) // 2], 3) if gaps else None,
        "writes_per_second_mean": round(len(writes) / seconds, 1),
        "writes_per_second_peak": max(per_second.values()),
        "seconds": round(seconds, 1),
        # A pod throttled once has two Binding requests (the 429 and the retry); none after its answer.
        **summary(writes, namespace, [USER]),
    }
    (LOGS / "throttled.json").write_text(json.dumps(report, indent=1))
    assert report["bound"] == PODS, report
    assert report["rebinds_by_one_process"] == 0, report
    # How many 429s a burst meets depends on how many writes are in flight at once (a busy machine
    # sends fewer): ten are enough to measure the waits; runs here gave 20-53.
    assert len(throttled) >= 10, f"the test throttled too little to show anything: {report}"
    # Retry-After is at least 1 s (API Priority and Fairness); the plain backoff would be 0.2-0.4 s.
    assert gaps and min(gaps) >= 0.95, report
