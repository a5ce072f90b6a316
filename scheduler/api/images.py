"""Container images: the ones a node reports (``status.images``) and the ones a pod's containers run.

Only ImageLocality reads them. Parsing never raises: a wrong type is a ``FieldError`` naming the
field, and the entry (or the name) it spoiled is left out.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from scheduler.api.fields import INT64_MAX, INT64_MIN, FieldError, as_list, as_mapping, opt_int, opt_str

__all__ = ["parse_node_images", "parse_pod_images"]


def parse_node_images(status: Mapping[str, Any], errors: list[FieldError]) -> dict[str, int]:
    """Every name in ``status.images[*].names`` -> that image's ``sizeBytes`` (absent: 0).

    A name listed by two entries of one node keeps the later entry's size, as upstream's
    ``getNodeImageStates`` (``NewSnapshot``) does.
    """
    out: dict[str, int] = {}
    for i, raw in enumerate(as_list(status.get("images"), "status.images", errors)):
        path = f"status.images[{i}]"
        image = as_mapping(raw, path, errors)
        size = opt_int(image.get("sizeBytes"), f"{path}.sizeBytes", errors) or 0
        if not INT64_MIN <= size <= INT64_MAX:
            errors.append(FieldError(f"{path}.sizeBytes", f"Invalid value: {size}: out of the int64 range"))
            size = 0
        for j, name in enumerate(as_list(image.get("names"), f"{path}.names", errors)):
            if not isinstance(name, str):
                errors.append(FieldError(f"{path}.names[{j}]", f"must be a string, got {type(name).__name__}"))
                continue
            out[sys.intern(name)] = size  # one string for an image many nodes hold
    return out


def parse_pod_images(spec: Mapping[str, Any], errors: list[FieldError]) -> tuple[str, ...]:
    """``spec.initContainers[*].image`` then ``spec.containers[*].image``, as written (absent: "").

    A containers field that is not a list of objects is reported by the resource parser already,
    so it is skipped silently here rather than reported twice.
    """
    out: list[str] = []
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                continue
            out.append(opt_str(container.get("image"), f"spec.{key}[{i}].image", errors) or "")
    return tuple(out)
