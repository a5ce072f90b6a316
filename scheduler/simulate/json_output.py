"""A simulation's results in the documented JSON shape (docs/simulate.md), and the ranking of nodes
``--top`` shows."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.framework.preemption import PreemptionOutcome
from scheduler.framework.status import Code, Status
from scheduler.plugins.dynamicresources.plugin.extendedclaim import EXTENDED_RESOURCE_CLAIM_ANNOTATION
from scheduler.plugins.dynamicresources.plugin.podclaims import ClaimNotUsableError, claim_name, is_reserved_for
from scheduler.schedule_one import Attempt
from scheduler.simulate.simulation import History


def _filter_json(status: Status | None) -> dict[str, str] | None:
    if status is None:
        return None
    return {"plugin": status.plugin, "reason": status.message(), "code": str(status.code)}


def attempt_to_json(
    attempt: Attempt, cache: Cache, top: int | None = None, history: History | None = None
) -> dict[str, Any]:
    """The documented JSON shape: the outcome, per node the filter verdict (with its status code), per
    plugin raw/normalized, and the total; the plugins that rejected the pod (``FitError.Diagnosis``).

    With ``top``, only the ``top`` best nodes (``rank_nodes``), best first, and ``omittedNodes``.
    With ``history`` (preemption applied), the pod's earlier cycles (``earlierCycles``), the latest
    preemption decision among all its cycles, and who evicted it (``preemptedBy``).
    """
    nodes: dict[str, Any] = {}
    diagnosis = attempt.diagnosis
    index = {name: i for i, name in enumerate(attempt.scored_nodes)}
    feasible = set(attempt.feasible)
    for info in cache.node_infos():
        name = info.name
        status = diagnosis.node_to_status.get(name)
        if status is None and name not in feasible:
            status = diagnosis.absent_nodes_status
        entry: dict[str, Any] = {"filter": _filter_json(status), "scores": {}, "total": None}
        if status is None and name not in feasible:
            entry["filter"] = None
            entry["evaluated"] = False
        if name in index:
            i = index[name]
            entry["scores"] = {s.plugin: {"raw": s.raw[i], "normalized": s.normalized[i]} for s in attempt.scores}
            entry["total"] = attempt.totals.get(name)
        nodes[name] = entry
    omitted = None
    if top is not None:
        ranked = rank_nodes(nodes, attempt.host)
        omitted = max(0, len(ranked) - top)
        nodes = {name: nodes[name] for name in ranked[:top]}
    data: dict[str, Any] = {
        "pod": attempt.pod.key,
        "node": attempt.host,
        "code": "Success" if attempt.host is not None else str(attempt.status.code),
        "message": attempt.message
        if attempt.host is None
        else f"Successfully assigned {attempt.pod.key} to {attempt.host}",
        # Empty unless the pod fit no node: the rejecting plugins, and those of them that said Pending.
        "unschedulablePlugins": sorted(diagnosis.unschedulable_plugins) if attempt.fit_error else [],
        "pendingPlugins": sorted(diagnosis.pending_plugins) if attempt.fit_error else [],
        # Opportunistic batching: placed on the previous pod's runner-up without scoring.
        "batched": attempt.batched,
        "nodes": nodes,
    }
    if omitted is not None:
        data["omittedNodes"] = omitted
    claims = claim_allocations(attempt.pod, cache.storage) if attempt.host is not None else []
    if claims or (attempt.pod.resource_claims and attempt.host is not None):
        # DynamicResources: which device of which slice serves each request of the pod's claims.
        data["claims"] = claims
    earlier = history.earlier.get(attempt.pod.key, []) if history is not None else []
    preemption = latest_preemption([*earlier, attempt])
    if preemption is not None:
        # DefaultPreemption ran: where the pod would wait, and whom it would evict (issue #19).
        data["nominatedNode"] = preemption.nominated_node
        data["victims"] = [victim.key for victim in preemption.victims]
    if earlier:
        # Applied preemption: the cycles before this last one, oldest first, in the same shape.
        data["earlierCycles"] = [
            {k: v for k, v in attempt_to_json(a, cache, top).items() if k != "pod"} for a in earlier
        ]
    if history is not None and attempt.pod.key in history.preempted_by:
        data["preemptedBy"] = history.preempted_by[attempt.pod.key]
    return data


def claim_allocations(pod: Pod, storage: StorageObjects) -> list[dict[str, Any]]:
    """Per device allocated to a claim reserved for ``pod``, in the pod's claim order: the claim, the
    request (``<request>/<subrequest>`` for a ``firstAvailable`` alternative), the driver, pool and
    device, and the slice that lists the device (None once the slice is gone)."""
    out: list[dict[str, Any]] = []
    claims = []
    for entry in pod.resource_claims:
        try:
            name, _ = claim_name(pod, entry)
        except ClaimNotUsableError:
            continue
        claims.append(storage.resource_claim(pod.namespace, name) if name is not None else None)
    # Then the claim PreBind created for the pod's DeviceClass-backed extended resources (the pod's
    # status.extendedResourceClaimStatus names it upstream; the dry run does not patch the pod).
    claims += [
        c
        for c in storage.resource_claims()
        if c.namespace == pod.namespace
        and c.name.startswith(f"{pod.name}-extended-resources-")
        and c.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
    ]
    for claim in claims:
        if claim is None or claim.allocation is None or not is_reserved_for(pod, claim):
            continue
        for result in claim.allocation.results:
            out.append(
                {
                    "claim": claim.key,
                    "request": result.request,
                    "driver": result.driver,
                    "pool": result.pool,
                    "device": result.device,
                    "slice": _slice_of(storage, result.driver, result.pool, result.device),
                }
            )
    return out


def _slice_of(storage: StorageObjects, driver: str, pool: str, device: str) -> str | None:
    for found in storage.resource_slices():
        if found.driver == driver and found.pool.name == pool and any(d.name == device for d in found.devices):
            return found.name
    return None


def latest_preemption(attempts: Sequence[Attempt]) -> PreemptionOutcome | None:
    """DefaultPreemption's decision in the latest of ``attempts`` where it ran."""
    return next((a.preemption for a in reversed(attempts) if a.preemption is not None), None)


def rank_nodes(nodes: Mapping[str, Mapping[str, Any]], host: str | None) -> list[str]:
    """Node names best first (``--top``): the chosen node, the other feasible nodes by total (highest
    first), then nodes refused as ``Unschedulable`` (preemption could help), then as
    ``UnschedulableAndUnresolvable``, then the nodes the search did not reach; ties by name."""

    def rank(name: str) -> tuple[int, float, str]:
        entry = nodes[name]
        filt = entry["filter"]
        if name == host:
            group = 0
        elif entry.get("evaluated") is False:
            group = 4
        elif filt is None:
            group = 1
        else:
            group = 2 if filt["code"] == str(Code.UNSCHEDULABLE) else 3
        total = entry["total"]
        return group, -(total if total is not None else float("-inf")), name

    return sorted(nodes, key=rank)


def to_json(attempts: list[Attempt], cache: Cache, top: int | None = None, history: History | None = None) -> str:
    results = [attempt_to_json(a, cache, top, history) for a in attempts]
    return json.dumps({"results": results}, indent=2, sort_keys=False)
