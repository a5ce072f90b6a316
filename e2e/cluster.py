#!/usr/bin/env python3
"""A local Kubernetes control plane built from Go modules: etcd, kube-apiserver, kube-controller-manager.

    python3 e2e/cluster.py build      # build (or reuse) the binaries, cached by version
    python3 e2e/cluster.py up         # start on 127.0.0.1, write .cluster/admin.kubeconfig
    python3 e2e/cluster.py add-node NAME --label k=v --taint k=v:NoSchedule
    python3 e2e/cluster.py down       # stop everything, leave no process behind

Also importable: ``Cluster(dir).up()`` / ``.down()`` / ``.kubeconfig`` / ``.add_node(...)`` for pytest
fixtures and benchmarks, and ``start_kube_scheduler`` for the upstream reference scheduler.
Standard library only (plus the ``openssl`` command for certificates).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

K8S_VERSION = "v1.35.4"
ETCD_VERSION = "v3.6.16"
HERE = Path(__file__).resolve().parent
CONTROLPLANE_MODULE = HERE / "controlplane"
ETCD_MODULE = HERE / "etcd"
DEFAULT_DIR = Path(os.environ.get("SPREAD_CLUSTER_DIR", Path.cwd() / ".cluster"))
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def cache_dir() -> Path:
    base = Path(os.environ.get("SPREAD_CACHE_DIR", Path.home() / ".cache" / "spread-scheduler"))
    return base / f"k8s-{K8S_VERSION}"


def bin_dir() -> Path:
    return cache_dir() / "bin"


def _log(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


# -- building -------------------------------------------------------------------------------


def _inputs_digest() -> str:
    """What the binaries depend on: versions, Go version, and our module files."""
    digest = hashlib.sha256()
    go_version = subprocess.run(["go", "version"], capture_output=True, text=True, check=True).stdout
    digest.update(f"{K8S_VERSION} {ETCD_VERSION} {go_version}".encode())
    for module in (CONTROLPLANE_MODULE, ETCD_MODULE):
        for name in ("go.mod", "go.sum"):
            path = module / name
            if path.exists():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly", "GOWORK": "off"})
    return env


def _version_ldflags() -> str:
    major, minor = K8S_VERSION.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": K8S_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "0000000000000000000000000000000000000000",
        "buildDate": "2026-01-01T00:00:00Z",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{key}={value}" for key, value in values.items()]
    return " ".join(flags)


def ensure_built(force: bool = False) -> Path:
    """Build the four binaries unless the stamp says the cached ones match; returns the bin dir."""
    out = bin_dir()
    stamp = cache_dir() / "stamp"
    digest = _inputs_digest()
    if (
        not force
        and stamp.exists()
        and stamp.read_text().strip() == digest
        and all((out / c).exists() for c in COMPONENTS)
    ):
        return out
    free = shutil.disk_usage(Path.home()).free
    if free < 6 * 2**30:
        raise SystemExit(f"[cluster] need about 6 GiB free to build the control plane, have {free / 2**30:.1f} GiB")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    _log(f"building kube-apiserver, kube-controller-manager, kube-scheduler {K8S_VERSION} (cold: ~15-35 min)")
    subprocess.run(
        [
            "go",
            "build",
            "-trimpath",
            "-ldflags",
            _version_ldflags(),
            "-o",
            str(out) + "/",
            "k8s.io/kubernetes/cmd/kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler",
        ],
        cwd=CONTROLPLANE_MODULE,
        env=_go_env(),
        check=True,
    )
    _log(f"building etcd {ETCD_VERSION}")
    subprocess.run(
        ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"), "go.etcd.io/etcd/server/v3"],
        cwd=ETCD_MODULE,
        env=_go_env(),
        check=True,
    )
    stamp.write_text(digest + "\n")
    _log(f"built in {time.monotonic() - started:.0f}s into {out}")
    return out


def ensure_oracle() -> Path:
    """The differential-test oracle (upstream's scheduler framework as a library), built on demand."""
    return ensure_tool("oracle")


def ensure_tool(name: str) -> Path:
    """A Go main of ours under e2e/controlplane/cmd/NAME (oracle, schedbench), rebuilt when it changes."""
    out = bin_dir() / name
    source = CONTROLPLANE_MODULE / "cmd" / name / "main.go"
    digest = hashlib.sha256(source.read_bytes() + _inputs_digest().encode()).hexdigest()
    stamp = cache_dir() / f"{name}.stamp"
    if out.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out), f"./cmd/{name}"],
        cwd=CONTROLPLANE_MODULE,
        env=_go_env(),
        check=True,
    )
    stamp.write_text(digest + "\n")
    return out


