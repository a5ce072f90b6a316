"""Preemption on the real control plane: run evicts the victims kube-scheduler v1.35.4 would evict.

Four nodes of 2 cpu in two zones, each full with two 1-cpu pods of a low PriorityClass: on a1 and
b1 they belong to ReplicaSets covered by a PodDisruptionBudget with ``maxUnavailable: 0`` (the
controller-manager's disruption controller fills its status: no disruption allowed); on a2 and b2
they are bare pods whose ``status.startTime`` the test sets (b2's the latest). Then a Deployment of
two 1-cpu replicas of a high PriorityClass, spread over the zones (maxSkew 1), opts in.

Upstream's choice, worked out: every node needs one victim; a1 and b1 would violate the PDB, so
a2 and b2 are the candidates; on each, the reprieve keeps the earlier-started pod, so the victim is
the later one; between the two nodes every criterion ties but the last, the latest start among the
victims: b2. The second replica may not join zone-b (skew), so it preempts on a2. So: victims
``a2-late`` and ``b2-late``, the replicas nominated to and bound on b2 and a2.

Victims have a 30 s grace period: their deletion leaves them Terminating until kwok, the nodes'
kubelet, ends them about a second later. What the scheduler attempted comes from kube-apiserver's
audit log (``e2e/ledger.py``).
The same scenario runs under kube-scheduler v1.35.4 on nodes of its own, with the same result.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from e2e.conftest import LOGS, SchedulerProcess, session_counts
from e2e.kube_helpers import ZONE, create_namespace, create_object, disruption_budget, events_for, pod_body, wait_for
from e2e.ledger import Ledger, Write, binding_attempts, rebinds_by_one_process
from scheduler.config import upstream_config

UPSTREAM = "preempt-upstream"
START = "2026-01-01T00:00:{:02d}Z"


@dataclass
class Observed:
    """What a watch on the namespace saw: every nominatedNodeName and nodeName per pod, and each
    victim as it was when its deletion started (its conditions)."""

    nominated: dict[str, list[str]] = field(default_factory=lambda: collections.defaultdict(list))
    bound: dict[str, list[str]] = field(default_factory=lambda: collections.defaultdict(list))
    terminating: dict[str, Any] = field(default_factory=dict)


def _observer(core: client.CoreV1Api, namespace: str, stop: threading.Event, seen: Observed) -> None:
    while not stop.is_set():
        w = watch.Watch()
        try:
            for event in w.stream(core.list_namespaced_pod, namespace, timeout_seconds=30):
                pod = event["object"]
                name = pod.metadata.name
                nominated = pod.status.nominated_node_name
                if nominated and (not seen.nominated[name] or seen.nominated[name][-1] != nominated):
                    seen.nominated[name].append(nominated)
                if pod.spec.node_name and (not seen.bound[name] or seen.bound[name][-1] != pod.spec.node_name):
                    seen.bound[name].append(pod.spec.node_name)
                if pod.metadata.deletion_timestamp and name not in seen.terminating:
                    seen.terminating[name] = pod
                if stop.is_set():
                    w.stop()
        except Exception:  # the stream ended: watch again
            stop.wait(0.2)


def _started_at(core: client.CoreV1Api, namespace: str, body: dict[str, Any], second: int) -> None:
    """Create a pod bound by ``nodeName`` and, once kwok runs it, set its ``status.startTime`` (what
    preemption orders victims by): written before, kwok's first status write could replace it."""
    name = body["metadata"]["name"]
    core.create_namespaced_pod(namespace, body)
    wait_for(lambda: core.read_namespaced_pod(name, namespace).status.phase == "Running", 30, f"{name} Running")
    core.patch_namespaced_pod_status(name, namespace, {"status": {"startTime": START.format(second)}})


@dataclass
class Outcome:
    victims: list[str]  # names relative to the node prefix
    nominated: dict[str, str]  # replica -> node (short name)
    bound: dict[str, str]
    deletes: collections.Counter[str]  # what the scheduler's user(s) tried to delete
    bindings: dict[str, collections.Counter[int]]
    seen: Observed
    preempted: dict[str, list[dict[str, Any]]]  # victim -> its Preempted events


