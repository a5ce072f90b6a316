"""DefaultPreemption's decision: upstream v1.35.4's ``default_preemption_test.go`` tables, case names kept.

Each case runs the plugin on a real Framework (NodeResourcesFit and the plugins the upstream case
registers) over a real Cache, with a recording ``PreemptionSink`` on the handle (without one, the
live scheduler's case, the plugin decides nothing: ``test_without_a_sink_it_decides_nothing``).
Start times are upstream's ``time.Unix(0, N)``, spelled in microseconds (the order is what counts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import NodeName, Pod, PodKey
from scheduler.features import DEFAULT_FEATURES, Features, features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import CLEAR_NOMINATED_NODE, Handle, NominatingInfo, NominatingMode, Plugin
from scheduler.framework.preemption import Candidate, Victims, more_important_order
from scheduler.framework.preemption import preemption as preemption_module
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeToStatus, PreFilterResult
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption, parse_args
from scheduler.plugins.registry import REGISTRY
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import make_cache

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
FIT = "NodeResourcesFit"
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
U = Code.UNSCHEDULABLE


def epoch(n: int) -> str:
    """Upstream's ``epochTimeN`` (``time.Unix(0, N)``)."""
    return f"1970-01-01T00:00:00.{n:06d}+00:00"


def pod(name: str, priority: int | None = None, node: str = "", req: Mapping[str, str] | None = None) -> PodBuilder:
    b = make_pod(name)
    if priority is not None:
        b.priority(priority)
    if node:
        b.node(node)
    if req:
        b.requests(**req)
    return b


def node(name: str, capacity: Mapping[str, str] | None = None, **labels: str) -> Any:
    """``st.MakeNode().Capacity(res)``: pods default to 32, the rest as given (absent: 0)."""
    b = make_node(name).capacity(**{"pods": "32", **(capacity or {})})
    for key, value in labels.items():
        b.label(key, value)
    return b


def pdb(
    labels: Mapping[str, str], allowed: int = 0, disrupted: Sequence[str] = (), name: str = "pdb"
) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(labels)}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": dict.fromkeys(disrupted, "2026-01-01T00:00:00Z")},
    }


class RecordingSink:
    """The PreemptionSink of the tests: what ``prepareCandidate`` would have been asked to do."""

    def __init__(self) -> None:
        self.prepared: list[tuple[str, str, list[str]]] = []

    def prepare_candidate(self, preemptor: Pod, node_name: str, victims: Sequence[Pod]) -> Status | None:
        self.prepared.append((preemptor.name, node_name, [v.name for v in victims]))
        return None


