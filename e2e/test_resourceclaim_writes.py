"""DynamicResources' PreBind writes against a real API server: ``ApiClaimWriter.bind_claim`` allocates
and reserves a ResourceClaim (finalizer by Update, allocation and reservation by UpdateStatus), the API
server keeps what was written, the cache holds it before any watch, and the audit ledger counts the
writes as the scheduler's (``claim``). A conflict (the claim annotated behind the cache's back) is
read again and the write goes on.

This drives the writer itself (the whole path, from the default profile's plugin through ``run``, is
``e2e/test_dra_live.py``'s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from e2e.kube_helpers import pod_body, server_minor
from e2e.ledger import Ledger
from scheduler.api.nodeselector import NODE_NAME_FIELD, FieldRequirement, NodeSelector, NodeSelectorTerm
from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import AllocationResult, DeviceAllocationResult, ResourceClaim
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.kube.client.apiclient import api_client
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.resourceclaims import ApiClaimWriter, allocation_json
from scheduler.kube.writes import ApiWriter, ApiWrites
from scheduler.plugins.dynamicresources.plugin.claimwrites import FINALIZER, binding_for

# 1.36+ authorizes a change of status.allocation or status.reservedFor against resourceclaims/binding.
pytestmark = pytest.mark.every_release

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaims"
ALLOCATION = AllocationResult(
    results=(DeviceAllocationResult(request="gpu", driver="gpu.example.com", pool="worker-1", device="gpu-0"),),
    node_selector=NodeSelector((NodeSelectorTerm(None, (FieldRequirement(NODE_NAME_FIELD, False, "worker-1"),)),)),
)


@pytest.fixture
def claims(api: client.ApiClient, namespace: str) -> Iterator[client.CustomObjectsApi]:
    """The claims' API; every claim of the namespace is released (finalizer off) afterwards."""
    objects = client.CustomObjectsApi(api)
    yield objects
    for item in objects.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]:
        name = item["metadata"]["name"]
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name, {"metadata": {"finalizers": None}}
        )
        objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def claim_body(name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    }


async def bind_with_writer(
    kubeconfig: str, storage: StorageObjects, pod: Pod, claim: ResourceClaim, minor: str
) -> ResourceClaim:
    """``ApiClaimWriter.bind_claim`` of ``claim`` (as ``storage`` holds it) for ``pod``, logged in as
    ``kubeconfig`` says, with one claim's allocation on worker-1."""
    api = await api_client(kubeconfig)
    writes = ApiWrites(api)
    try:
        writer = ApiClaimWriter(ApiWriter(writes, RateLimiter(qps=50, burst=100)), storage, minor)
        return await writer.bind_claim(pod, binding_for(pod, claim, ALLOCATION, binding_conditions=False))
    finally:
        await writes.close()
        await api.close()


@pytest.mark.parametrize("conflict", [pytest.param(False, id="first-try"), pytest.param(True, id="after-a-conflict")])
def test_a_claim_bound_by_the_writer_is_allocated_and_reserved_on_the_server(
    api: client.ApiClient,
    core: client.CoreV1Api,
    kubeconfig: str,
    namespace: str,
    claims: client.CustomObjectsApi,
    ledger: Ledger,
    conflict: bool,
) -> None:
    minor = f"1.{server_minor(api)}"
    entry = {"name": "gpu", "resourceClaimName": "gpu"}
    made = core.create_namespaced_pod(namespace, pod_body("p", scheduler="nobody", resourceClaims=[entry]))
    pod = Pod.from_dict(api.sanitize_for_serialization(made))
    created = claims.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, claim_body("gpu"))
    created["metadata"].pop("managedFields", None)  # as the informer keeps objects
    storage = StorageObjects()
    cached = ResourceClaim.from_dict(created, minor=minor)
    storage.upsert(cached, cached.resource_version)  # what the watch brought
    if conflict:  # someone annotates the claim: the cache's copy is stale
        claims.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "gpu", {"metadata": {"annotations": {"touched": "yes"}}}
        )
    mark = ledger.mark()

    written = asyncio.run(bind_with_writer(kubeconfig, storage, pod, cached, minor))

    served = claims.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "gpu")
    assert served["metadata"]["finalizers"] == [FINALIZER]
    assert served["status"]["allocation"] == allocation_json(ALLOCATION)
    assert served["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": made.metadata.uid}]
    assert served["metadata"].get("annotations", {}) == ({"touched": "yes"} if conflict else {})
    assert written.resource_version == served["metadata"]["resourceVersion"]
    assert storage.resource_claim(namespace, "gpu") is written  # before any watch
    ours = [w for w in ledger.writes(mark) if w.kind == "claim" and w.namespace == namespace]
    want = [("update", "", 200), ("update", "status", 200)]
    assert [(w.verb, w.subresource, w.code) for w in ours] == ([("update", "", 409)] if conflict else []) + want
