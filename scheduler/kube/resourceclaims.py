"""DynamicResources' claim writes through the API: PreBind's ``bindClaim`` (the finalizer by Update,
then ``status.allocation`` and a ``reservedFor`` entry by UpdateStatus, retried on conflicts with the
claim read again), PostFilter's deallocation and Unreserve's patch, as upstream's
``dynamicresources.go`` makes them.

The writes go through the one writer (``scheduler.kube.writes``): the rate limiter, the Lease's fence
before every request (a re-read included), transient failures retried. A claim PreBind wrote is
assumed in the cache (``StorageObjects.assume_written``, upstream's ``AssumeClaimAfterAPICall``)
before the caller learns of it, so its devices stay taken between the end of its in-flight entry and
the watch bringing it. A failed write assumes nothing; a written claim stays assumed when a later
write of the same PreBind fails (upstream's Unreserve restores the informer's version, which can show
its devices free until the watch brings the write: the assumed version is what the API holds). The
watch's deletion of the claim drops it. The plugin's data (``ClaimBinding``, ``ClaimDeallocation``)
says what to write; nothing here decides an allocation.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import structlog

from scheduler.api.devicefields import DeviceConfiguration, DeviceToleration
from scheduler.api.nodeselector import NodeSelector
from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import AllocationResult, ConsumerReference, DeviceAllocationResult, ResourceClaim
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.errors import BindConflictError, PodGoneError
from scheduler.kube.writes import STRATEGIC_MERGE_PATCH, ApiWriter
from scheduler.logs import enabled, kobj
from scheduler.plugins.dynamicresources.plugin.claimwrites import FINALIZER, ClaimBinding, ClaimDeallocation

__all__ = ["MAX_CLAIM_BYTES", "ApiClaimWriter", "ClaimChangedError", "allocation_json"]

log = structlog.get_logger("spread-scheduler")

CLAIM = "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
CLAIM_STATUS = CLAIM + "/status"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
POD_STATUS = "/api/v1/namespaces/{namespace}/pods/{name}/status"
# A claim as the API returns it: etcd keeps an object of at most 1.5 MiB (--max-request-bytes), and
# its JSON is a few times its stored protobuf at most; a reply past this is not a claim.
MAX_CLAIM_BYTES = 8 * 1024 * 1024
# client-go's retry.DefaultRetry, which bindClaim's RetryOnConflict uses: 5 tries, 10 ms apart (+10 %).
CONFLICT_TRIES = 5
ASSUME_EXTENDED_TRIES = 121  # AssumeExtendedResourceTimeoutDefaultSeconds (120) polled every second, immediately first
CONFLICT_WAIT = 0.010
CONFLICT_JITTER = 0.1


_DEALLOCATED = ("reservedFor", "allocation", "devices")  # what PostFilter's deallocation clears


class ClaimChangedError(RuntimeError):
    """The claim changed under the write in a way no retry mends (deleted, allocated elsewhere)."""


class ApiClaimWriter:
    """The API side of DynamicResources' claim writes (the plugin's ``ClaimWriter``)."""

    def __init__(
        self,
        writer: ApiWriter,
        storage: StorageObjects,
        minor: str,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self._writer = writer
        self._storage = storage
        self._minor = minor  # what the API's replies are read as: the cluster's
        self._clock = clock
        self._sleep = sleep

    async def bind_claim(self, pod: Pod, binding: ClaimBinding) -> ResourceClaim:
        """``bindClaim``: the claim allocated (when ``binding.allocation``) and reserved for ``pod``,
        as written and assumed in the cache. The first try updates the claim the cache holds, as
        upstream updates the cycle's copy; a conflict reads it again and tries again."""
        key = f"{binding.namespace}/{binding.name}"
        params = {"namespace": binding.namespace, "name": binding.name}
        held = self._storage.resource_claim(binding.namespace, binding.name)
        obj: Mapping[str, Any] | None = held.raw if held is not None and held.raw else None
        conflict: BindConflictError | None = None
        for attempt in range(CONFLICT_TRIES):
            if attempt:
                await self._sleep(CONFLICT_WAIT * (1 + random.random() * CONFLICT_JITTER))
                obj = await self._read(f"get updated claim {key} after conflict", params)
                if enabled(5):
                    log.info("retrying update after conflict", v=5, claim=kobj(key))
            elif obj is None:  # not held, or held without its JSON (built by a test): read it first
                obj = await self._read(f"get claim {key}", params)
            try:
                written = await self._bind_once(binding, key, params, obj)
            except BindConflictError as err:
                conflict = err
                continue
            claim = ResourceClaim.from_dict(written, minor=self._minor)
            refused = self._storage.assume_written(claim)
            # Upstream logs a refusal and goes on: the watch has the claim or brings it.
            if refused is not None and enabled(5):
                log.info("Claim not stored in assume cache", v=5, claim=kobj(key), err=refused)
            if enabled(5):
                log.info("reserved", v=5, pod=kobj(pod.key), resourceclaim=kobj(key))
            return claim
        assert conflict is not None
        raise conflict

    async def _bind_once(
        self, binding: ClaimBinding, key: str, params: dict[str, str], obj: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """One try of ``RetryOnConflict``'s function; a 409 raises ``BindConflictError``."""
        meta = _mapping(obj.get("metadata"))
        if meta.get("deletionTimestamp") is not None:
            raise ClaimChangedError(f"claim {key} got deleted in the meantime")
        status = dict(_mapping(obj.get("status")))
        if binding.allocation is not None:
            if status.get("allocation") is not None:
                raise ClaimChangedError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = [f for f in _list(meta.get("finalizers")) if isinstance(f, str)]
            if FINALIZER not in finalizers:
                # The finalizer needs a normal update (the status subresource ignores metadata).
                body = _body(obj, metadata={**meta, "finalizers": [*finalizers, FINALIZER]})
                obj = await self._write(f"add finalizer to claim {key}", "PUT", CLAIM, params, body)
                status = dict(_mapping(obj.get("status")))
            status["allocation"] = allocation_json(binding.allocation)
        status["reservedFor"] = [*_list(status.get("reservedFor")), consumer_json(binding.reserved_for)]
        if binding.binding_conditions or binding.stamp_allocation:
            allocation = status.get("allocation")
            if not isinstance(allocation, Mapping):
                raise ClaimChangedError(f"claim {key} got deallocated elsewhere in the meantime")
            if not allocation.get("allocationTimestamp"):
                status["allocation"] = {**allocation, "allocationTimestamp": _rfc3339(self._clock())}
        what = f"add {'allocation and reservation' if binding.allocation is not None else 'reservation'} to claim {key}"
        return await self._write(what, "PUT", CLAIM_STATUS, params, _body(obj, status=status))

    async def deallocate_claim(self, deallocation: ClaimDeallocation) -> None:
        """PostFilter's ``UpdateStatus``: the claim as the cache holds it, with no ``reservedFor``,
        ``allocation`` or ``devices`` (not retried: a conflict fails the PostFilter, as upstream)."""
        key = f"{deallocation.namespace}/{deallocation.name}"
        params = {"namespace": deallocation.namespace, "name": deallocation.name}
        held = self._storage.resource_claim(deallocation.namespace, deallocation.name)
        obj = held.raw if held is not None and held.raw else await self._read(f"get claim {key}", params)
        status = {k: v for k, v in _mapping(obj.get("status")).items() if k not in _DEALLOCATED}
        body = _body(obj, status=status)
        await self._write(f"deallocation of ResourceClaim {key}", "PUT", CLAIM_STATUS, params, body)

    async def unreserve_claim(self, pod: Pod, claim: ResourceClaim) -> None:
        """Unreserve's strategic-merge patch of ``status.reservedFor``, guarded by the claim's UID."""
        patch = {"metadata": {"uid": claim.uid}, "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
        await self._patch(
            f"unreserve claim {claim.key} for {pod.key}", CLAIM_STATUS, claim.namespace, claim.name, patch
        )

    async def create_claim(self, namespace: str, body: dict[str, Any]) -> ResourceClaim:
        """PreBind's create of the claim for a pod's extended resources (``generateName``), assumed
        in the cache as a claim PreBind wrote."""
        what = f"create claim for extended resources in {namespace}"
        created = await self._write(what, "POST", CLAIMS, {"namespace": namespace}, body)
        claim = ResourceClaim.from_dict(created, minor=self._minor)
        # ``waitForExtendedClaimInAssumeCache``: the new claim can only be assumed once the watch has
        # brought it; polled each second for at most AssumeExtendedResourceTimeoutDefaultSeconds.
        for attempt in range(ASSUME_EXTENDED_TRIES):
            if attempt:
                await self._sleep(1.0)
            refused = self._storage.assume_written(claim)
            if refused is None:
                break
        else:
            if enabled(5):
                log.info("Claim not stored in assume cache after retries", v=5, claim=kobj(claim.key), err=refused)
        return claim

    async def patch_pod_status(self, pod: Pod, patch: dict[str, Any]) -> None:
        """PreBind's patch of ``status.extendedResourceClaimStatus`` (upstream's ``PatchPodStatus``)."""
        await self._patch(
            f"update pod {pod.key} ExtendedResourceClaimStatus", POD_STATUS, pod.namespace, pod.name, patch
        )

    async def _patch(self, what: str, path: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """A strategic-merge patch of a status subresource, through the writer."""
        params = {"namespace": namespace, "name": name}
        await self._writer.write(what, "PATCH", path, params, patch, STRATEGIC_MERGE_PATCH)

    async def delete_claim(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: the built-in finalizer dropped by an Update (retried on conflicts with the
        claim read again), then a Delete; a claim already gone is done."""
        key = f"{claim.namespace}/{claim.name}"
        params = {"namespace": claim.namespace, "name": claim.name}
        held = self._storage.resource_claim(claim.namespace, claim.name)
        obj: Mapping[str, Any] | None = held.raw if held is not None and held.raw else None
        try:
            for attempt in range(CONFLICT_TRIES):
                if attempt:
                    await self._sleep(CONFLICT_WAIT * (1 + random.random() * CONFLICT_JITTER))
                if attempt or obj is None:
                    obj = await self._read(f"get resourceclaim {key}", params)
                meta = _mapping(obj.get("metadata"))
                finalizers = [f for f in _list(meta.get("finalizers")) if isinstance(f, str)]
                if FINALIZER in finalizers:
                    finalizers.remove(FINALIZER)
                body = _body(obj, metadata={**meta, "finalizers": finalizers})
                try:
                    await self._write(f"update resourceclaim {key}", "PUT", CLAIM, params, body)
                except BindConflictError:
                    if attempt == CONFLICT_TRIES - 1:
                        raise
                    continue
                break
            if enabled(5):
                log.info("Delete", v=5, resourceclaim=kobj(key))
            await self._writer.write(f"delete resourceclaim {key}", "DELETE", CLAIM, params, None)
        except PodGoneError:  # the writer's NotFound: the claim is gone already
            return

    async def _read(self, what: str, params: dict[str, str]) -> Mapping[str, Any]:
        """A GET of the claim, through the writer (rate-limited and fenced, as the write it serves)."""
        return _claim_reply(await self._writer.write(what, "GET", CLAIM, params, None), what)

    async def _write(
        self, what: str, method: str, path: str, params: dict[str, str], body: dict[str, Any]
    ) -> Mapping[str, Any]:
        return _claim_reply(await self._writer.write(what, method, path, params, body), what)


def _claim_reply(reply: bytes, what: str) -> Mapping[str, Any]:
    """The claim a reply holds, bounded in size (and in depth by the parser's recursion limit), without
    managedFields (as the informer keeps objects)."""
    if len(reply) > MAX_CLAIM_BYTES:
        raise ValueError(f"{what}: reply of {len(reply)} bytes, over {MAX_CLAIM_BYTES}")
    try:
        obj = json.loads(reply)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{what}: the reply is no JSON object: {type(exc).__name__}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise ValueError(f"{what}: the reply is no object with metadata")
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return obj


def _body(obj: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """The claim as the API takes it on PUT, with ``changes`` (top-level fields) applied."""
    return {**obj, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **changes}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _rfc3339(seconds: float) -> str:
    """``metav1.Time``'s JSON: RFC 3339 in UTC, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def consumer_json(ref: ConsumerReference) -> dict[str, str]:
    """``ResourceClaimConsumerReference``."""
    out = {"resource": ref.resource, "name": ref.name, "uid": ref.uid}
    return {"apiGroup": ref.api_group, **out} if ref.api_group else out


def allocation_json(allocation: AllocationResult) -> dict[str, Any]:
    """``status.allocation`` as the API takes it: the parsed ``AllocationResult`` the allocator built."""
    devices: dict[str, Any] = {"results": [_result_json(r) for r in allocation.results]}
    if allocation.config:
        devices["config"] = [_config_json(c) for c in allocation.config]
    out: dict[str, Any] = {"devices": devices}
    if allocation.node_selector is not None:
        out["nodeSelector"] = _node_selector_json(allocation.node_selector)
    if allocation.allocation_timestamp:
        out["allocationTimestamp"] = allocation.allocation_timestamp
    return out


def _result_json(result: DeviceAllocationResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "request": result.request,
        "driver": result.driver,
        "pool": result.pool,
        "device": result.device,
    }
    if result.admin_access is not None:
        out["adminAccess"] = result.admin_access
    if result.tolerations:
        out["tolerations"] = [_toleration_json(t) for t in result.tolerations]
    if result.binding_conditions:
        out["bindingConditions"] = list(result.binding_conditions)
    if result.binding_failure_conditions:
        out["bindingFailureConditions"] = list(result.binding_failure_conditions)
    if result.share_id is not None:
        out["shareID"] = result.share_id
    if result.consumed_capacity:
        out["consumedCapacity"] = {name: quantity_text(q) for name, q in result.consumed_capacity.items()}
    return out


def _toleration_json(toleration: DeviceToleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": toleration.operator}
    for name, value in (("key", toleration.key), ("value", toleration.value), ("effect", toleration.effect)):
        if value:
            out[name] = value
    if toleration.toleration_seconds is not None:
        out["tolerationSeconds"] = toleration.toleration_seconds
    return out


def _config_json(config: DeviceConfiguration) -> dict[str, Any]:
    out: dict[str, Any] = {"source": config.source}
    if config.requests:
        out["requests"] = list(config.requests)
    out["opaque"] = {"driver": config.driver, "parameters": config.parameters}
    return out


def _node_selector_json(selector: NodeSelector) -> dict[str, Any]:
    terms = []
    for term in selector.terms:
        out: dict[str, Any] = {}
        if term.labels is not None and term.labels.requirements:
            out["matchExpressions"] = [
                {"key": r.key, "operator": str(r.operator), **({"values": sorted(r.values)} if r.values else {})}
                for r in term.labels.requirements
            ]
        if term.fields:
            out["matchFields"] = [
                {"key": f.key, "operator": "NotIn" if f.negated else "In", "values": [f.value]} for f in term.fields
            ]
        terms.append(out)
    return {"nodeSelectorTerms": terms}


def quantity_text(q: Fraction) -> str:
    """A quantity the API parses back to ``q``: a plain decimal (the API server writes its canonical
    form), rounded up to nano units past nine decimals, as ``resource.Quantity`` keeps them."""
    if q.denominator == 1:
        return str(q.numerator)
    for digits in range(1, 10):
        scaled = q * 10**digits
        if scaled.denominator == 1:
            sign = "-" if scaled < 0 else ""
            whole, part = divmod(abs(scaled.numerator), 10**digits)
            return f"{sign}{whole}.{part:0{digits}d}"
    return f"{math.ceil(q * 10**9)}n"
