"""The functions DRA's CEL environment adds to cel-cpp's standard ones, as the Kubernetes base
environment declares them (``k8s.io/apiserver/pkg/cel/library``: quantity, semver, regex ``find``,
lists, sets; ``includes`` from 1.36), with upstream's error texts.

cel-cpp registers implementations by argument *kind*: all messages (quantity, semver) are one kind,
all lists another. Where upstream has one overload per type, the first declared here carries the
implementation for all of them and the others are declared for the type checker only.
Pure: no I/O.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from scheduler.plugins.dynamicresources import celtypes
from scheduler.plugins.dynamicresources.celtypes import SemverError
from scheduler.plugins.dynamicresources.celwrap import cel, re2

__all__ = ["GO_REGEXP", "REFUSED_MARK", "RefusedError", "function_decls", "go_regexp_error", "re2_error"]


class RefusedError(Exception):
    """An implementation function's error, carried out of cel-cpp with upstream's text."""


def _q(message: Any) -> Fraction:
    return celtypes.fraction_of(message)


def _as_int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not -(2**63) <= value.numerator < 2**63:
        return None
    return value.numerator


def _quantity(text: str) -> Any:
    try:
        return celtypes.quantity_from_text(text)
    except ValueError as err:
        raise RefusedError(str(err)) from None


def _is_quantity(text: str) -> bool:
    try:
        celtypes.quantity_from_text(text)
    except ValueError:
        return False
    return True


def _as_integer(q: Any) -> int:
    value = _as_int64(_q(q))
    if value is None:
        raise RefusedError("cannot convert value to integer")
    return value


def _semver(text: str, normalize: bool = False) -> Any:
    try:
        version = celtypes.normalize_and_parse(text) if normalize else celtypes.parse_semver(text)
    except SemverError as err:
        raise RefusedError(str(err)) from None
    return celtypes.make_semver(version)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        celtypes.normalize_and_parse(text) if normalize else celtypes.parse_semver(text)
    except SemverError:
        return False
    return True


def _cmp(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def _vcmp(a: Any, b: Any) -> int:
    return celtypes.version_of(a).compare(celtypes.version_of(b))


def _includes(target: Any, item: Any) -> bool:
    """``library.IncludesOption``: membership in a list attribute, equality with a scalar one."""
    if isinstance(target, list):
        return any(_equal(x, item) for x in target)
    return _equal(target, item)


def _equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return bool(a == b)


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """cel-cpp reports a Python exception's text; ours carry upstream's, marked so we can tell them apart."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except RefusedError as err:
            raise ValueError(REFUSED_MARK + str(err)) from None

    return call


REFUSED_MARK = "\u241eupstream\u241e "  # cel-cpp keeps a C string: no NUL; a mark no message is expected to hold


def _compare(a: Any, b: Any) -> int:
    if a.DESCRIPTOR.full_name != b.DESCRIPTOR.full_name:
        raise RefusedError("no such overload")
    if a.DESCRIPTOR.full_name == celtypes.SEMVER_TYPE:
        return _vcmp(a, b)
    return _cmp(_q(a), _q(b))


def _ordered(name: str, quantity: Any, semver: Any, answer: Callable[[int], Any]) -> Any:
    returns = cel.Type.INT if name == "compareTo" else cel.Type.BOOL
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)
    return cel.FunctionDecl(
        name,
        [
            cel.Overload(
                f"quantity_{snake}",
                returns,
                [quantity, quantity],
                is_member=True,
                impl=_guarded(lambda a, b: answer(_compare(a, b))),
            ),
            cel.Overload(f"semver_{snake}", returns, [semver, semver], is_member=True),
        ],
    )


# RE2's error codes as Go's regexp/syntax spells them (``ErrorCode`` strings): cel-go's regex
# library compiles patterns with Go's regexp, whose syntax is RE2's.
GO_REGEXP = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "trailing \\": "trailing backslash at end of expression",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
}
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would write every refused pattern to stderr


def go_regexp_error(re2_text: str) -> str:
    """RE2's ``CODE: ARG`` as Go's ``error parsing regexp: CODE: `ARG```."""
    code, _, arg = re2_text.partition(": ")
    return f"error parsing regexp: {GO_REGEXP.get(code, code)}: `{arg}`"


def re2_error(pattern: str) -> str | None:
    """Go's words for a pattern RE2 refuses, or None."""
    try:
        _compiled(pattern)
    except re2.error as err:
        return go_regexp_error(err.args[0].decode() if isinstance(err.args[0], bytes) else str(err.args[0]))
    return None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


def _regex(pattern: str) -> Any:
    """A pattern computed while evaluating: the regex library's ``Illegal regex`` when RE2 refuses it."""
    problem = re2_error(pattern)
    if problem is not None:
        raise RefusedError("Illegal regex: " + problem)
    return _compiled(pattern)


def _find(text: str, pattern: str) -> str:
    """The Kubernetes regex library's ``find``: the first match, or the empty string."""
    m = _regex(pattern).search(text)
    return m.group(0) if m else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _min(values: list[Any]) -> Any:
    if not values:
        raise RefusedError("min called on empty list")
    return min(values)


def _max(values: list[Any]) -> Any:
    if not values:
        raise RefusedError("max called on empty list")
    return max(values)


def _contains_all(values: list[Any], items: list[Any]) -> bool:
    return all(any(_equal(v, x) for v in values) for x in items)


