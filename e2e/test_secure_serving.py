"""Secure serving as kube-scheduler does it, on the real API server: HTTPS on --secure-port, probes
open, /metrics behind delegated TokenReview + SubjectAccessReview.

The scheduler runs with the shipped least-privilege RBAC (a ServiceAccount token, the two ``create``
verbs on the reviews) and a certificate given with --tls-cert-file. Two ServiceAccounts scrape: one
bound to the shipped ``spread-scheduler-metrics-reader`` ClusterRole (200), one not (403). Each answer
is compared with upstream kube-scheduler v1.35.4's on the same requests (status code and Status body).
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from e2e.cluster import Cluster, start_kube_scheduler
from e2e.conftest import LOGS, SchedulerProcess, free_port, insecure_tls
from e2e.kube_helpers import wait_for
from e2e.test_manifests import _config_file, sa_kubeconfig  # noqa: F401 - the fixture, used by name below

# Upstream: NewDelegatingAuthorizationOptions' AllowCacheTTL/DenyCacheTTL.
SAR_CACHE_TTL = 10.0


def _get(address: str, path: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"https://{address}{path}")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=insecure_tls()) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _answer(status: int, body: str) -> tuple[int, object]:
    """What must match upstream: the code, and the Status object of a refusal (upstream pretty-prints it)."""
    return status, (json.loads(body) if status in (401, 403) else None)


def _token(core: client.CoreV1Api, namespace: str, name: str) -> str:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    request = {"spec": {"expirationSeconds": 3600}}
    token: str = core.create_namespaced_service_account_token(name, namespace, request).status.token
    return token


def _bind_reader(rbac: client.RbacAuthorizationV1Api, namespace: str, name: str) -> None:
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": f"{namespace}-{name}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "spread-scheduler-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )


@pytest.fixture
def given_cert(tmp_path: Path) -> tuple[str, str]:
    cert, key = tmp_path / "serving.crt", tmp_path / "serving.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=spread-scheduler.e2e", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.fixture
def secure_scheduler(
    request: pytest.FixtureRequest, scheduler: SchedulerProcess, given_cert: tuple[str, str], tmp_path: Path
) -> Iterator[SchedulerProcess]:
    """The shipped RBAC and configuration, a given certificate; the session's scheduler steps aside."""
    kubeconfig = str(request.getfixturevalue("sa_kubeconfig"))  # the manifests applied, the SA's token
    scheduler.stop()
    cert, key = given_cert
    args = (f"--tls-cert-file={cert}", f"--tls-private-key-file={key}")
    own = SchedulerProcess(kubeconfig, _config_file(tmp_path), name="secure", extra_args=args)
    try:
        own.start()
        yield own
    finally:
        if own.proc is not None:
            assert own.stop() == 0
        scheduler.start()


