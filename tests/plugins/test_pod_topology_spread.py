"""PodTopologySpread (spec section 4): PreFilter → Filter, AddPod/RemovePod, PreScore → Score → Normalize.

Cases ported from upstream ``podtopologyspread/{filtering,scoring}_test.go`` keep their names as
ids. Upstream's filtering tests run with ``defaultingType: List`` (no defaults) and its scoring
tests with ``System``; so do these. Node labels ``zone``/``node`` are upstream's test keys.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from scheduler.api.labels import EVERYTHING, NOTHING, Selector, parse_label_selector, selector_from_map
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.podtopologyspread import common, scoring
from scheduler.plugins.podtopologyspread.filtering import MAX_INT32, PreFilterState, min_match_num
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod
from tests.helpers import (
    FOO,
    HOSTNAME,
    MISSING_LABEL,
    PTS,
    SPREAD,
    TT,
    UNTOLERATED,
    ZONE,
    code_of,
    config_with,
    exists,
    expr,
    framework,
    hosts_over_seeds,
    incoming,
    make_cache,
    plugin_handle,
    schedule,
    score_nodes,
    term,
)

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FOO_SEL = exists("foo")
BAR_SEL = exists("bar")
LIST: dict[str, Any] = {"defaultingType": "List"}
SYSTEM: dict[str, Any] = {}
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
PRE_FILTER_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_KEY = "PreScorePodTopologySpread"


def sel(raw: dict[str, Any] | None) -> Selector:
    errors: list[Any] = []
    out = parse_label_selector(raw, "s", errors)
    assert errors == []
    return out


def n(name: str, *, hostname: bool = False, tainted: bool = False, **labels: str) -> NodeBuilder:
    """A node with upstream-test labels; the hostname label only when asked for."""
    node = make_node(name)
    if not hostname:
        node = node.unlabel(HOSTNAME)
    for key, value in labels.items():
        node = node.label(key, value)
    if tainted:
        node = node.taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
    return node


def zn(name: str, zone: str, **extra: Any) -> NodeBuilder:
    return n(name, zone=zone, node=name, **extra)


def hn(name: str, **labels: str) -> NodeBuilder:
    return n(name, hostname=True, **labels)


def pods_on(counts: dict[str, int], labels: dict[str, str] | None = None, prefix: str = "p") -> list[PodBuilder]:
    """``counts`` pods per node, named like upstream's p-a1, p-a2 ... with ``foo=""`` by default."""
    out = []
    for node, count in counts.items():
        for i in range(count):
            out.append(make_pod(f"{prefix}-{node}-{i}").labels(labels or {"foo": ""}).node(node))
    return out


def pod_on(name: str, node: str, ns: str = "default", **labels: str) -> PodBuilder:
    return make_pod(name, ns).labels(labels).node(node)


def four_nodes() -> list[NodeBuilder]:
    return [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]


def p(**labels: str) -> PodBuilder:
    return make_pod("p").labels(labels)


def plugin(cache: Any, args: dict[str, Any] | None = None) -> PodTopologySpread:
    return PodTopologySpread(LIST if args is None else args, plugin_handle(cache))


def run_pre_filter(
    pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder], args: dict[str, Any] | None = None, objs=()
) -> tuple[PodTopologySpread, Any, CycleState, Status | None]:
    cache = make_cache(nodes, pods, objs)
    pl = plugin(cache, args)
    state = CycleState()
    result, status = pl.pre_filter(state, pod.build(), cache.node_infos())
    assert result is None  # PodTopologySpread never narrows nodes
    return pl, cache, state, status


def filter_codes(pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder]) -> dict[str, Code]:
    pl, cache, state, status = run_pre_filter(pod, nodes, pods)
    assert status is None
    built = pod.build()
    return {info.name: code_of(pl.filter(state, built, info)) for info in cache.node_infos()}


# -- Filter, one constraint (upstream TestSingleConstraint) ------------------------------------------

