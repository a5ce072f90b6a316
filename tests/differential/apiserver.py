"""Generated clusters through a real kube-apiserver v1.35.4 first, as a user's objects would go.

Each object is sent with a server-side dry-run create (``?dryRun=All``): the API server defaults it,
runs its admission plugins (Priority, RuntimeClass, DefaultTolerationSeconds...) and validates it,
and the object it hands back is what the scheduler would see (``matchLabelKeys`` merged into the
spread and affinity selectors, limits copied into missing requests, default tolerations...).
Whatever it refuses is a generator bug: ``RoundTrip.refusals`` lists each one.

Cluster-scoped objects that others need in order to be admitted are created for real, once:
Namespaces (a namespaced dry-run create still needs its namespace), PriorityClasses (the Priority
admission plugin resolves ``priorityClassName``) and RuntimeClasses (the RuntimeClass plugin checks
``overhead``). Their names carry their content (``prio-100``), so two seeds never disagree on one.
A Namespace is then sent as a dry-run update, which defaults it (``kubernetes.io/metadata.name``).

What a create does not keep is put back from the generated object: ``status`` (a Pod's is reset on
create), ``metadata.creationTimestamp``, ``deletionTimestamp`` and a ``uid`` the generator set (a
waiting claim's, which the PV bound to it names). What the server invents at random (``uid``,
``resourceVersion``, ``managedFields``, a Service's ``clusterIP``) is dropped, so a seed still gives
the same cluster every time.

The control plane is ``e2e.cluster.Cluster`` without a controller-manager (so without ServiceAccount
admission, which would mount a token volume into every pod), in ``$SPREAD_DIFF_APISERVER_DIR`` or
``.cluster/differential-VERSION``; one already up there is reused and left running.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import random
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Objects = list[dict[str, Any]]
Make = Callable[[int], tuple[Objects, dict[str, Any]]]

ROOT = Path(__file__).resolve().parents[2]
# kind -> (API group path, plural, namespaced)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "RuntimeClass": ("/apis/node.k8s.io/v1", "runtimeclasses", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Service": ("/api/v1", "services", True),
    "ReplicationController": ("/api/v1", "replicationcontrollers", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "VolumeAttachment": ("/apis/storage.k8s.io/v1", "volumeattachments", False),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSIDriver": ("/apis/storage.k8s.io/v1", "csidrivers", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
}
CREATED_FOR_REAL = ("Namespace", "PriorityClass", "RuntimeClass")
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# Set by the server on create, at random or from the clock: dropped so a seed stays one cluster.
SERVER_INVENTED_METADATA = ("uid", "resourceVersion", "generation", "managedFields", "creationTimestamp")
KEPT_FROM_GENERATOR_METADATA = ("creationTimestamp", "deletionTimestamp", "uid")


@dataclass(frozen=True, slots=True)
class Refusal:
    """One object the API server refused: a generator bug."""

    seed: int
    kind: str
    name: str
    code: int
    message: str

    def __str__(self) -> str:
        return f"seed {self.seed}: {self.kind} {self.name}: HTTP {self.code}: {self.message}"


def chosen(seed: int, share: float) -> bool:
    """Whether ``seed`` goes through the API server at this share (the same seeds every run)."""
    return share > 0 and random.Random(seed * 7919 + 17).random() < share


def _path(kind: str, namespace: str | None, name: str | None = None) -> str:
    prefix, plural, namespaced = RESOURCES[kind]
    base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{base}/{urllib.parse.quote(name)}" if name else base


class Connection:
    """One keep-alive HTTPS connection to the API server as the admin client certificate."""

    def __init__(self, server: str, pki: Path) -> None:
        host, port = server.removeprefix("https://").rsplit(":", 1)
        self._ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self._ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self._host, self._port = host, int(port)
        self._conn: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        payload = json.dumps(body).encode() if body is not None else None
        kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
        headers = {"Content-Type": kind, "Accept": "application/json"}
        for retry in (False, True):
            if self._conn is None:
                self._conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=30)
            try:
                self._conn.request(method, path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
            except (http.client.HTTPException, OSError):
                self._conn.close()
                self._conn = None
                if retry:
                    raise
                continue  # the server closed an idle keep-alive connection: once more on a new one
            return response.status, json.loads(data) if data else None
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _message(data: Any) -> str:
    if isinstance(data, Mapping):
        return str(data.get("message") or data)
    return str(data)


def _restore(sent: Mapping[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    """The server's object, minus what it invented, plus what a create does not keep."""
    meta = got.setdefault("metadata", {})
    for key in SERVER_INVENTED_METADATA:
        meta.pop(key, None)
    sent_meta = sent.get("metadata", {})
    for key in KEPT_FROM_GENERATOR_METADATA:
        if key in sent_meta:
            meta[key] = sent_meta[key]
    if "status" in sent:
        got["status"] = copy.deepcopy(sent["status"])
    else:
        got.pop("status", None)
    if got.get("kind") == "Service":
        spec = got.get("spec", {})
        for key in ("clusterIP", "clusterIPs"):
            spec.pop(key, None)
    return got


