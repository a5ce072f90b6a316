"""Seeded random clusters that the API server would accept, for the differential test against upstream.

Nodes over regions/zones/hostnames (some missing topology labels), taints of all effects, cordoned
nodes; existing pods in 1-3 namespaces (some terminating, some owned by ReplicaSets/StatefulSets that
Services select); pending pods with nodeSelector, required/preferred affinity over every operator
(matchFields too), tolerations of every operator/effect, 0-3 spread constraints using every field;
and a config with System or List default constraints.

Resources (issue #8): node allocatable (sometimes tight, sometimes missing a resource, an extended
``example.com/gpu``), container requests, init containers (plain and restartable sidecars), pod
overhead, pod-level requests and hostPorts on both existing and pending pods, and NodeResourcesFit
args (each scoring strategy, resource weights, ignoredResources/ignoredResourceGroups).

Images and BalancedAllocation args (issue #17): nodes' ``status.images`` (names with tags, ports and
digests, several names per image, sizes around ImageLocality's 23 MB / 1000 MB bounds), container
images that match them with or without ``:latest``, and NodeResourcesBalancedAllocation resources
with the extended GPU as a third resource. They come from a second RNG so that every other field of
a seed stays what it was.
"""

from __future__ import annotations

import json
import random
from typing import Any

from scheduler.config import upstream_config

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
LABEL_KEYS = ("app", "tier", "team", "disk", "gen")
LABEL_VALUES = ("a", "b", "c", "ssd", "1", "5", "05", "12", "1_0")
TOPOLOGY_KEYS = (ZONE, HOSTNAME, REGION, "rack")
NAMESPACES = ("default", "team-a", "team-b")


GPU = "example.com/gpu"
CPUS = ("0", "50m", "100m", "250m", "500m", "1", "1500m", "2")
MEMORIES = ("0", "64Mi", "128Mi", "200Mi", "512Mi", "1Gi", "1500M")
PORTS = (80, 443, 8080)


def _fit_args(rng: random.Random) -> dict[str, Any]:
    """NodeResourcesFitArgs: one of the three strategies, with or without ignored resources."""
    resources = [{"name": "cpu", "weight": rng.randint(1, 3)}, {"name": "memory", "weight": rng.randint(1, 3)}]
    if rng.random() < 0.3:
        resources.append({"name": GPU, "weight": rng.randint(1, 5)})
    strategy: dict[str, Any] = {"type": rng.choice(("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"))}
    if rng.random() < 0.6:
        strategy["resources"] = resources
    if strategy["type"] == "RequestedToCapacityRatio":
        strategy["resources"] = resources
        points = sorted(rng.sample(range(0, 101), rng.randint(1, 3)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": rng.randint(0, 10)} for u in points]
        }
    args: dict[str, Any] = {"scoringStrategy": strategy}
    if rng.random() < 0.2:
        args["ignoredResources"] = [GPU]
    elif rng.random() < 0.2:
        args["ignoredResourceGroups"] = ["example.com"]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs", **args}


def config(rng: random.Random) -> dict[str, Any]:
    """Our default profile spelled out for both sides, with System or List defaulting."""
    args: dict[str, Any] = {"defaultingType": "System"}
    if rng.random() < 0.3:
        keys = rng.sample(TOPOLOGY_KEYS[:3], rng.randint(0, 2))
        args = {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": rng.randint(1, 3),
                    "topologyKey": key,
                    "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                }
                for key in keys
            ],
        }
    plugin_config = [
        {
            "name": "PodTopologySpread",
            "args": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "PodTopologySpreadArgs", **args},
        }
    ]
    if rng.random() < 0.3:
        plugin_config.append({"name": "NodeResourcesFit", "args": _fit_args(rng)})
    # The oracle's own loop runs no PostFilter: both sides go without it.
    return upstream_config(plugin_config, post_filter=False)


