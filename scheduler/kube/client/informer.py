"""The informer: each watched kind listed, then watched from the list's version; a re-list replaces.

client-go's reflector, on kopf's list and watch (``scheduler.kube.client.watch``):

- **has_synced** once every kind's first list has been delivered (``WaitForCacheSync``): no decision
  is made on a cache that misses objects that exist.
- **Replace**: a re-list delivers every listed object and turns what the list no longer has into a
  deletion, so an object deleted while no watch was open never stays in the cache.
- **Gaps cannot hide**: a watch that ends is resumed from the last version seen; the API server
  either replays what happened since, or answers 410 Gone, and then the kind is listed again.
- **Outages** are the engine's own errors (its session reports each failed request as it happens,
  ``scheduler.kube.client.watch.watch_session``): a list or watch that fails is logged and retried with
  the reflector's backoff (800 ms doubling to 30 s, jittered, never giving up).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import structlog

from scheduler.kube.client.watch import WATCHED, Engine, Kind

__all__ = ["BACKOFF_INITIAL", "BACKOFF_MAX", "Informer", "Sink"]

log = structlog.get_logger("spread-scheduler")

# client-go's reflector: backoff 800 ms doubling to 30 s, back to 800 ms after 2 minutes without a
# failure (its NewExponentialBackoffManager); a watch that lasted under a second and brought
# nothing is an error too ("very short watch"), so a server that closes at once is not a busy loop.
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
BACKOFF_RESET = 120.0
SHORT_WATCH = 1.0


class _CollectorPause:
    """The cyclic garbage collector paused while any kind's list is being delivered.

    A list builds objects that all stay (the cache holds them): collection passes over a heap that
    only grows free nothing, and each walks everything the cache already holds, so they cost more than
    the list's JSON (docs/benchmarks.md). Collection resumes when the last list in flight ends. After
    the first sync, what the lists built is frozen first (``gc.freeze``, as ``gc_policy`` does every
    few seconds from then on), or the first young collection would walk all of it once more.
    """

    def __init__(self) -> None:
        self._holders = 0
        self._resume = False
        self._freeze = False

    def freeze_at_release(self) -> None:
        """When the last list in flight ends, freeze what is alive before collection resumes."""
        self._freeze = True

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if self._holders == 0:
            self._resume = gc.isenabled()
            gc.disable()
        self._holders += 1
        try:
            yield
        finally:
            self._holders -= 1
            if self._holders == 0:
                if self._freeze:
                    self._freeze = False
                    gc.freeze()
                if self._resume:
                    gc.enable()


_collector = _CollectorPause()


class Sink(Protocol):
    """Where objects go: the scheduler's event handlers."""

    def on_object(self, event_type: str | None, obj: Mapping[str, Any]) -> None: ...

    def reconcile(self, kind: str, listed: Mapping[str, str], list_version: str) -> int: ...


class _GoneError(Exception):
    """The watch's version is no longer in the server's history (410): list again."""


