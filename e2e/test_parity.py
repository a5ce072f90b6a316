"""Issues #4 and #17, e2e parity: the same Deployments, scheduled once by kube-scheduler v1.35.4 with its
unmodified default profile (only ``schedulerName`` renamed) and once by spread-scheduler, one after the
other on the same nodes, end the same way.

The workload is chosen so that the outcome does not hang on ties between equally scored nodes: hard
zone and hostname spread, required node and pod (anti-)affinity, tolerations for tainted pools,
minDomains above the number of zones, requests that leave room for one pod per node; and where a
score decides (preferred pod affinity and anti-affinity, images present on some nodes, uneven
requests), a hard one-per-node spread that takes system default spreading out of the score and a
margin no other plugin's score can close. Compared per Deployment: bound pods per domain (zone,
node, or a node label), and the messages of the Pending pods.

Issue #18 adds in-tree disks: an rbd image a node can attach once (VolumeRestrictions) and EBS volumes
counted against CSINodes' limits (NodeVolumeLimits); the CSINodes are created by the test.

What we cannot do yet is kept out of the inputs: no claims, no resource claims, and no priorities
(the Pending pods are all of equal priority, so upstream's preemption finds no victims). Upstream's
PostFilter plugins then add `` no new claims to deallocate, preemption: ...`` to the message; we add the
first part too (DynamicResources); the `preemption` part is cut before comparing (preemption has
its own comparison, e2e/test_preemption.py).

Phase 1 creates the pods that phase 2's rules are about (a database pod, pods whose anti-affinity
forbids a zone, cpu- and memory-heavy pods) and waits for them to settle, so phase 2 meets them as
existing pods on both schedulers.
"""

from __future__ import annotations

import collections
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    HOSTNAME,
    ZONE,
    create_namespace,
    pod_body,
    pods_in,
    scheduled_condition,
    wait_for,
    without_preemption,
)

pytestmark = pytest.mark.every_release  # what differs by version: make e2e runs it on 1.36 and 1.37 too

UPSTREAM = "parity-upstream"
# 5 GB: over ImageLocality's 1000 MB cap even scaled by the share of nodes that hold it (3 of 12).
BIG_IMAGE = ("registry.invalid/big:1.0", 5_000_000_000)
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


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
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}}


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _weighted(app: str, key: str, weight: int = 100) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": _term(app, key)}


def _tolerate(value: str) -> list[dict[str, str]]:
    return [{"key": "dedicated", "operator": "Equal", "value": value, "effect": "NoSchedule"}]


def _one_per_node(app: str) -> list[dict[str, Any]]:
    """A hard hostname spread: at most one pod per node (tainted nodes count as empty domains under the
    default nodeTaintsPolicy Ignore), and explicit constraints switch system default spreading off, so
    what picks among the nodes is the score under test."""
    return [_spread(HOSTNAME, app)]


@dataclass(frozen=True)
class Scenario:
    replicas: int
    phase: int
    domain: str  # what bound pods are counted per: "zone", "node", or a node label key
    expected: dict[str, int]  # bound pods per domain, by design (checked against upstream)
    pending: int = 0
    spec: dict[str, Any] = field(default_factory=dict)  # pod spec fields beyond the container
    resources: dict[str, Any] | None = None
    image: str | None = None


RBD_DISK = {"rbd": {"monitors": ["10.0.0.1:6789"], "pool": "rbd", "image": "parity"}}
EBS_FIRST = {"awsElasticBlockStore": {"volumeID": "vol-parity-first"}}
EBS_SECOND = {"awsElasticBlockStore": {"volumeID": "vol-parity-second"}}


def _volume(name: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, **source}


def _hosts(*names: str) -> dict[str, int]:
    return dict.fromkeys(names, 1)


UNTAINTED = ("a-0", "a-1", "a-2", "b-0", "b-1", "b-2", "c-0", "c-1")

