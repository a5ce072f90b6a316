#!/usr/bin/env python3
"""The local Kubernetes cluster: etcd, kube-apiserver, kube-controller-manager and kwok (the kubelet of the
nodes ``add_node`` creates) as child processes on 127.0.0.1, their state under one directory.

Importable for pytest fixtures and benchmarks: ``Cluster(dir).up()`` / ``.down()`` / ``.kubeconfig`` /
``.server`` / ``.add_node(...)`` / ``.request(...)``, and ``start_kube_scheduler(cluster, config_path)`` for
the upstream reference scheduler. The binaries come from e2e/build.py (``ensure_built``), the certificates
from e2e/pki.py; ``python -m e2e.cluster up|down|build|...`` is the command line of e2e/cluster/__main__.py.
Standard library only (the certificates: ``cryptography``). See e2e/README.md.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from e2e.build import K8S_VERSION, KWOK_MODULE, bin_dir, ensure_built, ensure_kwok, log, release
from e2e.ledger import AUDIT_POLICY, Ledger
from e2e.pki import client_cert, make_pki

KWOK_STAGES = KWOK_MODULE / "stages.yaml"  # what kwok's kubelet does; kwok v0.8.0 has no built-in stages
# Nodes with this label (value "fake") are kwok's: it renews their Leases and runs their pods. A node
# without it stays a static object, and so does one whose label changes (``stop_heartbeats``): kwok's
# watch is filtered by the API server, which reports the node as gone from it.
KWOK_NODE_LABEL = "kwok.x-k8s.io/node"
NODE_LEASE_SECONDS = 40  # the kubelet's nodeLeaseDurationSeconds; kwok renews at a quarter of it, as the kubelet
POD_CIDR = "10.64.0.0/12"  # room for the 150,000 pods of the envelope benchmark
DEFAULT_DIR = Path(os.environ.get("SPREAD_CLUSTER_DIR", Path.cwd() / ".cluster"))
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0
# Stopped first to last; anything else found in the pid directory (kube-scheduler@PID) goes first.
STOP_ORDER = ("kwok", "kube-controller-manager", "kube-apiserver", "etcd")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it; another process may take it before use)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _with_flags(args: list[str], overrides: Mapping[str, str]) -> list[str]:
    """``args`` with each ``--flag=value`` in ``overrides`` replaced (or added)."""
    kept = [a for a in args if a.split("=", 1)[0] not in overrides]
    return kept + [f"{flag}={value}" for flag, value in overrides.items()]


# -- the cluster -------------------------------------------------------------------------------


class Cluster:
    """etcd + kube-apiserver (+ kube-controller-manager, + kwok) as child processes, state under ``directory``.

    Layout: ``pki/`` (certificates, kept), ``logs/<component>.log`` and ``logs/audit.log`` (the
    ledger, ``e2e/ledger.py``; kept), ``pids/<component>.pid``,
    ``etcd-data/`` and ``state.json`` (removed by ``down``), ``admin.kubeconfig``.
    """

    def __init__(
        self,
        directory: Path | str = DEFAULT_DIR,
        *,
        controller_manager: bool = True,
        kwok: bool = True,
        api_flags: Mapping[str, str] | None = None,
        version: str = K8S_VERSION,
        node_lease_seconds: int = NODE_LEASE_SECONDS,
        node_monitor_grace_seconds: int | None = None,
    ) -> None:
        """``api_flags`` override kube-apiserver's flags by name (``{"--max-requests-inflight": "10"}``).

        ``version``: the Kubernetes release of the control plane (``1.37``, ``v1.37.2``: e2e/build.py's
        ``RELEASES``), and of the kube-scheduler ``start_kube_scheduler`` starts beside it.

        ``kwok``: run kwok as the kubelet of the nodes labelled ``KWOK_NODE_LABEL=fake`` (``add_node``'s
        default), and with it the controller-manager's node lifecycle and taint-eviction controllers;
        without it, as before kwok: every node is a static object that never stops being Ready.

        ``node_lease_seconds`` (kwok renews at a quarter of it) and ``node_monitor_grace_seconds`` (the
        controller-manager's ``--node-monitor-grace-period``; None keeps its default, 50 s): how soon
        a node whose heartbeats stop turns ``Unknown``. The e2e suite halves both, keeping the
        kubelet's ratio of four renewals per grace period, so a lost zone costs 20 s, not 50.
        """
        self.dir = Path(directory).resolve()
        self.controller_manager = controller_manager
        self.kwok = kwok
        self.api_flags = dict(api_flags or {})
        self.node_lease_seconds = node_lease_seconds
        self.node_monitor_grace_seconds = node_monitor_grace_seconds
        self.version = release(version).version
        self.pki = self.dir / "pki"
        self.logs = self.dir / "logs"
        self.pids = self.dir / "pids"
        self.kubeconfig = self.dir / "admin.kubeconfig"
        self.state_file = self.dir / "state.json"
        self.audit_log = self.logs / "audit.log"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}  # kept so they are reaped, not garbage-collected
        self._args: dict[str, list[str]] = {}  # how each component was started, for restart()
        self._binaries: dict[str, Path | None] = {}

    # -- state
    @property
    def server(self) -> str:
        """The apiserver URL, ``https://127.0.0.1:PORT`` (only while up)."""
        return str(json.loads(self.state_file.read_text())["server"])

    def alive(self) -> dict[str, int]:
        """component (pid file stem) -> pid, for our processes that are still running."""
        alive: dict[str, int] = {}
        for pid_file in sorted(self.pids.glob("*.pid")) if self.pids.exists() else ():
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap our own exited children, or they look alive
            argv0 = (_cmdline(pid) or [""])[0]
            # Only what we started (guards against a recycled pid after a reboot or a crash).
            if Path(argv0).name == pid_file.stem.split("@")[0]:
                alive[pid_file.stem] = pid
        return alive

    def is_ready(self) -> bool:
        """The apiserver answers ``/readyz`` with 200."""
        return self.state_file.exists() and self.get("/readyz")[0] == 200

    def _start(self, name: str, args: Sequence[str], binary: Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``name`` (from ``bin_dir()`` unless ``binary``) in its own session, logging to logs/NAME.log."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{name}.log").open("ab") as log:  # the child keeps its own descriptor
            log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} {name} {' '.join(args)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                [str(binary or bin_dir(self.version) / name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: down() signals the whole group
            )
        (self.pids / f"{name}.pid").write_text(str(proc.pid))
        self._procs[name] = proc
        self._args[name] = list(args)
        self._binaries[name] = binary
        return proc

    # -- faults (for tests): stop one component, start it again with the same arguments
    def stop_component(self, name: str) -> None:
        """SIGTERM ``name`` (SIGKILL after the timeout) and wait for it to exit; its data stays."""
        pid = self.alive().get(name)
        if pid is None:
            raise RuntimeError(f"{name} is not running")
        self._stop(name, pid, STOP_TIMEOUT)
        proc = self._procs.pop(name, None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def start_component(self, name: str, timeout: float = READY_TIMEOUT) -> None:
        """Start ``name`` again as it was started by ``up``; wait until the API server is ready."""
        proc = self._start(name, self._args[name], self._binaries[name])
        self._wait(self.is_ready, timeout, f"kube-apiserver /readyz after starting {name}", proc)

    # -- lifecycle
    def up(self, timeout: float = READY_TIMEOUT) -> None:
        """Start etcd, kube-apiserver and (unless disabled) kube-controller-manager and kwok; wait until usable.

        Returns once ``/readyz`` is 200 and, with the controller-manager, the ``default``
        ServiceAccount exists in ``default``. Does nothing if this directory's cluster is already up.
        """
        if self.alive() and self.is_ready():
            log(f"already up at {self.server}: export KUBECONFIG={self.kubeconfig}")
            return
        self.down(quiet=True)  # leftovers of a crashed run: processes, etcd data
        self.fresh_ledger()
        ensure_built(version=self.version)
        kwok = ensure_kwok() if self.kwok else None  # built before anything starts
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        make_pki(self.pki)
        try:
            self._start_all(timeout, kwok)
        except BaseException:
            self.down(quiet=True)
            raise
        log(f"{self.version} up in {time.monotonic() - started:.1f}s at {self.server}; logs in {self.logs}")

    def fresh_ledger(self) -> None:
        """A new cluster starts a new audit log: the ledger reads its whole file (the Lease's terms
        from the start), and a previous cluster's writes in this directory are another story. The
        last one is kept beside it for a post-mortem."""
        if self.audit_log.exists():
            self.audit_log.replace(self.logs / "audit.previous.log")

    def _start_all(self, timeout: float, kwok: Path | None) -> None:
        pki, data = self.pki, self.dir / "etcd-data"
        etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
        etcd = self._start(
            "etcd",
            [
                "--name=local",
                f"--data-dir={data}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=local=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync=true",  # throwaway data: no fsync, as envtest
                "--quota-backend-bytes=4294967296",
                "--auto-compaction-retention=1",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: _http_ok(etcd_client, "/health"), 30, "etcd /health", etcd)
        # No kubelets: TaintNodesByCondition would put node.kubernetes.io/not-ready:NoSchedule on every
        # node at create time, and nothing would remove it. ServiceAccount admission needs the
        # `default` SA in a namespace before any pod; only the controller-manager creates it.
        disabled = ["TaintNodesByCondition"] + ([] if self.controller_manager else ["ServiceAccount"])
        policy = self.dir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY, indent=1) + "\n")
        api = self._start(
            "kube-apiserver",
            _with_flags(
                [
                    f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",  # else it fails on hosts without a default route
                    f"--secure-port={api_port}",
                    f"--tls-cert-file={pki / 'apiserver.crt'}",
                    f"--tls-private-key-file={pki / 'apiserver.key'}",
                    f"--client-ca-file={pki / 'ca.crt'}",
                    "--authorization-mode=Node,RBAC",
                    "--service-account-issuer=https://kubernetes.default.svc",
                    f"--service-account-key-file={pki / 'sa.pub'}",
                    f"--service-account-signing-key-file={pki / 'sa.key'}",
                    "--service-cluster-ip-range=10.0.0.0/24",
                    "--allow-privileged=true",
                    "--endpoint-reconciler-type=none",  # no loopback IP written into the kubernetes Endpoints
                    f"--disable-admission-plugins={','.join(disabled)}",  # Priority stays on
                    # On SIGTERM, end open watches cleanly (clients see the stream end, not a reset) and exit in
                    # seconds; otherwise it waits up to --request-timeout (60 s) for watch connections.
                    "--shutdown-watch-termination-grace-period=5s",
                    # Throughput: no API priority & fairness queueing, no in-flight caps.
                    "--enable-priority-and-fairness=false",
                    "--max-requests-inflight=0",
                    "--max-mutating-requests-inflight=0",
                    # The ledger (e2e/ledger.py): every Binding, pod status write, pod deletion and Lease
                    # write, with its user and response code; never rotated within a run.
                    f"--audit-policy-file={policy}",
                    f"--audit-log-path={self.audit_log}",
                    "--audit-log-maxsize=100000",
                    "--v=1",
                ],
                self.api_flags,
            ),
        )
        server = f"https://127.0.0.1:{api_port}"
        self._write_kubeconfig(server)
        self.state_file.write_text(json.dumps({"server": server, "etcd": f"http://127.0.0.1:{etcd_client}"}))
        self._wait(self.is_ready, timeout, "kube-apiserver /readyz", api)
        if self.controller_manager:
            self._start_controller_manager(timeout)
        if kwok is not None:
            self._start_kwok(kwok)

    def _start_controller_manager(self, timeout: float) -> None:
        pki = self.pki
        # With kwok, nodes heartbeat as with kubelets: the node lifecycle controller marks a node whose
        # Lease stops being renewed Unknown after its --node-monitor-grace-period (50 s unless
        # ``node_monitor_grace_seconds`` says otherwise) and taints it unreachable, and taint-eviction
        # deletes its pods after their tolerationSeconds.
        # Without kwok nothing renews a Lease: both stay off, or every node would go Unknown.
        controllers = "*" if self.kwok else "*,-node-lifecycle-controller,-taint-eviction-controller"
        kcm = self._start(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                f"--controllers={controllers}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--kube-api-qps=1000",  # defaults 20/30 throttle ReplicaSet pod creation
                "--kube-api-burst=1000",
                "--concurrent-deployment-syncs=10",
                "--concurrent-replicaset-syncs=10",
                "--secure-port=0",  # no serving endpoint needed
                "--v=1",
                *(
                    [f"--node-monitor-grace-period={self.node_monitor_grace_seconds}s"]
                    if self.node_monitor_grace_seconds is not None
                    else []
                ),
            ],
        )
        self.wait_for_service_account("default", timeout, kcm)

    def _start_kwok(self, binary: Path) -> None:
        """kwok as the kubelet of the labelled nodes, logged in as ``kwok`` (the ledger tells its writes apart)."""
        self._start(
            "kwok",
            [
                f"--kubeconfig={self.user_kubeconfig('kwok')}",
                f"--config={KWOK_STAGES}",
                f"--manage-nodes-with-label-selector={KWOK_NODE_LABEL}=fake",
                f"--node-lease-duration-seconds={self.node_lease_seconds}",
                f"--cidr={POD_CIDR}",
                "--node-ip=10.0.0.1",
            ],
            binary=binary,
        )

    def stop_heartbeats(self, nodes: Iterable[str]) -> None:
        """Make ``nodes`` fail as a kubelet that died: kwok stops renewing their Leases and running
        their pods (their label leaves its selector); the node lifecycle controller does the rest."""
        self._label_nodes(nodes, "stopped")

    def resume_heartbeats(self, nodes: Iterable[str]) -> None:
        """The kubelets of ``nodes`` are back: kwok renews their Leases and reports them Ready again."""
        self._label_nodes(nodes, "fake")

    def _label_nodes(self, nodes: Iterable[str], value: str) -> None:
        patch = {"metadata": {"labels": {KWOK_NODE_LABEL: value}}}
        for name in nodes:
            status, data = self.request(
                "PATCH", f"/api/v1/nodes/{name}", patch, content_type="application/merge-patch+json"
            )
            if status != 200:
                raise RuntimeError(f"labelling node {name}: HTTP {status}: {data}")

    def wait_for_service_account(
        self, namespace: str = "default", timeout: float = 60.0, proc: subprocess.Popen[bytes] | None = None
    ) -> None:
        """Wait for the controller-manager to create ``default`` in ``namespace``.

        With the controller-manager, ServiceAccount admission is on: a pod created in a namespace
        before its ``default`` ServiceAccount exists is refused. New namespaces need this wait too.
        """
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
        self._wait(lambda: self.get(path)[0] == 200, timeout, f"ServiceAccount {namespace}/default", proc)

    def down(self, quiet: bool = False, timeout: float = STOP_TIMEOUT) -> None:
        """Stop every process this directory's cluster started (SIGTERM, then SIGKILL) and drop etcd's data."""
        alive = self.alive()
        order = sorted(alive, key=lambda n: STOP_ORDER.index(n) if n in STOP_ORDER else -1)
        for name in order:
            self._stop(name, alive[name], timeout)
        for proc in self._procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self._procs.clear()
        left = self.alive()
        if left:
            raise RuntimeError(f"processes survived SIGKILL: {left}")
        # Started by an `up` that has exited, they were re-parented to init, which reaps every couple of
        # seconds: wait for that, so a `pgrep` right after `down` shows no <defunct> entries.
        deadline = time.monotonic() + 5
        while any(Path(f"/proc/{pid}").exists() for pid in alive.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        for stale in (self.pids, self.dir / "etcd-data"):
            shutil.rmtree(stale, ignore_errors=True)
        self.state_file.unlink(missing_ok=True)
        if alive and not quiet:
            log(f"stopped {', '.join(order)}")

    def _stop(self, name: str, pid: int, timeout: float) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while name in self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if name in self.alive():
            log(f"{name} (pid {pid}) ignored SIGTERM for {timeout:.0f}s: SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while name in self.alive() and time.monotonic() < deadline:
                time.sleep(0.1)

    # -- REST (stdlib only, as the admin client certificate)
    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> tuple[int, Any]:
        """One API call; returns (HTTP status, decoded JSON body or text)."""
        host, port = self.server.removeprefix("https://").rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), context=self._ssl(), timeout=timeout)
        try:
            payload = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": content_type, "Accept": "application/json"}
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, data.decode(errors="replace")
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, Any]:
        """GET that reports a connection failure as status 0 instead of raising."""
        try:
            return self.request("GET", path)
        except (OSError, ValueError, KeyError):
            return 0, None

    @staticmethod
    def _wait(
        check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{what}: process exited with {proc.returncode}; see the logs")
            if check():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")

    @property
    def ledger(self) -> Ledger:
        """What the API server recorded of the writes (Bindings, pod status, deletions, Leases)."""
        return Ledger(self.audit_log)

    def user_kubeconfig(self, user: str, group: str = "system:masters") -> Path:
        """A kubeconfig of this cluster for ``user`` (a client certificate, in ``group``), so the
        ledger tells one scheduler process from another."""
        client_cert(self.pki, user, group=group)
        path = self.dir / "users" / f"{user}.kubeconfig"
        path.parent.mkdir(exist_ok=True)
        self._write_kubeconfig(self.server, user=user, path=path)
        return path

    def _write_kubeconfig(self, server: str, user: str = "admin", path: Path | None = None) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": server, "certificate-authority-data": _b64(self.pki / "ca.crt")},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": _b64(self.pki / f"{user}.crt"),
                        "client-key-data": _b64(self.pki / f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
            "current-context": "local",
        }
        path = path or self.kubeconfig
        path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML: any client reads it
        path.chmod(0o600)

    # -- objects
    def add_node(
        self,
        name: str,
        labels: Mapping[str, str] | None = None,
        taints: Iterable[tuple[str, str, str]] = (),
        cpu: str = "4",
        memory: str = "32Gi",
        pods: str = "110",
        unschedulable: bool = False,
        kubelet: bool = True,
    ) -> dict[str, Any]:
        """A Node created Ready with its capacity, as a kubelet registers it (one POST: status is
        accepted on create for Nodes). ``taints`` are (key, value, effect) triples.

        ``kubelet``: kwok heartbeats it and runs its pods (when this cluster runs kwok); False makes
        a static object, as scheduler_perf's nodes, that nothing updates. Returns the created Node.
        """
        capacity = {"cpu": cpu, "memory": memory, "pods": pods}
        managed = {KWOK_NODE_LABEL: "fake"} if kubelet else {}
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **managed, **(labels or {})}},
            "spec": {
                "unschedulable": unschedulable,
                "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints],
            },
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "phase": "Running",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": _now(),
                        "lastTransitionTime": _now(),
                    }
                ],
            },
        }
        status, data = self.request("POST", "/api/v1/nodes", body)
        if status not in (200, 201):
            raise RuntimeError(f"creating node {name}: HTTP {status}: {data}")
        return dict(data)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _http_ok(port: int, path: str) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", path)
            return conn.getresponse().status == 200
        finally:
            conn.close()
    except OSError:
        return False


def start_kube_scheduler(
    cluster: Cluster, config_path: Path | str, log_path: Path | str | None = None, extra_args: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """Start the upstream kube-scheduler with a KubeSchedulerConfiguration file; returns the process.

    With ``--config``, kube-scheduler ignores ``--kubeconfig``/``--kube-api-qps``: the file must set
    ``clientConnection.kubeconfig`` (use ``cluster.kubeconfig``) and should set
    ``leaderElection.leaderElect: false``. The log goes to ``log_path`` (default
    ``cluster.logs/kube-scheduler.log``); the pid is recorded, so ``cluster.down()`` stops it too.
    """
    ensure_built(version=cluster.version)
    log = Path(log_path) if log_path is not None else cluster.logs / "kube-scheduler.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cluster.pids.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                str(bin_dir(cluster.version) / "kube-scheduler"),
                f"--config={config_path}",
                "--secure-port=0",
                "--v=1",
                *extra_args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    (cluster.pids / f"kube-scheduler@{proc.pid}.pid").write_text(str(proc.pid))
    return proc