def _key(meta: Mapping[str, Any], namespaced: bool) -> str:
    name = str(meta.get("name") or "")
    return f"{meta.get('namespace') or 'default'}/{name}" if namespaced else name


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class Informer:
    """Lists and watches every kind of ``kinds`` into ``sink`` until stopped."""

    def __init__(
        self,
        engine: Engine,
        sink: Sink,
        kinds: tuple[Kind, ...] = WATCHED,
        rng: random.Random | None = None,
    ) -> None:
        self._engine = engine
        self._sink = sink
        self._kinds = kinds
        self._rng = rng or random.Random()
        self._listed: set[str] = set()
        self.synced = asyncio.Event()
        # Kinds the sink cannot reconcile (all but Pod and Node): the last object seen per key, so
        # that a re-list can hand the sink a deletion of what it no longer has.
        self._objects: dict[str, dict[str, Mapping[str, Any]]] = {
            kind.kind: {} for kind in kinds if kind.kind not in ("Pod", "Node")
        }

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    def unsynced(self) -> list[str]:
        """The kinds whose first list is not in yet."""
        return [kind.kind for kind in self._kinds if kind.kind not in self._listed]

    async def run(self) -> None:
        """One reflector a kind, until cancelled."""
        async with asyncio.TaskGroup() as group:
            for kind in self._kinds:
                group.create_task(self._reflect(kind), name=f"informer {kind.plural}")

    async def _reflect(self, kind: Kind) -> None:
        version: str | None = None
        failures, failed_at = 0, 0.0
        while True:
            try:
                if version is None:
                    version = await self._list(kind, relist=kind.kind in self._listed)
                    self._listed.add(kind.kind)
                    if len(self._listed) == len(self._kinds):
                        self.synced.set()
                version = await self._watch(kind, version)
            except _GoneError:
                version = None
                log.info("Watch closed", type=kind.type_name, err="too old resource version", v=4)  # client-go's
            except Exception as exc:  # every failure is retried, as the reflector does
                now = time.monotonic()
                failures = 1 if now - failed_at > BACKOFF_RESET else failures + 1
                failed_at = now
                delay = min(BACKOFF_MAX, BACKOFF_INITIAL * 2 ** (failures - 1)) * (1 + self._rng.random())
                text = " ".join(str(exc).split()) or type(exc).__name__
                # client-go's reflector says "Failed to watch" for a failed list too, its error naming it.
                log.error(
                    "Failed to watch",
                    type=kind.type_name,
                    err=text if version is not None else f"failed to list {kind.type_name}: {text}",
                    attempt=failures,
                    retry_in=round(delay, 1),
                )
                await asyncio.sleep(delay)

    async def _list(self, kind: Kind, *, relist: bool) -> str:
        """Deliver every object of ``kind``; on a re-list, drop what the list no longer has."""
        versions: dict[str, str] = {}
        list_version = ""
        with _collector.held():
            async for items, page_version in self._engine.list(kind):
                list_version = page_version or list_version
                for item in items:
                    obj = self._deliver(kind, None, item)
                    meta = _meta(obj)
                    versions[_key(meta, kind.namespaced)] = str(meta.get("resourceVersion") or "")
            if not relist and self._listed | {kind.kind} == {k.kind for k in self._kinds}:
                _collector.freeze_at_release()  # the first sync is complete with this list
        # Also after the first list: one that failed half-way may have delivered what is gone since.
        removed = self._replace(kind, versions, list_version)
        if relist:
            log.info("re-listed", type=kind.type_name, objects=len(versions), removed=removed)
        return list_version

    def _replace(self, kind: Kind, listed: Mapping[str, str], list_version: str) -> int:
        if kind.kind in ("Pod", "Node"):
            return self._sink.reconcile(kind.kind, listed, list_version)
        held = self._objects[kind.kind]
        gone = [key for key in held if key not in listed]
        for key in gone:
            self._sink.on_object("DELETED", held.pop(key))
        return len(gone)

    async def _watch(self, kind: Kind, since: str) -> str:
        """Deliver watch events from ``since`` until the stream ends; the last version seen."""
        started, delivered = time.monotonic(), 0
        async for event in self._engine.watch(kind, since):
            event_type = event.get("type")
            obj = event.get("object")
            if not isinstance(obj, Mapping):
                continue
            if event_type == "ERROR":
                if obj.get("code") == 410:
                    raise _GoneError()
                raise ConnectionError(f"watch error: {obj.get('message') or obj}")
            since = str(_meta(obj).get("resourceVersion") or since)
            delivered += 1
            if event_type in ("ADDED", "MODIFIED", "DELETED"):
                self._deliver(kind, str(event_type), obj)
            # BOOKMARK: only its version, kept above
        if not delivered and time.monotonic() - started < SHORT_WATCH:
            raise ConnectionError("very short watch: the stream closed at once and brought nothing")
        return since

    def _deliver(self, kind: Kind, event_type: str | None, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        obj = dict(raw)
        obj.setdefault("kind", kind.kind)  # watch items carry kind; list items do not
        meta = obj.get("metadata")
        if isinstance(meta, Mapping) and "managedFields" in meta:
            # Server-side-apply bookkeeping is a third of a pod's JSON and nothing reads it.
            obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        held = self._objects.get(kind.kind)
        if held is not None:
            key = _key(_meta(obj), kind.namespaced)
            if event_type == "DELETED":
                held.pop(key, None)
            else:
                held[key] = obj
        self._sink.on_object(event_type, obj)
        return obj