WORKLOAD: dict[str, Scenario] = {
    # -- phase 1 (issue #4) ---------------------------------------------------------------------------
    # 9 over three zones, maxSkew 1: 3/3/3.
    "zonal": Scenario(
        9, 1, "zone", {"a": 3, "b": 3, "c": 3}, spec={"topologySpreadConstraints": [_spread(ZONE, "zonal")]}
    ),
    # Only zones a and b: 3/3.
    "ab-only": Scenario(
        6,
        1,
        "zone",
        {"a": 3, "b": 3},
        spec={"topologySpreadConstraints": [_spread(ZONE, "ab-only")], "affinity": _in_zones("a", "b")},
    ),
    # The infra pool (tainted, two nodes in zone c) with a hostname spread: 2/2.
    "infra": Scenario(
        4,
        1,
        "node",
        {"infra-0": 2, "infra-1": 2},
        spec={
            "topologySpreadConstraints": [_spread(HOSTNAME, "infra")],
            "nodeSelector": {"pool": "infra"},
            "tolerations": _tolerate("infra"),
        },
    ),
    # minDomains 4 over 3 zones: the global minimum counts as 0, so one per zone and 2 Pending.
    "min-domains": Scenario(
        5,
        1,
        "zone",
        {"a": 1, "b": 1, "c": 1},
        pending=2,
        spec={"topologySpreadConstraints": [_spread(ZONE, "min-domains", minDomains=4)]},
    ),
    # 3 CPU each on 4-CPU nodes of zone a: one per node (3), 2 Pending with Insufficient cpu.
    "big": Scenario(
        5, 1, "zone", {"a": 3}, pending=2, spec={"affinity": _in_zones("a")}, resources={"requests": {"cpu": "3"}}
    ),
    # -- phase 1 (issue #17): what phase 2's pod affinity and balance rules are about ---------------------
    "db": Scenario(1, 1, "zone", {"b": 1}, spec={"nodeSelector": {ZONE: "b"}}),
    # In zone c: forbid the zone to "intruder" pods (required), and discourage "shy" ones (preferred).
    "guard": Scenario(
        2,
        1,
        "zone",
        {"c": 2},
        spec={
            "nodeSelector": {ZONE: "c"},
            "affinity": {"podAntiAffinity": {REQUIRED: [_term("intruder", ZONE)], PREFERRED: [_weighted("shy", ZONE)]}},
        },
    ),
    # Half the CPU of bal-0, 3/8 of the memory of bal-1 (both tainted, only the balance pods go there).
    "cpu-load": Scenario(
        1,
        1,
        "balance",
        {"cpu": 1},
        spec={"nodeSelector": {"balance": "cpu"}, "tolerations": _tolerate("balance")},
        resources={"requests": {"cpu": "2"}},
    ),
    "mem-load": Scenario(
        1,
        1,
        "balance",
        {"mem": 1},
        spec={"nodeSelector": {"balance": "mem"}, "tolerations": _tolerate("balance")},
        resources={"requests": {"memory": "12Gi"}},
    ),
    # -- phase 1 (issue #18): in-tree disks ---------------------------------------------------------------
    # One rbd image, written by every replica: one pod per node of zone a, the fourth Pending with
    # "had no available disk" (VolumeRestrictions).
    "rbd": Scenario(
        4,
        1,
        "node",
        _hosts("a-0", "a-1", "a-2"),
        pending=1,
        spec={"nodeSelector": {ZONE: "a"}, "volumes": [_volume("rbd", RBD_DISK)]},
    ),
    # An EBS volume on b-0, whose CSINode allows one EBS volume.
    "ebs-a": Scenario(
        1, 1, "node", {"b-0": 1}, spec={"nodeSelector": {"ebs": "first"}, "volumes": [_volume("ebs", EBS_FIRST)]}
    ),
    # -- phase 2 (issue #17) ----------------------------------------------------------------------------
    # Required anti-affinity to itself per hostname, 12 replicas over the 8 untainted nodes: one each,
    # 4 Pending (4 tainted nodes, 8 that already hold one).
    "anti-host": Scenario(
        12,
        2,
        "node",
        _hosts(*UNTAINTED),
        pending=4,
        spec={"affinity": {"podAntiAffinity": {REQUIRED: [_term("anti-host", HOSTNAME)]}}},
    ),
    # Required affinity to the database pod's zone: all in zone b.
    "api": Scenario(4, 2, "zone", {"b": 4}, spec={"affinity": {"podAffinity": {REQUIRED: [_term("db", ZONE)]}}}),
    # One per node, and the guards' anti-affinity forbids zone c: 3/3 in zones a and b, 2 Pending (the
    # guards' zone, the tainted nodes, and the six nodes that already hold one).
    "intruder": Scenario(
        8,
        2,
        "zone",
        {"a": 3, "b": 3},
        pending=2,
        spec={"affinity": {"podAntiAffinity": {REQUIRED: [_term("intruder", HOSTNAME)]}}},
    ),
    # Preferred affinity to the database pod's zone (weight 100: 2 x 100 points), one per node: zone b's three.
    "pref-aff": Scenario(
        3,
        2,
        "zone",
        {"b": 3},
        spec={
            "affinity": {"podAffinity": {PREFERRED: [_weighted("db", ZONE)]}},
            "topologySpreadConstraints": _one_per_node("pref-aff"),
        },
    ),
    # Preferred anti-affinity to the database pod's zone, one per node: the five nodes of zones a and c.
    "pref-anti": Scenario(
        5,
        2,
        "zone",
        {"a": 3, "c": 2},
        spec={
            "affinity": {"podAntiAffinity": {PREFERRED: [_weighted("db", ZONE)]}},
            "topologySpreadConstraints": _one_per_node("pref-anti"),
        },
    ),
    # No rule of its own: the existing guards' preferred anti-affinity (symmetric) keeps it out of zone c.
    "shy": Scenario(6, 2, "zone", {"a": 3, "b": 3}, spec={"topologySpreadConstraints": _one_per_node("shy")}),
    # An image three nodes hold (ImageLocality: 100 points there, 0 elsewhere), one per node: those three.
    "img": Scenario(
        3,
        2,
        "node",
        _hosts("b-0", "b-1", "c-0"),
        spec={"topologySpreadConstraints": _one_per_node("img")},
        image=BIG_IMAGE[0],
    ),
    # 8Gi of memory, no CPU, on bal-0 (CPU half used) or bal-1 (memory 3/8 used). LeastAllocated says
    # bal-1 (66 to 60); BalancedAllocation says bal-0 (87 to 68), and the sum wins: bal-0 ("cpu").
    "balance": Scenario(
        1,
        2,
        "balance",
        {"cpu": 1},
        spec={"nodeSelector": {"pool": "balance"}, "tolerations": _tolerate("balance")},
        resources={"requests": {"memory": "8Gi"}},
    ),
    # -- phase 2 (issue #18) ----------------------------------------------------------------------------
    # Another EBS volume in zone b, shared by the replicas: b-0 is at its CSINode's limit of one
    # (NodeVolumeLimits), b-1 and b-2 take one each, and the third finds the volume attached there.
    "ebs-b": Scenario(
        3,
        2,
        "node",
        _hosts("b-1", "b-2"),
        pending=1,
        spec={"nodeSelector": {ZONE: "b"}, "volumes": [_volume("ebs", EBS_SECOND)]},
    ),
}
NODES = {"a": 3, "b": 3, "c": 2}  # plus two tainted infra nodes and two tainted balance nodes in zone c
EBS_NODES = ("b-0", "b-1", "b-2")  # each with a CSINode allowing one ebs.csi.aws.com volume
IMAGE_NODES = ("b-0", "b-1", "c-0")


