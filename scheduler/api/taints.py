"""Taints and tolerations (``api/core/v1/toleration.go``, ``component-helpers`` helpers)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.names import label_key_errors, label_value_errors

__all__ = [
    "Effect",
    "Taint",
    "Toleration",
    "find_untolerated",
    "parse_taints",
    "parse_tolerations",
    "tolerates_any",
]


class Effect(enum.StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        """Go's ``%v`` of ``v1.Taint`` as upstream 1.33/1.34 printed it: ``{key: value}``."""
        return f"{{{self.key}: {self.value}}}"


# A strict decimal integer as ``IsDecimalInteger``: "0", or an optional "-" then no leading zero.
_DECIMAL_INTEGER = re.compile(r"^(0|-?[1-9][0-9]*)$")


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint, *, comparison_operators: bool = False) -> bool:
        """``Toleration.ToleratesTaint``: effect, then key, then the operator's value rule."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op in ("", "Equal"):
            return self.value == taint.value
        if op == "Exists":
            return True
        if op in ("Gt", "Lt") and comparison_operators:
            # Alpha gate TaintTolerationComparisonOperators (1.35, off by default).
            if not (_DECIMAL_INTEGER.match(self.value) and _DECIMAL_INTEGER.match(taint.value)):
                return False
            taint_n, tol_n = int(taint.value), int(self.value)
            if not (-(2**63) <= taint_n < 2**63 and -(2**63) <= tol_n < 2**63):
                return False
            return taint_n > tol_n if op == "Gt" else taint_n < tol_n
        return False


def tolerates_any(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated(
    taints: Iterable[Taint], tolerations: tuple[Toleration, ...], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates (``FindMatchingUntoleratedTaint``)."""
    for taint in taints:
        if taint.effect in effects and not tolerates_any(tolerations, taint):
            return taint
    return None


_EFFECTS = {e.value for e in Effect}


def parse_taints(raw: object, path: str, errors: list[FieldError]) -> tuple[Taint, ...]:
    out: list[Taint] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        key = opt_str(obj.get("key"), f"{ipath}.key", errors) or ""
        value = opt_str(obj.get("value"), f"{ipath}.value", errors) or ""
        effect = opt_str(obj.get("effect"), f"{ipath}.effect", errors) or ""
        if effect not in _EFFECTS:
            errors.append(
                FieldError(
                    f"{ipath}.effect",
                    f'Unsupported value: "{effect}": supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
                )
            )
        out.append(Taint(key, value, effect))
    return tuple(out)


def parse_tolerations(raw: object, path: str, errors: list[FieldError]) -> tuple[Toleration, ...]:
    """Tolerations, validated as ``validateTolerations`` does."""
    out: list[Toleration] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        key = opt_str(obj.get("key"), f"{ipath}.key", errors) or ""
        op = opt_str(obj.get("operator"), f"{ipath}.operator", errors) or ""
        value = opt_str(obj.get("value"), f"{ipath}.value", errors) or ""
        effect = opt_str(obj.get("effect"), f"{ipath}.effect", errors) or ""
        seconds = opt_int(obj.get("tolerationSeconds"), f"{ipath}.tolerationSeconds", errors)
        if key:
            errors.extend(label_key_errors(key, f"{ipath}.key"))
        elif op != "Exists":
            errors.append(
                FieldError(
                    f"{ipath}.operator",
                    f'Invalid value: "{op}": operator must be Exists when '
                    '`key` is empty, which means "match all values and all keys"',
                )
            )
        if op in ("", "Equal"):
            # Upstream reports a bad value under ``operator`` (validation.go ValidateTolerations).
            errors.extend(label_value_errors(value, f"{ipath}.operator"))
        elif op == "Exists":
            if value:
                errors.append(
                    FieldError(f"{ipath}.operator", "Invalid value: value must be empty when `operator` is 'Exists'")
                )
        else:
            errors.append(
                FieldError(f"{ipath}.operator", f'Unsupported value: "{op}": supported values: "Equal", "Exists"')
            )
        if effect and effect not in _EFFECTS:
            errors.append(
                FieldError(
                    f"{ipath}.effect",
                    f'Unsupported value: "{effect}": supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
                )
            )
        if seconds is not None and effect != Effect.NO_EXECUTE:
            errors.append(
                FieldError(
                    f"{ipath}.effect",
                    f"Invalid value: \"{effect}\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        out.append(Toleration(key, op, value, effect))
    return tuple(out)