class RoundTrip:
    """Sends clusters through one API server; keeps every refusal."""

    def __init__(self, server: str, pki: Path) -> None:
        self._conn = Connection(server, pki)
        self._created: set[tuple[str, str]] = set()
        self.refusals: list[Refusal] = []
        self.clusters = 0
        self.objects = 0

    def _ensure(self, seed: int, obj: Mapping[str, Any]) -> None:
        """Create a cluster-scoped prerequisite for real, once (409: it already exists)."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        # A namespace's admin-access label is kept: the API server admits a claim asking for admin
        # access only in a namespace that has it (once there, it stays for every later seed).
        admin = kind == "Namespace" and obj["metadata"].get("labels", {}).get(ADMIN_ACCESS_LABEL) == "true"
        key = (kind, name + ("+admin" if admin else ""))
        if key in self._created:
            return
        body = {"apiVersion": obj["apiVersion"], "kind": kind, "metadata": {"name": name}}
        if admin:
            body["metadata"]["labels"] = {ADMIN_ACCESS_LABEL: "true"}
        if kind != "Namespace":
            body = {key: value for key, value in obj.items() if key != "status"}
        code, data = self._conn.request("POST", _path(kind, None), body)
        if code == 409 and admin:
            code, data = self._conn.request("PATCH", _path(kind, None, name), {"metadata": body["metadata"]})
        if code not in (200, 201, 409):
            self.refusals.append(Refusal(seed, kind, name, code, _message(data)))
            return
        self._created.add(key)

    def send(self, seed: int, objects: Objects) -> Objects:
        """Each object as the API server returns it; refused objects are left out (and recorded)."""
        self.clusters += 1
        for obj in objects:
            if obj.get("kind") in CREATED_FOR_REAL:
                self._ensure(seed, obj)
        # Pods, workloads and Services need their namespace even when no Namespace object names it.
        for namespace in sorted({o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]}):
            self._ensure(seed, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        out: Objects = []
        for obj in objects:
            kind, meta = obj["kind"], obj["metadata"]
            self.objects += 1
            if kind in ("PriorityClass", "RuntimeClass"):
                out.append(obj)  # created for real above; their create validated them
                continue
            if kind == "Namespace":
                method, path = "PUT", _path(kind, None, meta["name"])
            else:
                method, path = "POST", _path(kind, meta.get("namespace"))
            code, data = self._conn.request(method, path + "?dryRun=All", obj)
            if code not in (200, 201) or not isinstance(data, dict):
                self.refusals.append(
                    Refusal(seed, kind, f"{meta.get('namespace', '')}/{meta['name']}", code, _message(data))
                )
                continue
            out.append(_restore(obj, data))
        return out

    def wrap(self, make: Make, share: float) -> Make:
        """``make`` whose clusters go through the API server for the seeds ``chosen`` at ``share``."""

        def through(seed: int) -> tuple[Objects, dict[str, Any]]:
            objects, config = make(seed)
            if chosen(seed, share):
                objects = self.send(seed, objects)
            return objects, config

        return through

    def close(self) -> None:
        self._conn.close()

    def report(self) -> str:
        """A summary line, then every refusal (generator bugs)."""
        head = f"through the API server: {self.clusters} clusters, {self.objects} objects, {len(self.refusals)} refused"
        return "\n".join([head, *(f"  {refusal}" for refusal in self.refusals)])


class ControlPlane:
    """kube-apiserver + etcd from ``e2e.cluster`` (started here, or one already up reused)."""

    def __init__(self, directory: Path | None = None, version: str | None = None) -> None:
        from e2e.build import K8S_VERSION  # noqa: PLC0415 - the control plane helpers live with the e2e tests
        from e2e.cluster import Cluster  # noqa: PLC0415

        version = version or K8S_VERSION
        default = os.environ.get("SPREAD_DIFF_APISERVER_DIR") or ROOT / ".cluster" / f"differential-{version}"
        # Kept for as long as its processes run: it holds their Popen objects.
        self.cluster = Cluster(directory or Path(default), controller_manager=False, kwok=False, version=version)
        self.started = False

    def up(self) -> RoundTrip:
        cluster = self.cluster
        if not (cluster.state_file.exists() and cluster.is_ready()):
            cluster.up()
            self.started = True
        return RoundTrip(cluster.server, cluster.pki)

    def down(self) -> None:
        """Stop the control plane if this process started it."""
        if self.started:
            self.cluster.down()
            self.started = False


_planes: dict[int, ControlPlane] = {}


def start(share: float, version: str | None = None) -> RoundTrip | None:
    """For ``runner --through-apiserver SHARE``: a RoundTrip on a control plane of ``version`` (default
    e2e/build.py's) (None at share 0)."""
    if share <= 0:
        return None
    plane = ControlPlane(version=version)
    trip = plane.up()
    _planes[id(trip)] = plane
    return trip


def finish(trip: RoundTrip | None) -> int:
    """Print the report, stop a control plane ``start`` started; the number of refusals."""
    if trip is None:
        return 0
    print(trip.report(), flush=True)
    trip.close()
    plane = _planes.pop(id(trip), None)
    if plane is not None:
        plane.down()
    return len(trip.refusals)
