"""NodeUnschedulable, NodeName, PrioritySort, SchedulingGates and DefaultBinder, plus the pinned
reason strings of every plugin (so a drift from upstream's exact text fails here)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.config import parse_config
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import ERR_NO_NODES_AVAILABLE, NO_NODE_AVAILABLE_MSG, NodeInfo
from scheduler.plugins import names
from scheduler.plugins.defaultbinder.default_binder import DefaultBinder
from scheduler.plugins.nodeaffinity import node_affinity
from scheduler.plugins.nodename import node_name
from scheduler.plugins.nodename.node_name import NodeName
from scheduler.plugins.nodeunschedulable import node_unschedulable
from scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread import filtering
from scheduler.plugins.queuesort.priority_sort import PrioritySort
from scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.plugins.tainttoleration import taint_toleration
from scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from scheduler.profile import build_frameworks
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import NN, NU, UNSCHEDULABLE_NODE, framework, make_cache, plugin_handle, schedule

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

# -- reason strings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("constant", "text"),
    [
        pytest.param(
            filtering.ERR_REASON_CONSTRAINTS_NOT_MATCH,
            "node(s) didn't match pod topology spread constraints",
            id="pts-constraints-not-match",
        ),
        pytest.param(
            filtering.ERR_REASON_NODE_LABEL_NOT_MATCH,
            "node(s) didn't match pod topology spread constraints (missing required label)",
            id="pts-node-label-not-match",
        ),
        pytest.param(node_affinity.ERR_REASON_POD, "node(s) didn't match Pod's node affinity/selector", id="na-pod"),
        pytest.param(
            node_affinity.ERR_REASON_ENFORCED, "node(s) didn't match scheduler-enforced node affinity", id="na-enforced"
        ),
        pytest.param(node_affinity.ERR_REASON_CONFLICT, "pod affinity terms conflict", id="na-conflict"),
        pytest.param(taint_toleration.ERR_REASON_UNTOLERATED, "node(s) had untolerated taint(s)", id="tt-untolerated"),
        pytest.param(
            taint_toleration.ERR_REASON_NOT_MATCH,
            "node(s) had taints that the pod didn't tolerate",
            id="tt-exported-but-unused",
        ),
        pytest.param(node_unschedulable.ERR_REASON_UNSCHEDULABLE, "node(s) were unschedulable", id="nu"),
        pytest.param(node_name.ERR_REASON, "node(s) didn't match the requested node name", id="nn"),
        pytest.param(ERR_NO_NODES_AVAILABLE, "no nodes available to schedule pods", id="no-nodes"),
        pytest.param(NO_NODE_AVAILABLE_MSG.format(3), "0/3 nodes are available", id="fit-error-head"),
    ],
)
def test_reason_strings_are_upstreams(constant: str, text: str) -> None:
    assert constant == text


def test_taint_toleration_filter_does_not_return_its_exported_constant() -> None:
    cache = make_cache([make_node("n").taint("k", "v")])
    status = TaintToleration({}, plugin_handle(cache)).filter(CycleState(), make_pod("p").build(), cache.get("n"))
    assert status is not None
    assert status.reasons == ("node(s) had untolerated taint(s)",)
    assert taint_toleration.ERR_REASON_NOT_MATCH not in status.reasons


@pytest.mark.parametrize(
    ("constant", "text"),
    [
        pytest.param(names.PRIORITY_SORT, "PrioritySort", id="PrioritySort"),
        pytest.param(names.SCHEDULING_GATES, "SchedulingGates", id="SchedulingGates"),
        pytest.param(names.NODE_UNSCHEDULABLE, "NodeUnschedulable", id="NodeUnschedulable"),
        pytest.param(names.NODE_NAME, "NodeName", id="NodeName"),
        pytest.param(names.TAINT_TOLERATION, "TaintToleration", id="TaintToleration"),
        pytest.param(names.NODE_AFFINITY, "NodeAffinity", id="NodeAffinity"),
        pytest.param(names.POD_TOPOLOGY_SPREAD, "PodTopologySpread", id="PodTopologySpread"),
        pytest.param(names.DEFAULT_BINDER, "DefaultBinder", id="DefaultBinder"),
    ],
)
def test_plugin_names(constant: str, text: str) -> None:
    assert constant == text


# -- NodeUnschedulable (upstream TestNodeUnschedulable) -------------------------------------------


@pytest.mark.parametrize(
    ("pod", "unschedulable", "want"),
    [
        pytest.param(
            make_pod("p"),
            True,
            Status(UNRESOLVABLE, ("node(s) were unschedulable",), NU),
            id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        ),
        pytest.param(make_pod("p"), False, None, id="Schedule pod to normal node"),
        pytest.param(
            make_pod("p").toleration("node.kubernetes.io/unschedulable", effect="NoSchedule"),
            True,
            None,
            id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        ),
        pytest.param(
            make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists"), True, None, id="exists-any-effect"
        ),
        pytest.param(make_pod("p").toleration(operator="Exists"), True, None, id="tolerate-everything"),
        pytest.param(
            make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute"),
            True,
            Status(UNRESOLVABLE, ("node(s) were unschedulable",), NU),
            id="wrong-effect",
        ),
        pytest.param(
            make_pod("p").toleration("node.kubernetes.io/unschedulable", "Equal", "true"),
            True,
            Status(UNRESOLVABLE, ("node(s) were unschedulable",), NU),
            id="wrong-value",
        ),
    ],
)
def test_node_unschedulable(pod: PodBuilder, unschedulable: bool, want: Status | None) -> None:
    cache = make_cache([make_node("n").unschedulable(unschedulable)])
    plugin = NodeUnschedulable({}, plugin_handle(cache))
    assert plugin.filter(CycleState(), pod.build(), cache.get("n")) == want


def test_node_unschedulable_ignores_taints() -> None:
    cache = make_cache([make_node("n").taint("node.kubernetes.io/unschedulable")])
    assert (
        NodeUnschedulable({}, plugin_handle(cache)).filter(CycleState(), make_pod("p").build(), cache.get("n")) is None
    )


def test_cordoned_node_through_the_pipeline() -> None:
    r = schedule([make_node("a").unschedulable(), make_node("b")], [], make_pod("p"))
    assert r.host == "b"
    assert r.reasons() == {"a": (UNSCHEDULABLE_NODE, UNRESOLVABLE, NU)}
    r = schedule([make_node("a").unschedulable()], [], make_pod("p"))
    assert r.message == "0/1 nodes are available: 1 node(s) were unschedulable."
    assert r.rejectors == {NU}
    tolerating = make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
    assert schedule([make_node("a").unschedulable()], [], tolerating).host == "a"


# -- NodeName (upstream TestNodeName) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_node", "want"),
    [
        pytest.param("", None, id="no host specified"),
        pytest.param("foo", None, id="host matches"),
        pytest.param(
            "bar", Status(UNRESOLVABLE, ("node(s) didn't match the requested node name",)), id="host doesn't match"
        ),
    ],
)
def test_node_name(pod_node: str, want: Status | None) -> None:
    cache = make_cache([make_node("foo")])
    pod = make_pod("p").set("spec.nodeName", pod_node).build()
    assert NodeName({}, plugin_handle(cache)).filter(CycleState(), pod, cache.get("foo")) == want


def test_node_name_filter() -> None:
    """A pod whose spec holds nothing but nodeName and containers, without a handle."""
    plugin = node_name.NodeName({}, None)  # type: ignore[arg-type]
    pod = Pod.from_dict(make_pod("p").dict() | {"spec": {"nodeName": "n2", "containers": []}})
    status = plugin.filter(CycleState(), pod, NodeInfo(make_node("n1").build()))
    assert status is not None and status.message() == node_name.ERR_REASON
    assert plugin.filter(CycleState(), pod, NodeInfo(make_node("n2").build())) is None


def test_node_name_status_gets_the_plugin_name_from_the_framework() -> None:
    fwk = framework()
    cache = make_cache([make_node("foo")])
    fwk.handle.snapshot = cache
    status = fwk.run_filter_plugins(CycleState(), make_pod("p").node("bar").build(), cache.get("foo"))
    assert status is not None
    assert status.plugin == NN
    assert status.message() == "node(s) didn't match the requested node name"


@pytest.mark.parametrize(
    ("minor", "message"),
    [
        pytest.param(
            "1.35",
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match the requested node name, "
            "1 node(s) were unschedulable.",
            id="1.35: NodeUnschedulable first, every node filtered",
        ),
        pytest.param(
            "1.37",
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeName].",
            id="1.37: NodeName's PreFilter leaves the other nodes out",
        ),
    ],
)
def test_1_37_node_name_order_and_pre_filter(minor: str, message: str) -> None:
    """Issue #47's row "1.37 NodeName order + PreFilter": a pod that names node b (an assigned pod
    with a deferred resize, upstream's comment says), a cordoned, b too small. Up to 1.36 (v1.36.3
    default_plugins.go) NodeUnschedulable filters before NodeName and every node gets a reason; from
    1.37 (v1.37.2 default_plugins.go, nodename/node_name.go ``PreFilter``) NodeName comes first and
    its PreFilter narrows the cycle to b, so a and c share schedule_one.go's absent-node status."""
    fwk = build_frameworks(parse_config({}, features=features_at(minor)))["spread-scheduler"]
    cache = make_cache(
        [
            make_node("a").capacity(cpu="4", memory="4Gi", pods="10").unschedulable(),
            make_node("b").capacity(cpu="1", memory="4Gi", pods="10"),
            make_node("c").capacity(cpu="4", memory="4Gi", pods="10"),
        ]
    )
    attempt = SchedulingAlgorithm(random.Random(0)).schedule_pod(
        fwk, cache, make_pod("p").node("b").requests(cpu="2").build()
    )
    assert (attempt.host, attempt.message) == (None, message)


