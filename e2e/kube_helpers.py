"""Small helpers the e2e tests and the demo share: fake nodes, pods, waiting on conditions."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yaml
from kubernetes import client, utils, watch

from e2e.cluster import KWOK_NODE_LABEL
from scheduler.config import upstream_config

T = TypeVar("T")

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SCHEDULER = "spread-scheduler"
READY_MESSAGE = "kubelet is posting ready status"  # the kubelet's words, and kwok's


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def node_body(
    name: str,
    labels: dict[str, str] | None = None,
    taints: Iterable[dict[str, str]] = (),
    unschedulable: bool = False,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    images: Iterable[tuple[str, int]] = (),
    kubelet: bool = True,
) -> dict[str, Any]:
    """A Node created Ready with its capacity, as a kubelet registers it.

    ``kubelet``: kwok (the local cluster's kubelet) heartbeats it and runs the pods bound to it; False
    gives a static object, as scheduler_perf's nodes, that goes NotReady after the node lifecycle
    controller's grace period (50 s; 20 s in the e2e suite) on a cluster that runs it. ``images`` are
    (name, sizeBytes) pairs for ``status.images`` (what ImageLocality reads); the API server keeps status sent on
    create for Nodes, and kwok's heartbeats rewrite only conditions.
    """
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    managed = {KWOK_NODE_LABEL: "fake"} if kubelet else {}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **managed, **(labels or {})}},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": READY_MESSAGE}],
            "phase": "Running",
        },
    }
    if images:
        body["status"]["images"] = [{"names": [name], "sizeBytes": size} for name, size in images]
    return body


def create_namespace(core: client.CoreV1Api, name: str) -> None:
    """Create a namespace and wait for its ``default`` ServiceAccount (a pod created before it is
    refused by the ServiceAccount admission plugin)."""
    core.create_namespace({"metadata": {"name": name}})
    wait_for(
        lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(name).items),
        30,
        f"ServiceAccount default in {name}",
    )


def create_node(core: client.CoreV1Api, name: str, **kwargs: Any) -> None:
    core.create_node(node_body(name, **kwargs))


def pod_body(
    name: str,
    labels: dict[str, str] | None = None,
    scheduler: str = SCHEDULER,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.invalid/pause:3.10"}],
            **spec,
        },
    }


def deployment(name: str, replicas: int, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods labelled ``app: name`` with the pod ``spec``."""
    labels = {"app": name}
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def disruption_budget(name: str, namespace: str, app: str, **spec: Any) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget of the pods labelled ``app: <app>`` (``spec``: minAvailable...)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
    }


def zone_and_host_spread(match: dict[str, str]) -> list[dict[str, Any]]:
    """The flagship spread: hard over zones, soft over hosts (maxSkew 1 each), for pods matching ``match``."""
    return [
        zone_spread(1, match),
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": match},
        },
    ]


def stateful_set(
    name: str, replicas: int, storage_class: str, spread: dict[str, Any], scheduler: str = SCHEDULER
) -> dict[str, Any]:
    """A StatefulSet of ``replicas`` pods labelled ``app: name``, each with a 1Gi ReadWriteOnce claim
    ``data-<pod>`` of ``storage_class``, spread by ``spread``. The default ``OrderedReady`` policy:
    pod N is created once pod N-1 is Running and Ready (kwok, the nodes' kubelet, makes it so)."""
    labels = {"app": name}
    template = pod_body(name, labels, scheduler=scheduler, topologySpreadConstraints=[spread])
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": storage_class,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def zone_spread(max_skew: int = 1, match: dict[str, str] | None = None, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": ZONE,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": match or {}},
    }


# What DefaultPreemption appends to a FitError message (after DynamicResources' "no new claims to
# deallocate"). Both schedulers append it now; the comparisons written before we preempted still
# cut it off (e2e/test_preemption.py is where preemption itself is compared).
PREEMPTION_MESSAGES = (", preemption: ", " preemption: ")


def without_preemption(message: str) -> str:
    """A FitError message without DefaultPreemption's part."""
    for marker in PREEMPTION_MESSAGES:
        message = message.split(marker, 1)[0]
    return message


def server_minor(api: client.ApiClient) -> int:
    """The API server's minor version (``/version``; some providers write "37+")."""
    return int("".join(ch for ch in client.VersionApi(api).get_code().minor if ch.isdigit()))


def node_of(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    pod = core.read_namespaced_pod(name, namespace)
    return pod.spec.node_name or None


def pods_in(core: client.CoreV1Api, namespace: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace).items)


def bound_pods(core: client.CoreV1Api, namespace: str, expected: int) -> list[Any]:
    """The namespace's pods bound to a node once there are ``expected`` of them, else [] (for ``wait_for``)."""
    pods = [p for p in pods_in(core, namespace) if p.spec.node_name]
    return pods if len(pods) >= expected else []


