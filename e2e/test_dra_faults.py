"""Faults with DRA (issue #49): the scheduler is killed with SIGKILL while claim writes are in flight.

Every pod has a ResourceClaim of its own (named as the pod) and there are exactly as many devices as
pods. The pods come in waves, one a kill; each kill comes right after the running incarnation bound a
pod of its wave, so it lands in the middle of the wave: between a pod's Reserve (the device in
flight, in memory only) and its PreBind (the claim's ``status.allocation`` and ``reservedFor``
written), or between that write and the Binding.
The next incarnation, once it holds the Lease, must take over: a claim already written binds its pod
to the claim's node, an unwritten one is allocated afresh. In the end every pod is bound, every claim
holds one device on its pod's node, and no device is held by two claims (the API server's objects);
the audit log (e2e/ledger.py) counts the claim writes (those a kill cut: the server's 504), the kills
that fell between a claim write and its Binding (a claim written by one incarnation, its pod bound by
another), no claim whose status (allocation) was written twice, and no write by an incarnation
without the Lease. SPREAD_E2E_DRA_KILLS sets the kills (default 2; `make reliability`: 10),
SPREAD_E2E_DRA_PODS the pods (default 24; 200).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import time
from collections.abc import Callable

from kubernetes import client

from e2e.conftest import LEASE_DURATION, LEASE_NAME, LEASE_NAMESPACE, LOGS, SchedulerProcess
from e2e.kube_helpers import bound_pods, pod_body, wait_for
from e2e.ledger import Ledger, lease_terms, summary, writes_after_losing, writes_without_lease
from scheduler.testing import node_resource_slice

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "kill.example.com"
PREFIX = "live-kill-"  # conftest's resources fixture deletes live-... classes and slices
KILLS = int(os.environ.get("SPREAD_E2E_DRA_KILLS", "2"))
PODS = int(os.environ.get("SPREAD_E2E_DRA_PODS", "24"))
DEVICES_PER_NODE = 4


def test_sigkill_with_claim_writes_in_flight_allocates_no_device_twice(
    resources: client.CustomObjectsApi,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    mark = ledger.mark()
    started = time.monotonic()
    node_names = [nodes(f"n{i}") for i in range(-(-PODS // DEVICES_PER_NODE))]
    devices = [{"name": f"gpu-{d}"} for d in range(DEVICES_PER_NODE)]
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    device_class = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": PREFIX + "gpu"}}
    resources.create_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", {**device_class, "spec": {"selectors": [selector]}}
    )
    for name in node_names:
        resources.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", node_resource_slice(PREFIX + name, DRIVER, name, *devices)
        )
    pods = [f"p-{i:03d}" for i in range(PODS)]
    for name in pods:
        request = {"name": "gpu", "exactly": {"deviceClassName": PREFIX + "gpu"}}
        claim = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim", "metadata": {"name": name}}
        claim["spec"] = {"devices": {"requests": [request]}}
        resources.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)

    def create_pods(names: list[str]) -> None:
        for name in names:
            body = pod_body(name, resourceClaims=[{"name": "gpu", "resourceClaimName": name}])
            body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
            core.create_namespaced_pod(namespace, body)

    def any_bound(names: list[str]) -> Callable[[], bool | None]:
        wanted = set(names)
        return lambda: (
            any(p.spec.node_name for p in core.list_namespaced_pod(namespace).items if p.metadata.name in wanted)
            or None
        )

    # A wave of pods per kill: the kill comes once the running incarnation bound one of its wave, the
    # others of the wave then in flight (or not yet tried); the last wave is left to finish.
    size = -(-PODS // (KILLS + 1))
    waves = [pods[i : i + size] for i in range(0, PODS, size)]
    kills = 0
    for wave in waves[:-1]:
        create_pods(wave)
        wait_for(any_bound(wave), 60, "the incarnation binding a pod of its wave")
        scheduler.stop(signal.SIGKILL)
        kills += 1
        scheduler.start()
    create_pods(waves[-1])

    bound = wait_for(lambda: bound_pods(core, namespace, PODS), 180, f"all {PODS} pods bound after {kills} kills")
    seconds = time.monotonic() - started
    assert kills == len(waves) - 1
    node_of = {p.metadata.name: p.spec.node_name for p in bound}
    holders: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for item in resources.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")["items"]:
        name = item["metadata"]["name"]
        status = item.get("status") or {}
        (result,) = status["allocation"]["devices"]["results"]
        assert result["pool"] == node_of[name], f"claim {name} holds a device of another node than its pod's"
        assert [r["name"] for r in status.get("reservedFor", [])] == [name]
        holders[result["pool"], result["device"]].append(name)
    twice = {device: names for device, names in holders.items() if len(names) > 1}
    assert not twice, f"devices held by more than one claim: {twice}"
    assert sum(len(names) for names in holders.values()) == PODS

    writes = ledger.writes(mark)
    mine = [w for w in writes if w.user in scheduler.users and w.namespace == namespace]
    claim_writes = [w for w in mine if w.kind == "claim"]
    written_by = {w.name: w.user for w in claim_writes if w.ok}
    bound_by = {w.name: w.user for w in mine if w.kind == "binding" and w.ok}
    handed_over = sorted(name for name, user in written_by.items() if bound_by.get(name) not in (None, user))
    # status.allocation and reservedFor are one status write: a claim with two that succeeded was
    # allocated twice (a later incarnation must find the claim written and leave it as it is).
    allocations = collections.Counter(w.name for w in claim_writes if w.subresource == "status" and w.ok)
    allocated_twice = sorted(name for name, count in allocations.items() if count > 1)
    assert not allocated_twice, f"claims whose status was written twice: {allocated_twice}"
    terms = lease_terms(ledger.writes(), LEASE_NAMESPACE, LEASE_NAME, LEASE_DURATION)
    unleased = writes_without_lease(writes, terms, scheduler.users)
    assert not unleased, "writes by an incarnation that did not hold the Lease:\n" + "\n".join(map(str, unleased[:20]))
    report = {
        "kills": kills,
        "pods": PODS,
        "devices": len(node_names) * DEVICES_PER_NODE,
        "devices_held_twice": len(twice),
        "claim_writes": len(claim_writes),
        "claim_writes_ok": sum(1 for w in claim_writes if w.ok),
        "claim_writes_409": sum(1 for w in claim_writes if w.code == 409),
        # The server's 504 for a request whose client was killed before the answer (it may have been applied).
        "claim_writes_cut_by_a_kill": sum(1 for w in claim_writes if w.code == 504),
        "bindings_cut_by_a_kill": sum(1 for w in mine if w.kind == "binding" and w.code == 504),
        "claim_status_writes_ok": sum(allocations.values()),
        "claims_allocated_twice": len(allocated_twice),
        "claims_written_by_one_incarnation_bound_by_the_next": len(handed_over),
        **summary(writes, namespace, scheduler.users),
        "writes_without_lease": len(unleased),
        "writes_after_losing_lease": len(writes_after_losing(writes, terms)),
        "seconds": round(seconds, 1),
    }
    (LOGS / "dra-kills.json").write_text(json.dumps(report, indent=1))
