"""ApiVolumeBinder's wait (upstream's ``checkBindings``) on the cache, without an API server: when a
claim counts as bound, what is a failure, and the timeout. The writes themselves run in
e2e/test_volumes.py against the real control plane."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.volumes import ApiVolumeBinder
from scheduler.kube.writes import ApiWriter
from scheduler.testing import make_pod


def claim(version: str, *, volume: str = "", bound: bool = False, node: str | None = None) -> PersistentVolumeClaim:
    annotations = {"pv.kubernetes.io/bind-completed": "yes"} if bound else {}
    if node is not None:
        annotations["volume.kubernetes.io/selected-node"] = node
    meta = {"name": "data", "namespace": "default", "uid": "u", "resourceVersion": version, "annotations": annotations}
    return PersistentVolumeClaim.from_dict({"metadata": meta, "spec": {"volumeName": volume}})


def pv(version: str, claim_uid: str | None) -> PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "csi": {"driver": "d", "volumeHandle": "h"}}
    if claim_uid is not None:
        spec["claimRef"] = {"namespace": "default", "name": "data", "uid": claim_uid}
    return PersistentVolume.from_dict({"metadata": {"name": "pv", "resourceVersion": version}, "spec": spec})


def binder(storage: StorageObjects) -> ApiVolumeBinder:
    # No API behind the writer: the tests that write capture ``writes._call``.
    return ApiVolumeBinder(ApiWriter(None, RateLimiter(qps=0, burst=1)), storage, poll=0.01)  # type: ignore[arg-type]


def check(storage: StorageObjects, bindings: Any = (), provisions: Any = ()) -> bool:
    return binder(storage)._bound(make_pod("p").build(), "n1", bindings, provisions)


def test_a_static_binding_waits_for_the_pv_controller() -> None:
    storage = StorageObjects()
    written = pv("10", "u")  # what PreBind wrote, made from version 10
    storage.upsert(pv("10", None), "10")
    storage.upsert(claim("5"), "5")
    assert check(storage, [(claim("5"), written)]) is False  # the watch has not brought the write yet
    storage.upsert(pv("11", "u"), "11")
    assert check(storage, [(claim("5"), written)]) is False  # the claim is not bound yet
    storage.upsert(claim("6", volume="pv", bound=True), "6")
    assert check(storage, [(claim("5"), written)]) is True


def test_a_claim_ref_reset_after_the_write_fails() -> None:
    storage = StorageObjects()
    storage.upsert(pv("12", None), "12")
    storage.upsert(claim("5"), "5")
    with pytest.raises(RuntimeError, match='ClaimRef got reset for pv "pv"'):
        check(storage, [(claim("5"), pv("10", "u"))])


def test_a_provisioned_claim_waits_and_fails_when_its_node_is_taken_back() -> None:
    storage = StorageObjects()
    storage.upsert(claim("5"), "5")
    written = claim("5", node="n1")
    assert check(storage, provisions=[written]) is False  # our write not seen yet
    storage.upsert(claim("6", node="n1"), "6")
    assert check(storage, provisions=[written]) is False  # selected, not bound
    storage.upsert(claim("7", volume="pv", bound=True, node="n1"), "7")
    assert check(storage, provisions=[written]) is True
    storage.upsert(claim("8", node="n2"), "8")
    with pytest.raises(RuntimeError, match='provisioning failed for PVC "data"'):
        check(storage, provisions=[written])


def test_the_wait_ends_at_bind_timeout_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writes are sent (here: recorded), then the claim never gets bound: a TimeoutError."""
    from scheduler.kube import writes  # noqa: PLC0415 - the writes' one call path, patched

    sent: list[str] = []

    async def fake_call(limiter: object, what: str, request: object, observe: object, fence: object) -> bytes:
        sent.append(what)
        return b""

    monkeypatch.setattr(writes, "_call", fake_call)
    storage = StorageObjects()
    storage.upsert(claim("6", node="n1"), "6")
    pending = claim("5", node="n1")
    with pytest.raises(TimeoutError, match=r"timed out waiting for the condition \(0.05s, bindTimeoutSeconds\)"):
        asyncio.run(binder(storage).bind_pod_volumes(make_pod("p").build(), "n1", [], [pending], 0.05))
    assert sent == ["selecting node n1 for PersistentVolumeClaim default/data"]