def _allocatable(rng: random.Random) -> dict[str, str]:
    """Mostly roomy, sometimes tight (a few pods fill it), now and then missing memory or holding GPUs."""
    alloc = {
        "cpu": rng.choice(("1", "2", "4", "3500m", "16")),
        "memory": rng.choice(("1Gi", "2Gi", "4Gi", "16Gi", "4000M")),
        "pods": rng.choice(("110", "110", "110", "2", "4", "8")),
    }
    if rng.random() < 0.2:
        alloc[GPU] = str(rng.randint(0, 4))
    if rng.random() < 0.2:
        alloc["ephemeral-storage"] = rng.choice(("1Gi", "10Gi"))
    if rng.random() < 0.03:
        del alloc["memory"]
    return alloc


def _requests(rng: random.Random, gpu: bool = False) -> dict[str, str]:
    out = {}
    if rng.random() < 0.8:
        out["cpu"] = rng.choice(CPUS)
    if rng.random() < 0.7:
        out["memory"] = rng.choice(MEMORIES)
    if gpu and rng.random() < 0.3:
        out[GPU] = str(rng.randint(1, 2))
    if rng.random() < 0.05:
        out["ephemeral-storage"] = "500Mi"
    return out


def _container(rng: random.Random, name: str, gpu: bool, ports: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "x"}
    if rng.random() < 0.75:
        requests = _requests(rng, gpu)
        if requests:
            container["resources"] = {"requests": requests}
    if ports and rng.random() < 0.15:
        port: dict[str, Any] = {"containerPort": rng.choice(PORTS), "protocol": rng.choice(("TCP", "TCP", "UDP"))}
        port["hostPort"] = port["containerPort"]
        host_ip = rng.choice(("", "", "0.0.0.0", "10.0.0.1", "10.0.0.2"))
        if host_ip:
            port["hostIP"] = host_ip
        container["ports"] = [port]
    return container


def pod_spec(rng: random.Random, gpu: bool = True) -> dict[str, Any]:
    """Containers (1-2), sometimes init containers and sidecars, overhead and pod-level requests."""
    spec: dict[str, Any] = {
        "containers": [_container(rng, f"c{i}", gpu, ports=True) for i in range(rng.choice((1, 1, 2)))]
    }
    if rng.random() < 0.2:
        inits = []
        for i in range(rng.randint(1, 2)):
            init = _container(rng, f"init{i}", gpu, ports=False)
            if rng.random() < 0.4:
                init["restartPolicy"] = "Always"
            inits.append(init)
        spec["initContainers"] = inits
    if rng.random() < 0.08:
        spec["overhead"] = {"cpu": rng.choice(("10m", "250m")), "memory": rng.choice(("10Mi", "120Mi"))}
    if rng.random() < 0.05:
        spec["resources"] = {"requests": {"cpu": rng.choice(("1", "3")), "memory": rng.choice(("1Gi", "3Gi"))}}
    return spec


def _labels(rng: random.Random, n: int = 3) -> dict[str, str]:
    return {k: rng.choice(LABEL_VALUES) for k in rng.sample(LABEL_KEYS, rng.randint(0, n))}


def _taint(rng: random.Random) -> dict[str, str]:
    taint = {
        "key": rng.choice(("dedicated", "gpu", "spot")),
        "effect": rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule")),
    }
    if rng.random() < 0.6:
        taint["value"] = rng.choice(("a", "b", "infra"))
    return taint