class ErrorOnLabelPlugin:
    """Upstream's ``TestPlugin``: AddPod/RemovePod fail on nodes labelled ``error=true``."""

    NAME = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.labels.get("error") == "true":
            return Status.as_error(f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.labels.get("error") == "true":
            return Status.as_error(f"failed to remove pod: {pod.name}")
        return None


class FakeFilter:
    """Upstream's ``FakeFilterPlugin``: counts its calls, answers ``code`` (Success: passes)."""

    NAME = "FakeFilter"

    def __init__(self, code: Code = Code.SUCCESS) -> None:
        self.code = code
        self.calls = 0

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls += 1
        return None if self.code is Code.SUCCESS else Status(self.code, ("injecting failure for pod test-pod",))


class FalseFilter:
    NAME = "FalseFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status(U, ("injecting failure for pod test-pod",))


class TrueFilter:
    NAME = "TrueFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


class MatchFilter:
    NAME = "MatchFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None if pod.name == node_info.name else Status(U, ("injecting failure for pod test-pod",))


def setup(
    nodes: Sequence[Any],
    pods: Sequence[PodBuilder],
    *,
    plugins: Sequence[tuple[str, Sequence[str]]] = ((FIT, ("preFilter", "filter")),),
    extra: Sequence[Plugin] = (),
    pdbs: Sequence[Mapping[str, Any]] = (),
    args: Mapping[str, Any] | None = None,
    sink: RecordingSink | None = None,
    features: Features = DEFAULT_FEATURES,
) -> tuple[Framework, DefaultPreemption]:
    """A profile of ``extra`` (filters first, in order) and registry plugins at the given points."""
    cache = make_cache(nodes, pods)
    for obj in pdbs:
        cache.upsert_pdb(PodDisruptionBudget.from_dict(obj))
    handle = Handle(snapshot=cache, preemption=sink if sink is not None else RecordingSink())
    built: dict[str, Plugin] = {}
    points: dict[str, list[str]] = {"preFilter": [], "filter": []}
    for plugin in extra:
        built[plugin.NAME] = plugin
        points["preFilter" if isinstance(plugin, ErrorOnLabelPlugin) else "filter"].append(plugin.NAME)
    for name, at in plugins:
        built[name] = REGISTRY[name]({}, handle, DEFAULT_FEATURES)
        for point in at:
            points[point].append(name)
    preemption = DefaultPreemption(args or {}, handle, features)
    built[preemption.NAME] = preemption
    points["postFilter"] = [preemption.NAME]
    fwk = Framework("p", built, points, {}, handle)
    preemption.clock = lambda: 1_000_000_000.0
    return fwk, preemption


def pre_filtered(fwk: Framework, pending: Pod) -> CycleState:
    state = CycleState()
    nodes = fwk.handle.current().node_infos()
    _, status, _ = fwk.run_pre_filter_plugins(state, pending, list(nodes))
    assert status is None, status
    return state


def statuses(codes: Mapping[str, Code], absent: Code = UU) -> NodeToStatus:
    return NodeToStatus({NodeName(n): Status(c) for n, c in codes.items()}, Status(absent))


# -- TestPostFilter ---------------------------------------------------------------------------------

NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING = "test.kubernetes.io/is-violating-pdb"


POST_FILTER_CASES = [
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        {"node1": U},
        (),
        NominatingInfo("node1", NominatingMode.OVERRIDE),
        Status(Code.SUCCESS),
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        pod("p"),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        {"node1": U},
        (),
        CLEAR_NOMINATED_NODE,
        Status(U, ("preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",)),
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        {"node1": UU},
        (),
        CLEAR_NOMINATED_NODE,
        Status(U, ("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",)),
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        {},
        (),
        CLEAR_NOMINATED_NODE,
        Status(U, ("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",)),
        id="preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", MID),
        [pod("p1", HIGH, "node1"), pod("p2", LOW, "node2")],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        (),
        NominatingInfo("node2", NominatingMode.OVERRIDE),
        Status(Code.SUCCESS),
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        pod("p", VERY_HIGH),
        [
            pod("p1", HIGH, "node1").label(VIOLATING, "non-violating"),
            pod("p2", LOW, "node1").label(VIOLATING, "violating"),
            pod("p3", MID, "node2").label(VIOLATING, "violating"),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        [
            pdb({VIOLATING: "violating"}, 0, name="violating-pdb"),
            pdb({VIOLATING: "non-violating"}, 2**31 - 1, name="non-violating-pdb"),
        ],
        NominatingInfo("node2", NominatingMode.OVERRIDE),
        Status(Code.SUCCESS),
        id="pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        {"node1": U, "node2": U},
        (),
        CLEAR_NOMINATED_NODE,
        Status(U, ("preemption: 0/2 nodes are available: 2 Insufficient cpu.",)),
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", HIGH, "node1"), pod("p2", node="node2"), pod("p3", HIGH, "node3")],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        (),
        CLEAR_NOMINATED_NODE,
        Status(
            U,
            (
                "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
                "2 No preemption victims found for incoming pod.",
            ),
        ),
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES), node("node3", NODE_RES), node("node4", NODE_RES)],
        {"node1": U, "node2": U, "node4": UU},
        (),
        CLEAR_NOMINATED_NODE,
        Status(
            U,
            ("preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",),
        ),
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't "
        "have enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1")],
        [node("node1", LARGE, error="true")],
        {"node1": U},
        (),
        None,
        Status.as_error('preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'),
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2", req=MEDIUM)],
        [node("node1", LARGE, error="true"), node("node2", LARGE)],
        {"node1": U, "node2": U},
        (),
        NominatingInfo("node2", NominatingMode.OVERRIDE),
        Status(Code.SUCCESS),
        id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(("pending", "pods", "nodes", "codes", "pdbs", "want_result", "want_status"), POST_FILTER_CASES)
