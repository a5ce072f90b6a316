"""The credential stack against the real API server: an exec plugin with a short stated expiry, and a
token file rotated under a running scheduler.

The ServiceAccount is the shipped one (``manifests/rbac.yaml``: the ``spread-scheduler`` ClusterRole
and the Lease Role in namespace ``spread-scheduler``), so the scheduler runs with the rights a real
install gives it and with no credential but the ones under test. Its profile has a name of its own,
so it never competes with the session's scheduler.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.build import bin_dir
from e2e.conftest import ROOT, SchedulerProcess
from e2e.kube_helpers import pod_body, pods_in, wait_for

NAME = "e2e-credentials"  # the profile's schedulerName
SERVICE_ACCOUNT, SA_NAMESPACE = "spread-scheduler", "spread-scheduler"
LIFETIME = 15  # seconds the plugin states its tokens live: the stack must run it again after that

PLUGIN = """
import datetime, json, os, subprocess, sys, time
with open(os.environ["COUNT_FILE"], "a") as count:
    count.write(f"{time.time()}\\n")
token = subprocess.run(
    [os.environ["KUBECTL"], "--kubeconfig", os.environ["ADMIN_KUBECONFIG"], "create", "token",
     os.environ["SA"], "-n", os.environ["SA_NAMESPACE"], "--duration=10m"],
    capture_output=True, text=True, check=True, timeout=30,
).stdout.strip()
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=int(os.environ["LIFETIME"]))
status = {"token": token, "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [str(bin_dir() / "kubectl"), "--kubeconfig", kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def shipped_rbac(kubeconfig: str) -> None:
    """The shipped namespace, ServiceAccount and roles (applied as an install applies them)."""
    if not (bin_dir() / "kubectl").exists():
        pytest.skip("needs kubectl from the local control plane's build (e2e/cluster/)")
    manifests = ROOT / "manifests"
    _kubectl(kubeconfig, "apply", "-f", str(manifests / "namespace.yaml"), "-f", str(manifests / "rbac.yaml"))


def _cluster_of(kubeconfig: str) -> dict[str, Any]:
    """The admin kubeconfig's cluster stanza (server and CA), without any of its credentials."""
    admin = yaml.safe_load(Path(kubeconfig).read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    return next(c for c in admin["clusters"] if c["name"] == context["cluster"])["cluster"]  # type: ignore[no-any-return]


def _kubeconfig_for(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "sa",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "sa", "user": user}],
                "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
            }
        )
    )
    return str(path)


def _exec_user(script: Path, env: dict[str, str]) -> dict[str, Any]:
    """A kubeconfig user whose exec plugin is ``script``, run by this Python with ``env``."""
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "interactiveMode": "Never",
        }
    }


def _config(path: Path) -> str:
    """Leader election on, on the Lease the shipped Role allows; a profile of its own."""
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: true, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 1s,"
        f" resourceNamespace: {SA_NAMESPACE}, resourceName: spread-scheduler}}\n"
        f"profiles: [{{schedulerName: {NAME}}}]\n"
    )
    return str(path)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Callable[[str], SchedulerProcess]]:
    procs: list[SchedulerProcess] = []

    def start(kubeconfig: str) -> SchedulerProcess:
        proc = SchedulerProcess(kubeconfig, _config(tmp_path / "scheduler.yaml"), name=f"credentials-{tmp_path.name}")
        procs.append(proc)
        proc.start()
        return proc

    yield start
    for proc in procs:
        if proc.proc is not None:
            assert proc.stop() == 0, proc.log()[-3000:]


