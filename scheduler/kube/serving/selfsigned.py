"""A self-signed serving certificate made in memory, as kube-scheduler makes one when no
``--tls-cert-file`` is given (client-go util/cert ``GenerateSelfSignedCertKeyWithFixtures``): a
throw-away CA ``<host>-ca@<unix time>`` and a serving certificate ``<host>@<unix time>`` it signs,
RSA-2048, SHA-256, valid from an hour ago for a year. Built with the ``cryptography`` library.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["SelfSignedCert", "generate_self_signed"]

# Upstream: "valid an hour earlier to avoid flakes due to clock skew", "one year self-signed certs".
VALID_BEFORE_NOW = datetime.timedelta(hours=1)
MAX_AGE = datetime.timedelta(days=365)
RSA_BITS = 2048
PUBLIC_EXPONENT = 65537


@dataclass(frozen=True, slots=True)
class SelfSignedCert:
    """PEM text: the serving certificate followed by its CA (upstream's order), the PKCS#1 key, the CA alone."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes


def _serial() -> int:
    return secrets.randbelow(2**63 - 2) + 1  # upstream: rand.Int(MaxInt64-1) + 1


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=True,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey, valid_from: datetime.datetime
) -> x509.CertificateBuilder:
    """What the CA and the serving certificate share: their names and key, a serial, a year's validity."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(_serial())
        .not_valid_before(valid_from)
        .not_valid_after(valid_from + MAX_AGE)
    )


def generate_self_signed(
    host: str = "localhost",
    alternate_ips: tuple[str, ...] = ("127.0.0.1",),
    alternate_dns: tuple[str, ...] = (),
    *,
    now: datetime.datetime | None = None,
) -> SelfSignedCert:
    """A CA and a serving certificate for ``host`` plus the SANs, as upstream makes them."""
    now = now or datetime.datetime.now(datetime.UTC)
    valid_from = now - VALID_BEFORE_NOW
    stamp = int(now.timestamp())

    ca_key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=RSA_BITS)
    ca_name = _name(f"{host}-ca@{stamp}")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), valid_from)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=RSA_BITS)
    names: list[x509.GeneralName] = []
    try:  # upstream: the host is an IP SAN if it parses as one, else a DNS SAN
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in alternate_ips]
    names += [x509.DNSName(name) for name in alternate_dns]
    unique = list(dict.fromkeys(names))
    cert = (
        _builder(_name(f"{host}@{stamp}"), ca_name, key.public_key(), valid_from)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(unique), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_pem = ca.public_bytes(pem)
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )  # "RSA PRIVATE KEY": PKCS#1, as upstream's MarshalPKCS1PrivateKey
    return SelfSignedCert(cert.public_bytes(pem) + ca_pem, key_pem, ca_pem)
