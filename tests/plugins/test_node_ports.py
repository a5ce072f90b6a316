"""NodePorts: PreFilter → Filter, the host-port conflict rules, the events and the queueing hint.

Ported from upstream v1.35.4 ``plugins/nodeports/node_ports_test.go`` (TestNodePorts,
TestPreFilterDisabled, Test_isSchedulableAfterPodDeleted, TestFits) and the conflict rules of
``kube-scheduler/framework`` ``HostPortInfo.CheckConflict`` (0.0.0.0 clashes with every IP of the same
protocol and port; an empty hostIP is 0.0.0.0 and an empty protocol TCP); ids are upstream's names.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.resources import HostPort
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.nodeports.node_ports import NodePorts, fits_ports
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.testing import make_node, make_pod
from tests.helpers import Run, as_pod, framework, make_cache, pre_filter_then_filter

NP = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON,), NP)
QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def port_pod(name: str, *specs: str, node: str = "") -> Pod:
    """Upstream's ``newPod(host, "PROTO/IP/port", ...)``: one container with these host ports."""
    b = make_pod(name)
    for spec in specs:
        protocol, ip, port = spec.split("/")
        b = b.host_port(int(port), protocol, ip)
    if node:
        b = b.node(node)
    return b.build()


def info_with(*pods: Pod) -> NodeInfo:
    return NodeInfo(make_node("m1").build(), {p.key: p for p in pods})


def run(pod: Pod, info: NodeInfo) -> tuple[Status | None, Status | None]:
    return pre_filter_then_filter(NodePorts({}, Handle()), pod, info)


def _init_port_pod(sidecar: bool) -> Pod:
    init: dict[str, Any] = {
        "name": "init",
        "image": "pause",
        "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    return make_pod("p").set("spec.initContainers", [init]).build()


# -- TestNodePorts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "existing", "want_pre", "want_filter"),
    [
        pytest.param(make_pod("p").build(), None, Status(Code.SKIP), None, id="skip filter"),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8080"), port_pod("e", "UDP/127.0.0.1/9090"), None, None, id="other port"
        ),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8080"), port_pod("e", "UDP/127.0.0.1/8080"), None, CONFLICT, id="same udp port"
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/8080"), port_pod("e", "TCP/127.0.0.1/8080"), None, CONFLICT, id="same tcp port"
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/8080"), port_pod("e", "TCP/127.0.0.2/8080"), None, None, id="different host ip"
        ),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8080"),
            port_pod("e", "TCP/127.0.0.1/8080"),
            None,
            None,
            id="different protocol",
        ),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
            port_pod("e", "UDP/127.0.0.1/8080"),
            None,
            CONFLICT,
            id="second udp port conflict",
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
            port_pod("e", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
            None,
            CONFLICT,
            id="first tcp port conflict",
        ),
        pytest.param(
            port_pod("p", "TCP/0.0.0.0/8001"),
            port_pod("e", "TCP/127.0.0.1/8001"),
            None,
            CONFLICT,  # wanting 0.0.0.0 clashes with the port on any IP
            id="first tcp port conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            port_pod("p", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
            port_pod("e", "TCP/127.0.0.1/8001"),
            None,
            CONFLICT,
            id="TCP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/8001"),
            port_pod("e", "TCP/0.0.0.0/8001"),
            None,
            CONFLICT,  # 0.0.0.0 in use clashes with a specific IP
            id="second tcp port conflict to 0.0.0.0 hostIP",
        ),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8001"),
            port_pod("e", "TCP/0.0.0.0/8001"),
            None,
            None,
            id="second different protocol",
        ),
        pytest.param(
            port_pod("p", "UDP/127.0.0.1/8001"),
            port_pod("e", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
            None,
            CONFLICT,
            id="UDP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            _init_port_pod(sidecar=False),
            port_pod("e", "TCP/0.0.0.0/8001"),
            Status(Code.SKIP),  # a non-sidecar init container's ports are not host ports of the running pod
            None,
            id="non-sidecar initContainer using hostPort",
        ),
        pytest.param(
            _init_port_pod(sidecar=True),
            port_pod("e", "TCP/0.0.0.0/8001"),
            None,
            CONFLICT,
            id="TCP hostPort conflict from sidecar initContainer",
        ),
        # Beyond upstream's table: sanitizing and the remaining protocol.
        pytest.param(
            port_pod("p", "//8080"),
            port_pod("e", "TCP/127.0.0.1/8080"),
            None,
            CONFLICT,  # "" → 0.0.0.0 and "" → TCP
            id="empty hostIP and protocol default to 0.0.0.0 and TCP",
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/8080"),
            port_pod("e", "//8080"),
            None,
            CONFLICT,
            id="in-use empty hostIP and protocol default to 0.0.0.0 and TCP",
        ),
        pytest.param(
            port_pod("p", "SCTP/127.0.0.1/8080"),
            port_pod("e", "TCP/0.0.0.0/8080", "UDP/0.0.0.0/8080"),
            None,
            None,
            id="SCTP does not clash with TCP or UDP",
        ),
        pytest.param(
            port_pod("p", "SCTP/0.0.0.0/8080"),
            port_pod("e", "SCTP/10.0.0.1/8080"),
            None,
            CONFLICT,
            id="SCTP 0.0.0.0 clashes with SCTP on any IP",
        ),
        pytest.param(
            port_pod("p", "TCP/10.0.0.1/8080"),
            port_pod("e", "TCP/10.0.0.2/8080", "TCP/10.0.0.3/8080"),
            None,
            None,
            id="specific IPs clash only with the same IP",
        ),
    ],
)
def test_node_ports(pod: Pod, existing: Pod | None, want_pre: Status | None, want_filter: Status | None) -> None:
    info = info_with(existing) if existing is not None else info_with()
    pre, got = run(pod, info)
    assert pre == want_pre
    assert got == want_filter


