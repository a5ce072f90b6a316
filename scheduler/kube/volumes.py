"""VolumeBinding's PreBind writes through the API (``volumebinding/binder.go`` ``BindPodVolumes``).

Each PV to bind statically is written back with its ``claimRef`` (``PUT persistentvolumes``), each
claim to provision with ``volume.kubernetes.io/selected-node`` (``PUT persistentvolumeclaims``); then
the PV controller in kube-controller-manager binds them, and this waits (polling the cache once a
second, up to ``bindTimeoutSeconds``) until every claim is bound, as upstream's ``checkBindings``.
The writes go through the same rate limiter, retries and leadership fence as the Binding.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.kube.writes import ApiWriter
from scheduler.plugins.volumebinding.binder import ANN_SELECTED_NODE, fully_bound

__all__ = ["ApiVolumeBinder"]

POLL_SECONDS = 1.0


def _body(raw: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The object as the API takes it on PUT (apiVersion and kind set, no managedFields)."""
    return {**raw, "apiVersion": "v1", "kind": kind}


class ApiVolumeBinder:
    """The API side of VolumeBinding's PreBind."""

    def __init__(self, writer: ApiWriter, storage: StorageObjects, poll: float = POLL_SECONDS) -> None:
        self._writer = writer
        self._storage = storage
        self._poll = poll

    async def bind_pod_volumes(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolumeClaim, PersistentVolume]],
        provisions: Sequence[PersistentVolumeClaim],
        timeout: float,
    ) -> None:
        for _, pv in bindings:
            await self._put(
                f"binding PersistentVolume {pv.name} for {pod.key}",
                "/api/v1/persistentvolumes/{name}",
                {"name": pv.name},
                _body(pv.raw, "PersistentVolume"),
            )
        for claim in provisions:
            await self._put(
                f"selecting node {node_name} for PersistentVolumeClaim {claim.key}",
                "/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
                {"namespace": claim.namespace, "name": claim.name},
                _body(claim.raw, "PersistentVolumeClaim"),
            )
        deadline = time.monotonic() + timeout
        while not self._bound(pod, node_name, bindings, provisions):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out waiting for the condition ({timeout:g}s, bindTimeoutSeconds)")
            await asyncio.sleep(self._poll)

    async def _put(self, what: str, path: str, params: dict[str, str], body: dict[str, Any]) -> None:
        """One PUT with the Binding's rate limiter, retries and leadership fence."""
        await self._writer.write(what, "PUT", path, params, body)

    def _bound(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolumeClaim, PersistentVolume]],
        provisions: Sequence[PersistentVolumeClaim],
    ) -> bool:
        """``checkBindings``: every claim bound by the PV controller (raises where binding failed)."""
        for claim, pv in bindings:
            current = self._storage.api_object("PersistentVolume", pv.name)
            if not isinstance(current, PersistentVolume):
                raise LookupError(f'failed to check binding: persistentvolume "{pv.name}" not found')
            if current.claim_ref is None or not current.claim_ref.uid:
                if not _newer(current.resource_version, pv.resource_version):
                    return False  # the watch has not brought our write yet
                raise RuntimeError(f'ClaimRef got reset for pv "{pv.name}"')
            if not self._claim_bound(claim):
                return False
        for claim in provisions:
            current = self._storage.api_object("PersistentVolumeClaim", claim.key)
            if not isinstance(current, PersistentVolumeClaim):
                raise LookupError(f'failed to check provisioning pvc: persistentvolumeclaim "{claim.name}" not found')
            if current.annotations.get(ANN_SELECTED_NODE) != node_name:
                if not _newer(current.resource_version, claim.resource_version):
                    return False
                raise RuntimeError(f'provisioning failed for PVC "{claim.name}"')
            if not fully_bound(current):
                return False
        return True

    def _claim_bound(self, claim: PersistentVolumeClaim) -> bool:
        current = self._storage.api_object("PersistentVolumeClaim", claim.key)
        return isinstance(current, PersistentVolumeClaim) and fully_bound(current)


def _newer(version: str, than: str) -> bool:
    """Strictly newer, for etcd's integer resourceVersions (other spellings: a change is newer)."""
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than