@dataclass
class Arena:
    """A namespace of its own, a low and a high PriorityClass, and a watch recording what happens."""

    tag: str
    namespace: str
    low: str
    high: str
    seen: Observed


@contextlib.contextmanager
def _arena(api: client.ApiClient, core: client.CoreV1Api, prefix: str) -> Iterator[Arena]:
    tag = uuid.uuid4().hex[:5]
    namespace = f"{prefix}-{tag}"
    create_namespace(core, namespace)
    scheduling = client.SchedulingV1Api(api)
    low, high = f"low-{tag}", f"high-{tag}"
    for name, value in ((low, 100), (high, 1000)):
        scheduling.create_priority_class({"metadata": {"name": name}, "value": value})
    stop = threading.Event()
    seen = Observed()
    threading.Thread(target=_observer, args=(core, namespace, stop, seen), daemon=True).start()
    try:
        yield Arena(tag, namespace, low, high, seen)
    finally:
        stop.set()
        core.delete_namespace(namespace)
        for name in (low, high):
            scheduling.delete_priority_class(name)


def _scenario(
    api: client.ApiClient,
    core: client.CoreV1Api,
    nodes: Callable[..., str],
    scheduler_name: str,
    writers: Callable[[], set[str]],
    ledger: Ledger,
) -> Outcome:
    with _arena(api, core, "preempt") as arena:
        tag, namespace, low, high, seen = arena.tag, arena.namespace, arena.low, arena.high, arena.seen
        short = {nodes(n, labels={ZONE: f"{tag}-{n[0]}", "run": tag}, cpu="2"): n for n in ("a1", "a2", "b1", "b2")}
        full = {v: k for k, v in short.items()}
        # a1, b1: two pods each of a ReplicaSet, covered by the PDB.
        for node in ("a1", "b1"):
            template = pod_body("x", {"app": "protected", "rs": node}, priorityClassName=low, nodeName=full[node])
            template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
            create_object(
                api,
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": f"protected-{node}", "namespace": namespace},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"rs": node}},
                        "template": {"metadata": template["metadata"], "spec": template["spec"]},
                    },
                },
            )
        create_object(api, disruption_budget("protected", namespace, "protected", maxUnavailable=0))
        # a2, b2: bare pods, started at known times (b2's later than a2's), grace 30 s (the default).
        for node, (early, late) in (("a2", (10, 20)), ("b2", (30, 40))):
            for which, second in (("early", early), ("late", late)):
                body = pod_body(
                    f"{node}-{which}",
                    {"app": "batch"},
                    priorityClassName=low,
                    nodeName=full[node],
                )
                body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
                _started_at(core, namespace, body, second)

        def pdb_settled() -> bool:
            pdb = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget("protected", namespace)
            status = pdb.status
            return bool(status and status.observed_generation == pdb.metadata.generation and status.expected_pods == 4)

        wait_for(pdb_settled, 60, "the disruption controller's PDB status")
        wait_for(lambda: len([p for p in core.list_namespaced_pod(namespace).items]) == 8, 60, "8 low pods")
        mark = ledger.mark()

        labels = {"app": "web"}
        web = pod_body("web", labels, scheduler=scheduler_name, priorityClassName=high, nodeSelector={"run": tag})
        web["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        web["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels},
            }
        ]
        create_object(
            api,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": web["spec"]},
                },
            },
        )

        def replicas_bound() -> list[Any]:
            pods = [p for p in core.list_namespaced_pod(namespace, label_selector="app=web").items]
            return pods if len(pods) == 2 and all(p.spec.node_name for p in pods) else []

        replicas = wait_for(replicas_bound, 120, "both web replicas bound")
        victims = sorted(seen.terminating)
        writes = [w for w in ledger.writes(mark) if w.namespace == namespace and w.user in writers()]
        deletes = collections.Counter(w.name for w in writes if w.kind == "delete")
        bindings = binding_attempts(writes, namespace)
        preempted = wait_for(
            lambda: (
                {v: [e for e in events_for(core, namespace, v) if e.get("reason") == "Preempted"] for v in victims}
                if all(any(e.get("reason") == "Preempted" for e in events_for(core, namespace, v)) for v in victims)
                else None
            ),
            30,
            "the Preempted events",
        )
        return Outcome(
            victims=victims,
            nominated={p.metadata.name: short[seen.nominated[p.metadata.name][-1]] for p in replicas},
            bound={p.metadata.name: short[p.spec.node_name] for p in replicas},
            deletes=deletes,
            bindings=bindings,
            seen=seen,
            preempted=preempted,
        )


