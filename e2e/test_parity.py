"""Issue #4, e2e parity: the same Deployments, scheduled once by kube-scheduler v1.35.4 and once by
spread-scheduler (same profile, one after the other, on the same nodes), end the same way.

The workload is chosen so that the outcome does not hang on ties between equally scored nodes: hard
zone and hostname spread, required affinity, tolerations for tainted nodes, minDomains above the
number of zones, and requests that leave room for one pod per node. Compared per Deployment: pods
per zone (per node where the spread is per node), how many stay Pending, and their messages.
"""

from __future__ import annotations

import collections
import subprocess
from collections.abc import Callable
from typing import Any

from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import HOSTNAME, ZONE, pod_body, pods_in, scheduled_condition, wait_for
from scheduler.config import upstream_config

UPSTREAM = "parity-upstream"


def _spread(key: str, app: str, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def _in_zones(*zones: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


# name -> (replicas, pod spec fields beyond the container, container resources, count per hostname?)
WORKLOAD: dict[str, tuple[int, dict[str, Any], dict[str, Any] | None, bool]] = {
    # 9 over three zones, maxSkew 1: 3/3/3.
    "zonal": (9, {"topologySpreadConstraints": [_spread(ZONE, "zonal")]}, None, False),
    # Only zones a and b: 3/3.
    "ab-only": (
        6,
        {"topologySpreadConstraints": [_spread(ZONE, "ab-only")], "affinity": _in_zones("a", "b")},
        None,
        False,
    ),
    # The infra pool (tainted, two nodes in zone c) with a hostname spread: 2/2.
    "infra": (
        4,
        {
            "topologySpreadConstraints": [_spread(HOSTNAME, "infra")],
            "nodeSelector": {"pool": "infra"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}],
        },
        None,
        True,
    ),
    # minDomains 4 over 3 zones: the global minimum counts as 0, so one per zone and 2 Pending.
    "min-domains": (5, {"topologySpreadConstraints": [_spread(ZONE, "min-domains", minDomains=4)]}, None, False),
    # 3 CPU each on 4-CPU nodes of zone a: one per node (3), 2 Pending with Insufficient cpu.
    "big": (5, {"affinity": _in_zones("a")}, {"requests": {"cpu": "3"}}, False),
}
NODES = {"a": 3, "b": 3, "c": 2}  # plus two tainted infra nodes in zone c
EXPECTED_BOUND = {"zonal": 9, "ab-only": 6, "infra": 4, "min-domains": 3, "big": 3}


def _deploy(api: client.ApiClient, namespace: str, scheduler_name: str) -> None:
    apps = client.AppsV1Api(api)
    for app, (replicas, fields, resources, _) in WORKLOAD.items():
        spec = pod_body("x", {"app": app}, scheduler=scheduler_name, **fields)["spec"]
        if resources is not None:
            spec["containers"][0]["resources"] = resources
        apps.create_namespaced_deployment(
            namespace,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app}}, "spec": spec},
                },
            },
        )


def _outcome(core: client.CoreV1Api, namespace: str, zone_of: dict[str, str]) -> dict[str, Any] | None:
    """Per Deployment: sorted per-domain counts, and the sorted messages of its Pending pods; None until
    every replica exists and is either bound or refused."""
    pods = [p for p in pods_in(core, namespace) if not p.metadata.deletion_timestamp]
    by_app: dict[str, list[Any]] = collections.defaultdict(list)
    for pod in pods:
        by_app[pod.metadata.labels["app"]].append(pod)
    out: dict[str, Any] = {}
    for app, (replicas, _, _, per_node) in WORKLOAD.items():
        group = by_app.get(app, [])
        if len(group) != replicas:
            return None
        pending = [p for p in group if not p.spec.node_name]
        conditions = [scheduled_condition(p) for p in pending]
        if any(c is None or c.status != "False" or c.reason != "Unschedulable" for c in conditions):
            return None
        domains = collections.Counter(
            p.spec.node_name if per_node else zone_of[p.spec.node_name] for p in group if p.spec.node_name
        )
        out[app] = {"counts": sorted(domains.values()), "pending": sorted(c.message for c in conditions)}
    return out


def _run(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str, scheduler_name: str, zone_of: dict[str, str]
) -> dict[str, Any]:
    _deploy(api, namespace, scheduler_name)
    outcome: dict[str, Any] = wait_for(lambda: _outcome(core, namespace, zone_of), 120, f"{scheduler_name} settled")
    return outcome


def _has_default_sa(core: client.CoreV1Api, namespace: str) -> bool:
    return any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(namespace).items)


def test_same_workload_same_outcome_as_kube_scheduler(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    zone_of: dict[str, str] = {}
    for zone, count in NODES.items():
        for i in range(count):
            zone_of[nodes(f"{zone}-{i}", labels={ZONE: zone})] = zone
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    for i in range(2):
        zone_of[nodes(f"infra-{i}", labels={ZONE: "c", "pool": "infra"}, taints=[taint])] = "c"

    (profile,) = upstream_config()["profiles"]
    kube_scheduler({**profile, "schedulerName": UPSTREAM})
    outcomes = {}
    for who in (UPSTREAM, "spread-scheduler"):
        namespace = f"parity-{who}"
        core.create_namespace({"metadata": {"name": namespace}})
        wait_for(lambda ns=namespace: _has_default_sa(core, ns), 30, "default ServiceAccount")
        try:
            outcomes[who] = _run(api, core, namespace, who, zone_of)
        finally:
            core.delete_namespace(namespace, grace_period_seconds=0)
        # The next run starts on empty nodes.
        wait_for(lambda ns=namespace: not pods_in(core, ns), 90, f"{namespace} emptied")

    upstream, ours = outcomes[UPSTREAM], outcomes["spread-scheduler"]
    assert {app: sum(o["counts"]) for app, o in upstream.items()} == EXPECTED_BOUND  # the workload is what we think
    assert ours == upstream