def test_post_filter(
    pending: PodBuilder,
    pods: list[PodBuilder],
    nodes: list[Any],
    codes: dict[str, Code],
    pdbs: list[dict[str, Any]],
    want_result: NominatingInfo | None,
    want_status: Status,
) -> None:
    """Upstream's TestPostFilter (the extender case is not ported: our extenders run no preemption)."""
    fwk, plugin = setup(nodes, pods, extra=[ErrorOnLabelPlugin()], pdbs=pdbs)
    p = pending.build()
    result, status = plugin.post_filter(pre_filtered(fwk, p), p, statuses(codes))
    assert (result, status) == (want_result, want_status)


# -- TestDryRunPreemption ------------------------------------------------------------------------------


def go_offsets(*values: int) -> Callable[[int], int]:
    """Upstream's ``rand.New(rand.NewSource(4)).Int31n`` as its comments read it: the offsets in turn."""
    it: Iterator[int] = iter(values)
    return lambda n: next(it) % n


FIT_PF = ((FIT, ("preFilter", "filter")),)
PTS = ((("PodTopologySpread", ("preFilter", "filter"))),)
IPA = ((FIT, ("preFilter", "filter")), ("InterPodAffinity", ("preFilter", "filter")))


def cand(node_name: str, *victims: str, violations: int = 0) -> tuple[str, list[str], int]:
    return node_name, sorted(victims), violations


EXISTS_FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


