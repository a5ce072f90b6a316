"""Go's ``time.Duration`` as a ``metav1.Duration`` field reads and prints it: ``time.ParseDuration``
(a JSON string such as ``10s``, ``1m30s``, ``-1.5h``) and ``Duration.String`` (``1m30s``, ``500ms``,
``0s``), in whole nanoseconds as Go holds them, so that a refused value is echoed as upstream echoes it.
"""

from __future__ import annotations

import re

__all__ = ["format_go_duration", "nonnegative_seconds", "parse_go_duration"]

_NANOS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_TERM = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")
_INT64_MAX = 2**63 - 1


def parse_go_duration(text: str) -> int:
    """Nanoseconds; ``ValueError`` with Go's ``time: invalid duration "x"`` (or ``missing unit``)."""
    invalid = ValueError(f"time: invalid duration {_quote(text)}")
    rest, sign = text, 1
    if rest[:1] in ("-", "+"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total, pos = 0, 0
    while pos < len(rest):
        match = _TERM.match(rest, pos)
        if match is None:
            if re.match(r"[0-9.]*$", rest[pos:]):
                raise ValueError(f"time: missing unit in duration {_quote(text)}")
            raise invalid
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise invalid  # "." alone, or a unit without a number
        scale = _NANOS[unit]
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _INT64_MAX:
            raise invalid
        pos = match.end()
    return sign * total


def nonnegative_seconds(text: str) -> float | None:
    """``parse_go_duration`` in seconds; None for what Go would not read and for a negative duration,
    which the configuration fields reading it refuse alike."""
    try:
        nanos = parse_go_duration(text)
    except ValueError:
        return None
    return nanos / 1e9 if nanos >= 0 else None


def format_go_duration(nanos: int) -> str:
    """``Duration.String``: ``72h3m0.5s``; under a second in the largest fitting unit (``1.5ms``)."""
    if nanos == 0:
        return "0s"
    sign, n = ("-" if nanos < 0 else ""), abs(nanos)
    if n < 10**9:
        for unit, scale in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if n >= scale:
                return sign + _decimal(n, scale) + unit
    hours, n = divmod(n, 3600 * 10**9)
    minutes, n = divmod(n, 60 * 10**9)
    out = _decimal(n, 10**9) + "s"
    if hours or minutes:
        out = f"{minutes}m{out}"
    if hours:
        out = f"{hours}h{out}"
    return sign + out


def _decimal(n: int, scale: int) -> str:
    whole, fraction = divmod(n, scale)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
