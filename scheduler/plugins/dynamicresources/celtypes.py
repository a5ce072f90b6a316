"""The values DRA's CEL adds to the base environment: Kubernetes quantities and semantic versions.

Upstream (``k8s.io/apiserver/pkg/cel/library``: ``quantity.go``, ``semverlib.go``) declares them as
the opaque types ``kubernetes.Quantity`` and ``kubernetes.Semver``. The CEL runtime we use (cel-cpp
through cel-expr-python) takes no opaque Python values, so each is a small protobuf message of the
same name, built here at import from a descriptor: the quantity holds its exact value (a fraction,
so that ``quantity("1Gi") == quantity("1024Mi")`` as upstream's ``Equal``), the version its parts.

Pure: no I/O.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from scheduler.api.quantity import parse_quantity
from scheduler.api.semver import SemverError, Version, normalize_and_parse, parse_semver

__all__ = [
    "POOL",
    "QUANTITY_TYPE",
    "SEMVER_TYPE",
    "SemverError",
    "Version",
    "fraction_of",
    "make_quantity",
    "make_semver",
    "normalize_and_parse",
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


def make_semver(version: Version) -> Any:
    return _SemverMessage(major=version.major, minor=version.minor, patch=version.patch, pre=".".join(version.pre))


def version_of(message: Any) -> Version:
    pre = tuple(message.pre.split(".")) if message.pre else ()
    return Version(int(message.major), int(message.minor), int(message.patch), pre)