DRY_RUN_CASES = [
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH)], [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        (), [FalseFilter()], Code.SUCCESS, (), None, [[]], [2],
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH)], [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        (), [TrueFilter()], U, (), None, [[]], [2],
        id="a pod that fits with no preemption",
    ),
    pytest.param(
        ["node1", "node2"], [pod("node1", HIGH)], [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        (), [MatchFilter()], U, (), None, [[]], [2],
        id="a pod that fits on one node with no preemption",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=LARGE)],
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        FIT_PF, [], Code.SUCCESS, (), None, [[cand("node1", "p1"), cand("node2", "p2")]], [4],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", LOW, req=LARGE)],
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        FIT_PF, [], Code.SUCCESS, (), None, [[]], [0],
        id="a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=LARGE)],
        [pod("p1.1", LOW, "node1", SMALL), pod("p1.2", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        FIT_PF, [], Code.SUCCESS, (), None, [[cand("node1", "p1.2"), cand("node2", "p2")]], [5],
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=LARGE)],
        [
            pod("p1.1", MID, "node1", SMALL), pod("p1.2", LOW, "node1", SMALL), pod("p1.3", MID, "node1", MEDIUM),
            pod("p1.4", HIGH, "node1", SMALL), pod("p2", HIGH, "node2", LARGE),
        ],
        FIT_PF, [], Code.SUCCESS, (), None, [[cand("node1", "p1.2", "p1.3")]], [4],
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=LARGE)],
        [
            pod("p1.1", LOW, "node1", SMALL).start_time(epoch(5)),
            pod("p1.2", LOW, "node1", SMALL).start_time(epoch(4)),
            pod("p1.3", MID, "node1", MEDIUM).start_time(epoch(3)),
            pod("p1.4", HIGH, "node1", SMALL).start_time(epoch(2)),
            pod("p2", HIGH, "node2", LARGE).start_time(epoch(1)),
        ],
        FIT_PF, [], Code.SUCCESS, (), None, [[cand("node1", "p1.1", "p1.3")]], [4],
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=SMALL).label("foo")],
        [
            pod("p1.1", LOW, "node1", SMALL).label("foo").pod_affinity(
                "hostname", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, anti=True
            ),
            pod("p1.2", MID, "node1", SMALL), pod("p1.3", HIGH, "node1", SMALL), pod("p2", HIGH, "node2", SMALL),
        ],
        IPA, [], Code.SUCCESS, (), None, [[cand("node1", "p1.1")]], [3],
        id="pod with anti-affinity is preempted",
    ),
    pytest.param(
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [pod("p", HIGH).label("foo").spread("zone", selector=EXISTS_FOO).spread("hostname", selector=EXISTS_FOO)],
        [
            pod("pod-a1", MID, "node-a").label("foo"), pod("pod-a2", LOW, "node-a").label("foo"),
            pod("pod-b1", LOW, "node-b").label("foo"), pod("pod-x1", HIGH, "node-x").label("foo"),
            pod("pod-x2", HIGH, "node-x").label("foo"),
        ],
        PTS, [], Code.SUCCESS, (), None, [[cand("node-a", "pod-a2"), cand("node-b", "pod-b1")]], [5],
        id="preemption to resolve pod topology spread filter failure",
    ),
    pytest.param(
        ["node1", "node2"], [pod("p", HIGH, req=LARGE)],
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        FIT_PF, [], U, (), None, [[]], [2],
        id="get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        ["node1"], [pod("p", HIGH, req=VERY_LARGE)],
        [pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"), pod("p1.2", MID, "node1", MEDIUM).label("app", "foo")],
        FIT_PF, [], Code.SUCCESS, [pdb({"app": "foo"}, 1)], None,
        [[cand("node1", "p1.1", "p1.2", violations=1)]], [3],
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        ["node1"], [pod("p", HIGH, req=VERY_LARGE)],
        [pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"), pod("p1.2", MID, "node1", MEDIUM).label("app", "foo")],
        FIT_PF, [], Code.SUCCESS, [pdb({"app": "foo"}, 1, ["p2"])], None,
        [[cand("node1", "p1.1", "p1.2", violations=1)]], [3],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong "
        "to DisruptedPods",
    ),
    pytest.param(
        ["node1"], [pod("p", HIGH, req=VERY_LARGE)],
        [pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"), pod("p1.2", MID, "node1", MEDIUM).label("app", "foo")],
        FIT_PF, [], Code.SUCCESS, [pdb({"app": "foo"}, 1, ["p1.2"])], None,
        [[cand("node1", "p1.1", "p1.2", violations=0)]], [3],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
    ),
    pytest.param(
        ["node1"], [pod("p", HIGH, req=VERY_LARGE)],
        [
            pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"),
            pod("p1.2", MID, "node1", MEDIUM).label("app", "foo"),
            pod("p1.3", MID, "node1", MEDIUM).label("app", "foo"),
        ],
        FIT_PF, [], Code.SUCCESS, [pdb({"app": "foo"}, 1, ["p1.3"])], None,
        [[cand("node1", "p1.1", "p1.2", "p1.3", violations=1)]], [4],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs "
        "to DisruptedPods is treated as 'nonViolating'",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4", "node5"], [pod("p", HIGH, req=LARGE)],
        [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
        FIT_PF, [], Code.SUCCESS, (), {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [[cand("node1", "p1"), cand("node5", "p5")]], [4],
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4", "node5"], [pod("p", HIGH, req=LARGE)],
        [
            pod("p1", MID, "node1", LARGE), pod("p2", VERY_HIGH, "node2", LARGE), pod("p3", MID, "node3", LARGE),
            pod("p4", MID, "node4", LARGE), pod("p5", VERY_HIGH, "node5", LARGE),
        ],
        FIT_PF, [], Code.SUCCESS, (), {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [[cand("node1", "p1"), cand("node3", "p3")]], [4],
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4", "node5"],
        [pod("tp1", HIGH, req=LARGE), pod("tp2", HIGH, req=LARGE), pod("tp3", HIGH, req=LARGE)],
        [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
        FIT_PF, [], Code.SUCCESS, (), {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [
            [cand("node1", "p1"), cand("node5", "p5")],
            [cand("node2", "p2"), cand("node3", "p3")],
            [cand("node4", "p4"), cand("node5", "p5")],
        ],
        [4, 4, 4],
        id="preemption offset across multiple scheduling cycles and wrap around",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4", "node5"], [pod("p", HIGH, req=LARGE)],
        [
            pod("p1", MID, "node1", LARGE).label("app", "foo"), pod("p2", MID, "node2", LARGE).label("app", "foo"),
            pod("p3", MID, "node3", LARGE), pod("p4", MID, "node4", LARGE),
            pod("p5", MID, "node5", LARGE).label("app", "foo"),
        ],
        FIT_PF, [], Code.SUCCESS, [pdb({"app": "foo"}, 0)],
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        [[cand("node1", "p1", violations=1), cand("node3", "p3"), cand("node5", "p5", violations=1)]], [8],
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("node_names", "test_pods", "init_pods", "plugins", "filters", "fake_code", "pdbs", "args", "expected", "calls"),
    DRY_RUN_CASES,
)
def test_dry_run_preemption(
    node_names: list[str],
    test_pods: list[PodBuilder],
    init_pods: list[PodBuilder],
    plugins: Sequence[tuple[str, Sequence[str]]],
    filters: list[Plugin],
    fake_code: Code,
    pdbs: list[dict[str, Any]],
    args: dict[str, Any] | None,
    expected: list[list[tuple[str, list[str], int]]],
    calls: list[int],
) -> None:
    """Upstream's TestDryRunPreemption with parallelism 1: candidates (sorted by node, victims by name)
    and how often the FakeFilter (first of the profile) was called per cycle."""
    nodes = []
    for spec in node_names:
        parts = spec.split("/")
        nodes.append(node(parts[0], VERY_LARGE, **dict(zip(("hostname", "zone", "region"), parts, strict=False))))
    fake = FakeFilter(fake_code)
    fwk, plugin = setup(nodes, init_pods, plugins=plugins, extra=[fake, *filters], pdbs=pdbs, args=args)
    plugin.offset_rand = go_offsets(4, 1, 3)
    cache = fwk.handle.current()
    infos = sorted(cache.node_infos(), key=lambda info: info.name)
    budgets = [PodDisruptionBudget.from_dict(p) for p in pdbs]
    for cycle, test_pod in enumerate(test_pods):
        p = test_pod.build()
        state = pre_filtered(fwk, p)
        before = fake.calls
        offset, num = plugin.get_offset_and_num_candidates(len(infos))
        got, _, _ = plugin.evaluator.dry_run_preemption(state, p, infos, budgets, offset, num)
        summary = sorted((c.name, sorted(v.name for v in c.victims.pods), c.victims.num_pdb_violations) for c in got)
        assert summary == sorted(expected[cycle]), f"cycle {cycle}"
        assert fake.calls - before == calls[cycle], f"cycle {cycle}"


# -- TestSelectBestCandidate ---------------------------------------------------------------------------


def at(name: str, priority: int, node_name: str, req: Mapping[str, str], start: int) -> PodBuilder:
    return pod(name, priority, node_name, req).start_time(epoch(start))


SELECT_CASES = [
    pytest.param(
        ["node1", "node2"], pod("p", HIGH, req=LARGE),
        [at("p1", MID, "node1", LARGE, 0), at("p2", MID, "node2", LARGE, 0)],
        {"node1", "node2"},
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", MEDIUM, 0), at("p1.2", MID, "node1", LARGE, 0),
            at("p2.1", MID, "node2", MEDIUM, 0), at("p2.2", LOW, "node2", MEDIUM, 0),
            at("p3.1", LOW, "node3", MEDIUM, 0), at("p3.2", LOW, "node3", MEDIUM, 0),
        ],
        {"node3"},
        id="node with min highest priority pod is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", MEDIUM, 0), at("p1.2", MID, "node1", LARGE, 0),
            at("p2.1", MID, "node2", LARGE, 0), at("p2.2", LOW, "node2", MEDIUM, 0),
            at("p3.1", MID, "node3", MEDIUM, 0), at("p3.2", MID, "node3", MEDIUM, 0),
        ],
        {"node2"},
        id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", SMALL, 0), at("p1.2", NEG, "node1", SMALL, 0),
            at("p1.3", MID, "node1", SMALL, 0), at("p1.4", NEG, "node1", SMALL, 0),
            at("p2.1", MID, "node2", LARGE, 0), at("p2.2", NEG, "node2", MEDIUM, 0),
            at("p3.1", MID, "node3", MEDIUM, 0), at("p3.2", NEG, "node3", SMALL, 0), at("p3.3", LOW, "node3", SMALL, 0),
        ],
        {"node2"},
        id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", SMALL, 0), at("p1.2", NEG, "node1", SMALL, 0), at("p1.3", NEG, "node1", SMALL, 0),
            at("p2.1", MID, "node2", LARGE, 0), at("p2.2", NEG, "node2", MEDIUM, 0),
            at("p3.1", MID, "node3", MEDIUM, 0), at("p3.2", NEG, "node3", SMALL, 0), at("p3.3", LOW, "node3", SMALL, 0),
        ],
        {"node2"},
        id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"], pod("p", VERY_HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", SMALL, 0), at("p1.2", LOW, "node1", SMALL, 0), at("p1.3", LOW, "node1", SMALL, 0),
            at("p2.1", HIGH, "node2", LARGE, 0),
            at("p3.1", MID, "node3", MEDIUM, 0), at("p3.2", LOW, "node3", SMALL, 0), at("p3.3", LOW, "node3", SMALL, 0),
            at("p3.4", LOW, "node3", MEDIUM, 0),
            at("p4.1", MID, "node4", MEDIUM, 0), at("p4.2", MID, "node4", SMALL, 0), at("p4.3", MID, "node4", SMALL, 0),
            at("p4.4", NEG, "node4", SMALL, 0),
        ],
        {"node1"},
        id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", MEDIUM, 2), at("p1.2", MID, "node1", MEDIUM, 2),
            at("p2.1", MID, "node2", MEDIUM, 3), at("p2.2", MID, "node2", MEDIUM, 3),
            at("p3.1", MID, "node3", MEDIUM, 1), at("p3.2", MID, "node3", MEDIUM, 1),
        ],
        {"node2"},
        id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", MID, "node1", MEDIUM, 4), at("p1.2", MID, "node1", MEDIUM, 2),
            at("p2.1", MID, "node2", MEDIUM, 5), at("p2.2", MID, "node2", MEDIUM, 1),
            at("p3.1", MID, "node3", MEDIUM, 3), at("p3.2", MID, "node3", MEDIUM, 6),
        ],
        {"node3"},
        id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            at("p1.1", LOW, "node1", MEDIUM, 4), at("p1.2", MID, "node1", MEDIUM, 2),
            at("p2.1", MID, "node2", MEDIUM, 6), at("p2.2", LOW, "node2", MEDIUM, 1),
            at("p3.1", LOW, "node3", MEDIUM, 3), at("p3.2", MID, "node3", MEDIUM, 5),
        ],
        {"node2"},
        id="different priority, same number of victims, different start time for all pods",
    ),
]  # fmt: skip


