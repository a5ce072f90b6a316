"""A zone lost and back, the setup that e2e/test_rebalance.py tests and bench/rebalance_compare.py
measures: kwok nodes in zones a/b/c (``main``: two a zone, or ``nodes_per_zone``; ``side``: one each in a and b),
Deployments of ``REPLICAS`` pods with a hard zone spread, zone C's main nodes NoExecute-tainted and untainted again.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from e2e.kube_helpers import ZONE, create_object, deployment, is_ready, pod_body, wait_for
from scheduler.spread.rebalance import REBALANCE_ANNOTATION

REPLICAS = 12
DOWN = "e2e.spread-scheduler.io/zone-down"  # the zone's loss: a NoExecute taint on its nodes


def rebalance_workload(
    name: str, node_set: str, max_skew: int, opt_in: bool, honor: bool, replicas: int = REPLICAS
) -> dict[str, Any]:
    """A Deployment of ``REPLICAS`` 10m pods on the nodes of ``node_set`` (``main`` or ``side``) with a hard
    zone spread of ``max_skew``; ``opt_in``: our rebalancing annotation; ``honor``: ``nodeTaintsPolicy: Honor``."""
    labels = {"app": name}
    spread: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels},
    }
    if honor:
        spread["nodeTaintsPolicy"] = "Honor"
    spec = pod_body(name, labels, nodeSelector={"rebalance-set": node_set}, topologySpreadConstraints=[spread])["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
    body = deployment(name, replicas, spec)
    if opt_in:
        body["spec"]["template"]["metadata"]["annotations"] = {REBALANCE_ANNOTATION: "true"}
    return body


def minimum_moves(counts: list[int]) -> int:
    """The fewest pods to move so that the counts differ by at most 1 (maxSkew 1): the largest zones
    keep the ceiling of the mean, the rest the floor; every pod above its zone's target moves."""
    total, zones = sum(counts), len(counts)
    targets = [total // zones + (1 if i < total % zones else 0) for i in range(zones)]
    return sum(max(0, c - t) for c, t in zip(sorted(counts, reverse=True), targets, strict=True))


@dataclass
class Zones:
    """The test's nodes and Deployments, and the zone's loss and return."""

    api: client.ApiClient
    core: client.CoreV1Api
    namespace: str
    nodes: Callable[..., str]
    apps: dict[str, str] = field(default_factory=dict)  # app -> node set, as create() made them
    replicas: dict[str, int] = field(default_factory=dict)  # app -> its Deployment's replicas
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:4])
    zone_of: dict[str, str] = field(default_factory=dict)  # node -> a/b/c
    nodes_per_zone: int = 2  # main nodes a zone
    capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "16"})  # node_body's cpu, memory, pods
    labels: dict[str, str] = field(default_factory=dict)  # more labels on every node

    def create(self, specs: dict[str, dict[str, Any]]) -> None:
        for app, spec in specs.items():
            self.apps[app] = spec["spec"]["template"]["spec"]["nodeSelector"]["rebalance-set"]
            self.replicas[app] = spec["spec"]["replicas"]
        for zone in "abc":
            for i in range(self.nodes_per_zone):
                labels = {ZONE: f"{self.tag}-{zone}", "rebalance-set": "main", **self.labels}
                self.zone_of[self.nodes(f"main-{zone}{i}", labels=labels, **self.capacity)] = zone
        if "side" in self.apps.values():
            for zone in "ab":
                labels = {ZONE: f"{self.tag}-side-{zone}", "rebalance-set": "side", **self.labels}
                self.zone_of[self.nodes(f"side-{zone}", labels=labels, **self.capacity)] = zone
        for spec in specs.values():
            spec["metadata"]["namespace"] = self.namespace
            create_object(self.api, spec)

    def per_zone(self, app: str) -> dict[str, int] | None:
        """The app's zones (a/b/c) when all its pods are live, bound, Running and Ready; else None."""
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}").items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        if len(pods) != self.replicas[app] or len(live) != self.replicas[app]:
            return None
        if not all(p.spec.node_name and p.status.phase == "Running" and is_ready(p) for p in live):
            return None
        counts = collections.Counter(self.zone_of[p.spec.node_name] for p in live)
        return {z: counts.get(z, 0) for z in "abc"}

    def settled(self) -> dict[str, dict[str, int]] | None:
        now = {app: self.per_zone(app) for app in self.apps}
        return now if all(v is not None for v in now.values()) else None  # type: ignore[misc]

    def lose_zone_c(self) -> dict[str, dict[str, int]]:
        """NoExecute-taint zone C's nodes; wait until every main-set app has been replaced in A and B."""
        wait_for(self.settled, 120, "every Deployment Running and Ready", interval=0.5)
        self.taint_zone_c()

        def failed_over() -> dict[str, dict[str, int]] | None:
            now = self.settled()
            main = [app for app, node_set in self.apps.items() if node_set == "main"]
            return now if now is not None and all(now[app]["c"] == 0 for app in main) else None

        return wait_for(failed_over, 120, "zone C's pods replaced in A and B", interval=0.5)

    def taint_zone_c(self) -> None:
        """The loss itself, without the waits: a NoExecute taint on zone C's main nodes."""
        for name in self.lost:
            self.core.patch_node(name, {"spec": {"taints": [{"key": DOWN, "effect": "NoExecute"}]}})

    @property
    def lost(self) -> list[str]:
        return [n for n, z in self.zone_of.items() if z == "c" and "-main-" in n]

    def bring_back_zone_c(self) -> None:
        for name in self.lost:
            self.core.patch_node(name, {"spec": {"taints": []}})

    def rebalanced(self, app: str) -> dict[str, int] | None:
        zones = self.per_zone(app)
        return zones if zones is not None and max(zones.values()) - min(zones.values()) <= 1 else None


@dataclass
class Out:
    """``Zones.rebalanced(app)`` to wait for, counting at every look the most of the app's pods
    missing from the live, bound and Ready ones (evicted, or their replacements on their way)."""

    zones: Zones
    app: str
    peak: int = 0

    def __call__(self) -> dict[str, int] | None:
        pods = self.zones.core.list_namespaced_pod(self.zones.namespace, label_selector=f"app={self.app}").items
        ready = [p for p in pods if p.metadata.deletion_timestamp is None and p.spec.node_name and is_ready(p)]
        self.peak = max(self.peak, self.zones.replicas[self.app] - len(ready))
        return self.zones.rebalanced(self.app)
