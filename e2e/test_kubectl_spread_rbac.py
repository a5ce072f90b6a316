"""``kubectl spread`` as a user whose Role covers one namespace, on the local control plane (RBAC).

The user ``e2e-ns-reader`` may list pods, services, ReplicaSets... in the test's namespace only (a
Role) and nodes (a ClusterRole: the spread is counted on their labels); its kubeconfig has two
contexts, the current one the cluster admin's, so the reader's must be chosen with ``--context``,
typed before the command (``kubectl spread --context reader skew``) or after it
(``kubectl spread skew --context=reader -n=NS``). Both must report the namespace's spread; the
real kubectl finds the plugin on PATH and hands it the flags as typed. A second user without the
ClusterRole is told which permission is missing, in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster import Cluster, bin_dir
from e2e.kube_helpers import zone_spread, zoned_nodes

READER = "e2e-ns-reader"
NO_NODES = "e2e-ns-only"
GROUP = "e2e-spread-readers"  # not system:masters: RBAC decides
NODE_READER = "e2e-spread-node-reader"


def _kubectl_plugin(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH holds ``kubectl-spread``, as the installer writes it."""
    plugin = tmp_path / "kubectl-spread"
    plugin.write_text(
        f"#!{sys.executable}\nimport sys\nfrom scheduler.cli import kubectl_main\nsys.exit(kubectl_main())\n"
    )
    plugin.chmod(0o755)
    path = os.pathsep.join((str(tmp_path), str(bin_dir()), os.environ.get("PATH", "")))  # and the cluster's kubectl
    return {**os.environ, "PATH": path}


def _role(namespace: str) -> dict[str, Any]:
    read = ["get", "list"]
    return {
        "metadata": {"name": "spread-reader", "namespace": namespace},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["pods", "services", "replicationcontrollers", "persistentvolumeclaims"],
                "verbs": read,
            },
            {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": read},
            {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": read},
        ],
    }


def _binding(name: str, kind: str, role: str, user: str, namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


@pytest.fixture
def rbac(api: client.ApiClient, namespace: str) -> Iterator[None]:
    """The namespace's Role for both users; the nodes' ClusterRole for the reader only."""
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role(namespace, _role(namespace))
    for user in (READER, NO_NODES):
        rbac.create_namespaced_role_binding(namespace, _binding(user, "Role", "spread-reader", user, namespace))
    nodes = {
        "metadata": {"name": NODE_READER},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
    }
    rbac.create_cluster_role(nodes)
    rbac.create_cluster_role_binding(_binding(NODE_READER, "ClusterRole", NODE_READER, READER))
    yield
    rbac.delete_cluster_role_binding(NODE_READER)
    rbac.delete_cluster_role(NODE_READER)


def _two_contexts(cluster: Cluster, user: str, namespace: str, path: Path) -> str:
    """The admin's kubeconfig (current) plus a context of ``user`` in ``namespace``."""
    admin = json.loads(cluster.kubeconfig.read_text())
    mine = json.loads(cluster.user_kubeconfig(user, GROUP).read_text())
    admin["users"] += mine["users"]
    admin["contexts"].append({"name": "reader", "context": {"cluster": "local", "user": user, "namespace": namespace}})
    path.write_text(json.dumps(admin))
    path.chmod(0o600)
    return str(path)


def _pods(core: client.CoreV1Api, namespace: str, placement: list[str]) -> None:
    """Bare pods bound by name (no scheduler needed), under a zone spread: 2/1/0."""
    for i, node in enumerate(placement):
        pod = {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "c", "image": "registry.invalid/pause:3.10"}],
                "topologySpreadConstraints": [zone_spread(1, {"app": "web"})],
            },
        }
        core.create_namespaced_pod(namespace, pod)


def _kubectl(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60, check=False, env=env)


@pytest.mark.slow
def test_kubectl_spread_as_a_namespace_user_with_a_context_and_flags_before_the_command(
    control_plane: Cluster,
    nodes: Callable[..., str],
    namespace: str,
    core: client.CoreV1Api,
    rbac: None,
    tmp_path: Path,
) -> None:
    zones = zoned_nodes(nodes, {"zone-a": 1, "zone-b": 1, "zone-c": 1})
    by_zone = {zone: node for node, zone in zones.items()}
    _pods(core, namespace, [by_zone["zone-a"], by_zone["zone-b"], by_zone["zone-a"]])
    env = _kubectl_plugin(tmp_path)
    kubeconfig = _two_contexts(control_plane, READER, namespace, tmp_path / "kubeconfig")

    # The reader may not list pods cluster-wide: what a listing of every namespace would meet.
    refused = _kubectl(["--kubeconfig", kubeconfig, "--context", "reader", "get", "pods", "-A"], env)
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused

    for argv in (
        ["spread", "--kubeconfig", kubeconfig, "--context", "reader", "skew", "-o", "json"],
        ["spread", "skew", f"--kubeconfig={kubeconfig}", "--context=reader", f"-n={namespace}", "-o", "json"],
    ):
        done = _kubectl(argv, env)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        (workload,) = json.loads(done.stdout)["workloads"]
        assert workload["namespace"] == namespace and len(workload["pods"]) == 3, workload
        (zone,) = workload["constraints"]
        assert zone["domains"] == {"zone-a": 2, "zone-b": 1, "zone-c": 0} and zone["skew"] == 2, zone
        assert zone["violated"] is True
    table = _kubectl(["spread", "--context", "reader", "--kubeconfig", kubeconfig, "skew"], env)
    assert table.returncode == 0 and namespace in table.stdout and "web-0, web-2" in table.stdout, table
    assert "placements count only this namespace" in table.stderr, table.stderr
    print(f"\n$ kubectl spread --context reader skew   # as {READER}\n{table.stdout}")

    # Without the nodes' ClusterRole: one line naming the permission, no traceback.
    other = _two_contexts(control_plane, NO_NODES, namespace, tmp_path / "kubeconfig-no-nodes")
    done = _kubectl(["spread", "--kubeconfig", other, "--context", "reader", "skew"], env)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert '"list" on "nodes" at the cluster scope' in done.stderr, done.stderr
    print(f"$ kubectl spread --context reader skew   # as {NO_NODES}\n{done.stderr}")
