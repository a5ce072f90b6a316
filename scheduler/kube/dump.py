"""``spread-scheduler skew`` on the live cluster: LIST what the report reads (explain's listing).

Read-only: it never writes to the cluster. Every way the listing can fail (no kubeconfig, a broken
one, an unreachable or refusing API server) becomes one ``ListingError`` with a one-line message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import aiohttp
from kubernetes.aio.client.exceptions import ApiException
from kubernetes.aio.config.config_exception import ConfigException

from scheduler.config import SchedulerConfig
from scheduler.kube.app import api_client
from scheduler.kube.explain import list_cluster_objects

__all__ = ["ListingError", "cluster_objects"]


class ListingError(RuntimeError):
    """The cluster could not be listed; the message says why in one line."""


async def cluster_objects(config: SchedulerConfig, kubeconfig: str | None) -> list[Mapping[str, Any]]:
    """Nodes, Namespaces, Pods, Services, ReplicationControllers, ReplicaSets and StatefulSets as listed now."""
    path = kubeconfig or config.kubeconfig
    if path and not os.path.isfile(path):
        raise ListingError(f"cannot load the kubeconfig: {path}: no such file")
    try:
        api = await api_client(path)
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise ListingError(f"cannot load the kubeconfig: {exc}") from exc
    try:
        return list(await list_cluster_objects(api))
    except (aiohttp.ClientError, OSError, ApiException, RuntimeError) as exc:
        raise ListingError(
            f"cannot list the cluster: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc
    finally:
        await api.close()  # type: ignore[no-untyped-call]