def _check(outcome: Outcome) -> None:
    # The victims upstream chooses (PDB pods last: none of them), each deleted exactly once.
    assert outcome.victims == ["a2-late", "b2-late"], outcome.victims
    assert outcome.deletes == collections.Counter({"a2-late": 1, "b2-late": 1}), outcome.deletes
    # Each replica was nominated once, to the node it is bound to; the nodes are b2 and a2.
    for name, node in outcome.bound.items():
        assert outcome.seen.nominated[name] and outcome.nominated[name] == node, (name, outcome.seen.nominated)
        assert len(outcome.seen.bound[name]) == 1
    assert sorted(outcome.bound.values()) == ["a2", "b2"]
    # No pod bound twice: one Binding each, answered 201.
    assert {name: dict(codes) for name, codes in outcome.bindings.items()} == {n: {201: 1} for n in outcome.bound}


def test_run_preempts_the_victims_upstream_would_and_binds_on_the_nominated_nodes(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    outcome = _scenario(api, core, nodes, "spread-scheduler", lambda: set(scheduler.users), ledger)
    _check(outcome)
    # Each victim carried upstream's condition when its deletion started.
    for name in outcome.victims:
        conditions = {c.type: c for c in outcome.seen.terminating[name].status.conditions or []}
        target = conditions["DisruptionTarget"]
        assert (target.status, target.reason, target.message) == (
            "True",
            "PreemptionByScheduler",
            "spread-scheduler: preempting to accommodate a higher priority pod",
        )
        (event,) = outcome.preempted[name]
        assert (event["type"], event["action"], event["related"]["kind"]) == ("Normal", "Preempting", "Pod")
        preemptor = event["related"]["name"]
        node = next(node for pod, node in outcome.bound.items() if pod == preemptor)
        # Node names carry the test's prefix ("<prefix>-b2").
        assert event["note"].startswith(f"Preempted by pod {event['related']['uid']} on node ")
        assert event["note"].endswith(f"-{node}")


def test_kube_scheduler_preempts_the_same_victims(
    api: client.ApiClient,
    core: client.CoreV1Api,
    nodes: Callable[..., str],
    ledger: Ledger,
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    """The same scenario under kube-scheduler v1.35.4 (our default profile spelled out for it)."""
    (profile,) = upstream_config()["profiles"]
    kube_scheduler({**profile, "schedulerName": UPSTREAM})
    # kube-scheduler logs in as the admin, as the test does: its deletes are not told apart.
    outcome = _scenario(api, core, nodes, UPSTREAM, set, ledger)
    assert outcome.victims == ["a2-late", "b2-late"], outcome.victims
    assert sorted(outcome.bound.values()) == ["a2", "b2"]
    for name, node in outcome.bound.items():
        assert outcome.nominated[name] == node, (name, outcome.seen.nominated)


KILL_ROUNDS = int(os.environ.get("SPREAD_E2E_PREEMPT_KILLS", "6"))


def test_sigkill_between_the_victims_deletion_and_the_binding(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    nodes: Callable[..., str],
    ledger: Ledger,
) -> None:
    """Each round: a 3-cpu node with three 1-cpu low-priority pods (known start times) and a 2-cpu
    high-priority pod for it. As soon as the first victim is terminating (even rounds), or 0-50 ms
    after the preemptor is created (odd rounds), the scheduler is SIGKILLed and started again. The
    preemptor still lands on its node, the two later-started pods are the only ones deleted, each
    once (a deletion the kill cut short is sent again by the next incarnation), and nothing is bound
    twice."""
    mark = ledger.mark()
    kills = 0
    rng = random.Random(19)
    with _arena(api, core, "kills") as arena:
        tag, namespace, low, high, seen = arena.tag, arena.namespace, arena.low, arena.high, arena.seen
        for round_ in range(KILL_ROUNDS):
            node = nodes(f"k{round_}", labels={"round": f"{tag}-{round_}"}, cpu="3")
            for i in range(3):
                body = pod_body(
                    f"r{round_}-low-{i}",
                    {"app": "batch"},
                    priorityClassName=low,
                    nodeName=node,
                )
                body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
                _started_at(core, namespace, body, 10 + i)
            preemptor = pod_body(
                f"r{round_}-web", {"app": "web"}, priorityClassName=high, nodeSelector={"round": f"{tag}-{round_}"}
            )
            preemptor["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
            core.create_namespaced_pod(namespace, preemptor)
            if round_ % 2:
                # Somewhere in the few milliseconds of the decision and the victims' writes: before
                # them, between them, or after. Which one each round hit is in the audit log.
                time.sleep(rng.uniform(0.0, 0.05))
            else:
                wait_for(
                    lambda r=round_: any(n.startswith(f"r{r}-low-") for n in seen.terminating),
                    60,
                    "a victim terminating",
                )
            scheduler.stop(signal.SIGKILL)
            kills += 1
            scheduler.start()

        def all_bound() -> bool:
            return all(seen.bound.get(f"r{r}-web") for r in range(KILL_ROUNDS))

        wait_for(all_bound, 120, "every preemptor bound")
        writes = [w for w in ledger.writes(mark) if w.namespace == namespace and w.user in scheduler.users]
    assert kills == KILL_ROUNDS
    # A deletion cut short by the kill (the server answers 504 to a client gone mid-request, whether
    # or not the pod was deleted) may be sent again by the next incarnation; nothing else is sent
    # twice: no process repeats one, and no pod gets a deletion after one that succeeded.
    by_pod: dict[str, list[Write]] = collections.defaultdict(list)
    for w in writes:
        if w.kind == "delete":
            by_pod[w.name].append(w)
    expected = {f"r{r}-low-{i}" for r in range(KILL_ROUNDS) for i in (1, 2)}
    assert set(by_pod) == expected, sorted(set(by_pod) ^ expected)
    for name, sent in by_pod.items():
        story = [str(w) for w in sent]
        assert len({w.user for w in sent}) == len(sent), story
        assert all(not w.ok for w in sent[:-1]), story
        assert name in seen.terminating, story
    for r in range(KILL_ROUNDS):
        assert seen.bound[f"r{r}-web"] and len(seen.bound[f"r{r}-web"]) == 1, seen.bound
        assert f"r{r}-low-0" not in seen.terminating
    again = rebinds_by_one_process(writes, namespace)
    assert not again, "Bindings sent again by the process that had its answer:\n" + "\n".join(map(str, again))
    attempts = binding_attempts(writes, namespace)
    assert all(codes[201] == 1 and set(codes) <= {201, 409} for codes in attempts.values()), attempts
    # Which incarnations wrote what, per round (the kill points actually hit), for the report.
    story = {
        r: [(w.user.rsplit("-", 2)[-2], w.kind, w.name) for w in writes if w.name.startswith(f"r{r}-")]
        for r in range(KILL_ROUNDS)
    }
    counts = session_counts(ledger, mark, namespace, scheduler.users)
    assert counts["writes_without_lease"] == 0, counts
    report = {
        "rounds": KILL_ROUNDS,
        "kills": kills,
        "preemptors_bound": sum(1 for r in range(KILL_ROUNDS) if seen.bound.get(f"r{r}-web")),
        **counts,
        "pods_bound_twice": sum(1 for names in seen.bound.values() if len(names) > 1),
        "rebinds_by_one_process": len(again),
        "victim_deletions": sum(len(sent) for sent in by_pod.values()),
        "victim_deletions_cut_by_a_kill": sum(1 for sent in by_pod.values() for w in sent if not w.ok),
        # Rounds whose writes came from two incarnations: the second finished what the first began.
        "rounds_written_by_two_incarnations": sum(1 for entries in story.values() if len({e[0] for e in entries}) > 1),
        "story": story,
    }
    (LOGS / "preemption-kills.json").write_text(json.dumps(report, indent=1))


# -- a budget that allows exactly one disruption -------------------------------------------------------


@dataclass
class BudgetOutcome:
    first: tuple[str, list[str]]  # the first preemptor's node (short name) and the pods it evicted
    second: tuple[str, list[str]]  # once the budget allows nothing


def _budget_scenario(
    api: client.ApiClient, core: client.CoreV1Api, nodes: Callable[..., str], scheduler: str
) -> BudgetOutcome:
    """n1 holds two bare pods under a PodDisruptionBudget with ``minAvailable: 1`` (both Ready, so the
    disruption controller allows one disruption), started at :50 and :55; n2 two uncovered pods
    started at :10 and :20. All low priority, 1 cpu each on 2-cpu nodes.

    Upstream, worked out: the first 1-cpu preemptor needs one victim on either node, both with no
    budget violation (n1's victim uses the one disruption allowed: the reprieve puts back the pod
    counted as violating, :55, so :50 goes); every other criterion ties but the latest start among
    the victims, :50 against :20: n1. Once the controller has seen that pod go, the budget allows
    nothing: the second preemptor's victim on n1 would violate it, n2's would not: n2's :20 pod."""
    policy = client.PolicyV1Api(api)
    with _arena(api, core, "budget") as arena:
        tag, namespace, low, high, seen = arena.tag, arena.namespace, arena.low, arena.high, arena.seen
        short = {nodes(n, labels={"run": tag}, cpu="2"): n for n in ("n1", "n2")}
        full = {v: k for k, v in short.items()}
        pods = {"protected-50": ("n1", 50), "protected-55": ("n1", 55), "batch-10": ("n2", 10), "batch-20": ("n2", 20)}
        for name, (node, second) in pods.items():
            body = pod_body(name, {"app": name.split("-")[0]}, priorityClassName=low, nodeName=full[node])
            body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
            _started_at(core, namespace, body, second)
        create_object(api, disruption_budget("protected", namespace, "protected", minAvailable=1))

        def allows(count: int) -> bool:
            status = policy.read_namespaced_pod_disruption_budget("protected", namespace).status
            return bool(status and status.disruptions_allowed == count and status.current_healthy == count + 1)

        outcomes: list[tuple[str, list[str]]] = []
        for i, budget in enumerate((1, 0)):
            wait_for(lambda budget=budget: allows(budget), 60, f"the budget allowing {budget} (Ready pods counted)")
            before = set(seen.terminating)
            preemptor = pod_body(f"web-{i}", {"app": "web"}, scheduler=scheduler, priorityClassName=high)
            preemptor["spec"]["nodeSelector"] = {"run": tag}
            preemptor["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
            core.create_namespaced_pod(namespace, preemptor)
            wait_for(lambda i=i: seen.bound.get(f"web-{i}"), 90, f"web-{i} bound")
            outcomes.append((short[seen.bound[f"web-{i}"][-1]], sorted(set(seen.terminating) - before)))
        return BudgetOutcome(first=outcomes[0], second=outcomes[1])


EXPECTED_BUDGET = BudgetOutcome(first=("n1", ["protected-50"]), second=("n2", ["batch-20"]))


def test_run_spends_a_budget_of_one_disruption_as_upstream_does(
    api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProcess, nodes: Callable[..., str]
) -> None:
    assert _budget_scenario(api, core, nodes, "spread-scheduler") == EXPECTED_BUDGET


def test_kube_scheduler_spends_the_same_budget(
    api: client.ApiClient,
    core: client.CoreV1Api,
    nodes: Callable[..., str],
    kube_scheduler: Callable[[dict[str, Any]], subprocess.Popen[bytes]],
) -> None:
    (profile,) = upstream_config()["profiles"]
    kube_scheduler({**profile, "schedulerName": UPSTREAM})
    assert _budget_scenario(api, core, nodes, UPSTREAM) == EXPECTED_BUDGET
