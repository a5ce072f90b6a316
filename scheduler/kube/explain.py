"""``spread-scheduler explain NAMESPACE/POD``: replay one pod's scheduling on the live cluster's state.

Reads nodes, pods, Namespaces (for namespaceSelector) and the objects default spreading uses, then
runs the same pipeline as the scheduler with that pod pending (a bound pod is re-decided as if it were
not bound yet), and prints every node's verdict and scores. Only that pod is decided: other pending
pods stay out of the replay, since placing them first would change the answer (they hold no room
until they are bound). Read-only: it never writes to the cluster.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.aio import client

from scheduler.config import SchedulerConfig
from scheduler.kube.app import api_client
from scheduler.kube.extender import simulate_with_extenders
from scheduler.simulate import render_table, replay_objects, to_json

__all__ = ["explain", "list_cluster_objects", "replay_objects"]

_LISTS = (
    ("Node", "list_node_without_preload_content", "core"),
    ("Namespace", "list_namespace_without_preload_content", "core"),
    ("Pod", "list_pod_for_all_namespaces_without_preload_content", "core"),
    ("Service", "list_service_for_all_namespaces_without_preload_content", "core"),
    ("ReplicationController", "list_replication_controller_for_all_namespaces_without_preload_content", "core"),
    ("ReplicaSet", "list_replica_set_for_all_namespaces_without_preload_content", "apps"),
    ("StatefulSet", "list_stateful_set_for_all_namespaces_without_preload_content", "apps"),
)


async def list_cluster_objects(api: client.ApiClient) -> list[dict[str, Any]]:
    """Nodes, Namespaces, Pods and the objects default spreading reads, each with its ``kind`` set."""
    apis = {"core": client.CoreV1Api(api), "apps": client.AppsV1Api(api)}
    objects: list[dict[str, Any]] = []
    for kind, method, group in _LISTS:
        response = await getattr(apis[group], method)()
        try:
            data = json.loads(await response.read())
        finally:
            response.release()
        if response.status != 200:
            raise RuntimeError(f"listing {kind}: HTTP {response.status}: {data.get('message')}")
        objects += [{**item, "kind": kind} for item in data.get("items", [])]
    return objects


async def explain(config: SchedulerConfig, target: str, kubeconfig: str | None, output: str, seed: int | None) -> str:
    namespace, _, name = target.rpartition("/")
    namespace = namespace or "default"
    api = await api_client(kubeconfig or config.kubeconfig)
    try:
        objects = await list_cluster_objects(api)
    finally:
        await api.close()  # type: ignore[no-untyped-call]
    attempts, sim = await simulate_with_extenders(config, replay_objects(objects, namespace, name, config), seed)
    return to_json(attempts, sim.cache) if output == "json" else render_table(attempts, sim.cache)
