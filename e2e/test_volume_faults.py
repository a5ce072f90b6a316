"""Issue #18, faults: the scheduler is killed with SIGKILL while VolumeBinding's PreBind writes are in
flight, again and again, in a burst of StatefulSet pods whose claims wait for their first consumer.

Two StatefulSets spread over zones, on the real PV controller: ``static`` (a class without a
provisioner, local PVs on every node: PreBind writes the PV's claimRef) and ``dynamic`` (a class whose
stand-in provisioner in the test makes a PV on the selected node: PreBind writes the claim's
``volume.kubernetes.io/selected-node``). The pods come in rounds, a kill in each once the incarnation
started after the last kill has taken the Lease and sent its first write for the round's claims, so
it lands among PreBind's writes and waits.
The spread is soft: a killed incarnation may have bound a claim to a PV whose zone its successor
fills first with other pods, and then a hard spread would keep that pod Pending for good
(kube-scheduler alike: PreBind's writes stay when the process dies before the Binding, and they fix
the pod's node). Then:

- every pod ends bound, and its nodeName was set once (the watch);
- no PV is bound to two claims, and every claim is bound to a PV its pod's node can use (the PV's
  hostname is the node's), its selected node (if any) being that node;
- from the server's audit log: every incarnation killed had sent PV or claim updates, every one of
  them was sent while that incarnation held the Lease, and no process sent a Binding again after its
  answer.

SPREAD_E2E_KILLS sets the number of kills (CI: 3; 20 in ``make reliability``); SPREAD_E2E_VOLUME_PODS
the pods (CI: 40; the issue's figure, 100, in ``make reliability``). At 5 and 60 this was the slowest
test of ``make test`` (62 s), which has to stay under 20 minutes.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import threading
from collections.abc import Callable

from kubernetes import client

from e2e.conftest import LEASE_DURATION, LEASE_NAME, LEASE_NAMESPACE, LOGS, SchedulerProcess
from e2e.kube_helpers import pods_in, stateful_set, wait_for, watch_bindings, zone_spread, zoned_nodes
from e2e.ledger import (
    Ledger,
    lease_terms,
    rebinds_by_one_process,
    summary,
    writes_after_losing,
    writes_without_lease,
)
from e2e.test_volumes import _local_pv, _provision, _pv_node

KILLS = int(os.environ.get("SPREAD_E2E_KILLS", "3"))
PODS = int(os.environ.get("SPREAD_E2E_VOLUME_PODS", "40"))
SETS = ("static", "dynamic")


def _written(core: client.CoreV1Api, namespace: str, local: str) -> int:
    """PreBind's writes so far: claims given a selected node, and static PVs of ``local`` given a
    claimRef (the stand-in provisioner's PVs, which name their claim too, are not ours)."""
    claims = core.list_namespaced_persistent_volume_claim(namespace).items
    selected = sum(1 for c in claims if "volume.kubernetes.io/selected-node" in (c.metadata.annotations or {}))
    referenced = sum(
        1
        for pv in core.list_persistent_volume().items
        if pv.spec.storage_class_name == local and pv.spec.claim_ref is not None
    )
    return selected + referenced


def test_sigkill_during_prebind_binds_each_claim_once_where_its_pod_is(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    mark = ledger.mark()
    zone_of = zoned_nodes(nodes, {zone: 2 for zone in ("zone-a", "zone-b", "zone-c")})
    storage = client.StorageV1Api(api)
    local, dynamic = f"{namespace}-local", f"{namespace}-dynamic"
    for name, provisioner in ((local, "kubernetes.io/no-provisioner"), (dynamic, "e2e.example.com/stand-in")):
        body = {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}
        storage.create_storage_class(body)
    per_set = PODS // 2
    # Enough local PVs on every node for the spread: a third of the set per zone, plus one spare each.
    per_node = per_set // 6 + 2
    for node in zone_of:
        for i in range(per_node):
            core.create_persistent_volume(_local_pv(f"{namespace}-{node}-{i}", local, node))
    seen: dict[str, list[str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_bindings, args=(core, namespace, stop, seen), daemon=True)
    watcher.start()
    provisioner = threading.Thread(target=_provision, args=(core, namespace, dynamic, stop), daemon=True)
    provisioner.start()
    apps = client.AppsV1Api(api)
    try:
        replicas = dict.fromkeys(SETS, 0)
        for name, storage_class in (("static", local), ("dynamic", dynamic)):
            spread = zone_spread(1, {"app": name}, when="ScheduleAnyway")
            apps.create_namespaced_stateful_set(namespace, stateful_set(name, 0, storage_class, spread))

        def grow(pods: int) -> None:
            """``pods`` more replicas, one set after the other."""
            for i in range(pods):
                name = SETS[(sum(replicas.values()) + i) % 2]
                replicas[name] = min(per_set, replicas[name] + 1)
            for name, count in replicas.items():
                apps.patch_namespaced_stateful_set_scale(name, namespace, {"spec": {"replicas": count}})

        # The burst comes in rounds, a kill in each: the incarnation started after the last kill takes
        # the Lease, meets the round's new pods and writes for their claims; it is killed at its first
        # write, with the round's other writes and PreBind's waits under way.
        kills = 0
        for _ in range(KILLS):
            base = _written(core, namespace, local)
            grow(PODS // (KILLS + 1))
            wait_for(lambda b=base: _written(core, namespace, local) > b, 120, f"a claim written after {base}")
            scheduler.stop(signal.SIGKILL)
            kills += 1
            scheduler.start()
        grow(PODS)

        def all_bound() -> list[client.V1Pod]:
            pods = [p for p in pods_in(core, namespace) if p.spec.node_name]
            return pods if len(pods) == PODS else []

        pods = wait_for(all_bound, 240, f"all {PODS} pods bound after {kills} kills")
        wait_for(lambda: sum(1 for h in seen.values() if h) >= PODS, 30, "the watch saw every binding")
    finally:
        stop.set()
    rebound = {name: history for name, history in seen.items() if len(history) != 1}
    assert not rebound, f"pods whose nodeName changed: {rebound}"
    per_zone = {
        app: collections.Counter(zone_of[p.spec.node_name] for p in pods if p.metadata.labels["app"] == app)
        for app in SETS
    }

    # Claims and PVs: each claim bound to a PV of its own, on its pod's node.
    claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(namespace).items}
    pvs = {pv.metadata.name: pv for pv in core.list_persistent_volume().items}
    node_of = {p.metadata.name: p.spec.node_name for p in pods}
    wait_for(
        lambda: all(
            c.status.phase == "Bound"
            for c in core.list_namespaced_persistent_volume_claim(namespace).items
            if c.metadata.name.removeprefix("data-") in node_of
        ),
        60,
        "every claim bound by the PV controller",
    )
    claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(namespace).items}
    pvs = {pv.metadata.name: pv for pv in core.list_persistent_volume().items}
    volume_of = {name: c.spec.volume_name for name, c in claims.items()}
    shared = {pv: n for pv, n in collections.Counter(volume_of.values()).items() if n > 1}
    assert not shared, f"PVs bound to more than one claim: {shared}"
    misplaced = {}
    for pod, node in node_of.items():
        claim = claims[f"data-{pod}"]
        selected = (claim.metadata.annotations or {}).get("volume.kubernetes.io/selected-node")
        pv = pvs[claim.spec.volume_name]
        ref = pv.spec.claim_ref
        if (
            (selected is not None and selected != node)
            or _pv_node(pv) != node
            or (ref.namespace, ref.name) != (namespace, claim.metadata.name)
        ):
            misplaced[pod] = {"node": node, "selected": selected, "pv": pv.metadata.name, "pv_host": _pv_node(pv)}
    assert not misplaced, f"claims not where their pods are: {misplaced}"

    # What our processes sent, from the server's record.
    writes = ledger.writes(mark)
    ours = [w for w in writes if w.user in scheduler.users]
    volume_writes = [w for w in ours if w.kind == "volume"]
    writers = {w.user for w in volume_writes}
    # Every incarnation killed had sent PreBind writes: the kills fell among them.
    assert len(writers) >= kills, f"{len(writers)} incarnations wrote PVs or claims, {kills} were killed"
    terms = lease_terms(ledger.writes(), LEASE_NAMESPACE, LEASE_NAME, LEASE_DURATION)
    unleased = writes_without_lease(writes, terms, scheduler.users)
    assert not unleased, "writes by an incarnation that did not hold the Lease:\n" + "\n".join(map(str, unleased[:20]))
    again = rebinds_by_one_process(ours, namespace)
    assert not again, "Bindings sent again by the process that had its answer:\n" + "\n".join(map(str, again[:20]))
    report = {
        "kills": kills,
        "pods": PODS,
        "lost": PODS - len(pods),
        "pods_bound_twice": len(rebound),
        **summary(writes, namespace, scheduler.users),
        "lease_terms": len(terms),
        "writes_after_losing_lease": len(writes_after_losing(writes, terms)),
        "pv_updates": sum(1 for w in volume_writes if w.resource == "persistentvolumes"),
        "claim_updates": sum(1 for w in volume_writes if w.resource == "persistentvolumeclaims"),
        "incarnations_with_volume_writes": len(writers),
        "volume_update_conflicts_409": sum(1 for w in volume_writes if w.code == 409),
        "pvs_bound_to_two_claims": len(shared),
        "claims_not_on_their_pods_node": len(misplaced),
        "pods_per_zone": {app: dict(sorted(counts.items())) for app, counts in per_zone.items()},
        "writes_without_lease": len(unleased),
    }
    (LOGS / "volume-kills.json").write_text(json.dumps(report, indent=1))
    apps.delete_collection_namespaced_stateful_set(namespace)
    for pv in core.list_persistent_volume().items:
        if pv.metadata.name.startswith(namespace):
            core.delete_persistent_volume(pv.metadata.name)
    for name in (local, dynamic):
        storage.delete_storage_class(name)
