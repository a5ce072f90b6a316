"""The local cluster's certificates (e2e/cluster/): a CA, the API server's serving certificate, client
certificates (one per user, so the ledger tells writers apart) and the ServiceAccount signing key pair.

Made with the ``cryptography`` library (a dependency of spread-scheduler already), so no ``openssl``
command and no CSR or extension files. PEM files in the cluster's ``pki/``, kept across ``down``/``up``
so kubeconfigs stay valid; a ``pki/`` made earlier by the ``openssl`` command is read as it is.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "spread-scheduler-local-ca"
VALID_FOR = datetime.timedelta(days=3650)
VALID_BEFORE_NOW = datetime.timedelta(hours=1)  # as client-go's self-signed certificates: clock skew
SERVING_IPS = ("127.0.0.1",)
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
FILES = ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "sa.key", "sa.pub")


def make_pki(pki: Path) -> None:
    """A CA, the apiserver's serving certificate (127.0.0.1, localhost, kubernetes...), an admin client
    certificate (``system:masters``) and the ServiceAccount key pair, unless all are there already."""
    pki.mkdir(parents=True, exist_ok=True)
    if all((pki / name).exists() for name in FILES):
        return
    for old in pki.glob("*.crt"):  # a new CA: every certificate is made again, signed by it
        old.unlink()
    ca_key = _new_key()
    ca_name = _name(CA_NAME)
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(pki / "ca.key", ca_key)
    (pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    sans += [x509.DNSName(name) for name in SERVING_NAMES]
    _signed_cert(pki, "apiserver", _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    client_cert(pki, "admin", group="system:masters")
    sa_key = _new_key()
    _write_key(pki / "sa.key", sa_key)
    (pki / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def client_cert(pki: Path, user: str, *, group: str) -> None:
    """``pki/USER.crt`` and ``.key``: a client certificate for ``CN=user, O=group`` (Kubernetes reads
    the user and the group from them), signed by the CA, unless it exists."""
    if (pki / f"{user}.crt").exists():
        return
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group), x509.NameAttribute(NameOID.COMMON_NAME, user)]
    )
    _signed_cert(pki, user, subject, ExtendedKeyUsageOID.CLIENT_AUTH)


def _signed_cert(
    pki: Path,
    name: str,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName] | None = None,
) -> None:
    """``pki/NAME.key`` and ``pki/NAME.crt`` for ``subject``, signed by ``pki/ca.key``."""
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise TypeError(f"{pki / 'ca.key'}: want an RSA key, got {type(ca_key).__name__}")
    key = _new_key()
    builder = (
        _builder(subject, ca.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write_key(pki / f"{name}.key", key)
    (pki / f"{name}.crt").write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(path: Path, key: rsa.RSAPrivateKey) -> None:
    """PKCS#8 PEM, readable by its owner only (what ``openssl genrsa`` writes, but for the mode)."""
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _builder(subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey) -> x509.CertificateBuilder:
    """What every certificate here shares: names, key, a random serial, ten years from an hour ago."""
    valid_from = datetime.datetime.now(datetime.UTC) - VALID_BEFORE_NOW
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_from + VALID_FOR)
    )