def nodes(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(rng.randint(1, 60)):
        name = f"node-{i}"
        labels = _labels(rng)
        if rng.random() < 0.92:
            labels[HOSTNAME] = name
        if rng.random() < 0.85:
            labels[ZONE] = f"zone-{rng.randint(1, 4)}"
        if rng.random() < 0.7:
            labels[REGION] = f"region-{rng.randint(1, 2)}"
        if rng.random() < 0.4:
            labels["rack"] = f"r{rng.randint(1, 6)}"
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            spec["taints"] = [_taint(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.07:
            spec["unschedulable"] = True
        status = {"allocatable": _allocatable(rng)}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": status,
            }
        )
    return out


def _selector(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return {}
    sel: dict[str, Any] = {}
    if rng.random() < 0.8:
        sel["matchLabels"] = {"app": rng.choice(("a", "b"))}
    if rng.random() < 0.3:
        op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
        expr: dict[str, Any] = {"key": rng.choice(("tier", "team")), "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = rng.sample(("a", "b", "c"), rng.randint(1, 2))
        sel["matchExpressions"] = [expr]
    return sel


def _requirement(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    key = rng.choice((*LABEL_KEYS, ZONE, HOSTNAME))
    expr: dict[str, Any] = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(LABEL_VALUES, rng.randint(1, 3))
    elif op in ("Gt", "Lt"):
        expr["values"] = [rng.choice(("3", "0", "-1", "10", "x"))]  # the API accepts a non-integer here
    return expr


def _term(rng: random.Random, node_names: list[str]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.85 or not node_names:
        term["matchExpressions"] = [_requirement(rng) for _ in range(rng.randint(1, 2))]
    if node_names and rng.random() < 0.2:
        term["matchFields"] = [
            {"key": "metadata.name", "operator": rng.choice(("In", "In", "NotIn")), "values": [rng.choice(node_names)]}
        ]
    return term


def _toleration(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(("Equal", "Exists", ""))
    tol: dict[str, Any] = {}
    if op == "Exists" and rng.random() < 0.2:
        tol["operator"] = "Exists"  # empty key: tolerates everything
    else:
        tol["key"] = rng.choice(("dedicated", "gpu", "spot", "node.kubernetes.io/unschedulable"))
        if op:
            tol["operator"] = op
        if op != "Exists":
            tol["value"] = rng.choice(("a", "b", "infra", ""))
    effect = rng.choice(("", "NoSchedule", "NoExecute", "PreferNoSchedule"))
    if effect:
        tol["effect"] = effect
        if effect == "NoExecute" and rng.random() < 0.3:
            tol["tolerationSeconds"] = 30
    return tol


def _constraints(rng: random.Random, labels: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        key = rng.choice(TOPOLOGY_KEYS)
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        if (key, when) in seen:
            continue
        seen.add((key, when))
        c: dict[str, Any] = {"maxSkew": rng.randint(1, 3), "topologyKey": key, "whenUnsatisfiable": when}
        sel = _selector(rng)
        if sel is not None:
            c["labelSelector"] = sel
            used = set(sel.get("matchLabels", {})) | {e["key"] for e in sel.get("matchExpressions", [])}
            if rng.random() < 0.2 and "team" not in used:
                c["matchLabelKeys"] = ["team"]
        if when == "DoNotSchedule" and rng.random() < 0.25:
            c["minDomains"] = rng.randint(1, 6)
        if rng.random() < 0.25:
            c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.25:
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        out.append(c)
    return out


def _owned_by(kind: str, ns: str, app: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": f"{kind.lower()}-{app}",
            "uid": f"uid-{ns}-{app}",
            "controller": True,
        }
    ]


def replicated(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``scenario(seed)`` plus 3-12 replicas of one of its pending pods (a Deployment's pods share a
    signature, so this is where results reused across pods would show a difference)."""
    objects, config = scenario(seed)
    rng = random.Random(seed ^ 0x5EED)
    pending = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("pending-")]
    template = rng.choice(pending)
    for j in range(rng.randint(3, 12)):
        copy = json.loads(json.dumps(template))
        copy["metadata"]["name"] = f"replica-{j}"
        copy["metadata"]["creationTimestamp"] = f"2026-01-01T00:01:{j:02d}Z"  # after every pending-* pod
        objects.append(copy)
    return objects, config


MB = 1024 * 1024
# (names, size): one image as a node lists it; pods refer to it by names[0] or a shorter spelling.
IMAGES = (
    (("nginx:latest", "nginx:1.25"), 60 * MB),
    (("gcr.io/app:v1",), 400 * MB),
    (("registry:5000/tool:latest",), 12 * MB),
    (("big:latest", "big@sha256:" + "ab" * 32), 2500 * MB),
    (("mid:2",), 900 * MB),
)
POD_IMAGES = (
    "nginx",
    "nginx:1.25",
    "nginx:1.26",
    "gcr.io/app:v1",
    "registry:5000/tool",
    "big",
    "big@sha256:" + "ab" * 32,
    "mid:2",
    "x",
)


def _images(objects: list[dict[str, Any]], config: dict[str, Any], seed: int) -> None:
    """Node images, container images and BalancedAllocation args, from their own RNG (see the docstring)."""
    rng = random.Random(seed ^ 0x1A6E5)
    for obj in objects:
        if obj["kind"] == "Node" and rng.random() < 0.6:
            obj["status"]["images"] = [
                {"names": list(names), "sizeBytes": size} for names, size in rng.sample(IMAGES, rng.randint(1, 4))
            ]
        elif obj["kind"] == "Pod":
            for key in ("initContainers", "containers"):
                for container in obj["spec"].get(key, []):
                    container["image"] = rng.choice(POD_IMAGES)
    if rng.random() < 0.25:
        resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
        if rng.random() < 0.6:
            resources.append({"name": GPU, "weight": 1})
        args = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesBalancedAllocationArgs"}
        config["profiles"][0].setdefault("pluginConfig", []).append(
            {"name": "NodeResourcesBalancedAllocation", "args": {**args, "resources": resources}}
        )


def scenario(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Objects (nodes, existing pods, workloads, pending pods) and the config, from one seed."""
    rng = random.Random(seed)
    node_objs = nodes(rng)
    names = [n["metadata"]["name"] for n in node_objs]
    objects: list[dict[str, Any]] = list(node_objs)
    namespaces = NAMESPACES[: rng.randint(1, 3)]
    owners: list[tuple[str, str, str]] = []
    for ns in namespaces:
        app = rng.choice(("a", "b"))
        if rng.random() < 0.6:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": f"svc-{app}", "namespace": ns},
                    "spec": {"selector": {"app": app}},
                }
            )
        kind = rng.choice(("ReplicaSet", "StatefulSet"))
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": {"name": f"{kind.lower()}-{app}", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": app}}},
            }
        )
        owners.append((ns, kind, app))
    for i in range(rng.randint(0, 3 * len(names))):
        ns, kind, app = rng.choice(owners)
        labels = _labels(rng) | ({"app": app} if rng.random() < 0.7 else {})
        meta: dict[str, Any] = {"name": f"existing-{i}", "namespace": ns, "labels": labels}
        if rng.random() < 0.5:
            meta["ownerReferences"] = _owned_by(kind, ns, app)
        if rng.random() < 0.08:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": {"nodeName": rng.choice(names), **pod_spec(rng)},
                "status": {"phase": rng.choice(("Running", "Running", "Pending", "Succeeded"))},
            }
        )
    for i in range(rng.randint(1, 6)):
        ns, kind, app = rng.choice(owners)
        labels = _labels(rng) | ({"app": app} if rng.random() < 0.8 else {})
        meta = {
            "name": f"pending-{i}",
            "namespace": ns,
            "labels": labels,
            "creationTimestamp": f"2026-01-01T00:00:{rng.randint(0, 59):02d}Z",
        }
        if rng.random() < 0.5:
            meta["ownerReferences"] = _owned_by(kind, ns, app)
        spec: dict[str, Any] = {"schedulerName": "spread-scheduler", **pod_spec(rng)}
        if rng.random() < 0.3:
            spec["priority"] = rng.choice((0, 10, 100))
        if rng.random() < 0.25:
            spec["nodeSelector"] = _labels(rng, 1) or {"disk": "ssd"}
        affinity: dict[str, Any] = {}
        if rng.random() < 0.35:
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [_term(rng, names) for _ in range(rng.randint(1, 3))]
            }
        if rng.random() < 0.35:
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "preference": _term(rng, [])} for _ in range(rng.randint(1, 3))
            ]
        if affinity:
            spec["affinity"] = {"nodeAffinity": affinity}
        if rng.random() < 0.5:
            spec["tolerations"] = [_toleration(rng) for _ in range(rng.randint(1, 3))]
        constraints = _constraints(rng, labels)
        if constraints:
            spec["topologySpreadConstraints"] = constraints
        objects.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
        )
    cfg = config(rng)
    _images(objects, cfg, seed)
    return objects, cfg
