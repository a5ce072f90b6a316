"""`make demo`: a local cluster of the newest release we decide as, six zoned nodes that kwok runs,
spread-scheduler (which reads the server's version and decides as that minor), and a Deployment that
spreads.

Prints ``kubectl get pods -o wide`` once every pod runs, then where they landed per zone and node,
then tears everything down.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client, config

from e2e.build import NEWEST, bin_dir
from e2e.cluster import Cluster
from e2e.kube_helpers import ZONE, create_node, pod_body, wait_for, zone_and_host_spread

ROOT = Path(__file__).resolve().parent.parent
REPLICAS = 12


def main() -> int:
    cluster = Cluster(ROOT / ".cluster" / "demo", version=NEWEST)
    print(f"starting etcd, kube-apiserver {NEWEST}, kube-controller-manager and kwok on 127.0.0.1 ...", flush=True)
    cluster.up()  # builds the release first if needed (cached; ~15 min the first time on 2 cores)
    sched: subprocess.Popen[bytes] | None = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        # The leader Lease lives in the install namespace (the scheduler runs outside a pod here).
        try:
            core.create_namespace({"metadata": {"name": "spread-scheduler"}})
        except client.ApiException as exc:
            if exc.status != 409:
                raise
        zones = {"zone-a": 2, "zone-b": 2, "zone-c": 2}
        for zone, count in zones.items():
            for i in range(count):
                create_node(core, f"{zone}-node-{i}", labels={ZONE: zone})
        with (ROOT / ".cluster" / "demo" / "spread-scheduler.log").open("wb") as log:
            sched = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "spread-scheduler"),
                    "run",
                    "--kubeconfig",
                    str(cluster.kubeconfig),
                    "--secure-port=0",  # the demo reads no endpoint
                    "--v=2",  # a line per bound pod, in kube-scheduler's words
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        labels = {"app": "demo"}
        spread = zone_and_host_spread(labels)
        template = pod_body("demo", labels, topologySpreadConstraints=spread)
        apps.create_namespaced_deployment(
            "default",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "demo"},
                "spec": {
                    "replicas": REPLICAS,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
                },
            },
        )
        print(
            f"created Deployment demo ({REPLICAS} replicas, schedulerName: spread-scheduler, "
            "hard zone spread maxSkew 1, soft hostname spread)",
            flush=True,
        )

        def all_running() -> list[client.V1Pod]:
            pods = core.list_namespaced_pod("default", label_selector="app=demo").items
            running = [p for p in pods if p.status.phase == "Running" and p.status.pod_ip]
            return running if len(running) >= REPLICAS else []

        pods = wait_for(all_running, 120, f"{REPLICAS} pods Running")
        print(f"\n$ kubectl get pods -o wide\n{_kubectl(cluster, 'get', 'pods', '-o', 'wide')}", end="", flush=True)
        per_node = collections.Counter(p.spec.node_name for p in pods)
        print(f"\n{'ZONE':<8} {'NODE':<14} PODS")
        for zone in zones:
            for node in sorted(n for n in per_node if n.startswith(zone)):
                print(f"{zone:<8} {node:<14} {'#' * per_node[node]} {per_node[node]}")
        per_zone = collections.Counter(n.rsplit("-node-", 1)[0] for n in per_node.elements())
        print("\nper zone: " + ", ".join(f"{z}={c}" for z, c in sorted(per_zone.items())))
        return 0
    finally:
        if sched is not None:
            sched.send_signal(signal.SIGTERM)
            sched.wait(timeout=30)
        cluster.down()
        print("control plane stopped", flush=True)


def _kubectl(cluster: Cluster, *args: str) -> str:
    """kubectl v1.35.4 (built with the control plane) against the demo cluster."""
    command = [str(bin_dir(NEWEST) / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


if __name__ == "__main__":
    sys.exit(main())
