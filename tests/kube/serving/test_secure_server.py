"""The secure port in-process: TLS with the in-memory certificate, upstream's answers, and its own thread.

The decisive test blocks the scheduling loop (as a long scheduling cycle does) and probes /healthz
meanwhile: served on that loop, as before, the probe would wait the whole block.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.kube.metrics import SchedulerMetrics
from scheduler.kube.serving import server as server_module
from scheduler.kube.serving.delegated_auth import DelegatingAuthenticator, DelegatingAuthorizer
from scheduler.kube.serving.selfsigned import SelfSignedCert, generate_self_signed
from scheduler.kube.serving.server import SCRAPE_REFRESH_WAIT, SecureServer, ServingAuth, serving_ssl_context
from tests.kube.serving.test_delegated_auth import AccessReviews, TokenReviews

BLOCK_SECONDS = 1.5


@pytest.fixture(scope="module")
def cert() -> SelfSignedCert:
    return generate_self_signed("localhost", ("127.0.0.1",), ("localhost",))


@pytest.fixture(scope="module")
def cert_files(cert: SelfSignedCert, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("tls")
    (folder / "tls.crt").write_bytes(cert.cert_pem)
    (folder / "tls.key").write_bytes(cert.key_pem)
    return str(folder / "tls.crt"), str(folder / "tls.key")


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def get(port: int, path: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context or _insecure()) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Scheduling:
    """Stands in for the scheduler: readiness, a queue count published on its loop, which thread published."""

    def __init__(self, metrics: SchedulerMetrics) -> None:
        self.metrics = metrics
        self.ready = True
        self.pending = 7
        self.published_on: set[int] = set()

    def publish(self) -> None:
        self.published_on.add(threading.get_ident())
        self.metrics.publish_queue({"active": self.pending}, {})


def serve(
    tls: ssl.SSLContext, body: Callable[[SecureServer, Scheduling], Any], *, block: float = 0.0
) -> tuple[Any, Scheduling]:
    """Run ``body(server, scheduling)`` in a client thread while the test's loop plays the scheduling loop.

    With ``block``, that loop is blocked (``time.sleep``) for as long, right after ``body`` starts.
    """
    metrics = SchedulerMetrics(process=False)
    scheduling = Scheduling(metrics)

    async def make_auth() -> ServingAuth:
        async def close() -> None:
            return None

        authorizer = DelegatingAuthorizer(AccessReviews({"alice"}))
        return ServingAuth(DelegatingAuthenticator(TokenReviews()), authorizer, close)

    async def main() -> Any:
        scheduling.publish()  # as run_scheduler does before serving
        server = SecureServer(
            metrics,
            lambda: scheduling.ready,
            before_scrape=scheduling.publish,
            scheduler_loop=asyncio.get_running_loop(),
            make_auth=make_auth,
            ssl_context=tls,
        )
        server.start("127.0.0.1", 0)
        try:
            client = asyncio.ensure_future(asyncio.to_thread(body, server, scheduling))
            await asyncio.sleep(0.05)  # the client thread has started
            time.sleep(block)  # a long scheduling cycle: nothing else runs on this loop meanwhile
            return await client
        finally:
            server.stop()

    return asyncio.run(main()), scheduling


def test_endpoints_answer_as_upstream(cert_files: tuple[str, str]) -> None:
    def body(server: SecureServer, scheduling: Scheduling) -> dict[str, tuple[int, str]]:
        answers = {
            "healthz": get(server.port, "/healthz"),
            "livez": get(server.port, "/livez"),
            "readyz": get(server.port, "/readyz"),
            "metrics-anonymous": get(server.port, "/metrics"),
            "metrics-alice": get(server.port, "/metrics", "good"),
            "metrics-bad-token": get(server.port, "/metrics", "bad"),
            "healthz-bad-token": get(server.port, "/healthz", "bad"),
        }
        scheduling.ready = False
        answers["readyz-not-synced"] = get(server.port, "/readyz")
        return answers

    answers, scheduling = serve(serving_ssl_context(*cert_files, "0.0.0.0"), body)
    assert answers["healthz"] == answers["livez"] == answers["readyz"] == (200, "ok")
    assert answers["readyz-not-synced"][0] == 503
    status, text = answers["metrics-alice"]
    assert status == 200 and 'scheduler_pending_pods{queue="active"} 7.0' in text
    assert scheduling.published_on == {threading.get_ident()}  # the queue was read on the scheduling thread only
    status, text = answers["metrics-anonymous"]
    assert status == 403 and json.loads(text) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/metrics": no rule',  # the SAR's reason
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    for refused in ("metrics-bad-token", "healthz-bad-token"):  # authentication first, on every path
        status, text = answers[refused]
        assert status == 401 and json.loads(text)["message"] == "Unauthorized"


def test_healthz_does_not_wait_for_a_blocked_scheduling_loop(cert_files: tuple[str, str]) -> None:
    def body(server: SecureServer, scheduling: Scheduling) -> dict[str, float]:
        time.sleep(0.2)  # well inside the block
        started = time.monotonic()
        assert get(server.port, "/healthz") == (200, "ok")
        healthz = time.monotonic() - started
        scheduling.pending = 99  # not published until the loop is free again
        started = time.monotonic()
        status, text = get(server.port, "/metrics", "good")
        assert status == 200 and 'scheduler_pending_pods{queue="active"} 7.0' in text  # the last published
        return {"healthz": healthz, "metrics": time.monotonic() - started}

    seconds, _ = serve(serving_ssl_context(*cert_files, "0.0.0.0"), body, block=BLOCK_SECONDS)
    assert seconds["healthz"] < 0.5, seconds  # on the scheduling loop it would take ~1.3 s
    assert seconds["metrics"] < SCRAPE_REFRESH_WAIT + 0.5, seconds  # stale numbers rather than a slow scrape


def test_the_in_memory_certificate_verifies_for_localhost_and_127_0_0_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[SelfSignedCert] = []

    def keep(*args: Any) -> SelfSignedCert:
        made.append(generate_self_signed(*args))
        return made[-1]

    monkeypatch.setattr(server_module, "generate_self_signed", keep)
    tls = serving_ssl_context(None, None, "0.0.0.0")  # generated now, loaded through a memory file

    def body(server: SecureServer, _scheduling: Scheduling) -> None:
        (tmp_path / "ca.pem").write_bytes(made[0].ca_pem)  # trust the throw-away CA, as a client given it would
        verifying = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))  # checks signature and names
        assert get(server.port, "/healthz", context=verifying) == (200, "ok")  # IP SAN
        with (
            socket.create_connection(("127.0.0.1", server.port)) as raw,
            verifying.wrap_socket(raw, server_hostname="localhost") as wrapped,
        ):
            subject = dict(item[0] for item in wrapped.getpeercert()["subject"])  # type: ignore[index, misc]
            assert subject["commonName"].startswith("localhost@")  # upstream's "<host>@<unix time>"
        with (
            pytest.raises(ssl.SSLCertVerificationError),
            socket.create_connection(("127.0.0.1", server.port)) as raw,
            verifying.wrap_socket(raw, server_hostname="example.com"),
        ):
            pass

    serve(tls, body)


def test_one_tls_file_without_the_other_is_refused_with_upstreams_message(cert_files: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="missing filename for serving cert"):
        serving_ssl_context(cert_files[0], None, "0.0.0.0")


def test_the_serving_certificate_is_signed_by_its_ca_with_upstreams_names_and_usages() -> None:
    generated = generate_self_signed("localhost", ("127.0.0.1", "10.0.0.7"), ("localhost",))
    leaf, ca = x509.load_pem_x509_certificates(generated.cert_pem)
    assert generated.ca_pem == ca.public_bytes(serialization.Encoding.PEM)
    leaf.verify_directly_issued_by(ca)  # raises if the signature or the issuer is wrong
    common_name = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    ca_name = ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert str(common_name).startswith("localhost@") and str(ca_name).startswith("localhost-ca@")
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "10.0.0.7"]
    usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.key_encipherment and not usage.key_cert_sign
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH]
    )
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == datetime.timedelta(days=365)
    assert generated.key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
