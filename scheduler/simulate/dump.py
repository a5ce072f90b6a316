"""Reading a file of objects for ``simulate`` (``kubectl get -o yaml`` output included), and shaping it
for a replay: pending pods renamed to a profile (``--scheduler-name``), one pod re-decided (``--pod``,
``explain``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from scheduler.api.objects import DEFAULT_SCHEDULER_NAME
from scheduler.boundedyaml import load_all, read_text
from scheduler.config import SchedulerConfig


def iter_objects(doc: object) -> Iterator[Mapping[str, Any]]:
    """Objects of a document: a ``List`` (or any ``*List``) is flattened, others are yielded as they are."""
    if isinstance(doc, Mapping):
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
            for item in doc["items"]:
                yield from iter_objects(item)
        else:
            yield doc
    elif isinstance(doc, list):
        for item in doc:
            yield from iter_objects(item)


def load_objects(path: str | Path, stdin: TextIO | None = None) -> list[Mapping[str, Any]]:
    """Every object of a multi-document YAML/JSON file (``kubectl get -o yaml`` output included); ``-``
    with ``stdin``: of what it holds. Raises ``ReadError`` (one line) for a file that cannot be read
    or is not YAML within ``scheduler.boundedyaml``'s bounds."""
    return parse_objects(read_text(path, stdin))


def parse_objects(text: str) -> list[Mapping[str, Any]]:
    """Every object of a multi-document YAML/JSON text (``ReadError`` as ``load_objects``)."""
    return [obj for doc in load_all(text) if doc is not None for obj in iter_objects(doc)]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def rename_scheduler(
    objects: Iterable[Mapping[str, Any]], names: Iterable[str], profile: str
) -> list[Mapping[str, Any]]:
    """Pending pods whose schedulerName is one of ``names`` as if they named ``profile`` (``--scheduler-name``).

    A bound pod keeps its name: it counts on its node whoever placed it.
    """
    renamed = set(names)
    out: list[Mapping[str, Any]] = []
    for obj in objects:
        spec = _spec(obj)
        pending = obj.get("kind") == "Pod" and not spec.get("nodeName")
        if pending and spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) in renamed:
            out.append({**obj, "spec": {**spec, "schedulerName": profile}})
        else:
            out.append(obj)
    return out


def replay_objects(
    objects: Iterable[Mapping[str, Any]], namespace: str, name: str, config: SchedulerConfig
) -> list[Mapping[str, Any]]:
    """The cluster as the scheduler would see it when deciding NAMESPACE/NAME next (``explain``, ``simulate
    --pod``): that pod pending, every other pod only if it is bound (a pending one holds no room), everything
    else as listed. A bound pod is re-decided as if it were not bound yet; a pod naming no profile is decided
    with the first one. Raises ``LookupError`` when there is no such pod."""
    objects = list(objects)
    pod = next((o for o in objects if o.get("kind") == "Pod" and _key(o) == (namespace, name)), None)
    if pod is None:
        raise LookupError(f"pod {namespace}/{name} not found")
    others = [o for o in objects if o is not pod and (o.get("kind") != "Pod" or _spec(o).get("nodeName"))]
    spec = {k: v for k, v in _spec(pod).items() if k != "nodeName"}
    if spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) not in {p.scheduler_name for p in config.profiles}:
        spec["schedulerName"] = config.profiles[0].scheduler_name  # explain with our profile anyway
    return [*others, {**pod, "spec": spec}]