def test_conflict_message_and_code() -> None:
    _, got = run(port_pod("p", "TCP/0.0.0.0/80"), info_with(port_pod("e", "TCP/0.0.0.0/80")))
    assert got is not None
    assert got.code is Code.UNSCHEDULABLE  # resolvable: preempting the holder frees the port
    assert got.message() == ERR_REASON


def test_filter_without_pre_filter_is_an_error() -> None:
    got = NodePorts({}, Handle()).filter(CycleState(), make_pod("p").build(), info_with())
    assert got is not None
    assert got.code is Code.ERROR
    assert got.message() == 'reading "PreFilterNodePorts" from cycleState: not found'


def test_ports_freed_when_the_holder_leaves() -> None:
    holder = port_pod("e", "TCP/0.0.0.0/80")
    info = info_with(holder)
    pod = port_pod("p", "TCP/127.0.0.1/80")
    assert run(pod, info)[1] == CONFLICT
    info.remove_pod(holder.key)
    assert run(pod, info)[1] is None


# -- TestFits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/80"), port_pod("e", "TCP/127.0.0.1/9090"), True, id="non-conflicting ports"
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
            port_pod("e", "TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"),
            True,
            id="multiple non-conflicting ports",
        ),
        pytest.param(
            port_pod("m1", "TCP/127.0.0.1/80"),
            port_pod("e", "UDP/127.0.0.1/80"),
            True,
            id="same ports on different protocols",
        ),
        pytest.param(
            port_pod("m1", "TCP/127.0.0.1/80"), port_pod("e", "TCP/127.0.0.1/80"), False, id="conflicting ports"
        ),
        pytest.param(
            port_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
            port_pod("e", "TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"),
            False,
            id="multiple ports, some conflicting",
        ),
    ],
)
def test_fits(pod: Pod, existing: Pod, want: bool) -> None:
    assert fits_ports(pod.resources.host_ports, info_with(existing).used_ports) is want


def test_fits_ports_on_plain_sets() -> None:
    in_use = {HostPort("127.0.0.1", "TCP", 80)}
    assert not fits_ports((HostPort("0.0.0.0", "TCP", 80),), in_use)
    assert fits_ports((HostPort("127.0.0.2", "TCP", 80),), in_use)
    assert fits_ports((), in_use)


# -- events and Test_isSchedulableAfterPodDeleted ------------------------------------------------


def test_events_to_register() -> None:
    # QHint on: Pod/Delete with the hint, Node/Add without one (always Queue).
    events = NodePorts({}, Handle()).events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(EventResource.POD, ActionType.DELETE),
        ClusterEvent(EventResource.NODE, ActionType.ADD),
    ]
    node_add_hint = events[1].hint
    assert node_add_hint(make_pod("p").build(), None, make_node("n").build()) is QUEUE


WITH_8080 = make_pod("p").host_port(8080).build()


@pytest.mark.parametrize(
    ("pod", "old", "want"),
    [
        pytest.param(WITH_8080, "not-a-pod", QUEUE, id="backoff-wrong-old-object"),
        pytest.param(WITH_8080, make_pod("q").build(), SKIP, id="skip-queue-on-unscheduled"),
        pytest.param(WITH_8080, make_pod("q").node("fake-node").build(), SKIP, id="skip-queue-on-non-hostport"),
        pytest.param(
            WITH_8080,
            make_pod("q").node("fake-node").host_port(8081).build(),
            SKIP,
            id="skip-queue-on-unrelated-hostport",
        ),
        pytest.param(
            WITH_8080, make_pod("q").node("fake-node").host_port(8080).build(), QUEUE, id="queue-on-released-hostport"
        ),
        # Beyond upstream's table.
        pytest.param(
            WITH_8080,
            make_pod("q").set("status.nominatedNodeName", "fake-node").host_port(8080).build(),
            QUEUE,
            id="queue-on-nominated-pod-released-hostport",
        ),
        pytest.param(
            make_pod("p").host_port(8080, "TCP", "127.0.0.1").build(),
            make_pod("q").node("fake-node").host_port(8080, "TCP", "0.0.0.0").build(),
            QUEUE,
            id="queue-on-released-wildcard-hostport",
        ),
        pytest.param(
            make_pod("p").host_port(8080, "UDP").build(),
            make_pod("q").node("fake-node").host_port(8080, "TCP").build(),
            SKIP,
            id="skip-queue-on-other-protocol",
        ),
    ],
)
def test_is_schedulable_after_pod_deleted(pod: Pod, old: object, want: QueueingHint) -> None:
    assert NodePorts({}, Handle()).is_schedulable_after_pod_deleted(pod, old, None) is want


# -- through the pipeline ------------------------------------------------------------------------


def test_port_conflict_through_the_pipeline() -> None:
    nodes = [make_node("a"), make_node("b")]
    pods = [make_pod("holder").host_port(80).node("a")]
    cache = make_cache(nodes, pods)
    attempt = SchedulingAlgorithm(random.Random(0)).schedule_pod(
        framework(resources=True), cache, as_pod(make_pod("in").host_port(80, "TCP", "10.0.0.1"))
    )
    r = Run(attempt, cache)
    assert r.host == "b"
    assert r.reasons() == {"a": (ERR_REASON, Code.UNSCHEDULABLE, NP)}
