"""kopf as the informer's engine: its paginated LIST and its WATCH, on the client's own credentials.

kopf owns the wire: chunked lists, watch streams with bookmarks, reconnects, an inactivity timeout,
retries with backoff on 5xx, 429 and connection errors, and re-authentication on 401. Its reactor
(a worker task, a handler registry lookup and a handler invocation per event) is not used: the
informer consumes the streams directly, as client-go's reflector consumes a ListWatch. The reactor
was three fifths of the scheduler's CPU while syncing a large cluster (docs/benchmarks.md); without
it, the informer also sees where each listing ends, which a re-list that replaces needs.

These are kopf's internal modules (``kopf._cogs``), so the kopf version is pinned exactly in
pyproject.toml and tests/kube/client/test_informer.py drives this module against a stub API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import kopf
from kopf._cogs.clients import fetching, watching
from kopf._cogs.clients.auth import vault_var
from kopf._cogs.structs.credentials import Vault, VaultKey
from kopf._cogs.structs.references import Resource
from kubernetes.aio import client

from scheduler.features import Features
from scheduler.kube.client.credentials import credentials_of, tls_of
from scheduler.kube.client.rest import request_headers

__all__ = [
    "DEVICE_CLASSES",
    "DEVICE_TAINT_RULES",
    "DRA_KINDS",
    "PAGE_SIZE",
    "RESOURCE_CLAIMS",
    "RESOURCE_CLAIM_TEMPLATES",
    "RESOURCE_SLICES",
    "WATCHED",
    "Engine",
    "Kind",
    "KopfEngine",
    "watch_session",
    "watched",
]

PAGE_SIZE = 500  # client-go's pager: a large LIST parsed a page at a time, the loop turning between
# kube-scheduler's pod informer leaves terminal pods out (pkg/scheduler/scheduler.go, NewInformerFactory).
NOT_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"

# The loggers kopf's list and watch report failed requests to. The informer logs each failure of a
# list or watch itself, once, with client-go's words: these two stay quiet below CRITICAL.
log = logging.getLogger("kopf.spread-scheduler.list")
_QUIET = (log, logging.getLogger(watching.__name__))


@dataclass(frozen=True, slots=True)
class Kind:
    """One watched resource: where it is served, and what its objects are called."""

    group: str  # "" for the core API
    version: str
    plural: str
    kind: str
    namespaced: bool
    field_selector: str = ""

    @property
    def type_name(self) -> str:
        """As client-go's reflector names the type in its lines: ``*v1.Pod``."""
        return f"*{self.version}.{self.kind}"

    @property
    def resource(self) -> Resource:
        return Resource(self.group, self.version, self.plural, kind=self.kind, namespaced=self.namespaced)