@pytest.mark.parametrize("seed_offset", [0, 1, 2, 3])
@pytest.mark.parametrize(("node_names", "pending", "pods", "expected"), SELECT_CASES)
def test_select_best_candidate(
    node_names: list[str], pending: PodBuilder, pods: list[PodBuilder], expected: set[str], seed_offset: int
) -> None:
    """Upstream's TestSelectBestCandidate, from every offset (the pick must not depend on it)."""
    fwk, plugin = setup([node(n, VERY_LARGE) for n in node_names], pods)
    plugin.offset_rand = lambda n: seed_offset % n
    p = pending.build()
    state = pre_filtered(fwk, p)
    infos = list(fwk.handle.current().node_infos())
    offset, num = plugin.get_offset_and_num_candidates(len(infos))
    candidates, _, _ = plugin.evaluator.dry_run_preemption(state, p, infos, [], offset, num)
    best = plugin.evaluator.select_candidate(candidates, now=1_000_000_000.0)
    assert best is not None and best.name in expected


# -- TestPodEligibleToPreemptOthers -------------------------------------------------------------------


ELIGIBLE_CASES = [
    pytest.param(
        pod("p_with_nominated_node", HIGH).set("status.nominatedNodeName", "node1"),
        [pod("p1", LOW, "node1").terminating()],
        ["node1"],
        Status(UU, ("node(s) had untolerated taint(s)",)),
        True,
        id="Pod with nominated node",
    ),
    pytest.param(pod("p_without_nominated_node", HIGH), [], [], None, True, id="Pod without nominated node"),
    pytest.param(
        pod("p_with_preempt_never_policy", HIGH).preemption_policy("Never"),
        [],
        [],
        None,
        False,
        id="Pod with 'PreemptNever' preemption policy",
    ),
    pytest.param(
        pod("p_with_nominated_node", HIGH).set("status.nominatedNodeName", "node1"),
        [pod("p1", LOW, "node1").terminating().condition("DisruptionTarget", "True", "PreemptionByScheduler")],
        ["node1"],
        None,
        False,
        id="preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
    ),
    pytest.param(
        pod("p_with_nominated_node", HIGH).set("status.nominatedNodeName", "node1"),
        [pod("p1", LOW, "node1").terminating()],
        ["node1"],
        None,
        True,
        id="non-victim Pods terminating",
    ),
]


