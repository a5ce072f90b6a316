"""The HTTP scheduler-extender client (upstream ``pkg/scheduler/extender.go``'s ``HTTPExtender``).

Protocol: ``k8s.io/kube-scheduler/extender/v1`` at v0.35.4 (kube-scheduler v1.35.4). Every call is
``POST <urlPrefix>/<verb>`` with a JSON body and must answer 200 with JSON; the Go types carry no
JSON tags, so the keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``,
``Host``, ``Score``...), and, as Go's decoder does, answers are matched case-insensitively.

All I/O of extenders lives here (aiohttp); the scheduling algorithm sees only the ``Extender``
Protocol of ``scheduler.framework.extender``. Errors become ``ExtenderError`` with a message fit for
the pod's condition; what to do with them (skip an ignorable one, fail the attempt) is decided by
the algorithm, as upstream's ``findNodesThatPassExtenders`` does.

``bind`` is a write, fenced by the Lease as the API writes are (``scheduler.kube.writes``): with leader
election, a process not sure it still leads (``Leadership.sure``) sends the extender nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import aiohttp
import structlog

from scheduler.api.objects import Pod
from scheduler.config import SchedulerConfig
from scheduler.config.extenders import ExtenderConfig, ssl_context
from scheduler.errors import NotLeadingError
from scheduler.framework.extender import ExtenderError, ExtenderFilterResult, HostPriority
from scheduler.framework.types import NodeInfo
from scheduler.kube.client.transport import MalformedResponseError, read_capped
from scheduler.kube.fence import NOT_SURE, FencedRequest, always, fenced
from scheduler.schedule_one import Attempt
from scheduler.simulate import Simulation

__all__ = ["HTTPExtender", "close_extenders", "http_extenders", "pod_resource_names", "simulate_with_extenders"]

log = structlog.get_logger("spread-scheduler")


def _json_default(value: object) -> object:
    """Objects from the informer (Mapping views) and YAML (datetimes) as JSON."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _get(obj: object, key: str) -> Any:
    """A field of a decoded answer, matched case-insensitively like Go's ``encoding/json``."""
    if not isinstance(obj, Mapping):
        return None
    if key in obj:
        return obj[key]
    folded = key.casefold()
    return next((v for k, v in obj.items() if isinstance(k, str) and k.casefold() == folded), None)