NODE_AFFINITY_NODES = [
    n("node-a", node="node-a", foo=""),
    n("node-b", node="node-b", foo=""),
    n("node-x", node="node-x", foo=""),
    n("node-y", node="node-y"),
]
POLICY_PODS = [pod_on("p-b1", "node-a", foo=""), pod_on("p-b2", "node-b", foo=""), pod_on("p-y1", "node-y", foo="")]
TAINT_NODES = [
    n("node-a", node="node-a", foo=""),
    n("node-b", node="node-b", foo=""),
    n("node-x", node="node-x", foo=""),
    n("node-y", node="node-y", tainted=True),
]
THREE_HOSTS = [n("node-a", node="node-a"), n("node-b", node="node-b"), n("node-c", node="node-c")]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [],
            {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
            id="no existing pods",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [],
            {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
            id="no existing pods, incoming pod doesn't match itself",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", "ns1", foo=""),
                pod_on("p-b1", "node-a", "ns2", foo=""),
                pod_on("p-x1", "node-x", foo=""),
                pod_on("p-y1", "node-y", foo=""),
            ],
            {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
            id="existing pods in a different namespace do not count",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS),
            four_nodes(),
            pods_on({"node-x": 1, "node-y": 1}),
            {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
            id="existing pods do not match null selector",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
            id="pods spread across zones as 3/3, all nodes fit",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            [
                zn("node-a", "zone1"),
                n("node-b", zon="zone1", node="node-b"),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            pods_on({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}),
            {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
            id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        ),
        pytest.param(
            p(foo="").spread("rack", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-x", "zone2")],
            [],
            {"node-a": UU, "node-x": UU},
            id="pod cannot be scheduled as all nodes don't have label 'rack'",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="pods spread across nodes as 2/1/0/3, only node-x fits",
        ),
        pytest.param(
            p(foo="").spread("node", 2, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
            id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        ),
        pytest.param(
            p(bar="").spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
            id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        ),
        pytest.param(
            p(foo="")
            .required_terms(term(expr("node", "In", "node-a", "node-y")))
            .spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
            id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            [n("node-a", node="node-a"), n("node-b", node="node-b")],
            [pod_on("p-a", "node-a", foo="").terminating(), pod_on("p-b", "node-b", foo="")],
            {"node-a": S, "node-b": U},
            id="terminating Pods should be excluded",
        ),
        pytest.param(
            p(foo="").required_terms(term(expr("node", "NotIn", "node-b"))).spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-b": 2, "node-y": 1}),
            {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
            id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        ),
        pytest.param(
            p(foo="").spread("node", 2, DNS, selector=FOO_SEL, minDomains=4),
            THREE_HOSTS,
            pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
            {"node-a": U, "node-b": U, "node-c": S},
            id=(
                "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
                "then the third node fits"
            ),
        ),
        pytest.param(
            p(foo="").spread("node", 2, DNS, selector=FOO_SEL, minDomains=2),
            THREE_HOSTS,
            pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
            {"node-a": S, "node-b": S, "node-c": S},
            id=(
                "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
                "then the all nodes fit"
            ),
        ),
        pytest.param(
            p(foo="").spread("zone", 2, DNS, selector=FOO_SEL, minDomains=3),
            four_nodes(),
            pods_on({"node-a": 1, "node-b": 1, "node-y": 1}),
            {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
            id=(
                "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
                "then the third and fourth nodes fit"
            ),
        ),
        pytest.param(
            p(foo="").spread("zone", 2, DNS, selector=FOO_SEL, minDomains=1),
            four_nodes(),
            pods_on({"node-a": 1, "node-b": 1, "node-y": 1}),
            {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
            id=(
                "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
                "then the all nodes fit"
            ),
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, DNS, selector=FOO_SEL),
            NODE_AFFINITY_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
            id="NodeAffinityPolicy honored with labelSelectors",
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, DNS, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            NODE_AFFINITY_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="NodeAffinityPolicy ignored with labelSelectors",
        ),
        pytest.param(
            p(foo="").required_terms(term(expr("foo", "In", ""))).spread("node", 1, DNS, selector=FOO_SEL),
            NODE_AFFINITY_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
            id="NodeAffinityPolicy honored with nodeAffinity",
        ),
        pytest.param(
            p(foo="")
            .required_terms(term(expr("foo", "In", "")))
            .spread("node", 1, DNS, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            NODE_AFFINITY_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="NodeAffinityPolicy ignored with nodeAffinity",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL, nodeTaintsPolicy="Honor"),
            TAINT_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
            id="NodeTaintsPolicy honored",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            TAINT_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="NodeTaintsPolicy ignored",
        ),
        pytest.param(
            p(foo="")
            .toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
            .spread("node", 1, DNS, selector=FOO_SEL, nodeTaintsPolicy="Honor"),
            TAINT_NODES,
            POLICY_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="NodeTaintsPolicy honored with tolerated taints counts the node",
        ),
    ],
)
def test_single_constraint(
    pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder], want: dict[str, Code]
) -> None:
    assert filter_codes(pod, nodes, pods) == want


# -- Filter, several constraints (upstream TestMultipleConstraints) ----------------------------------

INCL_NODES_1 = [
    zn("node-a", "zone1", foo=""),
    zn("node-b", "zone1", foo=""),
    zn("node-x", "zone2", foo=""),
    zn("node-y", "zone2"),
]
INCL_NODES_2 = [
    zn("node-a", "zone1", foo=""),
    zn("node-b", "zone1", foo=""),
    zn("node-x", "zone2", foo=""),
    zn("node-y", "zone2", tainted=True),
]
INCL_NODES_3 = [
    zn("node-a", "zone1", foo=""),
    zn("node-b", "zone1"),
    zn("node-x", "zone2", foo=""),
    zn("node-y", "zone2", foo="", tainted=True),
]
INCL_PODS = [pod_on("p-a1", "node-a", foo=""), pod_on("p-b1", "node-b", foo=""), pod_on("p-y1", "node-y", foo="")]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
            {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
            id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [pod_on("p-a1", "node-a", foo=""), pod_on("p-y1", "node-y", bar="")],
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [pod_on("p-a1", "node-a", foo=""), pod_on("p-x1", "node-x", bar=""), pod_on("p-y1", "node-y", bar="")],
            {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
            id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-a2", "node-a", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", foo="", bar=""),
                pod_on("p-y3", "node-y", foo=""),
            ],
            {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
            id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        ),
        pytest.param(
            p(bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [pod_on("p-a1", "node-a", foo=""), pod_on("p-x1", "node-x", bar=""), pod_on("p-y1", "node-y", bar="")],
            {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
            id="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1"), n("node-x", zone="zone2"), zn("node-y", "zone2")],
            [pod_on("p-a1", "node-a", foo=""), pod_on("p-y3", "node-y", foo="")],
            {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
            id="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        ),
        pytest.param(
            p(foo="")
            .node_selector({"foo": ""})
            .spread("zone", 1, DNS, selector=FOO_SEL)
            .spread("node", 1, DNS, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            INCL_NODES_1,
            INCL_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        ),
        pytest.param(
            p(foo="")
            .spread("zone", 1, DNS, selector=FOO_SEL, nodeTaintsPolicy="Honor")
            .spread("node", 1, DNS, selector=FOO_SEL),
            INCL_NODES_2,
            INCL_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        ),
        pytest.param(
            p(foo="")
            .node_selector({"foo": ""})
            .spread("zone", 1, DNS, selector=FOO_SEL)
            .spread("node", 1, DNS, selector=FOO_SEL),
            INCL_NODES_3,
            INCL_PODS,
            {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
            id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        ),
        pytest.param(
            p(foo="")
            .node_selector({"foo": ""})
            .spread("zone", 1, DNS, selector=FOO_SEL, nodeTaintsPolicy="Honor")
            .spread("node", 1, DNS, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            INCL_NODES_3,
            INCL_PODS,
            {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
            id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=BAR_SEL).spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo="", bar=""),
                pod_on("p-a2", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", foo="", bar=""),
                pod_on("p-y3", "node-y", foo=""),
            ],
            {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
            id="two Constraints on zone, spreads = [3/3, 2/1]",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=BAR_SEL).spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo="", bar=""),
                pod_on("p-a2", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", foo="", bar=""),
                pod_on("p-y3", "node-y", foo=""),
                pod_on("p-y4", "node-y", foo=""),
            ],
            {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
            id="two Constraints on zone, spreads = [3/4, 2/1]",
        ),
    ],
)
def test_multiple_constraints(
    pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder], want: dict[str, Code]
) -> None:
    assert filter_codes(pod, nodes, pods) == want


def test_filter_reasons_and_codes() -> None:
    pod = p(foo="").spread("zone", 1, DNS, selector=FOO_SEL)
    nodes = [zn("node-a", "zone1"), zn("node-x", "zone2"), n("node-z", node="node-z")]
    pl, cache, state, _ = run_pre_filter(pod, nodes, pods_on({"node-a": 1}))
    built = pod.build()
    skew = pl.filter(state, built, cache.get("node-a"))
    missing = pl.filter(state, built, cache.get("node-z"))
    assert skew == Status(U, (SPREAD,), PTS)
    assert missing == Status(UU, (MISSING_LABEL,), PTS)
    assert pl.filter(state, built, cache.get("node-x")) is None


def test_filter_without_pre_filter_state_is_an_error() -> None:
    cache = make_cache([zn("node-a", "zone1")])
    status = plugin(cache).filter(
        CycleState(), p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).build(), cache.get("node-a")
    )
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


# -- PreFilter state (upstream TestPreFilterState) ---------------------------------------------------


def state_of(state: CycleState) -> PreFilterState:
    return state.read(PRE_FILTER_KEY, PreFilterState)


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "counts", "mins"),
    [
        pytest.param(
            p(foo="").spread("zone", 5, DNS, match={"foo": "bar"}),
            four_nodes(),
            [],
            [{"zone1": 0, "zone2": 0}],
            [0],
            id="clean cluster with one spreadConstraint",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
            [{"zone1": 3, "zone2": 2}],
            [2],
            id="normal case with one spreadConstraint",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
            [{"zone1": 0, "zone2": 0}],
            [0],
            id="normal case with null label selector",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            [*four_nodes(), zn("node-o", "zone3"), zn("node-p", "zone3")],
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
            [{"zone1": 3, "zone2": 2, "zone3": 0}],
            [0],
            id="normal case with one spreadConstraint, on a 3-zone cluster",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-a2", "node-a", "ns1", foo=""),
                pod_on("p-b1", "node-b", foo=""),
                pod_on("p-y1", "node-y", "ns2", foo=""),
                pod_on("p-y2", "node-y", foo=""),
            ],
            [{"zone1": 2, "zone2": 1}],
            [1],
            id="namespace mismatch doesn't count",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
            [3, 0],
            id="normal case with two spreadConstraints",
        ),
        pytest.param(
            p(foo="")
            .spread("zone", 1, SA, selector=FOO_SEL)
            .spread("zone", 1, DNS, selector=FOO_SEL)
            .spread("node", 1, SA, selector=FOO_SEL)
            .spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
            pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
            [3, 1],
            id="soft spreadConstraints should be bypassed",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
            [pod_on("p-a", "node-a", foo=""), pod_on("p-b", "node-b", bar="")],
            [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
            [0, 0],
            id="different labelSelectors - simple version",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=BAR_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-a2", "node-a", foo="", bar=""),
                pod_on("p-b1", "node-b", foo=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", foo="", bar=""),
                pod_on("p-y3", "node-y", foo=""),
                pod_on("p-y4", "node-y", foo="", bar=""),
            ],
            [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
            [3, 0],
            id="different labelSelectors - complex pods",
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, DNS, selector=BAR_SEL),
            [
                n("node-a", node="node-a", foo=""),
                n("node-b", node="node-b", foo=""),
                n("node-c", node="node-c", bar=""),
            ],
            [
                pod_on("p-a", "node-a", bar=""),
                pod_on("p-b", "node-b", bar=""),
                pod_on("p-c", "node-b", bar=""),
                pod_on("p-d", "node-c"),
            ],
            [{"node-a": 1, "node-b": 2}],
            [1],
            id="NodeAffinityPolicy honored with labelSelectors",
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, DNS, selector=BAR_SEL, nodeAffinityPolicy="Ignore"),
            [
                n("node-a", node="node-a", foo=""),
                n("node-b", node="node-b", foo=""),
                n("node-c", node="node-c", bar=""),
            ],
            [
                pod_on("p-a", "node-a", bar=""),
                pod_on("p-b", "node-b", bar=""),
                pod_on("p-c", "node-b", bar=""),
                pod_on("p-d", "node-c"),
            ],
            [{"node-a": 1, "node-b": 2, "node-c": 0}],
            [0],
            id="NodeAffinityPolicy ignored with labelSelectors",
        ),
        pytest.param(
            p(foo="", bar="a").spread("zone", 1, DNS, selector=FOO_SEL, matchLabelKeys=["bar"]),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-a2", "node-a", foo="", bar="a"),
                pod_on("p-b1", "node-b", foo=""),
                pod_on("p-y1", "node-y", foo="", bar="a"),
                pod_on("p-y2", "node-y", bar=""),
            ],
            [{"zone1": 1, "zone2": 1}],
            [1],
            id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        ),
        pytest.param(
            p(foo="a").spread("zone", 1, DNS, selector={}, matchLabelKeys=["foo"]),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}, {"foo": "a"}),
            [{"zone1": 3, "zone2": 2}],
            [2],
            id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, matchLabelKeys=["bar"]),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}, {"foo": "a"}),
            [{"zone1": 0, "zone2": 0}],
            [0],
            id="key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL, matchLabelKeys=["bar"]),
            four_nodes(),
            pods_on({"node-a": 2, "node-b": 1, "node-y": 2}, {"foo": "a"}),
            [{"zone1": 3, "zone2": 2}],
            [2],
            id="key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, DNS, selector=FOO_SEL).spread("zone", 1, DNS, selector=BAR_SEL),
            four_nodes(),
            [
                pod_on("p-a1", "node-a", foo="", bar=""),
                pod_on("p-b1", "node-b", foo=""),
                pod_on("p-x1", "node-x", bar=""),
                pod_on("p-y1", "node-y", foo="", bar=""),
                pod_on("p-y2", "node-y", bar=""),
            ],
            [{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
            [1, 1],
            id="two spreadConstraints with the same topologyKey",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL).spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), n("node-x", zone="zone2"), zn("node-y", "zone2")],
            pods_on({"node-a": 1, "node-x": 3, "node-y": 1}),
            [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-y": 1}],
            [1, 1],
            id="node missing one constraint's key counts for no constraint",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector={}),
            four_nodes(),
            pods_on({"node-a": 2, "node-y": 1}),
            [{"zone1": 0, "zone2": 0}],
            [0],
            id="empty selector counts zero everywhere",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            four_nodes(),
            [
                *pods_on({"node-a": 1}),
                pod_on("t1", "node-a", foo="").terminating(),
                pod_on("t2", "node-x", foo="").terminating(),
            ],
            [{"zone1": 1, "zone2": 0}],
            [0],
            id="terminating pods are bypassed",
        ),
    ],
)
def test_pre_filter_state(
    pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder], counts: list[dict[str, int]], mins: list[int]
) -> None:
    _, _, state, status = run_pre_filter(pod, nodes, pods)
    assert status is None
    got = state_of(state)
    assert got.tp_value_to_match_num == counts
    assert got.min_counts == mins


