"""Logging as kube-scheduler logs (component-base/logs): klog text or JSON lines on stderr, ``-v`` levels.

One setup for every subcommand and for the stdlib loggers of kopf, aiohttp and the Kubernetes client,
so an operator's grep patterns and log pipelines read our lines as they read kube-scheduler's:

    I1124 04:20:30.373857   26910 schedule_one.py:337] "Successfully bound pod to node" pod="ns/web-1" node="n3"
    {"ts":1795494030373.857,"caller":"schedule_one.py:337","msg":"Successfully bound pod to node","v":2,...}

A call says how verbose it is with ``v=N`` (klog's ``V(N)``); it is dropped unless ``-v`` is at least N.
Warnings and errors always pass. Errors carry their cause as ``err``, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import MutableMapping
from typing import Any, NamedTuple, TextIO

import structlog

__all__ = ["FORMATS", "ObjectRef", "configure", "enabled", "kobj", "render_json", "render_text"]

FORMATS = ("text", "json")

# The stdlib loggers (kopf, aiohttp, kubernetes) speak in levels: their INFO is chatter next to ours
# (kopf's start-up, one aiohttp access line per probe), their DEBUG is request by request.
STDLIB_INFO_V = 4
STDLIB_DEBUG_V = 6

EventDict = MutableMapping[str, Any]

_VERBOSITY = [0]  # the configured -v: ``enabled`` and both filters (structlog's, the stdlib handler's) read it


def enabled(level: int) -> bool:
    """klog's ``V(level).Enabled()``: whether a ``v=level`` line would be written. A call on the
    per-pod path asks first: a dropped line still costs its arguments and structlog's processors."""
    return level <= _VERBOSITY[0]


class ObjectRef(NamedTuple):
    """klog's ``KObj``: ``"ns/name"`` in text, ``{"name": ..., "namespace": ...}`` in JSON."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def kobj(key: str) -> ObjectRef:
    """The reference of an object keyed ``namespace/name`` (or a cluster-scoped ``name``)."""
    namespace, _, name = key.rpartition("/")
    return ObjectRef(namespace, name)


def _verbosity_filter(_logger: Any, method: str, event: EventDict) -> EventDict:
    if method in ("info", "debug", "msg") and not enabled(event.get("v", 0)):
        raise structlog.DropEvent
    return event


def _caller(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """``file.py:line`` as klog's header has it (from the stdlib record, or structlog's call site)."""
    filename, lineno = event.pop("filename", None), event.pop("lineno", None)
    if filename is not None and "caller" not in event:
        event["caller"] = f"{filename}:{lineno}"
    return event


def _stdlib_event(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """A stdlib record as one of ours: its level as klog's, its logger's name, its exception as ``err``."""
    record: logging.LogRecord | None = event.get("_record")
    if record is None:
        return event
    if record.levelno < logging.WARNING:
        event["v"] = STDLIB_DEBUG_V if record.levelno < logging.INFO else STDLIB_INFO_V
    event["logger"] = record.name
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        event["err"] = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    event.pop("exc_info", None)
    return event


def _severity(method: str) -> str:
    if method in ("error", "critical", "exception", "fatal"):
        return "E"
    return "W" if method in ("warning", "warn") else "I"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "<nil>"
    if isinstance(value, list | tuple | dict) and not isinstance(value, ObjectRef):
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    text = str(value)
    if "\n" in text:  # klog's multi-line form: err=<\n\tline\n >
        return "<\n" + "".join(f"\t{line}\n" for line in text.split("\n")) + " >"
    return _quote(text)


_RESERVED = frozenset({"event", "v", "caller", "ts", "err", "_record", "_from_structlog", "level"})


def render_text(_logger: Any, method: str, event: EventDict) -> str:
    """klog's text line: ``I1124 04:20:30.373857   26910 file.py:123] "msg" key="value"``."""
    ts = event.get("ts", time.time())
    micros = int(ts * 1_000_000) % 1_000_000
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(ts))
    parts = [f"{_severity(method)}{stamp}.{micros:06d} {os.getpid():>7} {event.get('caller', '???:1')}] "]
    parts.append(_quote(str(event.get("event", ""))))
    if "err" in event:
        parts.append(f" err={_text_value(event['err'])}")
    for key, value in event.items():
        if key not in _RESERVED:
            parts.append(f" {key}={_text_value(value)}")
    return "".join(parts)


def _json_default(value: Any) -> Any:
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, ObjectRef):
        return {"name": value.name, "namespace": value.namespace}
    return value


def render_json(_logger: Any, method: str, event: EventDict) -> str:
    """component-base's JSON line: ``ts`` in epoch milliseconds, ``caller``, ``msg``, ``v`` on info, ``err`` last."""
    ts = event.get("ts", time.time())
    line: dict[str, Any] = {"ts": round(ts * 1000, 3), "caller": event.get("caller", "???:1")}
    line["msg"] = str(event.get("event", ""))
    if _severity(method) != "E":
        line["v"] = event.get("v", 0)
    for key, value in event.items():
        if key not in _RESERVED:
            line[key] = _json_value(value)
    if "err" in event:
        line["err"] = _json_value(event["err"])
    return json.dumps(line, ensure_ascii=False, default=_json_default, separators=(",", ":"))


def _timestamp(_logger: Any, _method: str, event: EventDict) -> EventDict:
    record: logging.LogRecord | None = event.get("_record")
    event["ts"] = record.created if record is not None else time.time()
    return event


class _Handler(logging.Handler):
    """The stdlib side: records above ``-v`` are dropped here (a formatter cannot drop), the rest rendered as ours."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self._stream = stream

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        return enabled(STDLIB_DEBUG_V if record.levelno < logging.INFO else STDLIB_INFO_V)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            (self._stream or sys.stderr).write(self.format(record) + "\n")
        except Exception:  # logging must never take the scheduler down
            self.handleError(record)


def configure(logging_format: str = "text", verbosity: int = 0, stream: TextIO | None = None) -> None:
    """Set up structlog and the stdlib root logger to write ``logging_format`` lines to ``stream``.

    ``stream`` None means the process's stderr at the time of each line (tests swap it).
    """
    if logging_format not in FORMATS:
        raise ValueError(f'format "{logging_format}" not supported, must be one of: {", ".join(FORMATS)}')
    _VERBOSITY[0] = verbosity
    renderer = render_json if logging_format == "json" else render_text
    callsite = structlog.processors.CallsiteParameterAdder(
        {structlog.processors.CallsiteParameter.FILENAME, structlog.processors.CallsiteParameter.LINENO},
        additional_ignores=["scheduler.logs"],
    )
    shared: list[Any] = [_stdlib_event, _verbosity_filter, _timestamp, callsite, _caller]
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.BoundLogger,
        logger_factory=lambda *_: structlog.PrintLogger(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = _Handler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=shared,
            pass_foreign_args=False,
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    if verbosity >= STDLIB_DEBUG_V:
        root.setLevel(logging.DEBUG)
    else:
        root.setLevel(logging.INFO if verbosity >= STDLIB_INFO_V else logging.WARNING)
