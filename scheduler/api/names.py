"""Label key and value syntax (``apimachinery/pkg/util/validation``), with the API server's messages."""

from __future__ import annotations

import re

from scheduler.api.fields import FieldError

__all__ = ["label_key_errors", "label_value_errors"]

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)


def label_key_errors(key: str, path: str) -> list[FieldError]:
    """``IsQualifiedName``: ``[prefix/]name``, name <= 63 characters, prefix a DNS subdomain."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return [
            FieldError(
                path,
                f"Invalid value: \"{key}\": a qualified name {_NAME_MSG} with an optional DNS subdomain prefix and '/'",
            )
        ]
    errs: list[FieldError] = []
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        errs.append(FieldError(path, f'Invalid value: "{key}": prefix part must be a lowercase DNS subdomain'))
    if not name:
        errs.append(FieldError(path, f'Invalid value: "{key}": name part must be non-empty'))
    elif len(name) > 63:
        errs.append(FieldError(path, f'Invalid value: "{key}": name part must be no more than 63 characters'))
    elif not _NAME.match(name):
        errs.append(FieldError(path, f'Invalid value: "{key}": name part {_NAME_MSG}'))
    return errs


def label_value_errors(value: str, path: str) -> list[FieldError]:
    """``IsValidLabelValue``: empty, or <= 63 characters of the name alphabet."""
    if value == "":
        return []
    if len(value) > 63:
        return [FieldError(path, f'Invalid value: "{value}": must be no more than 63 characters')]
    if not _NAME.match(value):
        return [FieldError(path, f'Invalid value: "{value}": a valid label {_NAME_MSG}')]
    return []
