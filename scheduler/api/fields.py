"""Defensive readers for the API's dict form, and the error type that names a field.

Objects arrive as the API server (or a YAML file) gives them. A scheduler must not crash on a
malformed one, so every reader here checks the type it expects and reports a wrong one as a
``FieldError`` whose path uses the API's own notation (``spec.tolerations[2].effect``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "FieldError",
    "as_list",
    "as_mapping",
    "as_str_map",
    "int32_errors",
    "opt_int",
    "opt_str",
    "parse_go_int64",
    "parse_timestamp",
    "required_name",
]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class FieldError:
    """One reason an object is invalid, in the API server's ``path: message`` form."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def as_mapping(value: object, path: str, errors: list[FieldError]) -> Mapping[str, Any]:
    """A dict field; ``None`` is an empty mapping, anything else not a mapping is an error."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    errors.append(FieldError(path, f"must be an object, got {type(value).__name__}"))
    return {}


def as_list(value: object, path: str, errors: list[FieldError]) -> Sequence[Any]:
    """A list field; ``None`` is empty, a string or mapping is an error (it is not a list)."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return value
    errors.append(FieldError(path, f"must be a list, got {type(value).__name__}"))
    return ()


def as_str_map(value: object, path: str, errors: list[FieldError]) -> dict[str, str]:
    """A ``map[string]string`` such as labels or nodeSelector."""
    out: dict[str, str] = {}
    for key, val in as_mapping(value, path, errors).items():
        if not isinstance(key, str):
            errors.append(FieldError(path, f"key {key!r} must be a string"))
        elif val is None:
            out[key] = ""  # the API stores a null map value as ""
        elif not isinstance(val, str):
            errors.append(FieldError(f"{path}.{key}", f"must be a string, got {type(val).__name__}"))
        else:
            out[key] = val
    return out


def opt_str(value: object, path: str, errors: list[FieldError]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    errors.append(FieldError(path, f"must be a string, got {type(value).__name__}"))
    return None


def required_name(meta: Mapping[str, Any], errors: list[FieldError]) -> str:
    """``metadata.name``, which ObjectMeta validation requires ("" with its error when missing)."""
    name = opt_str(meta.get("name"), "metadata.name", errors) or ""
    if not name:
        errors.append(FieldError("metadata.name", "Required value: name or generateName is required"))
    return name


def opt_int(value: object, path: str, errors: list[FieldError]) -> int | None:
    """An integer field; booleans and floats with a fraction are rejected like the API's decoder."""
    if value is None:
        return None
    if isinstance(value, bool):
        errors.append(FieldError(path, "must be an integer, got bool"))
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    errors.append(FieldError(path, f"must be an integer, got {value!r}"))
    return None


def int32_errors(value: int, path: str, go_field: str) -> list[FieldError]:
    """The API's decoder refuses a number outside int32 for an int32 field (``go_field`` as Go names
    it, e.g. ``PodSpec.spec.priority``), with this text."""
    if INT32_MIN <= value <= INT32_MAX:
        return []
    return [FieldError(path, f"cannot unmarshal number {value} into Go struct field {go_field} of type int32")]


def parse_go_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(s, 10, 64)``: optional sign, ASCII digits only, int64 range.

    Python's ``int()`` also takes ``"1_0"`` and ``" 5 "``; Go does not, and label values may hold
    underscores, so this parser is the only one the scheduler uses for ``Gt``/``Lt``.
    """
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    number = int(text)
    if number < INT64_MIN or number > INT64_MAX:
        return None
    return number


def parse_timestamp(value: object) -> float | None:
    """An RFC 3339 string; a YAML file may also hold it unquoted, which YAML reads as a datetime."""
    if isinstance(value, datetime):
        return value.timestamp()
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
