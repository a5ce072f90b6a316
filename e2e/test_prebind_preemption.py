"""A preemption victim still in PreBind, on the real control plane (issue #47, upstream #135502).

One node of 1 cpu. ``db`` (low priority, 1 cpu) has a WaitForFirstConsumer claim whose class names a
provisioner nobody runs: VolumeBinding's PreBind writes the claim's selected node, then waits for a
PV that never comes (``bindTimeoutSeconds``, 600 s), so ``db`` stays in PreBind as long as the test
needs. Then ``web`` (high priority, 1 cpu) needs the node.

From 1.36 the scheduler does not delete ``db``: it cancels ``db``'s binding cycle, ``db`` goes back to
the queue (Pending, not terminating), its ``Preempted`` Event says "(in kube-scheduler memory).",
and ``web`` is bound to the node. At 1.35 ``db`` is deleted. Which one the control plane's minor
asks for is read from its /version; kube-scheduler of that release runs the same scenario.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import events_for, pod_body, server_minor, wait_for
from e2e.ledger import Ledger
from e2e.test_preemption import _arena
from scheduler.config import upstream_config

pytestmark = pytest.mark.every_release  # what differs by version: make e2e runs it on 1.36 and 1.37 too

UPSTREAM = "prebind-upstream"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
CANCELLED = 'running PreBind plugin "VolumeBinding": preempted by DefaultPreemption'


@dataclass
class Outcome:
    node: str
    web_node: str
    db: Any | None  # the victim as it is once web is bound (None: deleted)
    deletes: collections.Counter[str]  # what the scheduler's user(s) tried to delete
    preempted: list[dict[str, Any]]  # db's Preempted events
    failed: list[str]  # db's FailedScheduling messages


def _scenario(
    api: client.ApiClient,
    core: client.CoreV1Api,
    nodes: Callable[..., str],
    scheduler_name: str,
    writers: Callable[[], set[str]],
    ledger: Ledger,
) -> Outcome:
    with _arena(api, core, "prebind") as arena:
        namespace = arena.namespace
        node = nodes("p1", labels={"run": arena.tag}, cpu="1")
        storage = client.StorageV1Api(api)
        storage_class = f"never-{arena.tag}"
        storage.create_storage_class(
            {
                "metadata": {"name": storage_class},
                "provisioner": "e2e.example.com/never",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
        try:
            core.create_namespaced_persistent_volume_claim(
                namespace,
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": storage_class,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                },
            )

            def one_cpu(name: str, priority_class: str, **spec: Any) -> None:
                """A pod of 1 cpu, the whole node, on the test's node."""
                body = pod_body(name, {"app": name}, scheduler=scheduler_name, priorityClassName=priority_class, **spec)
                body["spec"]["nodeSelector"] = {"run": arena.tag}
                body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
                core.create_namespaced_pod(namespace, body)

            one_cpu("db", arena.low, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])

            def selected() -> bool:
                claim = core.read_namespaced_persistent_volume_claim("data", namespace)
                return (claim.metadata.annotations or {}).get(SELECTED_NODE) == node

            # PreBind has written the claim's selected node: it now waits for a PV that never comes.
            wait_for(selected, 60, "db's PreBind to select the node for its claim")
            mark = ledger.mark()
            one_cpu("web", arena.high)
            bound = wait_for(lambda: core.read_namespaced_pod("web", namespace).spec.node_name, 60, "web bound")

            def victim() -> Any | None:
                pods = core.list_namespaced_pod(namespace, field_selector="metadata.name=db").items
                return pods[0] if pods else None

            # From 1.36 the victim's binding cycle fails too, and its FailedScheduling event is posted
            # on its own path, after the Preempted one or before: both are waited for.
            requeued = server_minor(api) >= 36

            def reported() -> tuple[list[dict[str, Any]], list[str]] | None:
                events = events_for(core, namespace, "db")
                preempted = [e for e in events if e.get("reason") == "Preempted"]
                failed = [e.get("note", "") for e in events if e.get("reason") == "FailedScheduling"]
                done = preempted and (not requeued or CANCELLED in failed)
                return (preempted, failed) if done else None

            what = "db's Preempted event" + (" and its cancelled PreBind's FailedScheduling" if requeued else "")
            preempted, failed = wait_for(reported, 30, what)
            writes = [w for w in ledger.writes(mark) if w.namespace == namespace and w.user in writers()]
            return Outcome(
                node=node,
                web_node=bound,
                db=victim(),
                deletes=collections.Counter(w.name for w in writes if w.kind == "delete"),
                preempted=preempted,
                failed=failed,
            )
        finally:
            # A PreBind still waiting (db's at 1.35, deleted but still bound for its claim) fails as soon
            # as the claim is gone; until then it would hold the scheduler's stop (which waits for the
            # binding cycles in flight) up to bindTimeoutSeconds.
            with contextlib.suppress(client.ApiException):
                core.delete_namespaced_pod("db", namespace, grace_period_seconds=0)
            with contextlib.suppress(client.ApiException):
                core.delete_namespaced_persistent_volume_claim("data", namespace)
            wait_for(lambda: not core.list_namespaced_persistent_volume_claim(namespace).items, 60, "the claim gone")
            storage.delete_storage_class(storage_class)


def _check(outcome: Outcome, minor: int) -> None:
    assert outcome.web_node == outcome.node
    (event,) = outcome.preempted
    in_memory = event["note"].endswith(" (in kube-scheduler memory).")
    if minor >= 36:
        # Requeued, not deleted: still there, Pending, not terminating, no DisruptionTarget.
        assert outcome.db is not None and outcome.db.metadata.deletion_timestamp is None
        assert not outcome.db.spec.node_name
        assert "DisruptionTarget" not in {c.type for c in outcome.db.status.conditions or []}
        assert in_memory, event["note"]
        assert CANCELLED in outcome.failed, outcome.failed
    else:
        assert outcome.db is None or outcome.db.metadata.deletion_timestamp is not None
        assert not in_memory, event["note"]


def test_run_requeues_a_victim_in_pre_bind_from_1_36(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    minor = server_minor(api)
    outcome = _scenario(api, core, nodes, "spread-scheduler", lambda: set(scheduler.users), ledger)
    _check(outcome, minor)
    # What we attempted (the audit log): no deletion of db from 1.36, one before.
    assert outcome.deletes == (collections.Counter() if minor >= 36 else collections.Counter({"db": 1}))


def test_kube_scheduler_does_the_same(
    api: client.ApiClient,
    core: client.CoreV1Api,
    nodes: Callable[..., str],
    ledger: Ledger,
    kube_scheduler: Callable[[dict[str, Any]], Any],
) -> None:
    """The same scenario under kube-scheduler of the control plane's release."""
    (profile,) = upstream_config()["profiles"]
    kube_scheduler({**profile, "schedulerName": UPSTREAM})
    _check(_scenario(api, core, nodes, UPSTREAM, set, ledger), server_minor(api))
