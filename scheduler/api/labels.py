"""Label requirements and label selectors (``apimachinery/pkg/labels``), parsed once.

A ``LabelSelector`` from the API becomes an immutable ``Selector``; ``None`` becomes ``NOTHING``
and ``{}`` becomes ``EVERYTHING``, exactly as ``metav1.LabelSelectorAsSelector`` does. Selectors are
hashable so the cache can key its matching-pod counts by them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, as_str_map, opt_str, parse_go_int64
from scheduler.api.names import label_key_errors, label_value_errors

__all__ = ["EVERYTHING", "NOTHING", "Operator", "Requirement", "Selector", "parse_label_selector"]


class Operator(enum.StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    """``key op values``; for ``Gt``/``Lt`` ``number`` holds the parsed bound."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()
    number: int = 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op is Operator.IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op is Operator.NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        parsed = parse_go_int64(value)
        if parsed is None:  # a label that is no Go integer never satisfies Gt/Lt
            return False
        return parsed > self.number if op is Operator.GT else parsed < self.number


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; ``nothing`` marks the selector of a nil LabelSelector."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(req.matches(labels) for req in self.requirements)

    @property
    def empty(self) -> bool:
        """True for ``labels.Everything()``: no requirement at all (PodTopologySpread counts 0)."""
        return not self.nothing and not self.requirements

    def and_requirements(self, extra: tuple[Requirement, ...]) -> Selector:
        if self.nothing:
            return self
        return Selector(tuple(sorted({*self.requirements, *extra}, key=_req_order)))


def _req_order(req: Requirement) -> tuple[str, str, tuple[str, ...], int]:
    return (req.key, req.operator.value, tuple(sorted(req.values)), req.number)


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def make_selector(requirements: list[Requirement]) -> Selector:
    """Sorted and de-duplicated, so equal selectors hash equal (as ``labels.NewSelector`` sorts)."""
    return Selector(tuple(sorted(set(requirements), key=_req_order)))


_LABEL_VALUE_FORMAT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    f"for validation is '{_LABEL_VALUE_FORMAT}')"
)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FORMAT)


def requirement_value_errors(key: str, value: str, path: str) -> list[FieldError]:
    """``labels.NewRequirement``'s ``validateLabelValue``: its path ends in ``[key]``, its messages are
    apimachinery's own (which the API server never shows for node selectors: it lets such values in)."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.fullmatch(value):
        problems.append(_LABEL_VALUE_MESSAGE)
    if not problems:
        return []
    return [FieldError(f"{path}[{key}]", f'Invalid value: "{value}": ' + "; ".join(problems))]


def parse_requirement(
    key: object,
    operator: object,
    values: object,
    path: str,
    errors: list[FieldError],
    *,
    numeric: bool,
    value_errors: list[FieldError] | None = None,
) -> Requirement | None:
    """Check one expression as ``labels.NewRequirement`` does; ``numeric`` allows Gt/Lt (node selectors).

    ``value_errors`` receives what the API server lets through but the selector parser refuses (a
    node selector value that is no valid label value, a ``Gt`` bound that is no integer); by default
    it is ``errors``.
    """
    verrs = errors if value_errors is None else value_errors
    before = len(errors) + (0 if value_errors is None else len(value_errors))
    key_s = opt_str(key, f"{path}.key", errors)
    op_s = opt_str(operator, f"{path}.operator", errors)
    vals = as_list(values, f"{path}.values", errors)
    if key_s is None:
        errors.append(FieldError(f"{path}.key", "Required value"))
    else:
        errors.extend(label_key_errors(key_s, f"{path}.key"))
    str_vals: list[str] = []
    value_errs: list[FieldError] = []  # after the operator's own, in labels.NewRequirement's order
    for i, val in enumerate(vals):
        if not isinstance(val, str):
            errors.append(FieldError(f"{path}.values[{i}]", "must be a string"))
        elif value_errors is None:
            str_vals.append(val)
            verrs.extend(label_value_errors(val, f"{path}.values[{i}]"))
        else:
            str_vals.append(val)
            value_errs.extend(requirement_value_errors(key_s or "", val, f"{path}.values[{i}]"))
    allowed = {o.value for o in Operator} if numeric else {"In", "NotIn", "Exists", "DoesNotExist"}
    if op_s not in allowed:
        supported = ", ".join(f'"{o}"' for o in sorted(allowed))
        errors.append(FieldError(f"{path}.operator", f'Unsupported value: "{op_s}": supported values: {supported}'))
        return None
    op = Operator(op_s)
    number = 0
    if op in (Operator.IN, Operator.NOT_IN) and not str_vals:
        errors.append(FieldError(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and vals:
        errors.append(
            FieldError(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        )
    elif op in (Operator.GT, Operator.LT):
        if len(str_vals) != 1:
            errors.append(
                FieldError(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
            )
        else:
            parsed = parse_go_int64(str_vals[0])
            if parsed is None:
                verrs.append(
                    FieldError(
                        f"{path}.values[0]",
                        f"Invalid value: \"{str_vals[0]}\": for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
            else:
                number = parsed
    verrs.extend(value_errs)
    if len(errors) + (0 if value_errors is None else len(value_errors)) > before or key_s is None:
        return None
    return Requirement(key_s, op, frozenset(str_vals), number)


def parse_label_selector(raw: object, path: str, errors: list[FieldError]) -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil → NOTHING, ``{}`` → EVERYTHING; errors name the field.

    An invalid selector still yields a selector (``NOTHING``) so callers never need a None check;
    the recorded errors make the pod invalid instead.
    """
    if raw is None:
        return NOTHING
    before = len(errors)
    obj: Mapping[str, Any] = as_mapping(raw, path, errors)
    reqs: list[Requirement] = []
    for key, value in as_str_map(obj.get("matchLabels"), f"{path}.matchLabels", errors).items():
        errors.extend(label_key_errors(key, f"{path}.matchLabels"))
        errors.extend(label_value_errors(value, f"{path}.matchLabels"))
        reqs.append(Requirement(key, Operator.IN, frozenset((value,))))
    for i, expr in enumerate(as_list(obj.get("matchExpressions"), f"{path}.matchExpressions", errors)):
        epath = f"{path}.matchExpressions[{i}]"
        e = as_mapping(expr, epath, errors)
        req = parse_requirement(e.get("key"), e.get("operator"), e.get("values"), epath, errors, numeric=False)
        if req is not None:
            reqs.append(req)
    if len(errors) > before:
        return NOTHING
    return make_selector(reqs)


def selector_from_map(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: a plain equality map (Service and RC selectors)."""
    return make_selector([Requirement(k, Operator.IN, frozenset((v,))) for k, v in labels.items()])