def _deploy(api: client.ApiClient, namespace: str, scheduler_name: str, phase: int) -> None:
    apps = client.AppsV1Api(api)
    for app, scenario in WORKLOAD.items():
        if scenario.phase != phase:
            continue
        spec = pod_body("x", {"app": app}, scheduler=scheduler_name, **scenario.spec)["spec"]
        container = spec["containers"][0]
        if scenario.resources is not None:
            container["resources"] = scenario.resources
        if scenario.image is not None:
            container["image"] = scenario.image
        apps.create_namespaced_deployment(
            namespace,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app},
                "spec": {
                    "replicas": scenario.replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app}}, "spec": spec},
                },
            },
        )


def _outcome(
    core: client.CoreV1Api, namespace: str, domains: dict[str, dict[str, str]], phase: int
) -> dict[str, Any] | None:
    """Per Deployment of phases up to ``phase``: bound pods per domain, and the sorted messages of its
    Pending pods; None until every replica exists and is either bound or refused."""
    pods = [p for p in pods_in(core, namespace) if not p.metadata.deletion_timestamp]
    by_app: dict[str, list[Any]] = collections.defaultdict(list)
    for pod in pods:
        by_app[pod.metadata.labels["app"]].append(pod)
    out: dict[str, Any] = {}
    for app, scenario in WORKLOAD.items():
        if scenario.phase > phase:
            continue
        group = by_app.get(app, [])
        if len(group) != scenario.replicas:
            return None
        pending = [p for p in group if not p.spec.node_name]
        conditions = [scheduled_condition(p) for p in pending]
        if any(c is None or c.status != "False" or c.reason != "Unschedulable" for c in conditions):
            return None
        counts = collections.Counter(domains[p.spec.node_name][scenario.domain] for p in group if p.spec.node_name)
        out[app] = {
            "counts": dict(sorted(counts.items())),
            "pending": sorted(without_preemption(c.message) for c in conditions),
        }
    return out