@pytest.mark.parametrize(("pending", "pods", "nodes", "nominated_status", "expected"), ELIGIBLE_CASES)
def test_pod_eligible_to_preempt_others(
    pending: PodBuilder, pods: list[PodBuilder], nodes: list[str], nominated_status: Status | None, expected: bool
) -> None:
    _, plugin = setup([node(n) for n in nodes], pods)
    status = nominated_status if nominated_status is not None else Status(Code.SUCCESS)  # Go's nil Status
    assert plugin.pod_eligible_to_preempt_others(pending.build(), status)[0] is expected


# -- what the plugin hands on -----------------------------------------------------------------------


def test_the_decision_goes_to_the_sink_and_the_cycle_state() -> None:
    """``prepareCandidate`` is asked to evict exactly the chosen victims; the outcome is kept for simulate."""
    sink = RecordingSink()
    fwk, plugin = setup(
        [node("node1", VERY_LARGE), node("node2", VERY_LARGE)],
        [pod("a", LOW, "node1", LARGE), pod("b", MID, "node2", LARGE)],
        sink=sink,
    )
    p = pod("p", HIGH, req=LARGE).build()
    state = pre_filtered(fwk, p)
    result, status = plugin.post_filter(state, p, statuses({"node1": U, "node2": U}))
    assert (result, status.code) == (NominatingInfo("node1", NominatingMode.OVERRIDE), Code.SUCCESS)
    assert sink.prepared == [("p", "node1", ["a"])]
    outcome = state.get("PreemptionOutcome")
    assert outcome is not None and [v.name for v in outcome.victims] == ["a"]  # type: ignore[attr-defined]