# -- PrioritySort (upstream TestLess) ------------------------------------------------------------


def _prio(value: int | None) -> Pod:
    pod = make_pod("p")
    if value is not None:
        pod = pod.priority(value)
    return pod.build()


@pytest.mark.parametrize(
    ("p1", "t1", "p2", "t2", "less"),
    [
        pytest.param(_prio(1), 0.0, _prio(2), 0.0, False, id="p1.priority less than p2.priority"),
        pytest.param(_prio(2), 0.0, _prio(1), 0.0, True, id="p1.priority greater than p2.priority"),
        pytest.param(
            _prio(1), 1.0, _prio(1), 2.0, True, id="equal priority. p1 is added to schedulingQ earlier than p2"
        ),
        pytest.param(
            _prio(1), 2.0, _prio(1), 1.0, False, id="equal priority. p2 is added to schedulingQ earlier than p1"
        ),
        pytest.param(_prio(None), 1.0, _prio(0), 1.0, False, id="nil priority is zero, equal timestamps"),
        pytest.param(_prio(None), 0.0, _prio(-1), 5.0, True, id="nil priority beats negative"),
        pytest.param(_prio(-5), 0.0, _prio(None), 5.0, False, id="negative loses to nil"),
        pytest.param(_prio(10), 5.0, _prio(1), 1.0, True, id="higher-priority-wins-over-an-earlier-timestamp"),
        pytest.param(_prio(1), 1.0, _prio(10), 5.0, False, id="lower-priority-loses-despite-an-earlier-timestamp"),
    ],
)
def test_priority_sort_less(p1: Pod, t1: float, p2: Pod, t2: float, less: bool) -> None:
    sorter = PrioritySort({}, Handle())
    assert sorter.less(p1, t1, p2, t2) is less
    assert (sorter.sort_key(p1, t1) < sorter.sort_key(p2, t2)) is less


