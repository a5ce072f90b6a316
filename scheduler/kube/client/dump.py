"""The live cluster as a file of objects would hold it, for ``explain`` and ``skew``.

Read-only: it never writes to the cluster. Every way the listing can fail (no kubeconfig, a broken
one, an unreachable or refusing API server) becomes one ``ListingError`` with a one-line message; a
refused list that the command cannot do without names the permission it needs.

With a namespace (kubectl's ``-n``) the namespaced kinds are listed in it only
(``/api/v1/namespaces/NS/...``), so a user whose Role covers one namespace can read them. Pods are
the exception where allowed (``PLACEMENT_KINDS``; for ``explain`` every namespaced kind,
``REPLAY_KINDS``): the nodes' other pods take room and repel by anti-affinity, so a replacement's
or a replayed pod's placement needs them; a user who may not list them in every namespace gets the
namespace's, and a warning that placements count only those. The cluster-scoped
kinds are read as before: Nodes are required (the spread is counted on their labels), the others
optional.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

import aiohttp
import structlog
from kubernetes.aio import client
from kubernetes.aio.client.exceptions import ApiException

from scheduler.boundedyaml import MAX_BYTES
from scheduler.config import SchedulerConfig
from scheduler.kube.client.apiclient import KubeconfigError, api_client
from scheduler.kube.client.kubeconfig import NO_OVERRIDES, Overrides
from scheduler.kube.client.rest import BodyTooLargeError, read_body

__all__ = ["PLACEMENT_KINDS", "REPLAY_KINDS", "ListingError", "cluster_objects", "list_cluster_objects"]

log = structlog.get_logger("spread-scheduler")


_LISTS = (
    ("Node", "list_node_without_preload_content", "core"),
    ("Namespace", "list_namespace_without_preload_content", "core"),
    ("Pod", "list_pod_for_all_namespaces_without_preload_content", "core"),
    ("Service", "list_service_for_all_namespaces_without_preload_content", "core"),
    ("ReplicationController", "list_replication_controller_for_all_namespaces_without_preload_content", "core"),
    ("ReplicaSet", "list_replica_set_for_all_namespaces_without_preload_content", "apps"),
    ("StatefulSet", "list_stateful_set_for_all_namespaces_without_preload_content", "apps"),
)
# What preemption reads besides (``explain``): listed when the caller may list them, else left out
# (forbidden or not served: the replay then counts no PDB, and the pods' own priorities).
_PREEMPTION_LISTS = (
    ("PodDisruptionBudget", "list_pod_disruption_budget_for_all_namespaces_without_preload_content", "policy"),
    ("PriorityClass", "list_priority_class_without_preload_content", "scheduling"),
)
# What the volume plugins look up: listed when the caller may list them, else left out (a pod with a
# claim is then replayed as if its claim were missing, and says so).
_STORAGE_LISTS = (
    ("PersistentVolume", "list_persistent_volume_without_preload_content", "core"),
    ("PersistentVolumeClaim", "list_persistent_volume_claim_for_all_namespaces_without_preload_content", "core"),
    ("StorageClass", "list_storage_class_without_preload_content", "storage"),
    ("CSINode", "list_csi_node_without_preload_content", "storage"),
    ("CSIDriver", "list_csi_driver_without_preload_content", "storage"),
    ("CSIStorageCapacity", "list_csi_storage_capacity_for_all_namespaces_without_preload_content", "storage"),
    ("VolumeAttachment", "list_volume_attachment_without_preload_content", "storage"),
    # Not storage: DynamicResources' objects, as ``run`` watches them: the classes (which extended
    # resources it takes over, DRAExtendedResource, and its requests' selectors), the devices the
    # slices publish, and the claims (the devices already allocated, in every namespace).
    ("DeviceClass", "list_device_class_without_preload_content", "resource"),
    ("ResourceSlice", "list_resource_slice_without_preload_content", "resource"),
    ("ResourceClaim", "list_resource_claim_for_all_namespaces_without_preload_content", "resource"),
)
_OPTIONAL_STATUSES = (403, 404)
FORBIDDEN = 403
# The resource each required kind is listed as, to name a missing permission.
_RESOURCES = {
    "Node": "nodes",
    "Namespace": "namespaces",
    "Pod": "pods",
    "Service": "services",
    "ReplicationController": "replicationcontrollers",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
}
ALL_NAMESPACES = "_for_all_namespaces"
# With a namespace, the namespaced kinds still read from every namespace where allowed: the pods
# that placements count (``skew``'s and ``rebalance``'s replacements), and for ``explain``, whose
# replay is the whole scheduling cycle (preemption's victims and their budgets too), all of them.
PLACEMENT_KINDS = ("Pod",)
REPLAY_KINDS = (
    "Pod",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "CSIStorageCapacity",
    "ResourceClaim",
)


# kubectl's default --chunk-size (k8s.io/kubectl/pkg/cmd/get): each response stays small, whatever
# the cluster's size.
PAGE_SIZE = 500
# A page of PAGE_SIZE objects is far smaller; a server answering more is refused, not buffered.
MAX_PAGE_BYTES = MAX_BYTES


async def _read_body(response: Any, kind: str) -> bytes:
    """A list response's body, read at most ``MAX_PAGE_BYTES`` (RuntimeError past that)."""
    try:
        return await read_body(response, MAX_PAGE_BYTES)
    except BodyTooLargeError as exc:
        raise RuntimeError(f"listing {kind}: {exc}") from None