def test_without_a_sink_it_decides_nothing() -> None:
    """The live scheduler (no PreemptionSink yet): no nomination, no message, as the stand-in did."""
    cache = make_cache([node("node1", ONE_POD)], [pod("p1", node="node1")])
    plugin = DefaultPreemption({}, Handle(snapshot=cache))
    p = pod("p", HIGH).build()
    assert plugin.post_filter(CycleState(), p, statuses({"node1": U})) == (None, Status(U))


def test_preemption_policy_never_is_in_the_message() -> None:
    fwk, plugin = setup([node("node1", ONE_POD)], [pod("p1", node="node1")])
    p = pod("p", HIGH).preemption_policy("Never").build()
    result, status = plugin.post_filter(pre_filtered(fwk, p), p, statuses({"node1": U}))
    assert (result, status) == (None, Status(U, ("preemption: not eligible due to preemptionPolicy=Never.",)))


def test_unstarted_victims_of_equal_priority_are_reprieved_last_first() -> None:
    """Upstream's MoreImportantPod reads time.Now() per pod, so Go's sort leaves two unstarted pods of
    equal priority in reverse order: the later one is tried (and kept) first, the earlier one goes."""
    fwk, plugin = setup(
        [node("node1", LARGE)], [pod("first", LOW, "node1", MEDIUM), pod("second", LOW, "node1", SMALL)]
    )
    p = pod("p", HIGH, req=MEDIUM).build()
    _, status = plugin.post_filter(pre_filtered(fwk, p), p, statuses({"node1": U}))
    assert status.code is Code.SUCCESS
    sink = fwk.handle.preemption
    assert isinstance(sink, RecordingSink) and sink.prepared == [("p", "node1", ["first"])]


