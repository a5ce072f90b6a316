"""Readers for what ResourceSlices, DeviceClasses and ResourceClaims (``resource.k8s.io/v1``) share:
bounded lists, quantity maps, CEL selectors, opaque configuration, device taints and tolerations.

Bounds are the API server's (``k8s.io/api/resource/v1`` constants, ``validateSlice``/``validateSet``):
a list over its bound is one ``Too many`` error and none of its items is read, as upstream
short-circuits "for DOS protection". Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.names import label_key_errors, label_value_errors
from scheduler.api.quantity import parse_quantity
from scheduler.features import NEWEST, SUPPORTED

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH",
    "DEFAULT_MINOR",
    "DEVICE_CONFIG_MAX_SIZE",
    "DeviceConfiguration",
    "DeviceTaint",
    "DeviceToleration",
    "bounded_items",
    "check_minor",
    "duplicate_errors",
    "opt_bool",
    "parse_device_configuration",
    "parse_device_taint",
    "parse_device_taints",
    "parse_device_tolerations",
    "parse_quantity_item",
    "parse_quantity_map",
    "parse_selectors",
    "parse_string_list",
    "request_ref_errors",
    "request_ref_message",
    "required_str",
    "too_many",
]

CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
DEVICE_SELECTORS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_TAINTS_MAX_LENGTH = 16
DEVICE_TOLERATIONS_MAX_LENGTH = 16
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
DRIVER_NAME_MAX_LENGTH = 63
# A quantity map (capacity, counters, consumed capacity) is bounded by its own list bound upstream;
# one read here is never longer than this, whatever the object says.
_MAP_READ_MAX = 256

_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")  # validDeviceTaintEffects, sorted as upstream lists them
_TOLERATION_OPERATORS = ("Equal", "Exists")


def check_minor(minor: str) -> str:
    """The minor a parser reads as (the field set of its ``k8s.io/api``); one we do not support is a bug."""
    if minor not in SUPPORTED:
        raise ValueError(f"unsupported minor {minor!r}: one of {', '.join(SUPPORTED)}")
    return minor


DEFAULT_MINOR = NEWEST


def too_many(path: str, count: int, limit: int) -> FieldError:
    """``field.TooMany``."""
    return FieldError(path, f"Too many: {count}: must have at most {limit} items")


def bounded_items(value: object, path: str, limit: int, errors: list[FieldError]) -> Sequence[Any]:
    """A list the API server bounds: past ``limit`` entries, one error and nothing read."""
    items = as_list(value, path, errors)
    if len(items) > limit:
        errors.append(too_many(path, len(items), limit))
        return ()
    return items


def duplicate_errors(keys: Sequence[str], path: str) -> list[FieldError]:
    """``validateSet``'s uniqueness: ``Duplicate value`` at each repeated entry's index."""
    seen: set[str] = set()
    out: list[FieldError] = []
    for i, key in enumerate(keys):
        if key in seen:
            out.append(FieldError(f"{path}[{i}]", f'Duplicate value: "{key}"'))
        seen.add(key)
    return out


REQUEST_REF_MESSAGE = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)


def request_ref_message(ref: str) -> str:
    return f'Invalid value: "{ref}": {REQUEST_REF_MESSAGE}'


def request_ref_errors(refs: Sequence[str], path: str, names: frozenset[str]) -> list[FieldError]:
    """``validateRequestNameRef``: each names a request of the claim, or ``request/subrequest``."""
    return [FieldError(f"{path}[{i}]", request_ref_message(ref)) for i, ref in enumerate(refs) if ref not in names]


def opt_bool(value: object, path: str, errors: list[FieldError]) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    errors.append(FieldError(path, f"must be a boolean, got {type(value).__name__}"))
    return None


def required_str(value: object, path: str, errors: list[FieldError]) -> str:
    """A string the API requires: missing or empty is ``Required value``."""
    text = opt_str(value, path, errors)
    if text is None or text == "":
        if text is not None or value is None:
            errors.append(FieldError(path, "Required value"))
        return ""
    return text


def parse_string_list(value: object, path: str, limit: int, errors: list[FieldError]) -> tuple[str, ...]:
    out: list[str] = []
    for i, item in enumerate(bounded_items(value, path, limit, errors)):
        text = opt_str(item, f"{path}[{i}]", errors)
        if text is not None:
            out.append(text)
    return tuple(out)


def parse_quantity_item(value: object, path: str, errors: list[FieldError]) -> Fraction | None:
    if value is None:
        errors.append(FieldError(path, "Required value"))
        return None
    try:
        return parse_quantity(value)
    except ValueError as err:
        errors.append(FieldError(path, f"not a quantity: {err}"))
        return None


def parse_quantity_map(
    value: object, path: str, errors: list[FieldError], *, inner: str | None = None
) -> dict[str, Fraction]:
    """A map of quantities by name (``requests``, ``consumedCapacity``), each at ``path[name]`` as
    upstream's ``field.Path.Key`` writes it; with ``inner``, each entry is an object whose ``inner``
    field holds the quantity (a capacity's or counter's ``value``)."""
    out: dict[str, Fraction] = {}
    raw = as_mapping(value, path, errors)
    if len(raw) > _MAP_READ_MAX:
        errors.append(FieldError(path, f"Too many: {len(raw)}: must have at most {_MAP_READ_MAX} items"))
        return out
    for key, item in raw.items():
        if not isinstance(key, str):
            errors.append(FieldError(path, f"key {key!r} must be a string"))
            continue
        ipath = f"{path}[{key}]"
        if inner is not None:
            quantity = parse_quantity_item(as_mapping(item, ipath, errors).get(inner), f"{ipath}.{inner}", errors)
        else:
            quantity = parse_quantity_item(item, ipath, errors)
        if quantity is not None:
            out[key] = quantity
    return out


def parse_selectors(value: object, path: str, errors: list[FieldError]) -> tuple[str, ...]:
    """``[]DeviceSelector``: each a CEL expression (the one kind of selector v1 has). A selector with
    no ``cel`` is ``Required value`` there, as ``validateSelector``."""
    out: list[str] = []
    for i, item in enumerate(bounded_items(value, path, DEVICE_SELECTORS_MAX_SIZE, errors)):
        ipath = f"{path}[{i}]"
        selector = as_mapping(item, ipath, errors)
        if selector.get("cel") is None:
            errors.append(FieldError(f"{ipath}.cel", "Required value"))
            continue
        cel = as_mapping(selector.get("cel"), f"{ipath}.cel", errors)
        expression = opt_str(cel.get("expression"), f"{ipath}.cel.expression", errors)
        if not expression:
            if expression is not None or cel.get("expression") is None:
                errors.append(FieldError(f"{ipath}.cel.expression", "Required value"))
            continue
        if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
            errors.append(
                FieldError(
                    f"{ipath}.cel.expression",
                    f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes",
                )
            )
            continue
        out.append(expression)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DeviceConfiguration:
    """One entry of a class's, claim's or allocation's ``config``: opaque parameters for a driver,
    for the requests named (all of them when none is). ``source`` is an allocation's
    (``FromClass``/``FromClaim``). The parameters are kept as sent: only the driver reads them."""

    driver: str
    parameters: Any = None
    requests: tuple[str, ...] = ()
    source: str = ""


def parse_device_configuration(
    value: object,
    path: str,
    limit: int,
    errors: list[FieldError],
    *,
    with_requests: bool = True,
    with_source: bool = False,
    request_names: frozenset[str] = frozenset(),
) -> tuple[DeviceConfiguration, ...]:
    """``config`` entries; the requests each names must be among ``request_names`` (the claim's)."""
    out: list[DeviceConfiguration] = []
    for i, item in enumerate(bounded_items(value, path, limit, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        requests: tuple[str, ...] = ()
        if with_requests:
            requests = parse_string_list(obj.get("requests"), f"{ipath}.requests", 32, errors)
            errors.extend(duplicate_errors(requests, f"{ipath}.requests"))
            errors.extend(request_ref_errors(requests, f"{ipath}.requests", request_names))
        source = ""
        if with_source:
            source = required_str(obj.get("source"), f"{ipath}.source", errors)
            if source and source not in ("FromClass", "FromClaim"):
                errors.append(
                    FieldError(
                        f"{ipath}.source", f'Unsupported value: "{source}": supported values: "FromClaim", "FromClass"'
                    )
                )
        if obj.get("opaque") is None:
            errors.append(FieldError(f"{ipath}.opaque", "Required value"))
            continue
        opaque = as_mapping(obj.get("opaque"), f"{ipath}.opaque", errors)
        driver = required_str(opaque.get("driver"), f"{ipath}.opaque.driver", errors)
        if len(driver) > DRIVER_NAME_MAX_LENGTH:
            errors.append(
                FieldError(f"{ipath}.opaque.driver", f"Too long: may not be more than {DRIVER_NAME_MAX_LENGTH} bytes")
            )
        parameters = opaque.get("parameters")
        if parameters is None:
            errors.append(FieldError(f"{ipath}.opaque.parameters", "Required value"))
        elif _json_longer_than(parameters, OPAQUE_PARAMETERS_MAX_LENGTH):
            errors.append(
                FieldError(
                    f"{ipath}.opaque.parameters",
                    f"Too long: may not be more than {OPAQUE_PARAMETERS_MAX_LENGTH} bytes",
                )
            )
            parameters = None
        out.append(DeviceConfiguration(driver, parameters, requests, source))
    return tuple(out)


def _json_longer_than(value: object, limit: int) -> bool:
    """Whether ``value``'s JSON text is longer than ``limit`` bytes, counted without writing it (and
    without recursion: a deeply nested value is walked, never printed), stopping past ``limit``."""
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            size += 1 + 2 * len(item) if item else 2  # braces; a colon and a comma (or the closing brace) per entry
            for key, inner in item.items():
                size += len(str(key).encode()) + 2 if isinstance(key, str) else 8
                stack.append(inner)
        elif isinstance(item, list | tuple):
            size += 1 + max(len(item), 1)
            stack.extend(item)
        elif isinstance(item, str):
            size += len(item.encode()) + 2
        else:
            size += len(str(item)) if isinstance(item, int | float | bool) else 4  # null
        if size > limit:
            return True
    return False


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A device's taint (``resourceapi.DeviceTaint``); ``time_added`` as the API server wrote it."""

    key: str
    value: str = ""
    effect: str = ""
    time_added: str = ""


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """A request's toleration of device taints (``resourceapi.DeviceToleration``)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


def _unsupported(path: str, value: str, supported: Sequence[str]) -> FieldError:
    allowed = ", ".join(f'"{s}"' for s in supported)
    return FieldError(path, f'Unsupported value: "{value}": supported values: {allowed}')


def parse_device_taints(value: object, path: str, errors: list[FieldError]) -> tuple[DeviceTaint, ...]:
    return tuple(
        parse_device_taint(item, f"{path}[{i}]", errors)
        for i, item in enumerate(bounded_items(value, path, DEVICE_TAINTS_MAX_LENGTH, errors))
    )


def parse_device_taint(value: object, path: str, errors: list[FieldError]) -> DeviceTaint:
    """One taint: a device's in a slice, or a DeviceTaintRule's ``spec.taint``."""
    obj = as_mapping(value, path, errors)
    key = required_str(obj.get("key"), f"{path}.key", errors)
    effect = required_str(obj.get("effect"), f"{path}.effect", errors)
    if effect and effect not in _TAINT_EFFECTS:
        errors.append(_unsupported(f"{path}.effect", effect, _TAINT_EFFECTS))
    added = obj.get("timeAdded")
    if isinstance(added, datetime):  # a YAML file's unquoted timestamp
        added = added.isoformat()
    return DeviceTaint(
        key=key,
        value=opt_str(obj.get("value"), f"{path}.value", errors) or "",
        effect=effect,
        time_added=opt_str(added, f"{path}.timeAdded", errors) or "",
    )


def parse_device_tolerations(value: object, path: str, errors: list[FieldError]) -> tuple[DeviceToleration, ...]:
    """Tolerations as ``validateDeviceToleration`` checks them (``operator`` defaults to Equal)."""
    out: list[DeviceToleration] = []
    for i, item in enumerate(bounded_items(value, path, DEVICE_TOLERATIONS_MAX_LENGTH, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        key = opt_str(obj.get("key"), f"{ipath}.key", errors) or ""
        operator = opt_str(obj.get("operator"), f"{ipath}.operator", errors) or "Equal"
        val = opt_str(obj.get("value"), f"{ipath}.value", errors) or ""
        effect = opt_str(obj.get("effect"), f"{ipath}.effect", errors) or ""
        seconds = opt_int(obj.get("tolerationSeconds"), f"{ipath}.tolerationSeconds", errors)
        if key:
            errors.extend(label_key_errors(key, f"{ipath}.key"))
        if operator == "Exists":
            if val:
                errors.append(
                    FieldError(f"{ipath}.value", f'Invalid value: "{val}": must be empty for operator `Exists`')
                )
        elif operator == "Equal":
            errors.extend(label_value_errors(val, f"{ipath}.value"))
        else:
            errors.append(_unsupported(f"{ipath}.operator", operator, _TOLERATION_OPERATORS))
        if effect and effect not in _TAINT_EFFECTS:
            errors.append(_unsupported(f"{ipath}.effect", effect, _TAINT_EFFECTS))
        out.append(DeviceToleration(key, operator, val, effect, seconds))
    return tuple(out)