def _status_with(cluster: dict[str, Any], token: str) -> int:
    """The API server's answer to a read made with ``token`` alone."""
    context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    request = urllib.request.Request(
        f"{cluster['server']}/api/v1/nodes?limit=1", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _create_pods(core: client.CoreV1Api, namespace: str, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        core.create_namespaced_pod(namespace, pod_body(name, scheduler=NAME))
    return names


def _all_bound(core: client.CoreV1Api, namespace: str, names: list[str]) -> bool:
    bound = {p.metadata.name for p in pods_in(core, namespace) if p.spec.node_name}
    return set(names) <= bound


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``spread-scheduler *args`` with no KUBECONFIG in its environment: only ``--kubeconfig`` counts."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    exe = str(Path(sys.executable).parent / "spread-scheduler")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, check=False, env=env)


@pytest.mark.slow
def test_an_exec_plugin_with_a_short_expiry_serves_run_explain_and_skew(
    core: client.CoreV1Api,
    kubeconfig: str,
    shipped_rbac: None,
    started: Callable[[str], SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    nodes("creds-a")
    nodes("creds-b")
    script, runs = tmp_path / "plugin.py", tmp_path / "plugin-runs"
    script.write_text(PLUGIN)
    env = {
        "COUNT_FILE": str(runs),
        "KUBECTL": str(bin_dir() / "kubectl"),
        "ADMIN_KUBECONFIG": kubeconfig,
        "SA": SERVICE_ACCOUNT,
        "SA_NAMESPACE": SA_NAMESPACE,
        "LIFETIME": str(LIFETIME),
    }
    exec_kubeconfig = _kubeconfig_for(tmp_path / "exec.kubeconfig", _cluster_of(kubeconfig), _exec_user(script, env))

    def run_times() -> list[float]:
        return [float(line) for line in runs.read_text().split()] if runs.exists() else []

    def plugin_runs() -> int:
        return len(run_times())

    scheduler = started(exec_kubeconfig)  # "cache synced": its watches listed as the ServiceAccount
    first = _create_pods(core, namespace, "before", 3)
    wait_for(lambda: _all_bound(core, namespace, first), 60, "pods bound with the plugin's first token")
    # The Lease is renewed every second: past the stated expiry, a request runs the plugin again.
    # (The old code ran it once per client it made, all at start, and never again.)
    started_at = run_times()[0]
    wait_for(
        lambda: any(t > started_at + LIFETIME for t in run_times()),
        3 * LIFETIME,
        "the plugin run again after its first token's stated expiry",
    )
    later = _create_pods(core, namespace, "after", 3)
    wait_for(lambda: _all_bound(core, namespace, later), 60, "pods bound with a renewed token")
    # One run per stated lifetime for the whole process (its watches, writes, Lease and secure port
    # share one stack), not one per request or per client.
    elapsed = run_times()[-1] - started_at
    assert plugin_runs() <= elapsed / LIFETIME + 2, run_times()
    assert scheduler.proc is not None and scheduler.proc.poll() is None, scheduler.log()[-3000:]

    before = plugin_runs()
    skew = _cli("skew", "--kubeconfig", exec_kubeconfig, "-n", namespace, "-o", "json")
    assert skew.returncode == 0, skew.stderr
    json.loads(skew.stdout)
    core.create_namespaced_pod(namespace, pod_body("stuck", nodeSelector={"e2e.invalid/nowhere": "true"}))
    explain = _cli("explain", f"{namespace}/stuck", "--kubeconfig", exec_kubeconfig, "-o", "json")
    assert explain.returncode == 0, explain.stderr
    (result,) = json.loads(explain.stdout)["results"]
    assert result["node"] is None
    assert plugin_runs() >= before + 2  # each command ran the plugin for its own credentials


@pytest.mark.slow
def test_a_rotated_token_file_keeps_the_scheduler_binding(
    core: client.CoreV1Api,
    kubeconfig: str,
    shipped_rbac: None,
    started: Callable[[str], SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    nodes("rotate-a")
    nodes("rotate-b")
    secret = f"e2e-token-anchor-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_secret(SA_NAMESPACE, {"metadata": {"name": secret}})
    bound_to_secret = _kubectl(
        kubeconfig,
        *("create", "token", SERVICE_ACCOUNT, "-n", SA_NAMESPACE, "--duration=10m"),
        *("--bound-object-kind", "Secret", "--bound-object-name", secret),
    ).strip()
    token = tmp_path / "token"
    token.write_text(bound_to_secret + "\n")  # as a projected token file: a newline at the end
    file_kubeconfig = _kubeconfig_for(tmp_path / "file.kubeconfig", _cluster_of(kubeconfig), {"tokenFile": str(token)})

    scheduler = started(file_kubeconfig)
    first = _create_pods(core, namespace, "token-a", 3)
    wait_for(lambda: _all_bound(core, namespace, first), 60, "pods bound with token A")

    # Rotate: token B into the file (replaced whole, as the kubelet does), then A made invalid.
    fresh = _kubectl(kubeconfig, "create", "token", SERVICE_ACCOUNT, "-n", SA_NAMESPACE, "--duration=10m").strip()
    staging = tmp_path / "token.new"
    staging.write_text(fresh + "\n")
    staging.replace(token)
    core.delete_namespaced_secret(secret, SA_NAMESPACE)
    cluster = _cluster_of(kubeconfig)
    wait_for(lambda: _status_with(cluster, bound_to_secret) == 401, 30, "token A refused once its Secret is gone")
    later = _create_pods(core, namespace, "token-b", 3)
    wait_for(lambda: _all_bound(core, namespace, later), 90, "pods bound after the token file was rotated")
    assert scheduler.proc is not None and scheduler.proc.poll() is None, scheduler.log()[-3000:]


CERT_LIFE = 15  # seconds each certificate of the plugin below is valid
CERT_RENEW = 5  # seconds after which it states its answer expires: the stack asks again
CERT_GROUP = "e2e-rotating-certs"  # the certificates' O: the shipped roles are bound to this group

CERT_PLUGIN = """
import datetime, json, os, pathlib
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
runs = pathlib.Path(os.environ["COUNT_FILE"])
n = len(runs.read_text().split()) + 1 if runs.exists() else 1
with runs.open("a") as count:
    count.write(f"{n}\\n")
pki = pathlib.Path(os.environ["PKI"])
ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
key = ec.generate_private_key(ec.SECP256R1())
now = datetime.datetime.now(datetime.timezone.utc)
name = x509.Name([
    x509.NameAttribute(NameOID.ORGANIZATION_NAME, os.environ["GROUP"]),
    x509.NameAttribute(NameOID.COMMON_NAME, f"e2e-cert-{n}"),
])
cert = (
    x509.CertificateBuilder().subject_name(name).issuer_name(ca.subject).public_key(key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(now - datetime.timedelta(minutes=1))
    .not_valid_after(now + datetime.timedelta(seconds=int(os.environ["LIFE"])))
    .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    .sign(ca_key, hashes.SHA256())
)
status = {
    "clientCertificateData": cert.public_bytes(serialization.Encoding.PEM).decode(),
    "clientKeyData": key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode(),
    "expirationTimestamp": (now + datetime.timedelta(seconds=int(os.environ["RENEW"]))).strftime("%Y-%m-%dT%H:%M:%SZ"),
}
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
"""


@pytest.mark.slow
def test_a_plugins_rotated_client_certificate_keeps_the_lease_past_the_first_ones_expiry(
    core: client.CoreV1Api,
    kubeconfig: str,
    shipped_rbac: None,
    control_plane: Any,
    ledger: Any,
    started: Callable[[str], SchedulerProcess],
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    """An exec plugin answering a fresh client certificate (valid 15 s, ``e2e-cert-<n>``) every 5 s:
    past the first one's expiry the leader still renews its Lease and binds, and the API server saw
    every client of the process (the Lease's on its own thread included) move to the newer ones.

    Old code (issue #46, finding 2): the Lease's client, and every connection kept alive from before
    a rotation, kept presenting the first certificate; once it expired the renewals were refused and
    the leader exited with ``Leaderelection lost``."""
    nodes("cert-a")
    _kubectl(
        kubeconfig, "create", "clusterrolebinding", f"{CERT_GROUP}-{namespace}",
        "--clusterrole=spread-scheduler", f"--group={CERT_GROUP}",
    )  # fmt: skip
    _kubectl(
        kubeconfig, "create", "rolebinding", f"{CERT_GROUP}-{namespace}", "-n", SA_NAMESPACE,
        "--role=spread-scheduler-lease", f"--group={CERT_GROUP}",
    )  # fmt: skip
    script, runs = tmp_path / "cert-plugin.py", tmp_path / "plugin-runs"
    script.write_text(CERT_PLUGIN)
    env = {
        "COUNT_FILE": str(runs),
        "PKI": str(control_plane.pki),
        "GROUP": CERT_GROUP,
        "LIFE": str(CERT_LIFE),
        "RENEW": str(CERT_RENEW),
    }
    cert_kubeconfig = _kubeconfig_for(tmp_path / "cert.kubeconfig", _cluster_of(kubeconfig), _exec_user(script, env))
    try:
        mark = ledger.mark()
        scheduler = started(cert_kubeconfig)
        first = _create_pods(core, namespace, "cert-before", 2)
        wait_for(lambda: _all_bound(core, namespace, first), 60, "pods bound with the first certificate")
        time.sleep(CERT_LIFE + 10)  # the first certificate has expired; renewDeadline (3 s) long past
        assert scheduler.proc is not None and scheduler.proc.poll() is None, scheduler.log()[-3000:]
        later = _create_pods(core, namespace, "cert-after", 2)
        wait_for(lambda: _all_bound(core, namespace, later), 60, "pods bound after the first certificate expired")
        assert "Leaderelection lost" not in scheduler.log()
        writes = [w for w in ledger.writes(mark) if w.user.startswith("e2e-cert-")]
        leases = [w for w in writes if w.kind == "lease" and w.namespace == SA_NAMESPACE]
        assert leases and all(w.ok for w in leases), [str(w) for w in leases if not w.ok][:5]
        # The Lease was renewed under at least three certificates, the last ones well after the first expired.
        assert len({w.user for w in leases}) >= 3, sorted({w.user for w in leases})
        assert "e2e-cert-1" not in {w.user for w in leases[-5:]}, [str(w) for w in leases[-5:]]
        assert {w.user for w in writes if w.kind == "binding"} - {"e2e-cert-1"}, "later pods bound under a newer one"
    finally:
        _kubectl(kubeconfig, "delete", "clusterrolebinding", f"{CERT_GROUP}-{namespace}", "--ignore-not-found")
        _kubectl(
            kubeconfig, "delete", "rolebinding", f"{CERT_GROUP}-{namespace}", "-n", SA_NAMESPACE, "--ignore-not-found"
        )