@pytest.mark.parametrize(("minor", "victim"), [("1.35", "first"), ("1.36", "first"), ("1.37", "second")])
def test_which_of_two_equal_unstarted_victims_is_reprieved(minor: str, victim: str) -> None:
    """Two unstarted pods of equal priority and size, room to keep one. Through 1.36 MoreImportantPod
    reads time.Now() per comparison and Go's sort leaves them last first: "second" is kept. From
    1.37 each victim reads it once, when NewVictim makes it (preemption/types.go), in the node's
    order, so MoreImportantVictim (preemption/util.go) keeps "first"."""
    fwk, plugin = setup(
        [node("node1", LARGE)],
        [pod("first", LOW, "node1", SMALL), pod("second", LOW, "node1", SMALL)],
        features=features_at(minor),
    )
    p = pod("p", HIGH, req=MEDIUM).build()
    _, status = plugin.post_filter(pre_filtered(fwk, p), p, statuses({"node1": U}))
    assert status.code is Code.SUCCESS
    sink = fwk.handle.preemption
    assert isinstance(sink, RecordingSink) and sink.prepared == [("p", "node1", [victim])]


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_more_important_order_of_started_victims(minor: str) -> None:
    """TestMoreImportantVictim's pod cases (v1.37.2 preemption/util_test.go): the higher priority,
    then the older start, is more important, at every minor."""
    made = None if minor != "1.37" else {PodKey("default/a"): 0, PodKey("default/b"): 1, PodKey("default/c"): 2}
    a = make_pod("a").priority(10).start_time(epoch(1000)).build()
    b = make_pod("b").priority(20).start_time(epoch(1000)).build()
    c = make_pod("c").priority(10).start_time(epoch(500)).build()
    assert [x.name for x in more_important_order([a, b, c], 2000.0, made)] == ["b", "c", "a"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"minCandidateNodesPercentage": 101}, "not in valid range [0, 100]", id="percentage-above-100"),
        pytest.param({"minCandidateNodesAbsolute": -1}, "not in valid range [0, inf)", id="absolute-negative"),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time as minCandidateNodesAbsolute",
            id="both-zero",
        ),
        pytest.param({"minCandidateNodesPercentage": "x"}, "must be an integer", id="not-an-integer"),
    ],
)
def test_args_are_validated(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_args(args)


def test_args_defaults() -> None:
    assert parse_args({}) == (10, 100)


def test_candidates_types_are_plain_values() -> None:
    c = Candidate(NodeName("n"), Victims(()))
    assert c == Candidate(NodeName("n"), Victims(()))


def test_dry_run_errors_aggregated_once_each() -> None:
    """``utilerrors.NewAggregate(errs).Error()`` prints each text once: the same Filter error on three
    nodes (DynamicResources' selector error before 1.37 names no device) is one error, unbracketed
    (the differential oracle at 1.36, seed 3908)."""
    same = 'running "DynamicResources" filter plugin: class c: selector #0: CEL runtime error: no such key: model'
    assert preemption_module._aggregate([same, same, same]) == same
    assert preemption_module._aggregate(["a", "b", "a"]) == "[a, b]"