# Everything the cache reads. Nodes and pods first: they are most of a cluster's objects.
WATCHED: tuple[Kind, ...] = (
    Kind("", "v1", "nodes", "Node", False),
    Kind("", "v1", "pods", "Pod", True, NOT_TERMINAL),
    Kind("", "v1", "services", "Service", True),
    Kind("", "v1", "replicationcontrollers", "ReplicationController", True),
    Kind("apps", "v1", "replicasets", "ReplicaSet", True),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True),
    Kind("", "v1", "namespaces", "Namespace", False),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    Kind("", "v1", "persistentvolumes", "PersistentVolume", False),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    Kind("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    Kind("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    Kind("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    Kind("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
)
# DynamicResources' objects (and, for DeviceClasses, which extended resources it allocates under
# DRAExtendedResource, leaving them to NodeResourcesFit): watched where the minor has
# DynamicResourceAllocation, as kube-scheduler starts its DRA informers only then (GA and locked on
# since 1.34, resource.k8s.io/v1 served since 1.34: every minor we decide as).
DEVICE_CLASSES = Kind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_SLICES = Kind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
RESOURCE_CLAIMS = Kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
# Not watched by kube-scheduler (kube-controller-manager makes a pod's claims from them): ours, so a
# planned replacement pod's claims can be foreseen before they exist.
RESOURCE_CLAIM_TEMPLATES = Kind("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True)
DRA_KINDS: tuple[Kind, ...] = (DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES)
# Their taints go onto the slices' devices (the ResourceSlice tracker), where DRADeviceTaintRules is
# on: at 1.37 (GA, locked; served in resource.k8s.io/v1), never at 1.35 (alpha) or 1.36 (beta, off).
DEVICE_TAINT_RULES = Kind("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False)


def watched(features: Features) -> tuple[Kind, ...]:
    """What ``run`` lists and watches when it decides with ``features``."""
    if not features.enabled("DynamicResourceAllocation"):
        return WATCHED
    return WATCHED + DRA_KINDS + ((DEVICE_TAINT_RULES,) if features.dra_device_taint_rules else ())


class Engine:
    """What the informer needs of a watch engine: a paginated list, and a watch from a version."""

    def list(self, kind: Kind) -> AsyncIterator[tuple[Collection[Mapping[str, Any]], str]]:
        """Pages of ``kind``'s objects, each with the list's resourceVersion."""
        raise NotImplementedError

    def watch(self, kind: Kind, since: str) -> AsyncIterator[Mapping[str, Any]]:
        """Raw watch events from ``since`` until the server or the engine ends the stream."""
        raise NotImplementedError


def _settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.watching.server_timeout = 300  # client-go's reflector asks 5-10 minutes
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.watching.chunk_size = PAGE_SIZE
    settings.networking.request_timeout = 30
    # No retries inside kopf: a failed list or watch goes back to the informer, which backs off as
    # client-go's reflector does and resumes the watch from the last version (or lists again).
    settings.networking.error_backoffs = ()
    for kind in WATCHED:
        if kind.field_selector:
            settings.watching.field_selectors[kind.group, kind.version, kind.plural] = kind.field_selector
    return settings


class KopfEngine(Engine):
    """kopf's list and watch on sessions from ``login``; a fresh session after every 401."""

    def __init__(self, login: Callable[[], Awaitable[kopf.AiohttpSession]]) -> None:
        self._login = login
        self._settings = _settings()
        self._vault: Vault | None = None
        self._reauth: asyncio.Task[None] | None = None
        self._closing: asyncio.Future[None] | None = None  # done: every open watch stream is closed

    async def __aenter__(self) -> KopfEngine:
        self._closing = asyncio.get_running_loop().create_future()
        for logger in _QUIET:
            logger.setLevel(logging.CRITICAL)
        self._vault = Vault()
        await self._vault.populate({VaultKey("spread-scheduler"): await self._login()})
        self._reauth = asyncio.create_task(self._reauthenticate(self._vault), name="watch-login")
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._closing is not None and not self._closing.done():
            self._closing.set_result(None)
        if self._reauth is not None:
            self._reauth.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reauth
        if self._vault is not None:
            await self._vault.close()

    async def _reauthenticate(self, vault: Vault) -> None:
        """kopf empties the vault on a 401 and waits: log in again (a fresh token) and refill it."""
        while True:
            await vault.wait_for_emptiness()
            log.info("the API server refused our credentials (401): logging in again")
            await vault.populate({VaultKey("spread-scheduler"): await self._login()})

    @contextlib.contextmanager
    def _credentials(self) -> Iterator[None]:
        if self._vault is None or self._closing is None:
            raise RuntimeError("KopfEngine is used outside its `async with`")
        token = vault_var.set(self._vault)
        try:
            yield
        finally:
            vault_var.reset(token)

    async def list(self, kind: Kind) -> AsyncIterator[tuple[Collection[Mapping[str, Any]], str]]:
        with self._credentials():
            pages = fetching.fetch_objs(settings=self._settings, resource=kind.resource, namespace=None, logger=log)
            async for items, version in pages:
                yield items, version

    async def watch(self, kind: Kind, since: str) -> AsyncIterator[Mapping[str, Any]]:
        with self._credentials():
            stream = watching.watch_objs(
                settings=self._settings,
                resource=kind.resource,
                namespace=None,
                since=since,
                operator_pause_waiter=self._closing,  # type: ignore[arg-type]
            )
            async for event in stream:
                yield event


def watch_session(
    api: client.ApiClient, on_failure: Callable[[], None]
) -> Callable[[], Awaitable[kopf.AiohttpSession]]:
    """Sessions for the engine, from the client's own TLS context, proxy and credentials.

    The bearer token is asked of the client's configuration on every request (a token file or an exec
    plugin may have renewed it), a new connection presents the stack's current client certificate,
    and every failed request (no answer, or a 5xx) is reported as it happens, not when kopf's retries
    give up.
    """
    configuration = api.configuration
    tls = tls_of(api)
    stack = credentials_of(api)
    request_class = stack.request_class(aiohttp.ClientRequest) if stack is not None else aiohttp.ClientRequest

    async def on_exception(_s: aiohttp.ClientSession, _c: Any, params: aiohttp.TraceRequestExceptionParams) -> None:
        if not isinstance(params.exception, asyncio.CancelledError):  # our own stop, not the server's trouble
            on_failure()

    async def on_end(_s: aiohttp.ClientSession, _c: Any, params: aiohttp.TraceRequestEndParams) -> None:
        if params.response.status >= 500:
            on_failure()

    async def authorize(
        request: aiohttp.ClientRequest, handler: Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
    ) -> aiohttp.ClientResponse:
        for name, value in (await request_headers(api, "application/json")).items():
            if name.lower() == "authorization":
                request.headers["Authorization"] = value
        if configuration.tls_server_name and request.server_hostname is None:
            request.server_hostname = configuration.tls_server_name  # as the client's requests name it
        response = await handler(request)
        if response.status == 401 and (stack := credentials_of(api)) is not None:
            # Before kopf empties its vault and the engine logs in again: the new session's first
            # request then asks the plugin (or the token file) anew, as client-go's exec round tripper.
            stack.unauthorized(request.headers.get("Authorization"))
        return response

    async def login() -> kopf.AiohttpSession:
        trace = aiohttp.TraceConfig()
        trace.on_request_exception.append(on_exception)
        trace.on_request_end.append(on_end)
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=tls()),
            request_class=request_class,
            headers={"User-Agent": api.user_agent, "Accept": "application/json"},
            trace_configs=[trace],
            middlewares=(authorize,),
            proxy=configuration.proxy or None,
            # As the client's own session: HTTPS_PROXY/NO_PROXY honoured when set (scheduler.kube.client.apiclient).
            trust_env=(getattr(configuration, "client_session_kwargs", None) or {}).get("trust_env", True),
        )
        return kopf.AiohttpSession(aiohttp_session=session, server=configuration.host.rstrip("/"))

    return login