def _failed_map(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ExtenderError(f"{what}: must be an object of node name to message")
    return dict(value)


def pod_resource_names(pod: Pod) -> set[str]:
    """Resource names the pod's containers and init containers request or limit (for managedResources)."""
    spec = pod.raw.get("spec")
    names: set[str] = set()
    if not isinstance(spec, Mapping):
        return names
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for container in containers:
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            for part in ("requests", "limits"):
                values = resources.get(part)
                if isinstance(values, Mapping):
                    names.update(str(name) for name in values)
    return names


class HTTPExtender:
    """One configured extender: its verbs, weight, interest and an aiohttp session (made lazily)."""

    def __init__(self, config: ExtenderConfig, fence: Callable[[], bool] = always) -> None:
        self.config = config
        self._fence = fence
        self._ssl = ssl_context(config.enable_https, config.tls_config)
        self._managed = frozenset(r.name for r in config.managed_resources)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if config.preempt_verb:
            log.warning(
                "extender preemptVerb ignored: DefaultPreemption does not call extenders", extender=config.url_prefix
            )

    # -- what the algorithm asks -------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def weight(self) -> int:
        return self.config.weight

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_interested(self, pod: Pod) -> bool:
        """``IsInterested``: every pod without managedResources, else pods requesting or limiting one."""
        return not self._managed or not self._managed.isdisjoint(pod_resource_names(pod))

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult:
        if not self.config.filter_verb:
            return ExtenderFilterResult([n.name for n in nodes])
        result = await self.send_once(self.config.filter_verb, self._args(pod, nodes))
        error = _get(result, "Error")
        if error:
            raise ExtenderError(str(error))
        names: list[str] = []
        node_names, node_list = _get(result, "NodeNames"), _get(result, "Nodes")
        if self.config.node_cache_capable and node_names is not None:
            if not isinstance(node_names, list) or not all(isinstance(n, str) for n in node_names):
                raise ExtenderError(f"extender {self.name!r}: NodeNames must be a list of names")
            names = list(node_names)
        elif node_list is not None:
            items = _get(node_list, "items")
            for item in items if isinstance(items, list) else []:
                name = _get(_get(item, "metadata"), "name")
                if not isinstance(name, str):
                    raise ExtenderError(f"extender {self.name!r}: a node in Nodes has no metadata.name")
                names.append(name)
        return ExtenderFilterResult(
            names,
            _failed_map(_get(result, "FailedNodes"), "FailedNodes"),
            _failed_map(_get(result, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"),
        )

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[HostPriority]:
        if not self.config.prioritize_verb:
            return [HostPriority(n.name, 0) for n in nodes]
        result = await self.send_once(self.config.prioritize_verb, self._args(pod, nodes))
        if result is None:
            return []
        if not isinstance(result, list):
            raise ExtenderError(f"extender {self.name!r}: prioritize must answer a list of {{Host, Score}}")
        out: list[HostPriority] = []
        for entry in result:
            host, score = _get(entry, "Host"), _get(entry, "Score")
            if not isinstance(host, str) or isinstance(score, bool) or not isinstance(score, int):
                raise ExtenderError(f"extender {self.name!r}: bad HostPriority {entry!r}")
            out.append(HostPriority(host, score))
        return out

    async def bind(self, pod: Pod, node_name: str) -> None:
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node_name}
        if not self._fence():
            raise NotLeadingError(f"extender bind of {pod.key} to {node_name}: {NOT_SURE}")
        with fenced(self._fence):
            result = await self.send_once(self.config.bind_verb, args)
        error = _get(result, "Error")
        if error:
            raise ExtenderError(str(error))

    # -- the wire ----------------------------------------------------------------------------

    def _args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        """``ExtenderArgs``: names only for a nodeCacheCapable extender, whole Node objects otherwise."""
        if self.config.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        return {"Pod": pod.raw, "Nodes": {"metadata": {}, "items": [n.node.raw for n in nodes]}, "NodeNames": None}

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # A session belongs to one event loop: ``simulate`` and tests may run several loops in turn.
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.config.http_timeout), request_class=FencedRequest
            )
            self._loop = loop
        return self._session

    async def send_once(self, verb: str, args: Mapping[str, Any]) -> Any:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        body = json.dumps(args, default=_json_default).encode()
        tls = self.config.tls_config
        extra: dict[str, Any] = {}
        if self._ssl is not None:
            extra["ssl"] = self._ssl
        if tls is not None and tls.server_name:
            extra["server_hostname"] = tls.server_name
        try:
            async with self._client().post(
                url, data=body, headers={"Content-Type": "application/json"}, **extra
            ) as response:
                if response.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
                text = await _read_limited(response, url)
        except TimeoutError:
            raise ExtenderError(f'Post "{url}": no answer within {self.config.http_timeout:g}s (httpTimeout)') from None
        except aiohttp.ClientError as exc:
            if isinstance(exc.__cause__, NotLeadingError):  # the fence closed before the first byte
                raise NotLeadingError(f'Post "{url}": {NOT_SURE}') from None
            raise ExtenderError(f'Post "{url}": {exc}') from None
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: invalid JSON answer: {exc}") from None

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


# The largest answer read from an extender (upstream reads without a limit: a deliberate difference,
# docs/extenders.md). The cap sits above a Filter answer with whole Node objects for a large cluster
# (sized in docs/benchmarks.md); a nodeCacheCapable extender answers names only.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


async def _read_limited(response: aiohttp.ClientResponse, url: str, limit: int | None = None) -> bytes:
    """The body, given up past ``limit`` bytes, so a runaway extender cannot take the scheduler's memory."""
    limit = MAX_RESPONSE_BYTES if limit is None else limit
    try:
        return await read_capped(response, limit)
    except MalformedResponseError as exc:
        raise ExtenderError(f'Post "{url}": answer over the limit of {limit} bytes ({exc})') from None


def http_extenders(configs: Iterable[ExtenderConfig], fence: Callable[[], bool] = always) -> list[HTTPExtender]:
    """One client per configured extender, in configuration order (the order Filter asks them);
    ``fence`` (``Leadership.sure``) is asked before every bind."""
    return [HTTPExtender(config, fence) for config in configs]


async def close_extenders(extenders: Iterable[object]) -> None:
    for extender in extenders:
        if isinstance(extender, HTTPExtender):
            await extender.close()


async def simulate_with_extenders(
    config: SchedulerConfig, objects: Iterable[Mapping[str, Any]], seed: int | None, *, apply_preemption: bool = False
) -> tuple[list[Attempt], Simulation]:
    """``simulate`` asking the configured extenders for real (filter, prioritize), as the live scheduler
    would; their clients are closed afterwards."""
    extenders = http_extenders(config.extenders)
    try:
        sim = Simulation(config, seed=seed, extenders=extenders, apply_preemption=apply_preemption)
        sim.add_objects(objects)
        return await sim.run_async(), sim
    finally:
        await close_extenders(extenders)
