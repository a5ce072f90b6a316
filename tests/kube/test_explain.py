"""``explain``'s replay: only the pod asked about is decided, on the cluster as it stands."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.kube.explain import replay_objects
from scheduler.simulate import Simulation

ZONE = "topology.kubernetes.io/zone"


def _node(name: str, zone: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _web(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "spread-scheduler",
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}, "uid": name},
        "spec": spec,
    }


def _cluster() -> list[dict[str, Any]]:
    nodes = [_node("node-a", "a"), _node("node-b", "b"), _node("node-c", "c")]
    pods = [_web("web-a", "node-a"), _web("web-b", "node-b"), _web("web-c", "node-c"), _web("web-pending", None)]
    return [{"kind": "Namespace", "metadata": {"name": "default"}}, *nodes, *pods]


def _decide(objects: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    sim = Simulation(load_config(None), seed=1)
    sim.add_objects(objects)
    return [(a.pod.key, a.host) for a in sim.run()]


def test_a_bound_pod_is_re_decided_alone_and_lands_where_it_is() -> None:
    # Before: the other pending replica was replayed too, took node-c first, and web-c came out Pending.
    assert _decide(replay_objects(_cluster(), "default", "web-c", load_config(None))) == [("default/web-c", "node-c")]


def test_a_pending_pod_is_decided_against_the_bound_pods_only() -> None:
    objects = replay_objects(_cluster(), "default", "web-pending", load_config(None))
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"] == ["web-a", "web-b", "web-c", "web-pending"]
    assert _decide(objects) == [("default/web-pending", None)]


def test_other_objects_pass_through_and_a_missing_pod_is_named() -> None:
    objects = replay_objects(_cluster(), "default", "web-a", load_config(None))
    assert sum(o["kind"] == "Namespace" for o in objects) == 1 and sum(o["kind"] == "Node" for o in objects) == 3
    with pytest.raises(LookupError, match="pod default/nope not found"):
        replay_objects(_cluster(), "default", "nope", load_config(None))