def _parse_page(body: bytes, kind: str, status: int) -> dict[str, Any]:
    """The response's JSON object; RuntimeError (one line) for a body that is not JSON, is nested
    past the parser's stack, or is not an object."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RuntimeError(f"listing {kind}: HTTP {status}: the response is not JSON: {reason}") from exc
    if not isinstance(data, dict):
        raise RuntimeError(f"listing {kind}: HTTP {status}: the response is not a JSON object")
    return data


def _forbidden(kind: str, message: object, namespace: str | None) -> str:
    """A refused required list, with the permission the command needs."""
    resource = _RESOURCES.get(kind, kind)
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'listing {kind}: HTTP 403: {message} (the command needs "list" on "{resource}" {where}: '
        f"{'a Role' if namespace else 'a ClusterRole'} granting it, bound to the user)"
    )


def _namespaced(method: str) -> str:
    """The client's per-namespace list of the kind whose all-namespaces list is ``method``."""
    return method.replace(ALL_NAMESPACES, "").replace("list_", "list_namespaced_", 1)


async def _list_all(
    method: Any, kind: str, optional: bool, namespace: str | None = None
) -> list[dict[str, Any]] | None:
    """Every object of one kind, page by page (``limit``/``continue``); None when ``optional`` and
    the caller may not list it (or the server does not serve it). ``namespace``: the method is a
    per-namespace list, of that namespace."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    where = () if namespace is None else (namespace,)
    while True:
        response = await method(*where, limit=PAGE_SIZE, _continue=token)
        try:
            body = await _read_body(response, kind)
        finally:
            response.release()
        if optional and response.status in _OPTIONAL_STATUSES:
            return None
        data = _parse_page(body, kind, response.status)
        if response.status == FORBIDDEN:
            raise RuntimeError(_forbidden(kind, data.get("message"), namespace))
        if response.status != 200:
            raise RuntimeError(f"listing {kind}: HTTP {response.status}: {data.get('message')}")
        page = data.get("items")
        if not isinstance(page, list | None) or not all(isinstance(item, dict) for item in page or ()):
            raise RuntimeError(f"listing {kind}: items is not a list of objects")
        items += [{**item, "kind": kind} for item in page or ()]
        metadata = data.get("metadata")
        token = metadata.get("continue") if isinstance(metadata, dict) else None
        if not token or not isinstance(token, str):
            return items


async def _list_kind(
    api: Any, method: str, kind: str, optional: bool, namespace: str | None, wide: Collection[str]
) -> list[dict[str, Any]] | None:
    """One kind, of every namespace or of ``namespace`` (see the module)."""
    every = getattr(api, method)
    if namespace is None:
        return await _list_all(every, kind, optional)
    if ALL_NAMESPACES not in method:  # cluster-scoped; Namespaces only for namespaceSelectors, where allowed
        return await _list_all(every, kind, optional or kind == "Namespace")
    if kind in wide:
        listed = await _list_all(every, kind, True)
        if listed is not None:
            return listed
        log.warning(
            "cannot list every namespace: placements count only this namespace's", kind=kind, namespace=namespace
        )
    return await _list_all(getattr(api, _namespaced(method)), kind, optional, namespace)


async def list_cluster_objects(
    api: client.ApiClient,
    *,
    preemption: bool = False,
    namespace: str | None = None,
    wide: Collection[str] = PLACEMENT_KINDS,
) -> list[dict[str, Any]]:
    """Nodes, Namespaces, Pods, the objects default spreading reads and the storage objects the
    caller may list, each with its ``kind`` set; with ``preemption``, also the PodDisruptionBudgets
    and PriorityClasses the caller may list; with ``namespace``, its namespaced objects only (see
    the module; ``wide``: the namespaced kinds read from every namespace where allowed). Each
    response is bounded (``PAGE_SIZE`` objects, ``MAX_PAGE_BYTES``); a malformed
    one is a RuntimeError naming the kind."""
    apis = {
        "core": client.CoreV1Api(api),
        "apps": client.AppsV1Api(api),
        "policy": client.PolicyV1Api(api),
        "scheduling": client.SchedulingV1Api(api),
        "storage": client.StorageV1Api(api),
        "resource": client.ResourceV1Api(api),
    }
    objects: list[dict[str, Any]] = []
    lists = [(*entry, False) for entry in _LISTS] + [(*entry, True) for entry in _STORAGE_LISTS]
    if preemption:
        lists += [(*entry, True) for entry in _PREEMPTION_LISTS]
    for kind, method, group, optional in lists:
        objects += await _list_kind(apis[group], method, kind, optional, namespace, wide) or []
    return objects


class ListingError(RuntimeError):
    """The cluster could not be listed; the message says why in one line."""


async def cluster_objects(
    config: SchedulerConfig,
    kubeconfig: str | None,
    *,
    preemption: bool = False,
    namespace: str | None = None,
    wide: Collection[str] = PLACEMENT_KINDS,
    overrides: Overrides = NO_OVERRIDES,
) -> list[Mapping[str, Any]]:
    """Nodes, Namespaces, Pods, Services, ReplicationControllers, ReplicaSets, StatefulSets and the
    storage objects as listed now (with ``preemption``, PodDisruptionBudgets and PriorityClasses too,
    where allowed; with ``namespace``, its namespaced objects); ``overrides``: kubectl's --context,
    --cluster, --user."""
    try:
        api = await api_client(kubeconfig or config.kubeconfig, overrides)
    except KubeconfigError as exc:
        raise ListingError(str(exc)) from exc
    try:
        return list(await list_cluster_objects(api, preemption=preemption, namespace=namespace, wide=wide))
    except (aiohttp.ClientError, OSError, ApiException, RuntimeError) as exc:
        raise ListingError(
            f"cannot list the cluster: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc
    finally:
        await api.close()  # type: ignore[no-untyped-call]
