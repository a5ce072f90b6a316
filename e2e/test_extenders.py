"""e2e: scheduler extenders over HTTP, against the local control plane.

Our own extender server (``tests/extender_server.py``) runs in this process on 127.0.0.1; the
scheduler runs as a real ``spread-scheduler run`` process with an ``extenders:`` configuration and a
profile name of its own (so the session's scheduler, if running, never takes these pods).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import node_of, pod_body, scheduled_condition, wait_for, without_preemption
from scheduler.config import upstream_config
from tests.extender_server import ExtenderServer
from tests.helpers import NO_CLAIMS

pytestmark = pytest.mark.e2e

PROFILE = "extender-scheduler"


@pytest.fixture
def extender() -> Iterator[Callable[..., ExtenderServer]]:
    """Start extender servers in threads; all are stopped after the test."""
    started: list[tuple[ExtenderServer, threading.Thread]] = []

    def start(**behaviour: Any) -> ExtenderServer:
        server = ExtenderServer(**behaviour)
        started.append((server, server.start_in_thread()))
        return server

    yield start
    for server, thread in started:
        server.stop_thread(thread)


def run_scheduler(
    kubeconfig: str, tmp_path: Path, extenders: list[dict[str, Any]], name: str, scheduler_name: str = PROFILE
) -> SchedulerProcess:
    """Our scheduler with our default profile (as ``upstream_config`` spells it) under ``scheduler_name``."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{**upstream_config()["profiles"][0], "schedulerName": scheduler_name}],
                "extenders": extenders,
            }
        )
    )
    proc = SchedulerProcess(kubeconfig, str(config), name=name)
    proc.start()
    return proc


def bound_nodes(core: client.CoreV1Api, namespace: str, count: int) -> list[str]:
    pods = core.list_namespaced_pod(namespace).items
    placed = [p.spec.node_name for p in pods if p.spec.node_name]
    return placed if len(placed) == count else []


def test_extender_filters_one_node_and_prefers_another_while_an_ignorable_one_times_out(
    kubeconfig: str,
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    extender: Callable[..., ExtenderServer],
    tmp_path: Path,
) -> None:
    """a is filtered out, c is preferred (score 10 x weight 5); an ignorable extender that never answers
    in time (1 s timeout, 4 s delay) is skipped, so every pod still binds, each to c."""
    a, _b, c = nodes("a"), nodes("b"), nodes("c")
    good = extender(reject={a: f"{a} is reserved for batch"}, scores={c: 10})
    slow = extender(delay=4)
    proc = run_scheduler(
        kubeconfig,
        tmp_path,
        [
            {"urlPrefix": slow.url, "filterVerb": "filter", "ignorable": True, "httpTimeout": "1s"},
            {"urlPrefix": good.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5},
        ],
        "extender-scheduler",
    )
    try:
        for i in range(3):
            core.create_namespaced_pod(namespace, pod_body(f"web-{i}", {"app": "web"}, scheduler=PROFILE))
        placed = wait_for(lambda: bound_nodes(core, namespace, 3), 60, "three pods bound")
        assert placed == [c, c, c]
        filtered = [body for verb, body in good.requests if verb == "filter"]
        assert filtered and all(len(body["Nodes"]["items"]) == 3 for body in filtered)
        assert any(verb == "filter" for verb, _ in slow.requests)  # it was asked, and its timeout skipped
    finally:
        assert proc.stop() == 0


def test_a_failing_extender_keeps_the_pod_pending_with_its_message(
    kubeconfig: str,
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    extender: Callable[..., ExtenderServer],
    tmp_path: Path,
) -> None:
    """A non-ignorable extender answering 500: SchedulerError with upstream's message; never a crash."""
    nodes("a")
    broken = extender(status=500)
    proc = run_scheduler(kubeconfig, tmp_path, [{"urlPrefix": broken.url, "filterVerb": "filter"}], "broken-ext")
    try:
        core.create_namespaced_pod(namespace, pod_body("web", {"app": "web"}, scheduler=PROFILE))

        def condition() -> Any:
            cond = scheduled_condition(core.read_namespaced_pod("web", namespace))
            return cond if cond is not None and cond.reason == "SchedulerError" else None

        cond = wait_for(condition, 30, "PodScheduled=False/SchedulerError")
        assert cond.status == "False"
        assert cond.message == f"failed filter with extender at URL {broken.url}/filter, code 500"
        assert core.read_namespaced_pod("web", namespace).spec.node_name is None
        assert proc.proc is not None and proc.proc.poll() is None  # still running
    finally:
        assert proc.stop() == 0


def test_same_extender_same_outcome_as_kube_scheduler(
    kubeconfig: str,
    core: client.CoreV1Api,
    namespace: str,
    nodes: Callable[..., str],
    extender: Callable[..., ExtenderServer],
    kube_scheduler: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    """kube-scheduler v1.35.4 and we, on the same nodes with the same extender and profile: a pod the
    extender filters everywhere gets the same PodScheduled message from both; a placeable pod goes
    to the node the extender prefers under both."""
    a, b, c = nodes("a"), nodes("b"), nodes("c")
    everywhere = extender(reject={a: "no gpu", b: "no gpu", c: "busy"})
    prefer_c = extender(reject={a: "no gpu"}, scores={c: 10})
    (profile,) = upstream_config()["profiles"]
    configs = {
        "upstream-everywhere": [{"urlPrefix": everywhere.url, "filterVerb": "filter"}],
        "upstream-prefer": [
            {"urlPrefix": prefer_c.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5}
        ],
    }
    for name, extenders in configs.items():
        kube_scheduler({**profile, "schedulerName": name}, {"extenders": extenders})
    ours = [
        run_scheduler(kubeconfig, tmp_path, extenders, name, scheduler_name=name.replace("upstream", "ours"))
        for name, extenders in configs.items()
    ]
    try:
        for who in ("upstream", "ours"):
            core.create_namespaced_pod(namespace, pod_body(f"{who}-x", scheduler=f"{who}-everywhere"))
            core.create_namespaced_pod(namespace, pod_body(f"{who}-p", scheduler=f"{who}-prefer"))

        def message(pod: str) -> str | None:
            cond = scheduled_condition(core.read_namespaced_pod(pod, namespace))
            return cond.message if cond is not None and cond.status == "False" else None

        upstream_msg = wait_for(lambda: message("upstream-x"), 60, "upstream's FitError")
        ours_msg = wait_for(lambda: message("ours-x"), 60, "our FitError")
        assert ours_msg == upstream_msg  # DefaultPreemption's part included
        assert without_preemption(ours_msg) == f"0/3 nodes are available: 1 busy, 2 no gpu. {NO_CLAIMS}"
        placed = {
            who: wait_for(lambda who=who: node_of(core, namespace, f"{who}-p"), 60, f"{who} bound")
            for who in ("upstream", "ours")
        }
        assert placed == {"upstream": c, "ours": c}
    finally:
        for proc in ours:
            assert proc.stop() == 0
