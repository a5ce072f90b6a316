"""The local cluster's certificates (e2e/pki.py): what kube-apiserver and its clients need of them,
checked by a TLS handshake with Python's own ssl module (OpenSSL underneath), as the apiserver's
clients and the admin's client certificate meet in the e2e tests."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from e2e.pki import client_cert, make_pki


def handshake(pki: Path, user: str, server_hostname: str = "127.0.0.1") -> x509.Name:
    """A mutual-TLS handshake: the apiserver's certificate verified for ``server_hostname``, the
    user's client certificate required; returns the client certificate's subject the server saw."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    server.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    client.load_cert_chain(pki / f"{user}.crt", pki / f"{user}.key")
    left, right = socket.socketpair()
    seen: list[bytes] = []

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                seen.append(tls.getpeercert(binary_form=True) or b"")
        except ssl.SSLError:
            left.close()  # the client refused the server's certificate: the client says why

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(right, server_hostname=server_hostname):
            pass
    finally:
        thread.join(timeout=10)
    return x509.load_der_x509_certificate(seen[0]).subject


def test_the_apiserver_and_a_user_trust_each_other_through_the_ca(tmp_path: Path) -> None:
    make_pki(tmp_path)
    client_cert(tmp_path, "kwok", group="system:masters")
    for user in ("admin", "kwok"):
        subject = handshake(tmp_path, user)
        assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == user
        assert subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert handshake(tmp_path, "admin", server_hostname="kubernetes.default.svc")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(tmp_path, "admin", server_hostname="elsewhere.example")


def test_kept_across_calls_and_made_again_whole_when_one_is_missing(tmp_path: Path) -> None:
    make_pki(tmp_path)
    ca = (tmp_path / "ca.crt").read_bytes()
    make_pki(tmp_path)
    assert (tmp_path / "ca.crt").read_bytes() == ca  # kept: kubeconfigs made from it stay valid
    (tmp_path / "sa.pub").unlink()
    make_pki(tmp_path)
    assert (tmp_path / "ca.crt").read_bytes() != ca
    assert handshake(tmp_path, "admin")  # the admin's certificate signed by the new CA
    assert (tmp_path / "ca.key").stat().st_mode & 0o077 == 0
