"""Semantic versions as blang/semver v4 parses and orders them (DRA's ``version`` attributes, CEL's
``semver()``): its checks, in its order, with its messages. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SemverError", "Version", "normalize_and_parse", "parse_semver"]


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