def is_ready(pod: Any) -> bool:
    """The pod's Ready condition is True (its kubelet, kwok here, says its containers run and are ready)."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def scheduled_condition(pod: Any) -> Any | None:
    for cond in pod.status.conditions or []:
        if cond.type == "PodScheduled":
            return cond
    return None


def wait_unschedulable(core: client.CoreV1Api, namespace: str, name: str, timeout: float = 30.0) -> Any:
    """Wait until pod ``name`` is PodScheduled=False (refused, for any reason); returns that condition."""

    def refused() -> Any:
        cond = scheduled_condition(core.read_namespaced_pod(name, namespace))
        return cond if cond is not None and cond.status == "False" else None

    return wait_for(refused, timeout, f"{name} PodScheduled=False")


def events_for(core: client.CoreV1Api, namespace: str, name: str) -> list[dict[str, Any]]:
    """events.k8s.io/v1 Events about one object, as dicts (the typed client refuses core/v1-born events)."""
    response = client.EventsV1Api(core.api_client).list_namespaced_event(namespace, _preload_content=False)
    items = json.loads(response.data)["items"]
    return [e for e in items if (e.get("regarding") or {}).get("name") == name]


def zoned_nodes(nodes: Callable[..., str], zones: dict[str, int]) -> dict[str, str]:
    """Create ``count`` nodes per zone; returns node name -> zone."""
    out: dict[str, str] = {}
    for zone, count in zones.items():
        for i in range(count):
            out[nodes(f"{zone}-{i}", labels={ZONE: zone})] = zone
    return out


def side_by_side(
    kube_scheduler: Callable[[dict[str, Any]], object],
    nodes: Callable[..., str],
    upstream: str,
    set_label: str,
    **node: Any,
) -> tuple[dict[str, str], dict[str, str]]:
    """kube-scheduler started as ``upstream`` beside ours, with the profile ours runs (upstream's
    defaults), and a set of nodes for each: zones a, b and c of two nodes, labelled ``set_label: <set>``
    (``node``: more of ``nodes``' arguments). Returns each set's schedulerName (``ours``, ``upstream``)
    and node name -> zone (its last letter a, b or c).

    Each set has zone names of its own (a tag of this run, the set, the letter): the node lifecycle
    controller rate-limits its taints per zone (0.1 nodes/s), so each set's zone is tainted on its own
    clock, the same one.
    """
    (profile,) = upstream_config()["profiles"]
    kube_scheduler({**profile, "schedulerName": upstream})
    sets = {"ours": SCHEDULER, "upstream": upstream}
    tag = uuid.uuid4().hex[:4]
    zone_of: dict[str, str] = {}
    for node_set in sets:
        for zone in "abc":
            for i in range(2):
                name = f"{tag}-{node_set}-{zone}"
                zone_of[nodes(f"{node_set}-{zone}{i}", labels={ZONE: name, set_label: node_set}, **node)] = name
    return sets, zone_of


def watch_bindings(core: client.CoreV1Api, namespace: str, stop: threading.Event, seen: dict[str, list[str]]) -> None:
    """Record every distinct nodeName each pod shows, from the watch stream (not from polling), until
    ``stop``. A stream that ends (its timeout, or an API server going away) is opened again; a fresh
    stream starts with the current state, and nodeName cannot change unseen (the API forbids it)."""
    while not stop.is_set():
        w = watch.Watch()
        try:
            for event in w.stream(core.list_namespaced_pod, namespace, timeout_seconds=30):
                pod = event["object"]
                node = pod.spec.node_name
                history = seen.setdefault(pod.metadata.name, [])
                if node and (not history or history[-1] != node):
                    history.append(node)
                if stop.is_set():
                    w.stop()
        except Exception:  # the server went away mid-stream: watch again once it is back
            stop.wait(0.2)


def create_object(api: client.ApiClient, doc: dict[str, Any]) -> None:
    """Create one manifest object of any built-in kind (``kubectl create`` for a dict); 409 is fine."""
    try:
        utils.create_from_dict(api, doc, namespace=doc["metadata"].get("namespace"))
    except utils.FailToCreateError as failed:
        refused = [exc for exc in failed.api_exceptions if exc.status != 409]
        if refused:
            raise refused[0] from failed


def service_account_token(core: client.CoreV1Api, namespace: str, name: str, seconds: int = 3600) -> str:
    """A bound token from the TokenRequest API, as the kubelet projects it into a pod."""
    request = {"spec": {"expirationSeconds": seconds}}
    return str(core.create_namespaced_service_account_token(name, namespace, request).status.token)


def token_kubeconfig(admin_kubeconfig: str, token: str) -> dict[str, Any]:
    """A kubeconfig for the same API server as ``admin_kubeconfig``, logging in with ``token`` only."""
    with open(admin_kubeconfig) as f:
        admin = yaml.safe_load(f)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sa",
        "clusters": [{"name": "local", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "sa"}}],
    }
