"""Paginated, metadata-only LISTs of nodes and pods, parsed a page at a time so the event loop keeps turning.

One unpaginated LIST of 10,000 pods is tens of megabytes of JSON whose parsing holds the loop (and
/healthz) for seconds; client-go pages its lists by 500 for the same reason. Neither caller reads
more than an object's metadata (the cache sync its UID, the resync its key and resourceVersion), so
that is all the server is asked for.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kubernetes.aio import client

from scheduler.kube.rest import send

__all__ = ["PAGE_SIZE", "Listing", "list_objects", "list_uids"]

PAGE_SIZE = 500
# Metadata only (client-go's metadata informers ask the same): half the bytes of a kubelet-reported
# pod, and none of its spec or status to parse.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# kube-scheduler's pod informer leaves terminal pods out the same way.
NOT_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True, slots=True)
class Listing:
    versions: dict[str, str]  # node name, or namespace/name for a pod -> its resourceVersion
    resource_version: str  # of the list (the first page's: a paginated list is one snapshot)


async def list_objects(api: client.ApiClient, kind: str, page_size: int = PAGE_SIZE) -> Listing:
    """Every Node or Pod, page by page (``limit``/``continue``)."""
    versions: dict[str, str] = {}
    version = ""
    async for data in _pages(api, kind, page_size, {}):
        version = version or str((data.get("metadata") or {}).get("resourceVersion") or "")
        for item in data.get("items") or []:
            meta = item.get("metadata") or {}
            name = meta.get("name")
            if isinstance(name, str):
                key = name if kind == "Node" else f"{meta.get('namespace') or 'default'}/{name}"
                versions[key] = str(meta.get("resourceVersion") or "")
    return Listing(versions, version)


async def list_uids(api: client.ApiClient, kind: str, page_size: int = PAGE_SIZE) -> set[str]:
    """The UIDs of every Node, or of every Pod not Succeeded or Failed: metadata only, paginated."""
    query = {"fieldSelector": NOT_TERMINAL} if kind == "Pod" else {}
    uids: set[str] = set()
    async for data in _pages(api, kind, page_size, query):
        uids.update(str((item.get("metadata") or {}).get("uid") or "") for item in data.get("items") or [])
    uids.discard("")
    return uids


async def _pages(
    api: client.ApiClient, kind: str, page_size: int, query: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    token: str | None = None
    path = "/api/v1/nodes" if kind == "Node" else "/api/v1/pods"
    while True:
        page: dict[str, Any] = {**query, "limit": page_size}
        if token:
            page["continue"] = token
        response = await send(api, "GET", path, {}, query=page, accept=METADATA_ONLY)
        try:
            if response.status != 200:
                raise ConnectionError(f"LIST {kind}: HTTP {response.status}")
            data = json.loads(await response.read())
        finally:
            response.release()
        if not isinstance(data, dict):
            raise ConnectionError(f"LIST {kind}: not a list")
        yield data
        token = (data.get("metadata") or {}).get("continue") or None
        if not token:
            return
