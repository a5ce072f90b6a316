"""Bytes the scheduler keeps per cached node and per cached pod (issue #22: size the Deployment's
memory from measurements, and see what the cache keeps that no plugin reads).

Nodes and pods are shaped as a kubelet-reported cluster holds them (``managedFields`` dropped, as
the watch does): a node with ten labels, five conditions, 30 images and its nodeInfo; a ReplicaSet's
running pod with the service-account volume, default tolerations, env, probes-free container status.
They are decoded from JSON as the watch hands them over, then added through the cache's event path
(``simulate``'s, the live loop's handlers). ``tracemalloc`` counts what stays allocated: per object,
the total; the parsed object alone (``Pod``/``Node`` with the part of the API object it keeps as
``raw``), the rest being the cache's own records; and, to compare, the whole decoded API object (what
the cache kept before it kept only what is read of it).

    .venv/bin/python -m bench.memory --nodes 500 --pods 10000
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from typing import Any

from scheduler.api.objects import Node, Pod, forget_spec_parses
from scheduler.config import parse_config, upstream_config
from scheduler.simulate import Simulation

ZONES = ("zone-a", "zone-b", "zone-c")


def kubelet_node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    condition = {
        "lastHeartbeatTime": "2026-11-27T00:00:00Z",
        "lastTransitionTime": "2026-11-20T00:00:00Z",
        "message": "kubelet has sufficient memory available",
        "reason": "KubeletHasSufficientMemory",
        "status": "False",
    }
    kinds = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable", "Ready")
    resources = {
        "cpu": "8",
        "ephemeral-storage": "95001823Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "32780340Ki",
        "pods": "110",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-11-20T00:00:00Z",
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "m6i.2xlarge",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.2xlarge",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": zone,
                "pool": "general",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{i:017x}"}),
            },
        },
        "spec": {"podCIDR": f"10.{i // 256}.{i % 256}.0/24", "providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "addresses": [
                {"address": f"10.0.{i // 256}.{i % 256}", "type": "InternalIP"},
                {"address": f"ip-10-0-{i // 256}-{i % 256}.ec2.internal", "type": "InternalDNS"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{**condition, "type": kind} for kind in kinds],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [
                {
                    "names": [
                        f"registry.example.com/team-{k % 7}/app-{k}@sha256:{k:064x}",
                        f"registry.example.com/team-{k % 7}/app-{k}:v1.{k}",
                    ],
                    "sizeBytes": 50_000_000 + k * 1_000_000,
                }
                for k in range(30)
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": f"{i:032x}",
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.1.0-27-cloud-amd64",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.35.4",
                "machineID": f"{i:032x}",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "systemUUID": f"ec2{i:029x}",
            },
        },
    }


def kubelet_pod(i: int, node: str) -> dict[str, Any]:
    name = f"web-5d8f7c9b6-{i:06d}"
    token = f"kube-api-access-{i % 100000:05d}"
    condition = {"lastProbeTime": None, "lastTransitionTime": "2026-11-27T00:00:00Z", "status": "True"}
    kinds = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": "web-5d8f7c9b6-",
            "namespace": "default",
            "uid": f"10000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-11-27T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": "web-5d8f7c9b6",
                    "uid": "20000000-0000-4000-8000-000000000000",
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "registry.example.com/team-1/app-1:v1.1",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "env": [{"name": f"SETTING_{k}", "value": f"value-{k}"} for k in range(3)],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "256Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": token,
                            "readOnly": True,
                        }
                    ],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": f"node.kubernetes.io/{key}",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                }
                for key in ("not-ready", "unreachable")
            ],
            "volumes": [
                {
                    "name": token,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
        },
        "status": {
            "conditions": [{**condition, "type": kind} for kind in kinds],
            "containerStatuses": [
                {
                    "containerID": f"containerd://{i:064x}",
                    "image": "registry.example.com/team-1/app-1:v1.1",
                    "imageID": f"registry.example.com/team-1/app-1@sha256:{1:064x}",
                    "lastState": {},
                    "name": "web",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-11-27T00:00:05Z"}},
                }
            ],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "phase": "Running",
            "podIP": f"10.1.{i // 256 % 256}.{i % 256}",
            "podIPs": [{"ip": f"10.1.{i // 256 % 256}.{i % 256}"}],
            "qosClass": "Burstable",
            "startTime": "2026-11-27T00:00:00Z",
        },
    }


def _retained(make: Any) -> tuple[int, Any]:
    """Bytes still allocated after ``make()`` (its result kept alive), and the result."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    out = make()
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before, out


def measure(nodes: int, pods: int) -> dict[str, float]:
    node_texts = [json.dumps(kubelet_node(i)) for i in range(nodes)]
    pod_texts = [json.dumps(kubelet_pod(i, f"node-{i % nodes:05d}")) for i in range(pods)]
    tracemalloc.start()
    node_raw, decoded = _retained(lambda: [json.loads(t) for t in node_texts])
    del decoded
    pod_raw, decoded = _retained(lambda: [json.loads(t) for t in pod_texts])
    del decoded
    node_parsed, parsed = _retained(lambda: [Node.from_dict(json.loads(t)) for t in node_texts])
    del parsed
    forget_spec_parses()  # each pass pays for the spec parses it keeps (scheduler.api.objects)
    pod_parsed, parsed = _retained(lambda: [Pod.from_dict(json.loads(t)) for t in pod_texts])
    del parsed
    forget_spec_parses()
    sim = Simulation(parse_config(upstream_config()), seed=0)
    node_total, _ = _retained(lambda: sim.add_objects([json.loads(t) for t in node_texts]))
    pod_total, _ = _retained(lambda: sim.add_objects([json.loads(t) for t in pod_texts]))
    tracemalloc.stop()
    cached = sum(len(info.pods) for info in sim.cache.node_infos())
    assert len(sim.cache.node_infos()) == nodes and cached == pods, "not every object reached the cache"
    return {
        "nodes": nodes,
        "pods": pods,
        "node_json_bytes": sum(map(len, node_texts)) / nodes,
        "pod_json_bytes": sum(map(len, pod_texts)) / pods,
        "bytes_per_node": node_total / nodes,
        "bytes_per_node_parsed": node_parsed / nodes,
        "bytes_per_node_api_object": node_raw / nodes,
        "bytes_per_pod": pod_total / pods,
        "bytes_per_pod_parsed": pod_parsed / pods,
        "bytes_per_pod_api_object": pod_raw / pods,
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    r = measure(args.nodes, args.pods)
    print(json.dumps(r, indent=1))
    for kind in ("node", "pod"):
        total, parsed, api = (r[f"bytes_per_{kind}{part}"] for part in ("", "_parsed", "_api_object"))
        print(
            f"per {kind}: {total / 1024:.1f} KiB kept ({r[f'{kind}_json_bytes'] / 1024:.1f} KiB of JSON): "
            f"the parsed {kind} {parsed / 1024:.1f} KiB, the cache's records {(total - parsed) / 1024:.1f} KiB; "
            f"the whole decoded API object is {api / 1024:.1f} KiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
