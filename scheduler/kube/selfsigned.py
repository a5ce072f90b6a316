"""A self-signed serving certificate made in memory, as kube-scheduler makes one when no
``--tls-cert-file`` is given (client-go's ``GenerateSelfSignedCertKeyWithFixtures``).

Pure Python (RSA-2048, SHA-256, hand-written DER) on purpose: the ``cryptography`` package is not a
dependency and the image has no writable disk (``readOnlyRootFilesystem``) nor a promise of the
``openssl`` command. Nobody verifies this certificate (probes and Prometheus skip verification, as
they do for kube-scheduler's own); it exists so the port speaks TLS.

Differences from upstream, on purpose: one self-signed certificate instead of a leaf signed by a
throw-away CA (nobody can obtain that CA to trust it anyway).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import secrets
from dataclasses import dataclass

__all__ = ["SelfSignedCert", "generate_self_signed"]

# Upstream: the certificate is valid from an hour ago (clock skew) for a year.
VALID_BEFORE_NOW = datetime.timedelta(hours=1)
MAX_AGE = datetime.timedelta(days=365)
RSA_BITS = 2048
PUBLIC_EXPONENT = 65537

OID_RSA_ENCRYPTION = "1.2.840.113549.1.1.1"
OID_SHA256_WITH_RSA = "1.2.840.113549.1.1.11"
OID_COMMON_NAME = "2.5.4.3"
OID_KEY_USAGE = "2.5.29.15"
OID_SUBJECT_ALT_NAME = "2.5.29.17"
OID_BASIC_CONSTRAINTS = "2.5.29.19"
OID_EXT_KEY_USAGE = "2.5.29.37"
OID_SERVER_AUTH = "1.3.6.1.5.5.7.3.1"
# DigestInfo header of a SHA-256 hash (RFC 8017 section 9.2, note 1).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


@dataclass(frozen=True, slots=True)
class SelfSignedCert:
    """PEM text of the certificate and of its PKCS#1 RSA key."""

    cert_pem: bytes
    key_pem: bytes


# -- DER ----------------------------------------------------------------------------------------


def _tlv(tag: int, body: bytes) -> bytes:
    size = len(body)
    if size < 0x80:
        return bytes([tag, size]) + body
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(octets)]) + octets + body


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _int(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))  # +1: a leading 0 keeps it positive


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(part) for part in dotted.split("."))
    body = bytearray([40 * first + second])
    for arc in rest:
        chunk, left = [arc & 0x7F], arc >> 7
        while left:  # base 128, high bit set on all but the last octet
            chunk.append(0x80 | (left & 0x7F))
            left >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, bytes(body))


def _bits(body: bytes, unused: int = 0) -> bytes:
    return _tlv(0x03, bytes([unused]) + body)


def _time(moment: datetime.datetime) -> bytes:
    if moment.year < 2050:  # RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime after
        return _tlv(0x17, moment.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, moment.strftime("%Y%m%d%H%M%SZ").encode())


def _name(common_name: str) -> bytes:
    return _seq(_tlv(0x31, _seq(_oid(OID_COMMON_NAME), _tlv(0x0C, common_name.encode()))))


def _extension(oid: str, value: bytes, *, critical: bool = False) -> bytes:
    flag = _tlv(0x01, b"\xff") if critical else b""
    return _seq(_oid(oid), flag, _tlv(0x04, value))


def _pem(label: str, der: bytes) -> bytes:
    text = base64.encodebytes(der).decode().replace("\n", "")
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return (f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n").encode()


# -- RSA ----------------------------------------------------------------------------------------

_SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % d for d in range(3, int(p**0.5) + 1, 2))]


def _probably_prime(n: int, rounds: int = 20) -> bool:
    """Miller-Rabin with random bases (Go's ``rsa.GenerateKey`` uses 20 rounds too)."""
    if any(n % p == 0 for p in _SMALL_PRIMES):
        return n in _SMALL_PRIMES
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(2 + secrets.randbelow(n - 3), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int) -> int:
    while True:
        # Top two bits set (so p*q has exactly 2*bits bits), odd.
        candidate = secrets.randbits(bits) | (0b11 << (bits - 2)) | 1
        if (candidate - 1) % PUBLIC_EXPONENT and _probably_prime(candidate):
            return candidate


def _rsa_key() -> tuple[int, int, int, int]:
    """(n, d, p, q) with e = 65537."""
    while True:
        p, q = _prime(RSA_BITS // 2), _prime(RSA_BITS // 2)
        if p != q:
            phi = (p - 1) * (q - 1)
            return p * q, pow(PUBLIC_EXPONENT, -1, phi), p, q


def _sign(message: bytes, n: int, d: int) -> bytes:
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 section 8.2)."""
    size = (n.bit_length() + 7) // 8
    digest = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    encoded = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return pow(int.from_bytes(encoded, "big"), d, n).to_bytes(size, "big")


def generate_self_signed(
    host: str = "localhost",
    alternate_ips: tuple[str, ...] = ("127.0.0.1",),
    alternate_dns: tuple[str, ...] = (),
    *,
    now: datetime.datetime | None = None,
) -> SelfSignedCert:
    """A serving certificate for ``host`` (CN ``host@<unix time>``, as upstream names it) and the SANs."""
    now = now or datetime.datetime.now(datetime.UTC)
    n, d, p, q = _rsa_key()
    algorithm = _seq(_oid(OID_SHA256_WITH_RSA), _tlv(0x05, b""))
    names = [_tlv(0x82, name.encode()) for name in dict.fromkeys((host, *alternate_dns))]  # [2] dNSName
    names += [_tlv(0x87, ipaddress.ip_address(ip).packed) for ip in dict.fromkeys(alternate_ips)]  # [7] iPAddress
    extensions = _seq(
        # digitalSignature (bit 0) and keyEncipherment (bit 2): 0b101 in the top bits, 5 unused.
        _extension(OID_KEY_USAGE, _bits(b"\xa0", unused=5), critical=True),
        _extension(OID_EXT_KEY_USAGE, _seq(_oid(OID_SERVER_AUTH))),
        _extension(OID_BASIC_CONSTRAINTS, _seq(), critical=True),
        _extension(OID_SUBJECT_ALT_NAME, _seq(*names)),
    )
    subject = _name(f"{host}@{int(now.timestamp())}")
    tbs = _seq(
        _tlv(0xA0, _int(2)),  # [0] version: v3
        _int(secrets.randbelow(2**63 - 1) + 1),  # upstream: uniform in [1, MaxInt64)
        algorithm,
        subject,  # issuer: self-signed
        _seq(_time(now - VALID_BEFORE_NOW), _time(now - VALID_BEFORE_NOW + MAX_AGE)),
        subject,
        _seq(_seq(_oid(OID_RSA_ENCRYPTION), _tlv(0x05, b"")), _bits(_seq(_int(n), _int(PUBLIC_EXPONENT)))),
        _tlv(0xA3, extensions),  # [3] extensions
    )
    cert = _seq(tbs, algorithm, _bits(_sign(tbs, n, d)))
    key = _seq(*(_int(v) for v in (0, n, PUBLIC_EXPONENT, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p))))
    return SelfSignedCert(_pem("CERTIFICATE", cert), _pem("RSA PRIVATE KEY", key))