# -- SchedulingGates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        pytest.param([], None, id="pod does not carry scheduling gates"),
        pytest.param(
            ["foo", "bar"],
            Status(UNRESOLVABLE, ("waiting for scheduling gates: [foo bar]",)),
            id="pod carries scheduling gates",
        ),
        pytest.param(["g1", "g2"], Status(UNRESOLVABLE, ("waiting for scheduling gates: [g1 g2]",)), id="g1-g2"),
        pytest.param(["only"], Status(UNRESOLVABLE, ("waiting for scheduling gates: [only]",)), id="one-gate"),
    ],
)
def test_scheduling_gates_pre_enqueue(gates: list[str], want: Status | None) -> None:
    pod = make_pod("p")
    for gate in gates:
        pod = pod.gate(gate)
    assert SchedulingGates({}, Handle()).pre_enqueue(pod.build()) == want


def test_scheduling_gates_through_the_framework() -> None:
    status = framework().run_pre_enqueue_plugins(make_pod("p").gate("g1").gate("g2").build())
    assert status == Status(UNRESOLVABLE, ("waiting for scheduling gates: [g1 g2]",), "SchedulingGates")
    assert framework().run_pre_enqueue_plugins(make_pod("p").build()) is None


# -- DefaultBinder -------------------------------------------------------------------------------


class _RecordingBinder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.calls.append((pod.key, node_name))


def test_default_binder_calls_the_binder() -> None:
    binder = _RecordingBinder()
    plugin = DefaultBinder({}, Handle(binder=binder))
    assert asyncio.run(plugin.bind(CycleState(), make_pod("p").build(), "n1")) is None
    assert binder.calls == [("default/p", "n1")]


def test_default_binder_without_binder_skips() -> None:
    status: Any = asyncio.run(DefaultBinder({}, Handle()).bind(CycleState(), make_pod("p").build(), "n1"))
    assert status == Status(Code.SKIP)
