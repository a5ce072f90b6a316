"""``spread-scheduler skew`` against the real control plane: a Deployment the live scheduler spread
evenly, then a node relabelled into another domain (a violation appears) and a node losing the key
(its pods count nowhere), each read back from ``skew -o json`` run as the real command.

The topology key is this test's own, so nodes other tests leave behind are no domain of it.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import bound_pods, pod_body, wait_for

KEY = "e2e.spread-scheduler.io/skew-zone"
LABELS = {"app": "skewed"}


def _skew(kubeconfig: str, namespace: str) -> dict[str, Any]:
    command = [str(Path(sys.executable).parent / "spread-scheduler"), "skew", "--kubeconfig", kubeconfig]
    out = subprocess.run(
        [*command, "-n", namespace, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (workload,) = json.loads(out.stdout)["workloads"]
    return dict(workload)


def test_skew_reports_a_violation_after_a_node_moves_domain(
    core: client.CoreV1Api,
    api: client.ApiClient,
    scheduler: SchedulerProcess,
    kubeconfig: str,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    n1, n2, n3 = (nodes(f"skew-{z}", labels={KEY: z}) for z in ("z1", "z2", "z3"))
    spread = {"maxSkew": 1, "topologyKey": KEY, "whenUnsatisfiable": "DoNotSchedule"}
    spread["labelSelector"] = {"matchLabels": LABELS}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "skewed"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": pod_body("x", LABELS, topologySpreadConstraints=[spread])["spec"],
            },
        },
    }
    client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment)
    pods = wait_for(lambda: bound_pods(core, namespace, 6), 60, "6 bound replicas")
    on = collections.defaultdict(list)
    for pod in pods:
        on[pod.spec.node_name].append(f"{namespace}/{pod.metadata.name}")
    assert sorted(len(v) for v in on.values()) == [2, 2, 2], dict(on)

    # Evenly spread: 2/2/2, skew 0.
    report = _skew(kubeconfig, namespace)
    assert (report["kind"], report["name"], report["violated"]) == ("Deployment", "skewed", False)
    (row,) = report["constraints"]
    assert (row["topologyKey"], row["domains"], row["skew"], row["violatingPods"]) == (
        KEY,
        {"z1": 2, "z2": 2, "z3": 2},
        0,
        [],
    )
    assert row["source"] == "pod" and len(row["pods"]) == 6

    # n3 relabelled into z1: z1 = 4, z2 = 2, minimum 2; z1's pods are 4 - 2 = 2 > 1 over it.
    core.patch_node(n3, {"metadata": {"labels": {KEY: "z1"}}})
    report = _skew(kubeconfig, namespace)
    (row,) = report["constraints"]
    assert (row["domains"], row["globalMinimum"], row["skew"], row["violated"]) == ({"z1": 4, "z2": 2}, 2, 2, True)
    assert row["violatingPods"] == sorted(on[n1] + on[n3])
    assert report["violated"] is True

    # n3 loses the key: its pods are in no domain; z1 = 2, z2 = 2, nothing violates.
    core.patch_node(n3, {"metadata": {"labels": {KEY: None}}})
    report = _skew(kubeconfig, namespace)
    (row,) = report["constraints"]
    assert (row["domains"], row["skew"], row["violatingPods"]) == ({"z1": 2, "z2": 2}, 0, [])
    assert row["podsOutsideDomains"] == sorted(on[n3])
    assert n2 in on
