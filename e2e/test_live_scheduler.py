"""The live scheduler against a real kube-apiserver, etcd and kube-controller-manager.

Every wait is on a condition with a timeout; nothing sleeps to synchronise.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    ZONE,
    bound_pods,
    events_for,
    node_of,
    pod_body,
    pods_in,
    scheduled_condition,
    wait_for,
    wait_unschedulable,
    watch_bindings,
    zone_spread,
    zoned_nodes,
)
from tests.helpers import NO_CLAIMS, preemption_not_helpful

SPREAD_REASON = "node(s) didn't match pod topology spread constraints"


def test_deployment_spreads_evenly_over_zones(
    core: client.CoreV1Api,
    api: client.ApiClient,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 2, "zone-b": 2, "zone-c": 2})
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 9,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": pod_body("x", labels, topologySpreadConstraints=[zone_spread(1, labels)])["spec"],
            },
        },
    }
    client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment)
    pods = wait_for(lambda: bound_pods(core, namespace, 9), 60, "9 bound replicas")
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert sorted(per_zone.values()) == [3, 3, 3], per_zone
    for pod in pods:
        cond = scheduled_condition(pod)
        assert cond is not None and cond.status == "True"
        assert not [k for k in (pod.metadata.annotations or {}) if "kopf" in k], pod.metadata.annotations
        assert not pod.metadata.finalizers, "kopf must not add finalizers"
        name = pod.metadata.name
        scheduled = wait_for(  # the event is posted right after the binding: wait for it, do not race it
            lambda n=name: [e for e in events_for(core, namespace, n) if e["reason"] == "Scheduled"], 10, "event"
        )
        assert [e["note"] for e in scheduled] == [
            f"Successfully assigned {namespace}/{pod.metadata.name} to {pod.spec.node_name}"
        ]
    # The log says so in upstream's words (JSON at -v 3, LOG_FLAGS): one bound line per pod, with its node.
    entries = _log_entries(scheduler)
    for pod in pods:
        ref = {"name": pod.metadata.name, "namespace": namespace}
        bound = [e for e in entries if e["msg"] == "Successfully bound pod to node" and e["pod"] == ref]
        assert len(bound) == 1, bound
        assert bound[0]["node"] == pod.spec.node_name and bound[0]["v"] == 2
        assert 1 <= bound[0]["feasibleNodes"] <= bound[0]["evaluatedNodes"] <= 6, bound[0]


def _log_entries(scheduler: SchedulerProcess) -> list[dict[str, Any]]:
    """Every complete line of the scheduler's log, each of which must be one JSON object with
    component-base's keys: kopf's, aiohttp's and the client's lines included, no traceback."""
    text = scheduler.log()
    complete = text[: text.rfind("\n") + 1]
    entries = []
    for line in complete.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
        assert isinstance(entry, dict) and {"ts", "caller", "msg"} <= entry.keys(), line
        entries.append(entry)
    return entries


def _existing(core: client.CoreV1Api, namespace: str, name: str, node: str, labels: dict[str, str]) -> None:
    """A pod already running on ``node`` (bound at creation, as another scheduler would have)."""
    core.create_namespaced_pod(namespace, pod_body(name, labels, scheduler="default-scheduler", nodeName=node))


def test_unmet_spread_waits_then_a_new_zone_binds_it(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 1, "zone-b": 1})
    labels = {"app": "db"}
    for i, node in enumerate(zone_of):
        _existing(core, namespace, f"old-{i}", node, labels)
    spread = zone_spread(1, labels) | {"minDomains": 3}
    core.create_namespaced_pod(namespace, pod_body("new", labels, topologySpreadConstraints=[spread]))

    cond = wait_unschedulable(core, namespace, "new")
    assert cond.reason == "Unschedulable"
    assert cond.message == (
        f"0/2 nodes are available: 2 {SPREAD_REASON}. {NO_CLAIMS}, {preemption_not_helpful(2, no_victims=2)}"
    )
    failed = wait_for(
        lambda: [e for e in events_for(core, namespace, "new") if e["reason"] == "FailedScheduling"], 30, "event"
    )
    assert len(failed) == 1 and SPREAD_REASON in failed[0]["note"] and failed[0]["type"] == "Warning"
    assert node_of(core, namespace, "new") is None
    ref = {"name": "new", "namespace": namespace}
    waiting = [e for e in _log_entries(scheduler) if e.get("pod") == ref]
    assert waiting[-1]["msg"] == "Unable to schedule pod; no fit; waiting" and waiting[-1]["err"] == cond.message

    started = time.monotonic()
    zone_c = nodes("zone-c-0", labels={ZONE: "zone-c"})
    wait_for(lambda: node_of(core, namespace, "new") == zone_c, 5, "bind after the new zone's node appears")
    print(f"\nNode add -> bound: {time.monotonic() - started:.3f}s")


def test_deleting_a_pod_frees_a_domain(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 1, "zone-b": 1})
    labels = {"app": "cache"}
    names = []
    for i, node in enumerate(zone_of):
        _existing(core, namespace, f"old-{i}", node, labels)
        names.append((f"old-{i}", node))
    spread = zone_spread(1, labels) | {"minDomains": 3}
    core.create_namespaced_pod(namespace, pod_body("new", labels, topologySpreadConstraints=[spread]))
    wait_unschedulable(core, namespace, "new")

    victim, freed_node = names[1]
    started = time.monotonic()
    core.delete_namespaced_pod(victim, namespace, grace_period_seconds=0)
    wait_for(lambda: node_of(core, namespace, "new") == freed_node, 5, "bind after a matching pod is deleted")
    print(f"\nPod delete -> bound: {time.monotonic() - started:.3f}s")


def test_taints_selectors_and_affinity_are_honoured(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    plain = nodes("plain", labels={"disk": "hdd"})
    tainted = nodes(
        "gpu", labels={"disk": "ssd", "gpu": "yes"}, taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    )
    ssd = nodes("ssd", labels={"disk": "ssd"})
    cordoned = nodes("cordoned", labels={"disk": "ssd"}, unschedulable=True)

    tolerate = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    gpu_affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]
            }
        }
    }
    prefer_ssd = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                }
            ]
        }
    }
    cases = {
        "gpu-tolerating": (pod_body("gpu-tolerating", tolerations=tolerate, affinity=gpu_affinity), {tainted}),
        "gpu-intolerant": (pod_body("gpu-intolerant", affinity=gpu_affinity), set()),
        "hdd-selector": (pod_body("hdd-selector", nodeSelector={"disk": "hdd"}), {plain}),
        "ssd-preferred": (pod_body("ssd-preferred", affinity=prefer_ssd), {ssd}),
        "anywhere": (pod_body("anywhere"), {plain, ssd}),
    }
    for body, _ in cases.values():
        core.create_namespaced_pod(namespace, body)
    for name, (_, allowed) in cases.items():
        if allowed:
            node = wait_for(lambda n=name: node_of(core, namespace, n), 30, f"{name} bound")
            assert node in allowed, (name, node)
            assert node not in (cordoned,)
        else:
            cond = wait_unschedulable(core, namespace, name)
            assert "node(s) had untolerated taint(s)" in cond.message, cond.message


def test_pods_of_other_schedulers_are_never_touched(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    nodes("n1")
    core.create_namespaced_pod(namespace, pod_body("theirs", scheduler="default-scheduler"))
    core.create_namespaced_pod(namespace, pod_body("ours"))
    wait_for(lambda: node_of(core, namespace, "ours"), 30, "our pod bound")
    theirs = core.read_namespaced_pod("theirs", namespace)
    assert theirs.spec.node_name is None
    assert scheduled_condition(theirs) is None
    assert events_for(core, namespace, "theirs") == []
    assert f"{namespace}/theirs" not in scheduler.log()


def _burst(core: client.CoreV1Api, namespace: str, count: int, labels: dict[str, str]) -> None:
    spread = zone_spread(1, labels)
    for i in range(count):
        core.create_namespaced_pod(namespace, pod_body(f"burst-{i:03d}", labels, topologySpreadConstraints=[spread]))


@pytest.mark.slow
def test_200_pods_bind_once_each_and_spread_holds(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 2, "zone-b": 2, "zone-c": 2})
    labels = {"app": "burst"}
    seen: dict[str, list[str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_bindings, args=(core, namespace, stop, seen), daemon=True)
    watcher.start()
    _burst(core, namespace, 200, labels)
    pods = wait_for(lambda: bound_pods(core, namespace, 200), 120, "200 bound pods")
    wait_for(lambda: sum(1 for h in seen.values() if h) >= 200, 30, "watch saw every binding")
    stop.set()
    assert all(len(history) == 1 for history in seen.values()), {k: v for k, v in seen.items() if len(v) != 1}
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone


@pytest.mark.slow
def test_restart_in_the_middle_of_a_burst_resumes(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 2, "zone-b": 2})
    labels = {"app": "restart"}
    spread = zone_spread(1, labels)
    for i in range(120):
        if i == 60:  # mid-burst: stop once some of the first half is bound, keep creating while it is down
            wait_for(lambda: len([p for p in pods_in(core, namespace) if p.spec.node_name]) >= 20, 60, "20 bound")
            assert scheduler.stop() == 0
        core.create_namespaced_pod(namespace, pod_body(f"burst-{i:03d}", labels, topologySpreadConstraints=[spread]))
    bound_at_stop = len([p for p in pods_in(core, namespace) if p.spec.node_name])
    scheduler.start()
    pods = wait_for(lambda: bound_pods(core, namespace, 120), 120, "all 120 bound after restart")
    per_zone = collections.Counter(zone_of[p.spec.node_name] for p in pods)
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    assert bound_at_stop < 120, "precondition: the scheduler was stopped before the burst was done"


def _metrics(scheduler: SchedulerProcess) -> dict[str, float]:
    return scheduler.metrics()


def test_metrics_and_health_endpoints(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    node_name = nodes("n1")
    core.create_namespaced_pod(namespace, pod_body("counted"))
    wait_for(lambda: node_of(core, namespace, "counted"), 30, "bound")
    metrics = wait_for(
        lambda: (
            (m := _metrics(scheduler)).get(
                'scheduler_schedule_attempts_total{profile="spread-scheduler",result="scheduled"}', 0
            )
            > 0
            and m
        ),
        10,
        "attempts counted",
    )
    # The queue gauge moves with a pod: one that fits nowhere is counted unschedulable, and no longer
    # once a node change lets it bind (other tests' leftovers may be counted too: compare with before).
    unschedulable = 'scheduler_pending_pods{queue="unschedulable"}'
    before = metrics.get(unschedulable, 0)
    core.create_namespaced_pod(namespace, pod_body("stuck", nodeSelector={"metrics-test": "fits"}))
    wait_for(lambda: _metrics(scheduler).get(unschedulable, 0) == before + 1, 20, "the stuck pod counted")
    core.patch_node(node_name, {"metadata": {"labels": {"metrics-test": "fits"}}})
    wait_for(lambda: node_of(core, namespace, "stuck"), 30, "the stuck pod bound after the label")
    wait_for(lambda: _metrics(scheduler).get(unschedulable, 0) == before, 20, "the stuck pod no longer counted")
    assert any(
        k.startswith("scheduler_scheduling_attempt_duration_seconds_count") and v > 0 for k, v in metrics.items()
    )
    assert any(
        k.startswith("scheduler_pod_scheduling_sli_duration_seconds_count") and v > 0 for k, v in metrics.items()
    )
    assert any(k.startswith("scheduler_queue_incoming_pods_total") and v > 0 for k, v in metrics.items())
    assert metrics.get("process_resident_memory_bytes", 0) > 0

    # Plugin durations come from sampled cycles (10 %, as upstream; the sampler's stream is seeded):
    # a few more cycles always include one.
    def plugin_samples() -> float:
        prefix = "scheduler_plugin_execution_duration_seconds_count"
        return sum(v for k, v in _metrics(scheduler).items() if k.startswith(prefix))

    for i in range(20):
        if plugin_samples() > 0:
            break
        core.create_namespaced_pod(namespace, pod_body(f"sampled-{i}"))
        wait_for(lambda i=i: node_of(core, namespace, f"sampled-{i}"), 30, "bound")
    assert plugin_samples() > 0, "20 more cycles and none sampled"
    assert metrics.get('leader_election_master_status{name="spread-scheduler"}') == 1


def test_retries_of_an_unschedulable_pod_post_no_new_event(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    """One FailedScheduling per pod and message, however often it is retried. Upstream records an
    event on every failed attempt and its events broadcaster folds repeats into the first Event's
    ``series`` (written minutes later); we post the first and drop repeats of the same message.
    Either way a watcher sees one Event object; ours also never grows a series. The retries are real:
    deleting a pod with CPU requests from the node is an event NodeResourcesFit's hint requeues the
    pod for, and the attempts metric must count at least three more of them."""
    node = nodes("n1")
    unschedulable = 'scheduler_schedule_attempts_total{profile="spread-scheduler",result="unschedulable"}'
    assert _metrics(scheduler).get('scheduler_pending_pods{queue="unschedulable"}', 0) == 0, "another pod is stuck"
    before = _metrics(scheduler).get(unschedulable, 0)
    resources = {"requests": {"cpu": "100"}}
    huge = pod_body("huge", containers=[{"name": "c", "image": "registry.invalid/pause:3.10", "resources": resources}])
    core.create_namespaced_pod(namespace, huge)
    failed = wait_for(
        lambda: [e for e in events_for(core, namespace, "huge") if e["reason"] == "FailedScheduling"], 30, "event"
    )
    deadline = time.monotonic() + 60
    fillers = 0
    while _metrics(scheduler).get(unschedulable, 0) - before < 4:  # the first attempt and three retries
        assert time.monotonic() < deadline, f"retries: {_metrics(scheduler).get(unschedulable, 0) - before - 1}"
        small = {"requests": {"cpu": "100m"}}
        name = f"filler-{fillers}"
        filler = pod_body(
            name, nodeName=node, containers=[{"name": "c", "image": "registry.invalid/p", "resources": small}]
        )
        core.create_namespaced_pod(namespace, filler)
        time.sleep(0.3)  # the cache counts it before it goes
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        fillers += 1
        time.sleep(1.0)
    time.sleep(1.5)  # anything posted by the last retry has arrived by now
    events = [e for e in events_for(core, namespace, "huge") if e["reason"] == "FailedScheduling"]
    assert len(events) == 1, events
    assert events[0]["note"] == failed[0]["note"] and not events[0].get("series"), events[0]
    assert node_of(core, namespace, "huge") is None


def test_explain_replays_a_pending_pod_on_the_live_cluster(
    core: client.CoreV1Api, kubeconfig: str, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    zone_of = zoned_nodes(nodes, {"zone-a": 1, "zone-b": 1})
    labels = {"app": "explained"}
    for i, node in enumerate(zone_of):
        _existing(core, namespace, f"old-{i}", node, labels)
    core.create_namespaced_pod(
        namespace, pod_body("stuck", labels, topologySpreadConstraints=[zone_spread(1, labels) | {"minDomains": 3}])
    )
    cond = wait_unschedulable(core, namespace, "stuck")
    exe = str(Path(sys.executable).parent / "spread-scheduler")
    out = subprocess.run(
        [exe, "explain", f"{namespace}/stuck", "--kubeconfig", kubeconfig, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (result,) = json.loads(out.stdout)["results"]
    assert result["node"] is None and result["message"] == cond.message
    for node in zone_of:
        assert result["nodes"][node]["filter"] == {
            "plugin": "PodTopologySpread",
            "reason": SPREAD_REASON,
            "code": "Unschedulable",
        }
    table = subprocess.run(
        [exe, "explain", "stuck", "-n", namespace, "--kubeconfig", kubeconfig],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "UNSCHEDULABLE" in table and all(node in table for node in zone_of)
    missing = subprocess.run(
        [exe, "explain", f"{namespace}/nope", "--kubeconfig", kubeconfig],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "not found" in missing.stderr