def _lists_and_sets() -> list[Any]:
    """``library.Lists`` and ``ext.Sets``. The lists' ``indexOf``/``lastIndexOf`` are left out: cel-cpp's
    strings extension declares those names for strings, and cel-cpp takes no second declaration."""
    t_ = cel.Type
    comparable = [t_.INT, t_.UINT, t_.DOUBLE, t_.STRING, t_.BOOL, t_.BYTES, t_.DURATION, t_.TIMESTAMP]
    summable = [t_.INT, t_.UINT, t_.DOUBLE, t_.DURATION]

    def per_type(name: str, types: list[Any], returns: Callable[[Any], Any], impl: Callable[..., Any]) -> Any:
        overloads = [
            cel.Overload(
                f"list_{i}_{name}",
                returns(t),
                [t_.List(t)],
                is_member=True,
                **({"impl": _guarded(impl)} if i == 0 else {}),
            )
            for i, t in enumerate(types)
        ]
        return cel.FunctionDecl(name, overloads)

    def sets(name: str, impl: Callable[[list[Any], list[Any]], bool]) -> Any:
        return cel.FunctionDecl(
            f"sets.{name}",
            [cel.Overload(f"list_sets_{name}_list", t_.BOOL, [t_.List(t_.DYN), t_.List(t_.DYN)], impl=_guarded(impl))],
        )

    return [
        per_type("isSorted", comparable, lambda t: t_.BOOL, lambda xs: all(a <= b for a, b in itertools.pairwise(xs))),
        per_type("sum", summable, lambda t: t, lambda xs: sum(xs[1:], xs[0]) if xs else 0),
        per_type("min", comparable, lambda t: t, _min),
        per_type("max", comparable, lambda t: t, _max),
        sets("contains", _contains_all),
        sets("equivalent", lambda a, b: _contains_all(a, b) and _contains_all(b, a)),
        sets("intersects", lambda a, b: any(_equal(x, y) for x in a for y in b)),
    ]


def function_decls(*, includes: bool) -> list[Any]:
    t_ = cel.Type
    qty = t_(celtypes.QUANTITY_TYPE)
    ver = t_(celtypes.SEMVER_TYPE)

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> Any:
        return cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member, impl=_guarded(impl))
                for oid, ret, params, member, impl in overloads
            ],
        )

    decls = [
        fn("quantity", ("string_to_quantity", qty, [t_.STRING], False, _quantity)),
        fn("isQuantity", ("is_quantity_string", t_.BOOL, [t_.STRING], False, _is_quantity)),
        fn("sign", ("quantity_sign", t_.INT, [qty], False, lambda q: _cmp(_q(q), Fraction(0)))),
        # cel-cpp registers implementations by kind, and both types are of kind message: the
        # quantity overload's implementation serves the semver one too (declared for the checker only).
        _ordered("isGreaterThan", qty, ver, lambda c: c == 1),
        _ordered("isLessThan", qty, ver, lambda c: c == -1),
        _ordered("compareTo", qty, ver, lambda c: c),
        fn("asApproximateFloat", ("quantity_get_float", t_.DOUBLE, [qty], True, lambda q: float(_q(q)))),
        fn("asInteger", ("quantity_get_int", t_.INT, [qty], True, _as_integer)),
        fn("isInteger", ("quantity_is_integer", t_.BOOL, [qty], True, lambda q: _as_int64(_q(q)) is not None)),
        fn(
            "add",
            ("quantity_add", qty, [qty, qty], True, lambda a, b: celtypes.make_quantity(_q(a) + _q(b))),
            ("quantity_add_int", qty, [qty, t_.INT], True, lambda a, n: celtypes.make_quantity(_q(a) + n)),
        ),
        fn(
            "sub",
            ("quantity_sub", qty, [qty, qty], True, lambda a, b: celtypes.make_quantity(_q(a) - _q(b))),
            ("quantity_sub_int", qty, [qty, t_.INT], True, lambda a, n: celtypes.make_quantity(_q(a) - n)),
        ),
        fn(
            "semver",
            ("string_to_semver", ver, [t_.STRING], False, _semver),
            ("string_bool_to_semver", ver, [t_.STRING, t_.BOOL], False, _semver),
        ),
        fn(
            "isSemver",
            ("is_semver_string", t_.BOOL, [t_.STRING], False, _is_semver),
            ("is_semver_string_bool", t_.BOOL, [t_.STRING, t_.BOOL], False, _is_semver),
        ),
        fn("find", ("string_find_n", t_.STRING, [t_.STRING, t_.STRING], True, _find)),
        fn(
            "findAll",
            ("string_find_all", t_.List(t_.STRING), [t_.STRING, t_.STRING], True, _find_all),
            ("string_find_all_n", t_.List(t_.STRING), [t_.STRING, t_.STRING, t_.INT], True, _find_all),
        ),
        fn("major", ("semver_major", t_.INT, [ver], True, lambda v: int(v.major))),
        fn("minor", ("semver_minor", t_.INT, [ver], True, lambda v: int(v.minor))),
        fn("patch", ("semver_patch", t_.INT, [ver], True, lambda v: int(v.patch))),
    ]
    decls += _lists_and_sets()
    if includes:
        # cel-cpp dispatches a dyn-typed receiver by its runtime kind: one overload per kind.
        kinds = [t_.List(t_.DYN), t_.STRING, t_.INT, t_.BOOL, ver]
        decls.append(
            cel.FunctionDecl(
                "includes",
                [
                    cel.Overload(f"includes_{i}_{j}", t_.BOOL, [kind, arg], is_member=True, impl=_includes)
                    for i, kind in enumerate(kinds)
                    for j, arg in enumerate([t_.STRING, t_.INT, t_.BOOL, ver])
                ],
            )
        )
    return decls