def test_pre_filter_state_constraints_have_their_defaults_resolved() -> None:
    pod = (
        p(foo="", bar="a")
        .spread("zone", 2, DNS, selector=FOO_SEL, matchLabelKeys=["bar"])
        .spread("node", 1, DNS, selector=BAR_SEL, minDomains=3, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor")
    )
    _, _, state, _ = run_pre_filter(pod, four_nodes(), [])
    zone, node = state_of(state).constraints
    assert zone == common.Constraint(2, "zone", sel({**FOO_SEL, "matchLabels": {"bar": "a"}}), 1, "Honor", "Ignore")
    assert node == common.Constraint(1, "node", sel(BAR_SEL), 3, "Ignore", "Honor")
    assert state_of(state).self_match == [1, 1]


def test_self_match_per_constraint() -> None:
    pod = (
        p(foo="")
        .spread("zone", 1, DNS, selector=FOO_SEL)
        .spread("node", 1, DNS, selector=BAR_SEL)
        .spread("rack", 1, DNS, selector={})
    )
    nodes = [n("node-a", zone="z", node="node-a", rack="r")]
    _, _, state, _ = run_pre_filter(pod, nodes, [])
    assert state_of(state).self_match == [1, 0, 1]
    pod = p(foo="").spread("zone", 1, DNS)
    _, _, state, _ = run_pre_filter(pod, nodes, [])
    assert state_of(state).self_match == [0]  # nil selector matches nothing, not even the pod


@pytest.mark.parametrize(
    ("pod", "objs", "args"),
    [
        pytest.param(p(foo=""), [], LIST, id="skip if not specified"),
        pytest.param(p(foo="").spread("zone", 1, SA, selector=FOO_SEL), [], LIST, id="only soft constraints"),
        pytest.param(
            p(foo="bar"),
            [{"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"baz": "kep"}}}],
            {**LIST, "defaultConstraints": [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS}]},
            id="default constraints and a service that doesn't match",
        ),
        pytest.param(
            p(foo="bar"),
            [{"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": "bar"}}}],
            {**LIST, "defaultConstraints": [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}]},
            id="default soft constraints and a service",
        ),
        pytest.param(
            p(foo="bar"),
            [{"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": "bar"}}}],
            SYSTEM,
            id="system defaults are soft only",
        ),
    ],
)
def test_pre_filter_skip(pod: PodBuilder, objs: list[dict[str, Any]], args: dict[str, Any]) -> None:
    _, _, state, status = run_pre_filter(pod, [zn("node-a", "zone1")], [], args, objs)
    assert status == Status(Code.SKIP)
    assert state.get(PRE_FILTER_KEY) is None