@pytest.fixture
def upstream_address(local_cluster: Cluster | None, kubeconfig: str, tmp_path: Path) -> Iterator[str]:
    """kube-scheduler v1.35.4 serving securely, delegating to the same API server (no scheduling profile in use)."""
    if local_cluster is None:
        pytest.skip("needs the local control plane (the kube-scheduler binary built with it)")
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": kubeconfig},
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": "secure-serving-reference"}],
            }
        )
    )
    port = free_port()
    log = LOGS / "kube-scheduler-secure-serving.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    args = [
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    ]
    proc = start_kube_scheduler(local_cluster, config, log, extra_args=args)
    try:
        wait_for(lambda: b"Serving securely" in log.read_bytes(), 60, "kube-scheduler serving")
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_metrics_need_a_token_allowed_to_get_them_as_upstream(
    core: client.CoreV1Api,
    secure_scheduler: SchedulerProcess,
    upstream_address: str,
    namespace: str,
    given_cert: tuple[str, str],
) -> None:
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    allowed, refused = _token(core, namespace, "scraper-a"), _token(core, namespace, "scraper-b")
    _bind_reader(rbac, namespace, "scraper-a")
    ours = secure_scheduler.address

    # The served certificate is the given one (not the in-memory self-signed one).
    host, port = ours.rsplit(":", 1)
    served = ssl.get_server_certificate((host, int(port)))
    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(Path(given_cert[0]).read_text())

    def same_as_upstream(path: str, token: str | None) -> tuple[int, str]:
        status, body = _get(ours, path, token)
        assert _answer(status, body) == _answer(*_get(upstream_address, path, token)), (path, status, body)
        return status, body

    wait_for(lambda: _get(ours, "/metrics", allowed)[0] == 200, 15, "the RBAC binding seen by the SAR")
    for path in ("/healthz", "/readyz", "/livez"):  # open to anyone: the kubelet probes carry no token
        assert same_as_upstream(path, None) == (200, "ok")
    status, text = same_as_upstream("/metrics", allowed)
    assert status == 200 and "scheduler_pending_pods" in text and "scheduler_schedule_attempts_total" in text
    # No token: upstream authenticates it as system:anonymous, whom the SAR refuses (403, not 401).
    status, body = same_as_upstream("/metrics", None)
    assert status == 403 and "system:anonymous" in json.loads(body)["message"]
    # A token the API server does not know: 401, on every path (authentication comes before the allow-list).
    for path in ("/metrics", "/healthz"):
        status, body = same_as_upstream(path, "not-a-token")
        assert status == 401 and json.loads(body)["reason"] == "Unauthorized"
    assert same_as_upstream("/no-such-path", None)[0] == 403  # authorization comes before routing

    # Decisions are cached for 10 s, as upstream's: a new binding shows only after the denial expires.
    # The clock starts before the request whose denial is cached (a loaded machine took 8 s over the
    # checks above once, when it started after them).
    user = f"system:serviceaccount:{namespace}:scraper-b"
    denied_at = time.monotonic()
    status, body = same_as_upstream("/metrics", refused)
    assert status == 403 and json.loads(body)["message"] == f'forbidden: User "{user}" cannot get path "/metrics"'
    _bind_reader(rbac, namespace, "scraper-b")
    assert _get(ours, "/metrics", refused)[0] == 403
    answered = wait_for(lambda: _get(ours, "/metrics", refused)[0] == 200 and time.monotonic(), 30, "cache expiry")
    assert answered - denied_at >= SAR_CACHE_TTL - 1.5, answered - denied_at  # the denial was cached until then
    # Our own reviews were never refused (RBAC grants exactly their create); other writes may meet
    # other tests' namespaces being deleted, which is not what this test is about.
    refused_reviews = [
        line
        for line in secure_scheduler.log().lower().splitlines()
        if "forbidden" in line and ("tokenreviews" in line or "subjectaccessreviews" in line)
    ]
    assert not refused_reviews


def test_self_signed_certificate_names_localhost_and_127_0_0_1(scheduler: SchedulerProcess, tmp_path: Path) -> None:
    """Without --tls-cert-file: upstream's in-memory self-signed certificate, valid for what it names."""
    host, port = scheduler.address.rsplit(":", 1)
    pem = ssl.get_server_certificate((host, int(port)))
    (tmp_path / "ca.pem").write_text(pem)
    verifying = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))  # signature and names checked
    # The served leaf is signed by a throw-away CA (upstream's pair): trust the leaf itself as the anchor.
    verifying.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    with urllib.request.urlopen(f"https://{scheduler.address}/healthz", timeout=10, context=verifying) as response:
        assert response.status == 200  # the IP SAN 127.0.0.1
    with socket.create_connection((host, int(port))) as raw, verifying.wrap_socket(raw, server_hostname="localhost"):
        pass  # the DNS SAN localhost
    assert "Generated self-signed cert in-memory" in scheduler.log()


def test_secure_port_zero_serves_nothing(kubeconfig: str, scheduler: SchedulerProcess) -> None:
    """``--secure-port=0`` turns serving off, as upstream (the other scheduler keeps its lease meanwhile)."""
    quiet = SchedulerProcess(kubeconfig, scheduler.config, name="no-serving", extra_args=("--secure-port=0",))
    quiet.start()
    try:
        assert "secure serving disabled" in quiet.log()
        host, port = quiet.address.rsplit(":", 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=5).close()
    finally:
        assert quiet.stop() == 0
