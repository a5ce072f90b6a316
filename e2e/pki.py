"""The local cluster's certificates (e2e/cluster.py), made with the ``openssl`` command: a CA, the API
server's serving certificate, client certificates (one per user, so the ledger tells writers apart) and
the ServiceAccount signing key pair. Kept in the cluster's ``pki/`` across ``down``/``up``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path) -> None:
    """A CA, the apiserver serving cert (127.0.0.1, localhost), an admin client cert, SA keys.

    Kept across ``down``/``up`` (only etcd's data is removed), so kubeconfigs stay valid.
    """
    pki.mkdir(parents=True, exist_ok=True)
    if all((pki / f).exists() for f in ("ca.crt", "apiserver.crt", "admin.crt", "sa.key", "sa.pub")):
        return
    _openssl(
        *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650"),
        *("-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=spread-scheduler-local-ca"),
        cwd=pki,
    )
    (pki / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    _signed_cert(pki, "apiserver", "/CN=kube-apiserver", "serving.ext")
    client_cert(pki, "admin", "/O=system:masters/CN=admin")
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def client_cert(pki: Path, name: str, subject: str) -> None:
    """``pki/NAME.crt`` and ``.key``, a client certificate for ``subject``, unless it exists."""
    if not (pki / f"{name}.crt").exists():
        _signed_cert(pki, name, subject, "client.ext")


def _signed_cert(pki: Path, name: str, subject: str, ext: str) -> None:
    _openssl(
        *("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject),
        *("-keyout", f"{name}.key", "-out", f"{name}.csr"),
        cwd=pki,
    )
    _openssl(
        *("x509", "-req", "-sha256", "-days", "3650", "-in", f"{name}.csr", "-extfile", ext),
        *("-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.crt"),
        cwd=pki,
    )
