"""Karpenter's kwok provider (``sigs.k8s.io/karpenter/kwok``, e2e/tools/karpenter) on the local control plane,
and a watch that records every placement state of one workload while Karpenter adds and removes nodes.

``Karpenter(cluster).install()`` applies the module's CRDs (``kwok/charts/crds``, ``kwok/apis/crds``) and a
KWOKNodeClass made Ready (nothing else writes its status: the NodePool readiness controller reads its
``Ready`` condition, ``pkg/controllers/nodepool/readiness/controller.go``); ``start()`` runs the binary
``python -m e2e.cluster karpenter`` builds. Its nodes carry ``kwok.x-k8s.io/node=fake``, the label the
cluster's kwok manages nodes by, so kwok is their kubelet. The NodePool and the workload are
examples/karpenter-nodepool.yaml's, with the changes a run asks for. Used by e2e/test_karpenter.py and
bench/karpenter_contrast.py; docs/install.md ("With an autoscaler") says what Karpenter reads.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, watch

from e2e.build import KARPENTER_MODULE, _go_env, ensure_karpenter
from e2e.cluster import Cluster, free_port

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "karpenter-nodepool.yaml"
ZONE = "topology.kubernetes.io/zone"
NODE_POOL_LABEL = "karpenter.sh/nodepool"
NODE_CLASS = "default"
KARPENTER_GROUP = "karpenter.sh/v1"
READY_TIMEOUT = 60.0
LASTING = 1.0  # s: a state that lasts this long is judged even if the workload is not whole


def example() -> dict[str, dict[str, Any]]:
    """examples/karpenter-nodepool.yaml's objects by kind (KWOKNodeClass, NodePool, Deployment, PodDisruptionBudget)."""
    return {doc["kind"]: doc for doc in yaml.safe_load_all(EXAMPLE.read_text()) if doc}


def node_pool(name: str = "spread", consolidate_after: str = "10s") -> dict[str, Any]:
    """The example's NodePool under ``name``, consolidating after ``consolidate_after`` (no ``limits``: each
    new NodeClaim counts as its largest instance type against them, a scale-up of a few claims per batch)."""
    body = copy.deepcopy(example()["NodePool"])
    body["metadata"] = {"name": name}
    body["spec"]["disruption"]["consolidateAfter"] = consolidate_after
    return body