# -- certificates ----------------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_pki(pki: Path) -> None:
    """A CA, the apiserver serving cert (127.0.0.1, localhost), an admin client cert, SA keys."""
    pki.mkdir(parents=True, exist_ok=True)
    if (pki / "admin.crt").exists():
        return
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=spread-scheduler-local-ca",
        cwd=pki,
    )
    (pki / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default\nextendedKeyUsage=serverAuth\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "serving.ext"),
        ("admin", "/O=system:masters/CN=admin", "client.ext"),
    ):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            cwd=pki,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "3650",
            "-extfile",
            ext,
            cwd=pki,
        )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


# -- the cluster -------------------------------------------------------------------------------


class Cluster:
    """etcd + kube-apiserver (+ kube-controller-manager) as child processes, state under ``directory``."""

    def __init__(self, directory: Path | str = DEFAULT_DIR, *, controller_manager: bool = True) -> None:
        self.dir = Path(directory).resolve()
        self.controller_manager = controller_manager
        self.pki = self.dir / "pki"
        self.logs = self.dir / "logs"
        self.pids = self.dir / "pids"
        self.kubeconfig = self.dir / "admin.kubeconfig"
        self.state_file = self.dir / "state.json"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}  # kept so they are reaped, not garbage-collected

    # state
    @property
    def server(self) -> str:
        return str(json.loads(self.state_file.read_text())["server"])

    def _running(self) -> list[int]:
        pids = []
        for pid_file in self.pids.glob("*.pid") if self.pids.exists() else ():
            pid = int(pid_file.read_text())
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap our own exited children, or they look alive
            try:
                os.kill(pid, 0)
                pids.append(pid)
            except ProcessLookupError:
                pass
        return pids

    def _start(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{name}.log").open("ab") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                [str(bin_dir() / name), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        (self.pids / f"{name}.pid").write_text(str(proc.pid))
        self._procs[name] = proc
        return proc

    def up(self, timeout: float = 120.0) -> None:
        if self._running() and self.state_file.exists() and self.is_ready():
            _log(f"already up: export KUBECONFIG={self.kubeconfig}")
            return
        self.down(quiet=True)
        ensure_built()
        self.dir.mkdir(parents=True, exist_ok=True)
        _make_pki(self.pki)
        etcd_client, etcd_peer, api_port = _free_port(), _free_port(), _free_port()
        data = self.dir / "etcd-data"
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
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=4294967296",
                "--auto-compaction-retention=1",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: self._http_ok(etcd_client, "/health"), 30, "etcd /health", etcd)
        pki = self.pki
        api = self._start(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
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
                "--endpoint-reconciler-type=none",
                # Without kubelets: no not-ready taint on fake nodes at creation (notes §4).
                "--disable-admission-plugins=TaintNodesByCondition",
                "--enable-priority-and-fairness=false",
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
                "--v=1",
            ],
        )
        server = f"https://127.0.0.1:{api_port}"
        self._write_kubeconfig(server)
        self.state_file.write_text(json.dumps({"server": server, "etcd": etcd_client}))
        self._wait(self.is_ready, timeout, "kube-apiserver /readyz", api)
        if self.controller_manager:
            kcm = self._start(
                "kube-controller-manager",
                [
                    f"--kubeconfig={self.kubeconfig}",
                    "--leader-elect=false",
                    "--use-service-account-credentials=false",
                    # No kubelets: nodes must never be marked unreachable, tainted or evicted.
                    "--controllers=*,-node-lifecycle-controller",
                    f"--service-account-private-key-file={pki / 'sa.key'}",
                    f"--root-ca-file={pki / 'ca.crt'}",
                    "--kube-api-qps=1000",
                    "--kube-api-burst=1000",
                    "--secure-port=0",
                    "--concurrent-deployment-syncs=10",
                    "--concurrent-replicaset-syncs=10",
                ],
            )
            # The ServiceAccount admission plugin needs `default` in a namespace before any pod.
            self._wait(
                lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
                timeout,
                "ServiceAccount default/default (kube-controller-manager)",
                kcm,
            )
        _log(f"up: export KUBECONFIG={self.kubeconfig}")

    def down(self, quiet: bool = False) -> None:
        pids = self._running()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self._running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        for proc in self._procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self._procs.clear()
        if self.pids.exists():
            shutil.rmtree(self.pids)
        for stale in (self.dir / "etcd-data", self.state_file):
            if stale.is_dir():
                shutil.rmtree(stale)
            elif stale.exists():
                stale.unlink()
        if pids and not quiet:
            _log(f"stopped {len(pids)} processes")

    # API helpers (stdlib only)
    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        host, port = self.server.removeprefix("https://").split(":")
        conn = http.client.HTTPSConnection(host, int(port), context=self._ssl(), timeout=10)
        try:
            payload = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, data.decode(errors="replace")
        finally:
            conn.close()

    def _get(self, path: str) -> tuple[int, Any]:
        try:
            return self._request("GET", path)
        except OSError:
            return 0, None

    def is_ready(self) -> bool:
        return self.state_file.exists() and self._get("/readyz")[0] == 200

    @staticmethod
    def _http_ok(port: int, path: str) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            ok = conn.getresponse().status == 200
            conn.close()
            return ok
        except OSError:
            return False

    @staticmethod
    def _wait(check: Any, timeout: float, what: str, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: process exited with {proc.returncode}; see the logs")
            if check():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}")

    def _write_kubeconfig(self, server: str) -> None:
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
                    "name": "admin",
                    "user": {
                        "client-certificate-data": _b64(self.pki / "admin.crt"),
                        "client-key-data": _b64(self.pki / "admin.key"),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))

    def add_node(
        self,
        name: str,
        labels: dict[str, str] | None = None,
        taints: Iterable[tuple[str, str, str]] = (),
        cpu: str = "4",
        memory: str = "32Gi",
        pods: str = "110",
        unschedulable: bool = False,
    ) -> None:
        """A fake Node as scheduler_perf makes them: Ready, with capacity, no kubelet behind it."""
        capacity = {"cpu": cpu, "memory": memory, "pods": pods}
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {
                "unschedulable": unschedulable,
                "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints],
            },
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        }
        status, data = self._request("POST", "/api/v1/nodes", body)
        if status not in (200, 201):
            raise RuntimeError(f"creating node {name}: HTTP {status}: {data}")


