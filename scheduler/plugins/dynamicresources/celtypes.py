"""The values DRA's CEL adds to the base environment: Kubernetes quantities and semantic versions.

Upstream (``k8s.io/apiserver/pkg/cel/library``: ``quantity.go``, ``semverlib.go``) declares them as
the opaque types ``kubernetes.Quantity`` and ``kubernetes.Semver``. The CEL runtime we use (cel-cpp
through cel-expr-python) takes no opaque Python values, so each is a small protobuf message of the
same name, built here at import from a descriptor: the quantity holds its exact value (a fraction,
so that ``quantity("1Gi") == quantity("1024Mi")`` as upstream's ``Equal``), the version its parts.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from scheduler.api.quantity import parse_quantity

__all__ = [
    "POOL",
    "QUANTITY_TYPE",
    "SEMVER_TYPE",
    "SemverError",
    "Version",
    "fraction_of",
    "make_quantity",
    "make_semver",
    "parse_semver",
    "version_of",
]

QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_UINT64 = descriptor_pb2.FieldDescriptorProto.TYPE_UINT64
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL


def _build_pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(name="spread_scheduler/dra_cel.proto", package="kubernetes")
    proto.syntax = "proto3"
    quantity = proto.message_type.add(name="Quantity")
    # numerator and denominator as decimal text: a quantity's exact value exceeds 64 bits.
    quantity.field.add(name="num", number=1, type=_STRING, label=_OPTIONAL)
    quantity.field.add(name="den", number=2, type=_STRING, label=_OPTIONAL)
    semver = proto.message_type.add(name="Semver")
    for number, name in enumerate(("major", "minor", "patch"), start=1):
        semver.field.add(name=name, number=number, type=_UINT64, label=_OPTIONAL)
    # dot-joined, "" for none; no build metadata: upstream's equality (Compare) ignores it, as CEL's
    # message equality then does
    semver.field.add(name="pre", number=4, type=_STRING, label=_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


POOL = _build_pool()
_QuantityMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(QUANTITY_TYPE))
_SemverMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(SEMVER_TYPE))


def make_quantity(value: Fraction) -> Any:
    return _QuantityMessage(num=str(value.numerator), den=str(value.denominator))


def fraction_of(message: Any) -> Fraction:
    return Fraction(int(message.num or "0"), int(message.den or "1"))


def quantity_from_text(text: str) -> Any:
    """``resource.ParseQuantity``: the API server's own error text when it refuses."""
    return make_quantity(parse_quantity(text))


class SemverError(ValueError):
    """blang/semver's refusal, with its text."""


@dataclass(frozen=True, slots=True, order=False)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        """``semver.Version.Compare``: parts, then pre-release (none ranks highest); build is ignored."""
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre, strict=False):
            c = _compare_pre(x, y)
            if c:
                return c
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _compare_pre(x: str, y: str) -> int:
    xn, yn = x.isdigit(), y.isdigit()
    if xn and yn:
        a, b = int(x), int(y)
        return (a > b) - (a < b)
    if xn != yn:
        return -1 if xn else 1  # numeric identifiers have lower precedence
    return (x > y) - (x < y)


_ALNUM = re.compile(r"[0-9A-Za-z-]+")
_MAX_UINT64 = 2**64 - 1


def _number(text: str, what: str) -> int:
    if text and not (text.isdigit() and text.isascii()):
        raise SemverError(f'Invalid character(s) found in {what} number "{text}"')
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f'{what.capitalize()} number must not contain leading zeroes "{text}"')
    if not text or int(text) > _MAX_UINT64:
        reason = "invalid syntax" if not text else "value out of range"
        raise SemverError(f'strconv.ParseUint: parsing "{text}": {reason}')
    return int(text)


def _prerelease(part: str) -> str:
    """``NewPRVersion``: a dot-separated prerelease identifier."""
    if not part:
        raise SemverError("Prerelease is empty")
    if part.isdigit() and part.isascii():
        if len(part) > 1 and part[0] == "0":
            raise SemverError(f'Numeric PreRelease version must not contain leading zeroes "{part}"')
    elif not _ALNUM.fullmatch(part):
        raise SemverError(f'Invalid character(s) found in prerelease "{part}"')
    return part


def _build_part(part: str) -> str:
    if not part:
        raise SemverError("Build meta data is empty")
    if not _ALNUM.fullmatch(part):
        raise SemverError(f'Invalid character(s) found in build meta data "{part}"')
    return part


def parse_semver(text: str) -> Version:
    """``semver.Parse`` (blang/semver v4), its checks in its order and its messages."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest, plus, build_text = parts[2].partition("+")
    rest, minus, pre_text = rest.partition("-")
    patch = _number(rest, "patch")
    pre = tuple(_prerelease(p) for p in pre_text.split(".")) if minus else ()
    build = tuple(_build_part(b) for b in build_text.split(".")) if plus else ()
    return Version(major, minor, patch, pre, build)


def normalize_and_parse(text: str) -> Version:
    """The semver library's ``normalizeAndParse``: a leading ``v`` and missing parts tolerated."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            parts[i] = trimmed if trimmed and trimmed[0] in "0123456789" else "0" + trimmed
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse_semver(".".join(parts))


def make_semver(version: Version) -> Any:
    return _SemverMessage(major=version.major, minor=version.minor, patch=version.patch, pre=".".join(version.pre))


def version_of(message: Any) -> Version:
    pre = tuple(message.pre.split(".")) if message.pre else ()
    return Version(int(message.major), int(message.minor), int(message.patch), pre)