def test_pre_filter_default_constraints_and_a_service() -> None:
    args = {
        **LIST,
        "defaultConstraints": [
            {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
            {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
            {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS},
        ],
    }
    svc = {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": "bar"}}}
    _, _, state, status = run_pre_filter(p(foo="bar", baz="kar"), [], [], args, [svc])
    assert status is None
    got = state_of(state)
    foo_bar = selector_from_map({"foo": "bar"})
    assert got.constraints == [
        common.Constraint(3, "node", foo_bar, 1, "Honor", "Ignore"),
        common.Constraint(5, "rack", foo_bar, 1, "Honor", "Ignore"),
    ]
    assert got.tp_value_to_match_num == [{}, {}]
    assert got.min_counts == [MAX_INT32, MAX_INT32]


def test_pre_filter_pod_constraints_win_over_defaults() -> None:
    args = {**LIST, "defaultConstraints": [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": DNS}]}
    svc = {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": "bar"}}}
    pod = (
        p(foo="bar", baz="tar")
        .spread("zone", 1, DNS, match={"baz": "tar"})
        .spread("planet", 2, SA, match={"fot": "rok"})
    )
    _, _, state, status = run_pre_filter(pod, [], [], args, [svc])
    assert status is None
    assert state_of(state).constraints == [
        common.Constraint(1, "zone", selector_from_map({"baz": "tar"}), 1, "Honor", "Ignore")
    ]


def test_min_domains_no_domain_at_all_means_min_zero() -> None:
    pod = p(foo="").spread("rack", 1, DNS, selector=FOO_SEL)
    _, _, state, _ = run_pre_filter(pod, [n("node-a")], [])
    got = state_of(state)
    assert got.tp_value_to_match_num == [{}]
    assert got.min_counts == [MAX_INT32]
    assert min_match_num(got, 0, 1) == 0
    assert filter_codes(pod, [n("node-a", rack="r1")], []) == {"node-a": S}


# -- AddPod / RemovePod (upstream TestPreFilterStateAddPod / RemovePod) ------------------------------


def _after(
    pod: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder], other: PodBuilder, node: str, delta: int
) -> PreFilterState:
    pl, cache, state, status = run_pre_filter(pod, nodes, pods)
    assert status is None
    before = state_of(state)
    clone = state.clone()
    fn = pl.add_pod if delta > 0 else pl.remove_pod
    assert fn(clone, pod.build(), other.build(), cache.get(node)) is None
    assert state_of(state) is before  # the original state is untouched
    return state_of(clone)


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "added", "node", "counts", "mins"),
    [
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1")],
            [],
            pod_on("p-a1", "node-a", foo=""),
            "node-a",
            [{"node-a": 1, "node-b": 0}],
            [0],
            id="node a and b both impact current min match",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1")],
            [pod_on("p-b1", "node-b", foo="")],
            pod_on("p-a1", "node-a", foo=""),
            "node-a",
            [{"node-a": 1, "node-b": 1}],
            [1],
            id="only node a impacts current min match",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1")],
            [pod_on("p-b1", "node-b", foo="")],
            pod_on("p-a1", "node-a", "ns1", foo=""),
            "node-a",
            [{"node-a": 0, "node-b": 1}],
            [0],
            id="add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        ),
        pytest.param(
            p(foo="").spread("node", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone1")],
            [pod_on("p-b1", "node-b", foo="")],
            pod_on("p-b2", "node-b", foo=""),
            "node-b",
            [{"node-a": 0, "node-b": 2}],
            [0],
            id="add pod on non-critical node won't trigger re-calculation",
        ),
        pytest.param(
            p(foo="").required_terms(term(expr("foo", "NotIn", "bar"))).spread("zone", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1", foo="bar"), zn("node-b", "zone2", foo="")],
            [pod_on("p-a2", "node-a", foo=""), pod_on("p-b1", "node-b", foo="")],
            pod_on("p-a1", "node-a", foo=""),
            "node-a",
            [{"zone2": 1}],
            [1],
            id="add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), zn("node-b", "zone2")],
            [pod_on("p-a1", "node-a", foo="")],
            pod_on("p-b1", "node-b", bar=""),
            "node-b",
            [{"zone1": 1, "zone2": 0}],
            [0],
            id="add a label selector not matched pod when with NodeInclusionPolicy enabled",
        ),
        pytest.param(
            p(foo="")
            .toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
            .spread("zone", 1, DNS, selector=FOO_SEL, nodeTaintsPolicy="Honor"),
            [zn("node-a", "zone1", tainted=True), zn("node-b", "zone2")],
            [pod_on("p-a1", "node-a", foo=""), pod_on("p-b2", "node-b", foo="")],
            pod_on("p-b1", "node-b", foo=""),
            "node-b",
            [{"zone1": 1, "zone2": 2}],
            [1],
            id="add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, DNS, selector=FOO_SEL),
            [zn("node-a", "zone1"), n("node-q", node="node-q")],
            [],
            pod_on("p-q1", "node-q", foo=""),
            "node-q",
            [{"zone1": 0}],
            [0],
            id="node without the topology key is ignored",
        ),
    ],
)
def test_add_pod(
    pod: PodBuilder,
    nodes: list[NodeBuilder],
    pods: list[PodBuilder],
    added: PodBuilder,
    node: str,
    counts: list[dict[str, int]],
    mins: list[int],
) -> None:
    got = _after(pod, nodes, pods, added, node, 1)
    assert got.tp_value_to_match_num == counts
    assert got.min_counts == mins


@pytest.mark.parametrize(
    ("nodes", "pods", "removed", "node", "counts", "mins"),
    [
        pytest.param(
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
            pods_on({"node-a": 1, "node-b": 1, "node-x": 1}),
            pod_on("p-node-a-0", "node-a", foo=""),
            "node-a",
            [{"zone1": 1, "zone2": 1}],
            [1],
            id="one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        ),
        pytest.param(
            four_nodes(),
            pods_on({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}),
            pod_on("p-node-a-0", "node-a", foo=""),
            "node-a",
            [{"zone1": 1, "zone2": 2}],
            [1],
            id="one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        ),
        pytest.param(
            four_nodes(),
            [pod_on("p-a0", "node-a", bar=""), *pods_on({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1})],
            pod_on("p-a0", "node-a", bar=""),
            "node-a",
            [{"zone1": 2, "zone2": 2}],
            [2],
            id="delete an irrelevant pod won't help",
        ),
        pytest.param(
            [zn("node-a", "zone1"), zn("node-b", "zone2")],
            pods_on({"node-a": 1}),
            pod_on("p-node-a-0", "node-a", foo=""),
            "node-a",
            [{"zone1": 0, "zone2": 0}],
            [0],
            id="domains are never removed, a count may drop to zero",
        ),
    ],
)
def test_remove_pod(
    nodes: list[NodeBuilder],
    pods: list[PodBuilder],
    removed: PodBuilder,
    node: str,
    counts: list[dict[str, int]],
    mins: list[int],
) -> None:
    pod = p(foo="").spread("zone", 1, DNS, selector=FOO_SEL)
    got = _after(pod, nodes, pods, removed, node, -1)
    assert got.tp_value_to_match_num == counts
    assert got.min_counts == mins


def test_added_pod_changes_the_filter_verdict_only_on_the_clone() -> None:
    pod = p(foo="").spread("node", 1, DNS, selector=FOO_SEL)
    pl, cache, state, _ = run_pre_filter(pod, [zn("node-a", "zone1"), zn("node-b", "zone1")], [])
    clone = state.clone()
    pl.add_pod(clone, pod.build(), pod_on("x", "node-a", foo="").build(), cache.get("node-a"))
    assert pl.filter(state, pod.build(), cache.get("node-a")) is None
    assert code_of(pl.filter(clone, pod.build(), cache.get("node-a"))) is U


# -- Scoring (upstream TestPodTopologySpreadScore) -------------------------------------------------

SVC_FOO = {"kind": "Service", "metadata": {"name": "svc"}, "spec": {"selector": {"foo": ""}}}


@pytest.mark.parametrize(
    ("pod", "nodes", "failed", "pods", "objs", "want"),
    [
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b")],
            [],
            [],
            [],
            [100, 100],
            id="one constraint on node, no existing pods",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a")],
            [hn("node-b")],
            pods_on({"node-a": 2, "node-b": 1}),
            [],
            [100],
            id="one constraint on node, only one node is candidate",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b")],
            [],
            pods_on({"node-a": 1, "node-b": 1}),
            [],
            [100, 100],
            id="one constraint on node, all nodes have the same number of matching pods",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
            [],
            [20, 60, 100, 0],
            id="one constraint on node, all 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA),
            [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
            [],
            [100, 100, 100, 100],
            id="one constraint on node, null selector",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 2, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
            [],
            [33, 66, 100, 16],
            id="one constraint on node, all 4 nodes are candidates, maxSkew=2",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 3, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
            [],
            pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
            [],
            [44, 66, 77, 100],
            id="one constraint on node, all 4 nodes are candidates, maxSkew=3",
        ),
        pytest.param(
            p(foo=""),
            [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
            [],
            pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
            [SVC_FOO],
            [44, 66, 77, 100],
            id="system defaulting, nodes don't have zone, pods match service",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b"), hn("node-x")],
            [hn("node-y")],
            pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
            [],
            [33, 83, 100],
            id="one constraint on node, 3 out of 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), n("node-b", n="node-b"), hn("node-x")],
            [hn("node-y")],
            pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
            [],
            [16, 0, 100],
            id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, SA, selector=FOO_SEL),
            [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")],
            [hn("node-y", zone="zone2")],
            pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
            [],
            [75, 75, 100],
            id="one constraint on zone, 3 out of 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a", zone="zone1"), hn("node-x", zone="zone2")],
            [hn("node-b", zone="zone1"), hn("node-y", zone="zone2")],
            pods_on({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}),
            [],
            [100, 63],
            id="two Constraints on zone and node, 2 out of 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, SA, selector=FOO_SEL).spread("zone", 1, SA, selector=BAR_SEL),
            [n("node-a", zone="zone1"), n("node-x", zone="zone2")],
            [n("node-b", zone="zone1"), n("node-y", zone="zone2")],
            [
                pod_on("p-a1", "node-a", foo="", bar=""),
                pod_on("p-a2", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", foo="", bar=""),
                pod_on("p-y3", "node-y", foo=""),
            ],
            [],
            [85, 100],
            id="two Constraints on zone, 2 out of 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=BAR_SEL),
            [
                hn("node-a", zone="zone1"),
                hn("node-b", zone="zone1"),
                hn("node-x", zone="zone2"),
                hn("node-y", zone="zone2"),
            ],
            [],
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", bar=""),
            ],
            [],
            [60, 20, 100, 60],
            id="two Constraints on zone and node, with different labelSelectors",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=BAR_SEL),
            [
                hn("node-a", zone="zone1"),
                hn("node-b", zone="zone1"),
                hn("node-x", zone="zone2"),
                hn("node-y", zone="zone2"),
            ],
            [],
            [
                pod_on("p-b1", "node-b", bar=""),
                pod_on("p-x1", "node-x", foo=""),
                pod_on("p-y1", "node-y", foo="", bar=""),
            ],
            [],
            [100, 60, 40, 0],
            id="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        ),
        pytest.param(
            p(foo="", bar="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=BAR_SEL),
            [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")],
            [hn("node-y", zone="zone2")],
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-y", foo=""),
                pod_on("p-y2", "node-y", bar=""),
            ],
            [],
            [50, 25, 100],
            id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b")],
            [],
            [pod_on("p-a1", "node-a", "ns1", foo=""), *pods_on({"node-a": 1, "node-b": 2})],
            [],
            [100, 33],
            id="existing pods in a different namespace do not count",
        ),
        pytest.param(
            p(foo="").spread(HOSTNAME, 1, SA, selector=FOO_SEL),
            [hn("node-a"), hn("node-b")],
            [],
            [pod_on("p-a", "node-a", foo="").terminating(), pod_on("p-b", "node-b", foo="")],
            [],
            [100, 0],
            id="terminating Pods should be excluded",
        ),
        pytest.param(
            p(foo="").spread("node", 2, SA, selector=FOO_SEL, minDomains=10),
            THREE_HOSTS,
            [],
            pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
            [],
            [75, 75, 100],
            id="minDomains has no effect when ScheduleAnyway",
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, SA, selector=FOO_SEL),
            [n("node-a", node="node-a", foo=""), n("node-b", node="node-b", foo=""), n("node-c", node="node-c")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [0, 33, 100],
            id="NodeAffinityPolicy honoed with labelSelectors",
        ),
        pytest.param(
            p(foo="").node_selector({"foo": ""}).spread("node", 1, SA, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            [n("node-a", node="node-a", foo=""), n("node-b", node="node-b", foo=""), n("node-c", node="node-c")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [66, 100, 100],
            id="NodeAffinityPolicy ignored with labelSelectors",
        ),
        pytest.param(
            p(foo="").required_terms(term(expr("foo", "In", ""))).spread("node", 1, SA, selector=FOO_SEL),
            [n("node-a", node="node-a", foo=""), n("node-b", node="node-b", foo=""), n("node-c", node="node-c")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [0, 33, 100],
            id="NodeAffinityPolicy honoed with nodeAffinity",
        ),
        pytest.param(
            p(foo="")
            .required_terms(term(expr("foo", "In", "")))
            .spread("node", 1, SA, selector=FOO_SEL, nodeAffinityPolicy="Ignore"),
            [n("node-a", node="node-a", foo=""), n("node-b", node="node-b", foo=""), n("node-c", node="node-c")],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [66, 100, 100],
            id="NodeAffinityPolicy ignored with nodeAffinity",
        ),
        pytest.param(
            p(foo="").spread("node", 1, SA, selector=FOO_SEL, nodeTaintsPolicy="Honor"),
            [n("node-a", node="node-a"), n("node-b", node="node-b"), n("node-c", node="node-c", tainted=True)],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [0, 33, 100],
            id="NodeTaintsPolicy honored",
        ),
        pytest.param(
            p(foo="").spread("node", 1, SA, selector=FOO_SEL),
            [n("node-a", node="node-a"), n("node-b", node="node-b"), n("node-c", node="node-c", tainted=True)],
            [],
            pods_on({"node-a": 2, "node-b": 1, "node-c": 1}),
            [],
            [66, 100, 100],
            id="NodeTaintsPolicy ignored",
        ),
        pytest.param(
            p(foo="", bar="")
            .spread("zone", 1, SA, selector={}, matchLabelKeys=["foo"])
            .spread(HOSTNAME, 1, SA, selector={}, matchLabelKeys=["bar"]),
            [
                hn("node-a", zone="zone1"),
                hn("node-b", zone="zone1"),
                hn("node-c", zone="zone2"),
                hn("node-d", zone="zone2"),
            ],
            [],
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar=""),
                pod_on("p-y1", "node-c", foo=""),
                pod_on("p-y2", "node-c", bar=""),
            ],
            [],
            [60, 20, 60, 100],
            id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        ),
        pytest.param(
            p(foo="", bar="", baz="")
            .spread("zone", 1, SA, selector=FOO_SEL)
            .spread(HOSTNAME, 1, SA, selector=BAR_SEL, matchLabelKeys=["baz"]),
            [
                hn("node-a", zone="zone1"),
                hn("node-b", zone="zone1"),
                hn("node-c", zone="zone2"),
                hn("node-d", zone="zone2"),
            ],
            [],
            [
                pod_on("p-a1", "node-a", foo=""),
                pod_on("p-b1", "node-b", foo="", bar="", baz=""),
                pod_on("p-c1", "node-c", foo=""),
                pod_on("p-c2", "node-c", bar=""),
                pod_on("p-d3", "node-c", bar="", baz=""),
            ],
            [],
            [60, 20, 60, 100],
            id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        ),
    ],
)
def test_score(
    pod: PodBuilder,
    nodes: list[NodeBuilder],
    failed: list[NodeBuilder],
    pods: list[PodBuilder],
    objs: list[dict[str, Any]],
    want: list[int],
) -> None:
    cache = make_cache([*nodes, *failed], pods, objs)
    pl = plugin(cache, SYSTEM)
    _, normalized = score_nodes(pl, cache, pod.build(), [b.build().name for b in nodes])
    assert normalized == want


# -- PreScore state (upstream TestPreScoreStateEmptyNodes, TestPreScoreSkip) -------------------------


def pre_score_state(
    pod: PodBuilder, nodes: list[NodeBuilder], args: dict[str, Any], objs=(), pods=()
) -> scoring.PreScoreState:
    cache = make_cache(nodes, pods, objs)
    state = CycleState()
    status = plugin(cache, args).pre_score(state, pod.build(), cache.node_infos())
    assert status is None
    return state.read(PRE_SCORE_KEY, scoring.PreScoreState)


RS1 = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "rs1", "namespace": "default"},
    "spec": {"selector": FOO_SEL},
}


def test_pre_score_state_normal_case() -> None:
    pod = p(foo="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=FOO_SEL)
    got = pre_score_state(
        pod, [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")], LIST
    )
    assert got.ignored_nodes == set()
    assert got.topology_value_to_pod_counts == [{"zone1": 0, "zone2": 0}, {}]
    assert got.topology_normalizing_weight == [math.log(4), math.log(5)]


def test_pre_score_state_null_selector() -> None:
    got = pre_score_state(
        p(foo="").spread("zone", 1, SA),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")],
        LIST,
    )
    assert got.constraints[0].selector == NOTHING
    assert got.topology_value_to_pod_counts == [{"zone1": 0, "zone2": 0}]


def test_pre_score_state_node_x_does_not_have_label_zone() -> None:
    pod = p(foo="").spread("zone", 1, SA, selector=FOO_SEL).spread(HOSTNAME, 1, SA, selector=BAR_SEL)
    got = pre_score_state(pod, [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x")], LIST)
    assert got.ignored_nodes == {"node-x"}
    assert got.topology_value_to_pod_counts == [{"zone1": 0}, {}]
    assert got.topology_normalizing_weight == [math.log(3), math.log(4)]


def test_pre_score_state_system_default_constraints_and_a_replicaset() -> None:
    pod = p(foo="tar", baz="sup").owner("ReplicaSet", "rs1")
    nodes = [hn("node-a", **{ZONE: "mars"}), hn("node-b", **{ZONE: "mars"}), hn("node-c"), hn("node-d")]
    got = pre_score_state(pod, nodes, SYSTEM, [RS1])
    assert [(c.topology_key, c.max_skew, c.selector) for c in got.constraints] == [
        (HOSTNAME, 3, sel(FOO_SEL)),
        (ZONE, 5, sel(FOO_SEL)),
    ]
    assert got.ignored_nodes == set()  # nodes without zone are a separate "" zone, not ignored
    assert got.topology_value_to_pod_counts == [{}, {"mars": 0, "": 0}]
    assert got.topology_normalizing_weight == [math.log(6), math.log(4)]


def test_pre_score_state_default_constraints_and_a_replicaset() -> None:
    args = {
        **LIST,
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
            {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
            {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},
        ],
    }
    pod = p(foo="tar", baz="sup").owner("ReplicaSet", "rs1")
    got = pre_score_state(pod, [hn("node-a", rack="rack1", planet="mars")], args, [RS1])
    assert [(c.topology_key, c.max_skew, c.selector) for c in got.constraints] == [
        (HOSTNAME, 1, sel(FOO_SEL)),
        ("planet", 2, sel(FOO_SEL)),
    ]
    assert got.topology_value_to_pod_counts == [{}, {"mars": 0}]
    assert got.topology_normalizing_weight == [math.log(3), math.log(3)]


def test_pre_score_state_default_constraints_and_a_replicaset_but_pod_has_constraints() -> None:
    args = {**LIST, "defaultConstraints": [{"maxSkew": 2, "topologyKey": "galaxy", "whenUnsatisfiable": SA}]}
    pod = (
        p(foo="bar", baz="sup")
        .owner("ReplicaSet", "rs1")
        .spread("zone", 1, DNS, selector=BAR_SEL)
        .spread("planet", 2, SA, match={"baz": "sup"})
    )
    got = pre_score_state(pod, [n("node-a", planet="mars", galaxy="andromeda")], args, [RS1])
    assert [(c.topology_key, c.max_skew, c.selector) for c in got.constraints] == [
        ("planet", 2, selector_from_map({"baz": "sup"}))
    ]
    assert got.topology_value_to_pod_counts == [{"mars": 0}]


@pytest.mark.parametrize(
    ("pod", "nodes", "objs", "args"),
    [
        pytest.param(
            p(), [hn("node-a"), hn("node-b")], [], LIST, id="the pod doesn't have soft topology spread Constraints"
        ),
        pytest.param(
            p(foo="bar", baz="sup").owner("ReplicaSet", "rs2"),
            [n("node-a", planet="mars")],
            [RS1],
            {**LIST, "defaultConstraints": [{"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]},
            id="default constraints and a replicaset that doesn't match",
        ),
        pytest.param(p(foo=""), [hn("node-a"), hn("node-b")], [], SYSTEM, id="system defaults without any selector"),
        pytest.param(p(foo="").spread("zone", 1, DNS, selector=FOO_SEL), [hn("node-a")], [], SYSTEM, id="only hard"),
        pytest.param(
            p(foo="").owner("ReplicaSet", "rs1"), [hn("node-a")], [RS1], LIST, id="list-defaulting-empty-list"
        ),
    ],
)
def test_pre_score_skip(
    pod: PodBuilder, nodes: list[NodeBuilder], objs: list[dict[str, Any]], args: dict[str, Any]
) -> None:
    cache = make_cache(nodes, [], objs)
    state = CycleState()
    assert plugin(cache, args).pre_score(state, pod.build(), cache.node_infos()) == Status(Code.SKIP)
    assert state.get(PRE_SCORE_KEY) is None


def test_pre_score_skips_with_no_nodes() -> None:
    cache = make_cache()
    pod = p(foo="").spread("zone", 1, SA, selector=FOO_SEL).build()
    assert plugin(cache, SYSTEM).pre_score(CycleState(), pod, []) == Status(Code.SKIP)


# -- named formulas ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 2, 5, 100])
def test_topology_normalizing_weight(size: int) -> None:
    assert scoring.topology_normalizing_weight(size) == math.log(size + 2)


@pytest.mark.parametrize(
    ("count", "max_skew", "weight", "expected"),
    [
        pytest.param(0, 1, 1.5, 0.0, id="zero"),
        pytest.param(2, 1, math.log(4), 2 * math.log(4), id="count-times-weight"),
        pytest.param(0, 3, 1.0, 2.0, id="tolerance-max-skew-minus-one"),
        pytest.param(1, 5, math.log(5), math.log(5) + 4, id="both"),
        pytest.param(2, 5, 1.0, 6.0, id="unit-weight"),
    ],
)
def test_score_for_count(count: int, max_skew: int, weight: float, expected: float) -> None:
    assert scoring.score_for_count(count, max_skew, weight) == expected


def test_score_rounds_half_away_from_zero() -> None:
    # Two hostname constraints whose sum is exactly 2.5 must round to 3 (Python's round gives 2).
    state = scoring.PreScoreState(
        [
            common.Constraint(1, "k1", EVERYTHING, 1, "Honor", "Ignore"),
            common.Constraint(1, "k2", EVERYTHING, 1, "Honor", "Ignore"),
        ],
        topology_value_to_pod_counts=[{"a": 1}, {"b": 1}],
        topology_normalizing_weight=[1.25, 1.25],
        per_node_counts=[None, None],
    )
    cache = make_cache([n("x", k1="a", k2="b")])
    assert scoring.score(state, cache.get("x")) == 3


def test_normalize_ignored_nodes_and_all_zero() -> None:
    cache = make_cache([n("a"), n("b"), n("c")])
    infos = list(cache.node_infos())
    state = scoring.PreScoreState([], ignored_nodes={"c"})
    scores = [0, 0, 0]
    scoring.normalize(state, scores, infos)
    assert scores == [100, 100, 0]
    scores = [3, 1, 0]
    scoring.normalize(state, scores, infos)
    assert scores == [33, 100, 0]  # 100 * (max + min - s) / max over non-ignored nodes


@pytest.mark.parametrize("seed", range(40))
def test_the_comprehensions_without_ignored_nodes_score_and_normalize_as_the_general_loops(seed: int) -> None:
    """``score_nodes`` and ``normalize`` take a comprehension when no node is ignored (and, for
    Score, one hostname constraint). An ignored name that is no scored node sends the same input
    down the general loops: any difference in a count, a float step, the rounding, a node without
    the key or the all-zero case turns this red."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 12))]
    cache = make_cache([n(name, hostname=rng.random() >= 0.2) for name in names])
    infos = list(cache.node_infos())
    counts = {name: rng.choice([0, 0, 1, 2, 7]) for name in names if rng.random() < 0.7}
    constraint = common.Constraint(rng.randint(1, 4), HOSTNAME, EVERYTHING, 1, "Honor", "Ignore")
    weight = scoring.topology_normalizing_weight(rng.randint(0, 40))

    def state(ignored: set[str]) -> scoring.PreScoreState:
        return scoring.PreScoreState(
            [constraint],
            ignored_nodes=ignored,
            topology_value_to_pod_counts=[{}],
            topology_normalizing_weight=[weight],
            per_node_counts=[counts if rng.random() < 0.9 else None],
        )

    fast, general = state(set()), state({"no-such-node"})
    general.per_node_counts = fast.per_node_counts
    raw = scoring.score_nodes(fast, infos)
    assert raw == scoring.score_nodes(general, infos)
    if rng.random() < 0.2:
        raw = [0] * len(raw)
    by_fast, by_general = list(raw), list(raw)
    scoring.normalize(fast, by_fast, infos)
    scoring.normalize(general, by_general, infos)
    assert by_fast == by_general


# -- default selector (Services, RC, RS, StatefulSet) ----------------------------------------------


def _svc(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _owned(kind: str, name: str, selector: Any, api: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


@pytest.mark.parametrize(
    ("pod", "objs", "expected"),
    [
        pytest.param(p(app="web", tier="fe"), [], EVERYTHING, id="nothing-selects"),
        pytest.param(
            p(app="web", tier="fe"),
            [_svc("s1", {"app": "web"}), _svc("s2", {"tier": "fe"})],
            selector_from_map({"app": "web", "tier": "fe"}),
            id="union-of-matching-services",
        ),
        pytest.param(p(app="web"), [_svc("s1", {"app": "db"})], EVERYTHING, id="service-not-matching"),
        pytest.param(p(app="web"), [_svc("s1", None)], EVERYTHING, id="service-without-selector-selects-nothing"),
        pytest.param(p(app="web"), [_svc("s1", {"app": "web"}, "other")], EVERYTHING, id="service-other-namespace"),
        pytest.param(
            p(app="web").owner("ReplicationController", "rc1", api_version="v1"),
            [_owned("ReplicationController", "rc1", {"app": "web", "v": "1"}, "v1")],
            selector_from_map({"app": "web", "v": "1"}),
            id="replication-controller",
        ),
        pytest.param(
            p(app="web").owner("ReplicaSet", "rs1"),
            [_svc("s1", {"app": "web"}), _owned("ReplicaSet", "rs1", {"matchExpressions": [expr("app", "In", "web")]})],
            sel({"matchLabels": {"app": "web"}, "matchExpressions": [expr("app", "In", "web")]}),
            id="replica-set-anded-with-services",
        ),
        pytest.param(
            p(app="web").owner("StatefulSet", "ss1"),
            [_owned("StatefulSet", "ss1", {"matchLabels": {"app": "web"}})],
            selector_from_map({"app": "web"}),
            id="stateful-set",
        ),
        pytest.param(
            p(app="web").owner("ReplicaSet", "rs1", controller=False),
            [_owned("ReplicaSet", "rs1", {"matchLabels": {"app": "web"}})],
            EVERYTHING,
            id="non-controller-owner-ignored",
        ),
        pytest.param(
            p(app="web").owner("ReplicaSet", "rs1", api_version="extensions/v1beta1"),
            [_owned("ReplicaSet", "rs1", {"matchLabels": {"app": "web"}})],
            EVERYTHING,
            id="other-api-version-ignored",
        ),
        pytest.param(
            p(app="web").owner("Job", "j1", api_version="batch/v1"),
            [_owned("ReplicaSet", "j1", {"matchLabels": {"app": "web"}})],
            EVERYTHING,
            id="job-owner-contributes-nothing",
        ),
        pytest.param(p(app="web").owner("ReplicaSet", "missing"), [], EVERYTHING, id="owner-not-found"),
        pytest.param(
            p(app="web").owner("ReplicaSet", "rs1"),
            [_owned("ReplicaSet", "rs1", None)],
            EVERYTHING,
            id="replica-set-with-nil-selector-adds-nothing",
        ),
    ],
)
def test_default_selector(pod: PodBuilder, objs: list[dict[str, Any]], expected: Selector) -> None:
    cache = make_cache([], [], objs)
    assert common.default_selector(pod.build(), cache) == expected


@pytest.mark.parametrize(
    "owner_objects",
    [
        pytest.param(("Service", None), id="service"),
        pytest.param(("ReplicationController", "v1"), id="replication-controller"),
        pytest.param(("ReplicaSet", "apps/v1"), id="replica-set"),
        pytest.param(("StatefulSet", "apps/v1"), id="stateful-set"),
    ],
)
def test_system_defaults_from_each_selecting_kind_through_the_pipeline(owner_objects: tuple[str, str | None]) -> None:
    kind, api = owner_objects
    nodes = [make_node("a").zone("z1"), make_node("b").zone("z2")]
    pods = [make_pod("x").labels(FOO).node("a")]
    pending = incoming()
    if kind == "Service":
        obj = _svc("svc", FOO)
    else:
        assert api is not None
        selector: Any = FOO if kind == "ReplicationController" else {"matchLabels": FOO}
        obj = _owned(kind, "owner", selector, api)
        pending = pending.owner(kind, "owner", api_version=api)
    r = schedule(nodes, pods, pending, objects=[obj])
    # hostname (maxSkew 3): 1·ln 4 + 2 and 0 + 2; zone (maxSkew 5): 1·ln 4 + 4 and 0 + 4
    assert r.raw(PTS) == {"a": 9, "b": 6}
    assert r.normalized(PTS) == {"a": 66, "b": 100}
    assert r.host == "b"


# -- List defaulting via pluginConfig ----------------------------------------------------------------


def test_list_defaulting_with_a_do_not_schedule_default_filters() -> None:
    cfg = config_with(
        [
            {
                "name": PTS,
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": DNS}],
                },
            }
        ]
    )
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = [make_pod("x").labels(FOO).node("a"), make_pod("y").labels(FOO).node("b")]
    r = schedule(nodes, pods, incoming(), cfg, objects=[_svc("svc", FOO)])
    assert r.feasible == {"c"}
    assert r.reasons() == {"a": (SPREAD, U, PTS), "b": (SPREAD, U, PTS)}
    # Without a selecting object the pod gets no default constraints at all.
    r = schedule(nodes, pods, incoming(), cfg)
    assert r.feasible == {"a", "b", "c"}
    assert PTS in r.attempt.state.skip_filter_plugins
    assert PTS in r.attempt.state.skip_score_plugins


def test_list_defaulting_requires_all_topologies_for_scoring() -> None:
    cfg = config_with(
        [
            {
                "name": PTS,
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA}],
                },
            }
        ]
    )
    nodes = [make_node("a").zone("z1"), make_node("b").zone("z2"), make_node("c")]
    pods = [make_pod("x").labels(FOO).node("a")]
    r = schedule(nodes, pods, incoming(), cfg, objects=[_svc("svc", FOO)])
    assert r.raw(PTS) == {"a": 1, "b": 0, "c": 0}
    assert r.normalized(PTS) == {"a": 0, "b": 100, "c": 0}  # c lacks the zone: ignored, not a "" zone


def test_list_defaulting_with_empty_list_means_no_defaults() -> None:
    cfg = config_with([{"name": PTS, "args": {"defaultingType": "List"}}])
    r = schedule([make_node("a"), make_node("b")], [], incoming(), cfg, objects=[_svc("svc", FOO)])
    assert PTS in r.attempt.state.skip_score_plugins


# -- pipeline-level rules ----------------------------------------------------------------------------


def test_nodes_excluded_by_policy_still_get_the_other_plugins_reason() -> None:
    nodes = [make_node("a"), make_node("b").taint("dedicated", "x")]
    pod = incoming().spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
    r = schedule(nodes, [make_pod("q").labels(FOO).node("a")], pod)
    assert r.reasons() == {"b": (UNTOLERATED, UU, TT)}
    assert r.host == "a"  # b does not count as an empty domain, so a (1+1-1=1) fits


def test_pods_of_other_schedulers_and_assumed_pods_count() -> None:
    nodes = [make_node("a"), make_node("b")]
    other = make_pod("foreign").labels(FOO).node("a").scheduler("default-scheduler")
    pod = incoming().spread(HOSTNAME, 1, match=FOO)
    assert schedule(nodes, [other], pod).feasible == {"b"}
    cache = make_cache(nodes)
    cache.assume_pod(make_pod("assumed").labels(FOO).build(), "b")
    attempt = SchedulingAlgorithm(random.Random(0)).schedule_pod(framework(), cache, pod.build())
    assert attempt.feasible == ["a"]


def test_terminal_pods_are_not_in_the_cache() -> None:
    nodes = [make_node("n1"), make_node("n2")]
    pods = [make_pod("x").labels(FOO).node("n1").phase("Succeeded")]
    assert schedule(nodes, pods, incoming().spread(HOSTNAME, 1, match=FOO)).feasible == {"n1", "n2"}


def test_service_selector_drives_system_default_spreading() -> None:
    nodes = [make_node("n1").zone("a"), make_node("n2").zone("b")]
    pods = [make_pod(f"w{i}").label("app", "web").node("n1") for i in range(3)]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    r = schedule(nodes, pods, make_pod("new").label("app", "web"), objects=[svc])
    assert r.host == "n2"
    assert r.normalized(PTS)["n2"] == 100
    no_svc = schedule(nodes, pods, make_pod("new").label("app", "web"))
    assert PTS not in no_svc.scored_plugins


def test_list_defaulting_with_a_hard_default_constraint() -> None:
    """A hard hostname default, from a profile without apiVersion/kind, and a Service selecting one pod."""
    config = {
        "profiles": [
            {
                "schedulerName": "spread-scheduler",
                "pluginConfig": [
                    {
                        "name": PTS,
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": DNS}],
                        },
                    }
                ],
            }
        ]
    }
    nodes = [make_node("n1"), make_node("n2")]
    pods = [make_pod("w").label("app", "web").node("n1")]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    r = schedule(nodes, pods, make_pod("new").label("app", "web"), objects=[svc], config=config)
    assert r.feasible == {"n2"}


def test_soft_and_hard_constraints_never_mix() -> None:
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = [*pods_on({"a": 2}, FOO)]
    pod = incoming().spread(HOSTNAME, 1, SA, match=FOO)
    r = schedule(nodes, pods, pod)
    assert r.feasible == {"a", "b", "c"}  # soft only: no filtering
    assert hosts_over_seeds(nodes, pods, pod) == {"b", "c"}


def test_selector_merged_by_api_with_an_old_label_value_selects_nothing() -> None:
    # Quirk 4.2: the API server merged ``hash In [v1]`` at creation, the pod was relabelled to v2, and
    # the scheduler merges ``hash = v2`` again: the constraint then selects no pod, not even itself.
    merged = {"matchLabels": {"app": "web"}, "matchExpressions": [expr("hash", "In", "v1")]}
    pod = p(app="web", hash="v2").spread("node", 1, DNS, selector=merged, matchLabelKeys=["hash"])
    nodes = [n("node-a", node="node-a"), n("node-b", node="node-b")]
    pods = [pod_on("x1", "node-a", app="web", hash="v1"), pod_on("x2", "node-a", app="web", hash="v2")]
    _, _, state, _ = run_pre_filter(pod, nodes, pods)
    got = state_of(state)
    assert got.tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]
    assert got.self_match == [0]


def test_domains_without_a_feasible_node_are_neither_counted_nor_sized() -> None:
    pod = p(foo="").spread("zone", 1, SA, selector=FOO_SEL)
    nodes = [n("a", zone="z1"), n("b", zone="z2")]
    failed = [n("c", zone="z3")]
    pods = pods_on({"a": 1, "c": 5})
    got = pre_score_state(pod, [*nodes, *failed], LIST, pods=pods)
    assert got.topology_value_to_pod_counts == [{"z1": 1, "z2": 0, "z3": 5}]  # all three feasible here
    cache = make_cache([*nodes, *failed], pods)
    state = CycleState()
    pl = plugin(cache, LIST)
    assert pl.pre_score(state, pod.build(), [cache.get("a"), cache.get("b")]) is None
    only_feasible = state.read(PRE_SCORE_KEY, scoring.PreScoreState)
    assert only_feasible.topology_value_to_pod_counts == [{"z1": 1, "z2": 0}]
    assert only_feasible.topology_normalizing_weight == [math.log(4)]