def _settle(core: client.CoreV1Api, namespace: str, domains: dict[str, dict[str, str]], phase: int) -> dict[str, Any]:
    """The outcome once every pod is decided, and still the same 2 s later (a retry of a Pending pod
    that would bind, or a late bind, shows up as a change)."""
    while True:
        first: dict[str, Any] = wait_for(
            lambda: _outcome(core, namespace, domains, phase), 120, f"{namespace} phase {phase} settled"
        )
        time.sleep(2)
        if _outcome(core, namespace, domains, phase) == first:
            return first


def _run(
    api: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    scheduler_name: str,
    domains: dict[str, dict[str, str]],
) -> dict[str, Any]:
    outcome: dict[str, Any] = {}
    for phase in (1, 2):
        _deploy(api, namespace, scheduler_name, phase)
        outcome = _settle(core, namespace, domains, phase)
    return outcome


def _make_nodes(nodes: Callable[..., str]) -> dict[str, dict[str, str]]:
    """The twelve nodes; returns node name -> its domains (``zone``, ``node`` without the test's
    prefix, ``balance``)."""
    domains: dict[str, dict[str, str]] = {}

    def add(short: str, zone: str, labels: dict[str, str] | None = None, **kwargs: Any) -> None:
        name = nodes(short, labels={ZONE: zone, **(labels or {})}, **kwargs)
        domains[name] = {"zone": zone, "node": short, "balance": (labels or {}).get("balance", "")}

    for zone, count in NODES.items():
        for i in range(count):
            short = f"{zone}-{i}"
            labels = {"ebs": "first"} if short == "b-0" else {}
            add(short, zone, labels, images=[BIG_IMAGE] if short in IMAGE_NODES else [])
    for i in range(2):
        add(
            f"infra-{i}",
            "c",
            {"pool": "infra"},
            taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
        )
    for i, heavy in enumerate(("cpu", "mem")):
        taint = {"key": "dedicated", "value": "balance", "effect": "NoSchedule"}
        add(f"bal-{i}", "c", {"pool": "balance", "balance": heavy}, taints=[taint])
    return domains


def test_same_workload_same_outcome_as_kube_scheduler(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    domains = _make_nodes(nodes)
    storage = client.StorageV1Api(api)
    csi_nodes = [name for name, d in domains.items() if d["node"] in EBS_NODES]
    for name in csi_nodes:
        driver = {"name": "ebs.csi.aws.com", "nodeID": name, "allocatable": {"count": 1}}
        storage.create_csi_node({"metadata": {"name": name}, "spec": {"drivers": [driver]}})
    try:
        _compare(api, core, domains, kube_scheduler)
    finally:
        for name in csi_nodes:
            storage.delete_csi_node(name)


def _compare(
    api: client.ApiClient,
    core: client.CoreV1Api,
    domains: dict[str, dict[str, str]],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    # Upstream's default profile as it ships: no plugins restricted, only the name changed.
    kube_scheduler({"schedulerName": UPSTREAM})
    outcomes = {}
    for who in (UPSTREAM, "spread-scheduler"):
        namespace = f"parity-{who}"
        create_namespace(core, namespace)
        try:
            outcomes[who] = _run(api, core, namespace, who, domains)
        finally:
            core.delete_namespace(namespace, grace_period_seconds=0)
        # The next run starts on empty nodes.
        wait_for(lambda ns=namespace: not pods_in(core, ns), 90, f"{namespace} emptied")

    upstream, ours = outcomes[UPSTREAM], outcomes["spread-scheduler"]
    # The workload is what we think: upstream places each Deployment as designed.
    assert {app: o["counts"] for app, o in upstream.items()} == {app: s.expected for app, s in WORKLOAD.items()}
    assert {app: len(o["pending"]) for app, o in upstream.items()} == {app: s.pending for app, s in WORKLOAD.items()}
    # And we end the same way, Pending messages included.
    mismatched = {app: {"ours": ours[app], "upstream": upstream[app]} for app in WORKLOAD if ours[app] != upstream[app]}
    assert not mismatched, f"{len(mismatched)} of {len(WORKLOAD)} Deployments differ: {sorted(mismatched)}"
