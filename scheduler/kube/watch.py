"""kopf wiring: watch-only handlers that feed the scheduler, and settings that make kopf write nothing.

Only ``@kopf.on.event`` handlers are registered: they are not state-tracking, so kopf never adds
finalizers, annotations or status to any object. Event posting and peering are switched off too;
the only writes to the cluster are the scheduler's own (``scheduler.kube.writes``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from scheduler.kube.listing import PAGE_SIZE

__all__ = ["WATCHED", "WORKER_IDLE_TIMEOUT", "build_registry", "login_in_cluster"]

WORKER_IDLE_TIMEOUT = 0.5


def login_in_cluster(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The ServiceAccount's files, and the API server client-go's ``InClusterConfig`` uses.

    kopf's own handler connects to ``https://kubernetes.default.svc``, which needs cluster DNS and
    can differ from where ``kubernetes.aio`` (our writes) goes; client-go and the kubernetes client
    both take ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``, set by the kubelet in every pod.
    """
    info = kopf.login_with_service_account(**kwargs)
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if info is None or not host or not port:
        return info
    host = f"[{host}]" if ":" in host else host  # net.JoinHostPort
    return dataclasses.replace(info, server=f"https://{host}:{port}")


# (group/version, plural) of everything the cache reads.
WATCHED: tuple[tuple[str, str], ...] = (
    ("v1", "nodes"),
    ("v1", "pods"),
    ("v1", "services"),
    ("v1", "replicationcontrollers"),
    ("apps/v1", "replicasets"),
    ("apps/v1", "statefulsets"),
    ("v1", "namespaces"),
    ("policy/v1", "poddisruptionbudgets"),
    ("v1", "persistentvolumes"),
    ("v1", "persistentvolumeclaims"),
    ("storage.k8s.io/v1", "storageclasses"),
    ("storage.k8s.io/v1", "csinodes"),
    ("storage.k8s.io/v1", "csidrivers"),
    ("storage.k8s.io/v1", "csistoragecapacities"),
    ("storage.k8s.io/v1", "volumeattachments"),
)

_KINDS = {
    "nodes": "Node",
    "pods": "Pod",
    "services": "Service",
    "replicationcontrollers": "ReplicationController",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "namespaces": "Namespace",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
}


class _NoDiffBase(kopf.DiffBaseStorage):
    """No essence, no diff: kopf builds both for every event (a deep copy of the whole object) even
    when only ``on.event`` handlers exist, and nothing here reads them (5 % of the scheduler's CPU
    in the end-to-end benchmark)."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: kopf.Body) -> Any:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: Any) -> None:
        return None


def build_registry(on_object: Callable[[str | None, Mapping[str, Any]], None]) -> kopf.OperatorRegistry:
    """A private registry (not kopf's global one) with one event handler per watched resource."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # kopf must not post k8s Events of its own
        settings.peering.standalone = True  # no KopfPeering objects: leader election is ours
        settings.scanning.disabled = True  # no namespace/CRD scanning: fewer permissions
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.watching.connect_timeout = 10
        # kopf's first LIST is one response unless chunked: 30,000 pods parsed in one piece were the
        # scheduler's peak memory (727 MB, 386 MB in pages). Pages of 500, as our resync lists and client-go's pager.
        settings.watching.chunk_size = PAGE_SIZE
        # kopf gives each object a worker task that keeps its last event (the whole object as
        # listed, managedFields and all) until no event came for ``idle_timeout``. At kopf's 5 s, a
        # burst of 1,000 pods kept nearly every pod's JSON twice (kopf's copy and the cache's): peak
        # RSS at 500 nodes 147-153 MB, 117-128 MB at 0.5 s (3 and 5 runs), CPU per pod unchanged
        # (3.8-4.7 vs 3.8-4.2 ms; 0.1 s was no better). A worker that exits is spawned again by
        # the object's next event.
        settings.queueing.idle_timeout = WORKER_IDLE_TIMEOUT
        settings.networking.request_timeout = 30
        settings.persistence.finalizer = "spread-scheduler.invalid/never-used"
        settings.persistence.diffbase_storage = _NoDiffBase()
        logging.getLogger("kopf").setLevel(logging.WARNING)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if os.environ.get("KUBECONFIG") or os.path.exists(os.path.expanduser("~/.kube/config")):
            return kopf.login_with_kubeconfig(**kwargs)
        return login_in_cluster(**kwargs)

    for group_version, plural in WATCHED:
        kind = _KINDS[plural]

        # async on purpose: kopf runs sync handlers in threads, and the cache must only ever be
        # touched from the event loop, between scheduling cycles.
        async def handler(event: Mapping[str, Any], _kind: str = kind, **_: Any) -> None:
            raw = event.get("object")
            if not isinstance(raw, Mapping):
                return
            obj = dict(raw)
            obj.setdefault("kind", _kind)  # watch items carry kind; listings may not
            meta = obj.get("metadata")
            if isinstance(meta, Mapping) and "managedFields" in meta:
                # Server-side-apply bookkeeping is a third of a pod's JSON and nothing reads it: the
                # cache keeps each object's raw form, so this is most of what 10,000 pods cost.
                obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
            on_object(event.get("type"), obj)

        kopf.on.event(group_version, plural, registry=registry)(handler)
    return registry