def workload(
    namespace: str, name: str, replicas: int, scheduler: str, annotations: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The example's Deployment and PodDisruptionBudget as ``name`` in ``namespace``, placed by ``scheduler``."""
    objects = example()
    deploy, budget = copy.deepcopy(objects["Deployment"]), copy.deepcopy(objects["PodDisruptionBudget"])
    labels = {"app": name}
    deploy["metadata"] = {"name": name, "namespace": namespace}
    deploy["spec"]["replicas"] = replicas
    deploy["spec"]["selector"] = {"matchLabels": labels}
    template = deploy["spec"]["template"]
    template["metadata"] = {"labels": labels, **({"annotations": annotations} if annotations else {})}
    template["spec"]["schedulerName"] = scheduler
    for constraint in template["spec"]["topologySpreadConstraints"]:
        constraint["labelSelector"] = {"matchLabels": labels}
    budget["metadata"] = {"name": name, "namespace": namespace}
    budget["spec"]["selector"] = {"matchLabels": labels}
    return deploy, budget


def zones() -> tuple[str, ...]:
    """The zones of the example's NodePool, the domains of the workload's spread."""
    requirements = example()["NodePool"]["spec"]["template"]["spec"]["requirements"]
    return tuple(next(r["values"] for r in requirements if r["key"] == ZONE))


def max_skew() -> int:
    """The example workload's zone maxSkew."""
    spec = example()["Deployment"]["spec"]["template"]["spec"]
    return int(next(c["maxSkew"] for c in spec["topologySpreadConstraints"] if c["topologyKey"] == ZONE))


def module_dir() -> Path:
    """Where the pinned Karpenter module is unpacked (its CRDs are read from there)."""
    out = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter"],
        cwd=KARPENTER_MODULE,
        env=_go_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return Path(out.stdout.strip())


def crds() -> list[dict[str, Any]]:
    """The CRDs the kwok provider's chart installs, and the KWOKNodeClass's."""
    root = module_dir() / "kwok"
    files = sorted((root / "charts" / "crds").glob("*.yaml")) + sorted((root / "apis" / "crds").glob("*.yaml"))
    return [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]


class Karpenter:
    """The kwok provider as a child process of ``cluster`` (its pid file ``karpenter@PID``, so
    ``cluster.down()`` stops it too), logging to ``cluster.logs/karpenter.log`` unless ``log`` says."""

    def __init__(self, cluster: Cluster, log: Path | None = None) -> None:
        self.cluster = cluster
        self.log = log or cluster.logs / "karpenter.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = 0

    def _call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        status, data = self.cluster.request(method, path, body, content_type=content_type, timeout=30)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {data}")
        return data

    def install(self) -> None:
        """CRDs (kept if present), each Established, and the KWOKNodeClass ``default`` Ready."""
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        for crd in crds():
            status, data = self.cluster.request("POST", base, crd, timeout=30)
            if status not in (200, 201, 409):
                raise RuntimeError(f"creating CRD {crd['metadata']['name']}: HTTP {status}: {data}")
            names.append(crd["metadata"]["name"])

        def established() -> bool:
            for name in names:
                status, data = self.cluster.get(f"{base}/{name}")
                # A CRD just created can answer with ``status.conditions: null`` until the
                # API server's controller has looked at it.
                crd_status = ((data or {}).get("status") or {}) if status == 200 else {}
                conditions = crd_status.get("conditions") or []
                if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    return False
            return True

        _wait(established, 60, "Karpenter's CRDs Established")
        path = "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses"
        status, data = self.cluster.request("POST", path, example()["KWOKNodeClass"], timeout=30)
        if status not in (200, 201, 409):
            raise RuntimeError(f"creating the KWOKNodeClass: HTTP {status}: {data}")
        current = self._call("GET", f"{path}/{NODE_CLASS}")
        # The condition operatorpkg's status.ConditionSet reads: type Ready, at the object's generation.
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "observedGeneration": current["metadata"].get("generation", 1),
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self._call(
            "PATCH",
            f"{path}/{NODE_CLASS}/status",
            {"status": {"conditions": [ready]}},
            content_type="application/merge-patch+json",
        )

    def start(self) -> None:
        """Run the provider against the cluster; return once its health probe answers."""
        binary = ensure_karpenter()
        self.health_port = free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.cluster.user_kubeconfig("karpenter")),
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(free_port()),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "LOG_LEVEL": "debug",
        }
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(binary)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, as the cluster's: down() signals the group
            )
        self.cluster.pids.mkdir(parents=True, exist_ok=True)
        (self.cluster.pids / f"karpenter@{self.proc.pid}.pid").write_text(str(self.proc.pid))
        proc = self.proc
        _wait(lambda: proc.poll() is not None or _healthy(self.health_port), READY_TIMEOUT, "Karpenter /readyz")
        if proc.poll() is not None:
            raise RuntimeError(f"Karpenter exited with {proc.returncode}; see {self.log}")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        (self.cluster.pids / f"karpenter@{self.proc.pid}.pid").unlink(missing_ok=True)
        self.proc = None

    def apply_node_pool(self, body: dict[str, Any]) -> None:
        self._call("POST", f"/apis/{KARPENTER_GROUP}/nodepools", body)

    def node_claims(self, pool: str | None = None) -> list[dict[str, Any]]:
        """Every NodeClaim, or those of NodePool ``pool``."""
        selector = f"?labelSelector={NODE_POOL_LABEL}%3D{pool}" if pool else ""
        return list(self._call("GET", f"/apis/{KARPENTER_GROUP}/nodeclaims{selector}")["items"])

    def remove_node_pool(self, name: str, timeout: float = 90.0) -> None:
        """Delete the NodePool's NodeClaims (Karpenter drains and deletes their nodes), then the NodePool once
        none of them and none of its nodes is left. Delete the pods first, or they are provisioned for again."""
        for claim in self.node_claims(name):
            self.cluster.request(
                "DELETE", f"/apis/{KARPENTER_GROUP}/nodeclaims/{claim['metadata']['name']}", timeout=30
            )

        def gone() -> bool:
            _, nodes = self.cluster.get(f"/api/v1/nodes?labelSelector={NODE_POOL_LABEL}%3D{name}")
            return not self.node_claims(name) and not (nodes or {}).get("items")

        _wait(gone, timeout, f"NodePool {name}'s NodeClaims and nodes gone")
        status, data = self.cluster.request("DELETE", f"/apis/{KARPENTER_GROUP}/nodepools/{name}", timeout=30)
        if status not in (200, 202, 404):
            raise RuntimeError(f"deleting NodePool {name}: HTTP {status}: {data}")


def _healthy(port: int) -> bool:
    import urllib.request  # noqa: PLC0415 - only while waiting for the probe

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


# -- what the workload looked like, at every moment the watch saw


@dataclass(frozen=True)
class State:
    """The workload after one pod event: its bound, not terminating pods per zone, and the replicas asked for."""

    at: float
    counts: dict[str, int]
    live: int
    desired: int

    def skew(self) -> int:
        return max(self.counts.values()) - min(self.counts.values())

    def whole(self) -> bool:
        """Every replica asked for is placed, none is terminating."""
        return self.live == self.desired