def start_kube_scheduler(cluster: Cluster, config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """The upstream kube-scheduler against ``cluster`` with a KubeSchedulerConfiguration file."""
    ensure_built()
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [str(bin_dir() / "kube-scheduler"), f"--config={config_path}", "--secure-port=0", "--v=1"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=str(DEFAULT_DIR), help="state directory (default: ./.cluster)")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the binaries unless cached")
    build.add_argument("--force", action="store_true")
    up = sub.add_parser("up", help="start the control plane")
    up.add_argument("--no-controller-manager", action="store_true")
    sub.add_parser("down", help="stop everything")
    sub.add_parser("status", help="is it up?")
    node = sub.add_parser("add-node", help="create a fake Ready node")
    node.add_argument("name")
    node.add_argument("--label", action="append", default=[], help="k=v")
    node.add_argument("--taint", action="append", default=[], help="k=v:Effect")
    node.add_argument("--cpu", default="4")
    node.add_argument("--memory", default="32Gi")
    node.add_argument("--pods", default="110")
    node.add_argument("--unschedulable", action="store_true")
    args = parser.parse_args(argv)
    cluster = Cluster(args.dir, controller_manager=not getattr(args, "no_controller_manager", False))
    if args.command == "build":
        print(ensure_built(force=args.force))
        print(ensure_oracle())
    elif args.command == "up":
        cluster.up()
        print(f"export KUBECONFIG={cluster.kubeconfig}")
    elif args.command == "down":
        cluster.down()
    elif args.command == "status":
        up_now = cluster.is_ready()
        print("up" if up_now else "down")
        return 0 if up_now else 1
    elif args.command == "add-node":
        labels = dict(item.split("=", 1) for item in args.label)
        taints = []
        for item in args.taint:
            kv, _, effect = item.rpartition(":")
            key, _, value = kv.partition("=")
            taints.append((key, value, effect))
        cluster.add_node(args.name, labels, taints, args.cpu, args.memory, args.pods, args.unschedulable)
    return 0


if __name__ == "__main__":
    sys.exit(main())