class SpreadWatch:
    """Every placement state of the pods labelled ``app=<app>`` in ``namespace``, from a watch (a
    short-lived skew between two polls is seen); node zones are read once per node and kept (a
    node's name is never reused by Karpenter)."""

    def __init__(self, core: client.CoreV1Api, namespace: str, app: str, desired: int) -> None:
        self.core = core
        self.namespace = namespace
        self.app = app
        self.desired = desired
        self.zones = zones()
        self.states: list[State] = []
        self.node_zone: dict[str, str] = {}
        self._pods: dict[str, tuple[str | None, bool]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"spread-watch-{app}", daemon=True)
        self._lock = threading.Lock()

    def __enter__(self) -> SpreadWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=40)

    def expect(self, replicas: int) -> None:
        """Set before the Deployment is scaled: states with more pods than this are the scale-down's own."""
        self.desired = replicas

    def _zone(self, node: str) -> str:
        if node not in self.node_zone:
            try:
                labels = self.core.read_node(node).metadata.labels or {}
            except client.ApiException:
                labels = {}
            self.node_zone[node] = labels.get(ZONE, "")
        return self.node_zone[node]

    def _run(self) -> None:
        """List, then watch from the list's resourceVersion, as an informer: no event is lost between two
        streams; a 410 (the version compacted away) or a broken stream lists again."""
        selector = f"app={self.app}"
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    listing = self.core.list_namespaced_pod(self.namespace, label_selector=selector)
                    self._record({p.metadata.name: self._entry(p) for p in listing.items})
                    version = listing.metadata.resource_version
                w = watch.Watch()
                for event in w.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    label_selector=selector,
                    resource_version=version,
                    timeout_seconds=20,
                ):
                    if event["type"] == "ERROR":
                        version = ""
                        break
                    pod = event["object"]
                    version = pod.metadata.resource_version
                    with self._lock:
                        pods = dict(self._pods)
                    if event["type"] == "DELETED":
                        pods.pop(pod.metadata.name, None)
                    else:
                        pods[pod.metadata.name] = self._entry(pod)
                    self._record(pods)
                    if self._stop.is_set():
                        w.stop()
            except client.ApiException as exc:
                if exc.status == 410:
                    version = ""
                else:
                    self._stop.wait(0.2)
            except Exception:  # the connection broke: list again
                version = ""
                self._stop.wait(0.2)

    def _entry(self, pod: Any) -> tuple[str | None, bool]:
        """(node, ending): ending is a pod being deleted or done, which no longer counts."""
        node = pod.spec.node_name
        if node:
            self._zone(node)
        ending = pod.metadata.deletion_timestamp is not None or pod.status.phase in ("Succeeded", "Failed")
        return node, ending

    def _record(self, pods: dict[str, tuple[str | None, bool]]) -> None:
        with self._lock:
            self._pods = pods
            counts = collections.Counter(self.node_zone.get(n, "") for n, ending in pods.values() if n and not ending)
            state = State(
                time.monotonic(), {z: counts.get(z, 0) for z in self.zones}, sum(counts.values()), self.desired
            )
            last = self.states[-1] if self.states else None
            if last is None or (last.counts, last.live, last.desired) != (state.counts, state.live, state.desired):
                self.states.append(state)

    def judged(self) -> list[tuple[State, bool]]:
        """Every state, and whether it is judged: when the workload is whole, or when it lasted ``LASTING`` s.
        Not judged are the states between the commits of one burst: a scheduler's Bindings sent together
        (the API server commits them in an order of its own, kube-scheduler's as ours) and a scale-down's
        deletions (the ReplicaSet controller sends them in parallel); none is a placement anyone chose."""
        with self._lock:
            states = list(self.states)
        ends = [s.at for s in states[1:]] + [time.monotonic()]
        return [(s, s.whole() or end - s.at >= LASTING) for s, end in zip(states, ends, strict=True)]

    def worst(self) -> State | None:
        """The judged state of highest skew (the first of them), None before any."""
        judged = [s for s, kept in self.judged() if kept]
        return max(judged, key=State.skew) if judged else None

    def history(self) -> str:
        """One line a state: when, the counts by zone, pods placed, replicas asked for, judged or not."""
        return "\n".join(json.dumps([round(s.at, 2), s.counts, s.live, s.desired, kept]) for s, kept in self.judged())


def zone_nodes(core: client.CoreV1Api) -> dict[str, list[str]]:
    """Karpenter's nodes by zone (every zone of the NodePool, empty lists too)."""
    found: dict[str, list[str]] = {z: [] for z in zones()}
    for node in core.list_node(label_selector=NODE_POOL_LABEL).items:
        if node.metadata.deletion_timestamp is None:
            found.setdefault((node.metadata.labels or {}).get(ZONE, ""), []).append(node.metadata.name)
    return found
