"""NodeResourcesFit's scoring half: LeastAllocated (the default, cpu and memory weight 1),
MostAllocated and RequestedToCapacityRatio, and the validation of their arguments.

Ported from upstream v1.35.4 ``noderesources/{least_allocated,most_allocated,
requested_to_capacity_ratio,fit}_test.go`` (TestLeastAllocatedScoringStrategy,
TestMostAllocatedScoringStrategy, TestRequestedToCapacityRatioScoringStrategy, TestBrokenLinearFunction,
TestResourceBinPackingSingleExtended, TestResourceBinPackingMultipleExtended, TestFitScore) and
``validation_pluginargs_test.go`` (TestValidate*ScoringStrategy); ids are upstream's case names.

Upstream's ``st.MakePod()`` has no container at all (so no non-zero defaults), and ``Req`` adds one
container per request map; ``pod()`` below builds exactly that. Node quantities like ``cpu: "4000"``
are whole cores, as upstream's tables have them; only ratios matter. Arguments go through our v1
parsing, so ``SetDefaults_NodeResourcesFitArgs`` applies: an empty resource list becomes cpu+memory
and a weight of 0 becomes 1 (upstream's internal-API cases expecting an error there do not apply).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.plugins.noderesources.fit import Fit
from scheduler.plugins.noderesources.least_allocated import least_requested_score
from scheduler.plugins.noderesources.most_allocated import most_requested_score
from scheduler.plugins.noderesources.requested_to_capacity_ratio import broken_linear
from scheduler.testing import NodeBuilder, make_node, make_pod
from tests.helpers import make_cache

Req = dict[str, str]
EXT = "abc.com/xyz"
LEAST: dict[str, Any] = {"type": "LeastAllocated"}
MOST: dict[str, Any] = {"type": "MostAllocated"}
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_SET = [*DEFAULT_RESOURCES, {"name": EXT, "weight": 1}]


def pod(*requests: Req, name: str = "p", node: str = "", sidecar: Req | None = None, **extra: Any) -> Pod:
    """``st.MakePod().Req(r1).Req(r2)...``: one container per request map, none if no map."""
    b = make_pod(name).set(
        "spec.containers",
        [{"name": f"con{i}", "image": "pause", "resources": {"requests": dict(r)}} for i, r in enumerate(requests)],
    )
    if sidecar is not None:
        b = b.set(
            "spec.initContainers",
            [
                {
                    "name": "sidecar-con0",
                    "image": "pause",
                    "restartPolicy": "Always",
                    "resources": {"requests": dict(sidecar), "limits": dict(sidecar)},
                }
            ],
        )
    for path, val in extra.items():
        b = b.set(path.replace("__", "."), val)
    if node:
        b = b.node(node)
    built = b.build()
    assert not built.errors, built.error_message
    return built


def empty_container_pod(name: str = "p", node: str = "") -> Pod:
    """``st.MakePod().Container("container")``: one container without requests."""
    b = make_pod(name).set("spec.containers", [{"name": "container", "image": "pause"}])
    if node:
        b = b.node(node)
    return b.build()


def cpu_mem(cpu: str, memory: str) -> Req:
    return {"cpu": cpu, "memory": memory}


def node(name: str, **capacity: str) -> NodeBuilder:
    """``st.MakeNode().Name(name).Capacity(...)``: pods 32 besides what is given."""
    return make_node(name).capacity(**{"pods": "32", **capacity})


def bare_node(name: str) -> NodeBuilder:
    """``st.MakeNode().Name(name).Obj()``: no capacity at all."""
    return make_node(name).capacity()


def scores(
    strategy: dict[str, Any] | None,
    nodes: list[NodeBuilder],
    existing: list[Pod],
    incoming: Pod,
    *,
    run_pre_score: bool = True,
) -> list[int]:
    cache = make_cache(nodes, existing)
    args: dict[str, Any] = {} if strategy is None else {"scoringStrategy": strategy}
    plugin = Fit(args, Handle(cache))
    names = [n.obj["metadata"]["name"] for n in nodes]
    infos = [cache.get(n) for n in names]
    assert all(i is not None for i in infos)
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, incoming, [i for i in infos if i is not None]) is None
    return [plugin.score(state, incoming, i) for i in infos if i is not None]


def with_resources(strategy: dict[str, Any], resources: list[dict[str, Any]] | None) -> dict[str, Any]:
    out = dict(strategy)
    if resources is not None:
        out["resources"] = resources
    return out


SMALL = [node("node1", cpu="4000", memory="10000"), node("node2", cpu="4000", memory="10000")]
SIZED = [node("node1", cpu="4000", memory="10000"), node("node2", cpu="6000", memory="10000")]
BIG = [node("node1", cpu="10000", memory="20000"), node("node2", cpu="10000", memory="20000")]
THREE_K_FIVE_K = pod(cpu_mem("1000", "2000"), cpu_mem("2000", "3000"))  # 3000 cores, 5000 bytes


# -- TestLeastAllocatedScoringStrategy -----------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "resources", "want"),
    [
        pytest.param(pod(), SMALL, [], DEFAULT_RESOURCES, [100, 100], id="nothing scheduled, nothing requested"),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [],
            DEFAULT_RESOURCES,
            # node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 → 75/2 = 37
            # node2: cpu (6000-3000)*100/6000 = 50, memory 50 → 50
            [37, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [],
            [],  # v1 defaulting: no resources means cpu and memory, weight 1
            [37, 50],
            id="Resources not set, v1 defaults to cpu and memory",
        ),
        pytest.param(
            pod(),
            SMALL,
            [pod(name=f"e{i}", node=n) for i, n in enumerate(["node1", "node1", "node2", "node2"])],
            DEFAULT_RESOURCES,
            [100, 100],  # container-less pods have no non-zero defaults
            id="no resources requested, pods scheduled",
        ),
        pytest.param(
            pod(),
            BIG,
            [
                pod(cpu_mem("3000", "0"), name="e1", node="node1"),
                pod(cpu_mem("3000", "0"), name="e2", node="node1"),
                pod(cpu_mem("3000", "0"), name="e3", node="node2"),
                pod(cpu_mem("3000", "5000"), name="e4", node="node2"),
            ],
            DEFAULT_RESOURCES,
            # node1: cpu (10000-6000)*100/10000 = 40, memory 100 (an explicit "0" gets no default) → 70
            # node2: cpu 40, memory (20000-5000)*100/20000 = 75 → 115/2 = 57
            [70, 57],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            BIG,
            [pod(cpu_mem("3000", "0"), name="e1", node="node1"), pod(cpu_mem("3000", "5000"), name="e2", node="node2")],
            DEFAULT_RESOURCES,
            # node1: cpu 6000 → 40, memory 5000 → 75 → 57; node2: cpu 40, memory 10000 → 50 → 45
            [57, 45],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            [node("node1", cpu="10000", memory="20000"), node("node2", cpu="10000", memory="50000")],
            [pod(cpu_mem("3000", "0"), name="e1", node="node1"), pod(cpu_mem("3000", "5000"), name="e2", node="node2")],
            DEFAULT_RESOURCES,
            # node2: cpu 40, memory (50000-10000)*100/50000 = 80 → 60
            [57, 60],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            pod(cpu_mem("3000", "0")),
            SMALL,
            [pod(cpu_mem("3000", "0"), name="e1", node="node1"), pod(cpu_mem("3000", "5000"), name="e2", node="node2")],
            DEFAULT_RESOURCES,
            # cpu 6000 > 4000 → 0; node1 memory 100 → 50; node2 memory 50 → 25
            [50, 25],
            id="requested resources exceed node capacity",
        ),
        pytest.param(
            pod(),
            [bare_node("node1"), bare_node("node2")],
            [pod(cpu_mem("3000", "0"), name="e1", node="node1"), pod(cpu_mem("3000", "5000"), name="e2", node="node2")],
            DEFAULT_RESOURCES,
            [0, 0],  # nothing allocatable: no resource is scored, weight sum 0 → 0
            id="zero node resources, pods scheduled with resources",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [],
            [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
            # node1: (25*1 + 50*2) / 3 = 41; node2: (50 + 100) / 3 = 50
            [41, 50],
            id=(
                "nothing scheduled, resources requested with different weight on CPU and memory, "
                "differently sized nodes"
            ),
        ),
        pytest.param(
            THREE_K_FIVE_K,
            [node("node1", cpu="6000", memory="10000"), node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
            [],
            EXTENDED_SET,
            [50, 50],  # the pod asks for no xyz: it is left out of the mean on both nodes
            id="bypass extended resource if the pod does not request",
        ),
        pytest.param(
            pod({"cpu": "3000", "memory": "5000", EXT: "2"}),
            [
                node("node1", cpu="6000", memory="10000", **{EXT: "4"}),
                node("node2", cpu="6000", memory="10000", **{EXT: "10"}),
            ],
            [],
            EXTENDED_SET,
            # xyz: node1 (4-2)*100/4 = 50 → (50+50+50)/3 = 50; node2 (10-2)*100/10 = 80 → 180/3 = 60
            [50, 60],
            id="honor extended resource if the pod requests",
        ),
        pytest.param(
            pod(cpu_mem("3000", "4000")),
            [node("node1", cpu="6000", memory="10000"), node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
            [],
            [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            # cpu 50, memory (10000-4000)*100/10000 = 60 → 55 on both
            [55, 55],
            id="if the node doesn't have a resource",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            [node("node1", cpu="4000", memory="10000")],
            [],
            [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}],
            [37],  # v1 defaulting turns weight 0 into 1
            id="resource with zero weight defaults to 1",
        ),
    ],
)
def test_least_allocated(
    incoming: Pod, nodes: list[NodeBuilder], existing: list[Pod], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert scores(with_resources(LEAST, resources), nodes, existing, incoming) == want


def test_least_allocated_is_the_default() -> None:
    # No args: LeastAllocated over cpu and memory with weight 1 (37 and 50 as above).
    assert scores(None, SIZED, [], THREE_K_FIVE_K) == [37, 50]


def test_non_zero_defaults_in_scoring() -> None:
    # A best-effort pod counts as 100m and 200Mi, and so do best-effort pods on the node:
    # node1 has one: cpu 200m of 1000m → 80, memory 400Mi of 1000Mi → 60 → 70.
    # node2 is empty: 100m → 90, 200Mi → 80 → 85.
    nodes = [node("node1", cpu="1", memory="1000Mi"), node("node2", cpu="1", memory="1000Mi")]
    assert scores(LEAST, nodes, [empty_container_pod("e", "node1")], empty_container_pod()) == [70, 85]


def test_scorer_ignores_incoming_pod_level_requests() -> None:
    # The Fit scorer is built without the PodLevelResources flag (fit.go nodeResourceStrategyTypeMap):
    # the incoming pod counts its containers' (defaulted) requests: 100m, 200Mi → 90, 80 → 85, not
    # the pod-level 500m, 500Mi (→ 50).
    p = pod({}, spec__resources={"requests": {"cpu": "500m", "memory": "500Mi"}})
    assert scores(LEAST, [node("n", cpu="1", memory="1000Mi")], [], p) == [85]


def test_scorer_adds_incoming_overhead() -> None:
    # 100m + 100m overhead, 100Mi + 100Mi overhead of 1 core / 1000Mi → 80, 80 → 80.
    p = pod({"cpu": "100m", "memory": "100Mi"}, spec__overhead={"cpu": "100m", "memory": "100Mi"})
    assert scores(LEAST, [node("n", cpu="1", memory="1000Mi")], [], p) == [80]


@pytest.mark.parametrize(
    ("requested", "capacity", "want"),
    [
        pytest.param(0, 100, 100, id="empty"),
        pytest.param(25, 100, 75, id="quarter used"),
        pytest.param(1, 3, 66, id="integer division truncates"),
        pytest.param(100, 100, 0, id="full"),
        pytest.param(101, 100, 0, id="over-full"),
        pytest.param(5, 0, 0, id="no capacity"),
    ],
)
def test_least_requested_score(requested: int, capacity: int, want: int) -> None:
    assert least_requested_score(requested, capacity) == want


# -- TestMostAllocatedScoringStrategy ------------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "resources", "want"),
    [
        pytest.param(pod(), SMALL, [], DEFAULT_RESOURCES, [0, 0], id="nothing scheduled, nothing requested"),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [],
            DEFAULT_RESOURCES,
            # node1: cpu 3000*100/4000 = 75, memory 50 → 62; node2: 50, 50 → 50
            [62, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(THREE_K_FIVE_K, SIZED, [], [], [62, 50], id="Resources not set, v1 defaults to cpu and memory"),
        pytest.param(
            pod(),
            BIG,
            [
                pod(cpu_mem("3000", "0"), name="e1", node="node1"),
                pod(cpu_mem("3000", "0"), name="e2", node="node1"),
                pod(cpu_mem("3000", "0"), name="e3", node="node2"),
                pod(cpu_mem("3000", "5000"), name="e4", node="node2"),
            ],
            DEFAULT_RESOURCES,
            # node1: cpu 6000 → 60, memory 0 → 0 → 30; node2: 60, 5000 → 25 → 42
            [30, 42],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            BIG,
            [pod(cpu_mem("3000", "0"), name="e1", node="node1"), pod(cpu_mem("3000", "5000"), name="e2", node="node2")],
            DEFAULT_RESOURCES,
            # node1: 60, 25 → 42; node2: 60, 50 → 55
            [42, 55],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            pod(cpu_mem("2000", "4000"), cpu_mem("3000", "5000")),
            [node("node1", cpu="5000", memory="10000"), node("node2", cpu="10000", memory="9000")],
            [],
            DEFAULT_RESOURCES,
            # node1: 5000/5000 → 100, 9000/10000 → 90 → 95; node2: 50, 9000/9000 → 100 → 75
            [95, 75],
            id="resources requested equal node capacity",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [],
            [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
            # node1: (75*1 + 50*2) / 3 = 58; node2: 50
            [58, 50],
            id="nothing scheduled, resources requested, differently sized nodes (weighted)",
        ),
        pytest.param(
            empty_container_pod(),
            [node("node1", cpu="250m", memory="1000Mi"), node("node2", cpu="250m", memory="1000Mi")],
            [empty_container_pod("e1", "node1"), empty_container_pod("e2", "node1")],
            DEFAULT_RESOURCES,
            # non-zero defaults: node1 cpu 300m capped at 250m → 100, memory 600Mi → 60 → 80;
            # node2 cpu 100m → 40, memory 200Mi → 20 → 30
            [80, 30],
            id="no resources requested, pods scheduled, nonzero request for resource",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            [node("node1", cpu="6000", memory="10000"), node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
            [],
            EXTENDED_SET,
            [50, 50],
            id="bypass extended resource if the pod does not request",
        ),
        pytest.param(
            pod({"cpu": "3000", "memory": "5000", EXT: "2"}),
            [
                node("node1", cpu="6000", memory="10000", **{EXT: "4"}),
                node("node2", cpu="6000", memory="10000", **{EXT: "10"}),
            ],
            [],
            EXTENDED_SET,
            # xyz: node1 2/4 → 50 → 50; node2 2/10 → 20 → (50+50+20)/3 = 40
            [50, 40],
            id="honor extended resource if the pod request",
        ),
        pytest.param(
            pod(cpu_mem("3000", "4000")),
            [node("node1", cpu="6000", memory="10000"), node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
            [],
            [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            # cpu 50, memory 40 → 45
            [45, 45],
            id="if the node doesn't have a resource",
        ),
    ],
)
def test_most_allocated(
    incoming: Pod, nodes: list[NodeBuilder], existing: list[Pod], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert scores(with_resources(MOST, resources), nodes, existing, incoming) == want


@pytest.mark.parametrize(
    ("requested", "capacity", "want"),
    [
        pytest.param(0, 100, 0, id="empty"),
        pytest.param(25, 100, 25, id="quarter used"),
        pytest.param(2, 3, 66, id="integer division truncates"),
        pytest.param(150, 100, 100, id="over-full counts as full"),
        pytest.param(5, 0, 0, id="no capacity"),
    ],
)
def test_most_requested_score(requested: int, capacity: int, want: int) -> None:
    assert most_requested_score(requested, capacity) == want


# -- TestRequestedToCapacityRatioScoringStrategy -------------------------------------------------


def rtcr(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        out["resources"] = resources
    return out


FALLING = [(0, 10), (100, 0)]  # scaled to 0..100: f(u) = 100 - u
RISING = [(0, 0), (100, 10)]  # f(u) = u


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "want"),
    [
        pytest.param(
            pod(),
            SMALL,
            [pod(name="e1", node="node1"), pod(name="e2", node="node1")],
            [100, 100],  # utilization 0 → 100 on both resources
            id="nothing scheduled, nothing requested (default - least requested nodes have priority)",
        ),
        pytest.param(
            THREE_K_FIVE_K,
            SIZED,
            [pod(name="e1", node="node1"), pod(name="e2", node="node1")],
            # node1: cpu 75% → 25, memory 50% → 50 → round(37.5) = 38; node2: 50, 50 → 50
            [38, 50],
            id=(
                "nothing scheduled, resources requested, differently sized nodes "
                "(default - least requested nodes have priority)"
            ),
        ),
        pytest.param(
            pod(),
            SIZED,
            [
                pod(cpu_mem("3000", "5000"), name="e1", node="node1"),
                pod(cpu_mem("3000", "5000"), name="e2", node="node2"),
            ],
            [38, 50],
            id="no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        ),
    ],
)
def test_requested_to_capacity_ratio(
    incoming: Pod, nodes: list[NodeBuilder], existing: list[Pod], want: list[int]
) -> None:
    assert scores(rtcr(FALLING, DEFAULT_RESOURCES), nodes, existing, incoming) == want


# -- TestBrokenLinearFunction --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            # 1 + 8*(p-10)/80, truncated: 15 → 1, 19 → 1, 20 → 2, 89 → 1 + 632/80 = 8
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
            id="case_0",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            # 20 → 2 + 8*20/40 = 6; 30 → 8; 70 → 10 - 10*30/60 = 5
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="case_1",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="case_2",
        ),
        pytest.param(
            [(0, 10), (100, 0)],
            # Go's integer division truncates toward zero: 10 + (-10*75)/100 = 10 - 7 = 3 (floor would give 2)
            [(75, 3), (33, 7), (99, 1), (100, 0)],
            id="falling segment truncates toward zero",
        ),
    ],
)
def test_broken_linear_function(shape: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    f = broken_linear(shape)
    assert [(p, f(p)) for p, _ in assertions] == assertions


def test_rtcr_utilization_is_truncated_before_the_shape() -> None:
    # cpu 1 of 3 cores: utilization 1000*100/3000 = 33 (integer), f(33) = 100 - 33 = 67; memory is
    # filled exactly: 100% → f = 0, which upstream leaves out of the mean (resourceScore > 0) → 67.
    p = pod({"cpu": "1", "memory": "1Gi"})
    assert scores(rtcr(FALLING), [node("n", cpu="3", memory="1Gi")], [], p) == [67]


# -- TestResourceBinPackingSingleExtended / MultipleExtended -------------------------------------


def ext_node(name: str, **ext: str) -> NodeBuilder:
    """``makeNode(name, 4000, 10000*1024*1024, ext)``: 4 cores, 10000Mi, and the extended resources."""
    return make_node(name).capacity(cpu="4", memory="10000Mi", **ext)


FOO, BAR = "intel.com/foo", "intel.com/bar"
BIN_PACK = [(0, 0), (100, 1)]  # scaled: f(u) = u/10, truncated


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [
        pytest.param(pod(), [], [0, 0], id="nothing scheduled, nothing requested"),
        pytest.param(
            pod({FOO: "2"}),
            [],
            # node1: 2/8 → 25% → 2; node2: 2/4 → 50% → 5
            [2, 5],
            id="resources requested, pods scheduled with less resources",
        ),
        pytest.param(
            pod({FOO: "2"}),
            [pod({FOO: "2"}, name="e", node="node2")],
            # node2: (2+2)/4 → 100% → 10
            [2, 10],
            id="resources requested, pods scheduled with resources, on node with existing pod running ",
        ),
        pytest.param(
            pod({FOO: "4"}),
            [],
            # node1: 4/8 → 5; node2: 4/4 → 10
            [5, 10],
            id="resources requested, pods scheduled with more resources",
        ),
    ],
)
def test_bin_packing_single_extended(incoming: Pod, existing: list[Pod], want: list[int]) -> None:
    nodes = [ext_node("node1", **{FOO: "8"}), ext_node("node2", **{FOO: "4"})]
    strategy = rtcr(BIN_PACK, [{"name": FOO, "weight": 1}])
    assert scores(strategy, nodes, existing, incoming) == want


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [
        pytest.param(pod(), [], [0, 0], id="nothing scheduled, nothing requested"),
        pytest.param(
            pod({FOO: "2", BAR: "2"}),
            [],
            # node1: foo 2/8 → 2, bar 2/4 → 5 → round((2*3 + 5*5)/8 = 3.875) = 4
            # node2: foo 2/4 → 5, bar 2/8 → 2 → round((5*3 + 2*5)/8 = 3.125) = 3
            [4, 3],
            id="resources requested, pods scheduled with less resources",
        ),
        pytest.param(
            pod({FOO: "2", BAR: "2"}),
            [pod({FOO: "4", BAR: "2"}, name="e", node="node2")],
            # node2: foo 6 > 4 → f(100) = 10, bar 4/8 → 5 → round((30 + 25)/8 = 6.875) = 7
            [4, 7],
            id="resources requested, pods scheduled with resources, on node with existing pod running ",
        ),
        pytest.param(
            pod({FOO: "4", BAR: "2"}),
            [],
            # node1: foo 4/8 → 5, bar 2/4 → 5 → 5; node2: foo 4/4 → 10, bar 2/8 → 2 → (30 + 10)/8 = 5
            [5, 5],
            id="resources requested, pods scheduled with more resources",
        ),
    ],
)
def test_bin_packing_multiple_extended(incoming: Pod, existing: list[Pod], want: list[int]) -> None:
    nodes = [ext_node("node1", **{FOO: "8", BAR: "4"}), ext_node("node2", **{FOO: "4", BAR: "8"})]
    strategy = rtcr(BIN_PACK, [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}])
    assert scores(strategy, nodes, existing, incoming) == want


# -- TestFitScore --------------------------------------------------------------------------------

FIT_NODES = SIZED
FIT_EXISTING = [
    pod(cpu_mem("2000", "4000"), name="e1", node="node1"),
    pod(cpu_mem("1000", "2000"), name="e2", node="node2"),
]
SIDECAR_NODES = [node("node1", cpu="4000", memory="10000"), node("node2", cpu="4000", memory="10000")]
SIDECAR_EXISTING = [
    pod(cpu_mem("1000", "2000"), name="e1", node="node1", sidecar=cpu_mem("1000", "2000")),
    pod(cpu_mem("1000", "2000"), name="e2", node="node2"),
]


@pytest.mark.parametrize("run_pre_score", [pytest.param(True, id="PreScore"), pytest.param(False, id="no PreScore")])
@pytest.mark.parametrize(
    ("strategy", "incoming", "nodes", "existing", "want"),
    [
        pytest.param(
            rtcr(FALLING, DEFAULT_RESOURCES),
            pod(cpu_mem("3000", "5000")),
            FIT_NODES,
            FIT_EXISTING,
            # node1: cpu 5000 > 4000 → f(100) = 0 (left out), memory 90% → 10 → 10
            # node2: cpu 4000/6000 = 66% → 34, memory 70% → 30 → 32
            [10, 32],
            id="test case for ScoringStrategy RequestedToCapacityRatio case1",
        ),
        pytest.param(
            rtcr(RISING, DEFAULT_RESOURCES),
            pod(cpu_mem("3000", "5000")),
            FIT_NODES,
            FIT_EXISTING,
            # node1: cpu over capacity → f(100) = 100, memory 90 → 95; node2: 66, 70 → 68
            [95, 68],
            id="test case for ScoringStrategy RequestedToCapacityRatio case2",
        ),
        pytest.param(
            with_resources(MOST, DEFAULT_RESOURCES),
            pod(cpu_mem("1000", "2000")),
            FIT_NODES,
            FIT_EXISTING,
            # node1: 3000/4000 → 75, 6000/10000 → 60 → 67; node2: 2000/6000 → 33, 40 → 36
            [67, 36],
            id="test case for ScoringStrategy MostAllocated",
        ),
        pytest.param(
            with_resources(LEAST, DEFAULT_RESOURCES),
            pod(cpu_mem("1000", "2000")),
            FIT_NODES,
            FIT_EXISTING,
            # node1: 25, 40 → 32; node2: (6000-2000)*100/6000 = 66, 60 → 63
            [32, 63],
            id="test case for ScoringStrategy LeastAllocated",
        ),
        pytest.param(
            with_resources(MOST, DEFAULT_RESOURCES),
            pod(cpu_mem("1000", "2000")),
            SIDECAR_NODES,
            SIDECAR_EXISTING,
            # node1: sidecar counts: 1000+1000+1000 = 3000 → 75, 6000 → 60 → 67; node2: 50, 40 → 45
            [67, 45],
            id="test case for ScoringStrategy MostAllocated with sidecar container",
        ),
        pytest.param(
            with_resources(LEAST, DEFAULT_RESOURCES),
            pod(cpu_mem("1000", "2000")),
            SIDECAR_NODES,
            SIDECAR_EXISTING,
            # node1: 25, 40 → 32; node2: 50, 60 → 55
            [32, 55],
            id="test case for ScoringStrategy LeastAllocated with sidecar container",
        ),
    ],
)
def test_fit_score(
    strategy: dict[str, Any],
    incoming: Pod,
    nodes: list[NodeBuilder],
    existing: list[Pod],
    want: list[int],
    run_pre_score: bool,
) -> None:
    assert scores(strategy, nodes, existing, incoming, run_pre_score=run_pre_score) == want


# -- argument validation (TestValidate*ScoringStrategy) ------------------------------------------


@pytest.mark.parametrize("strategy_type", ["LeastAllocated", "MostAllocated"])
@pytest.mark.parametrize(
    ("resources", "messages"),
    [
        pytest.param(None, [], id="default config"),
        pytest.param([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 10}], [], id="multi valid resources"),
        pytest.param([{"name": "cpu", "weight": 0}], [], id="weight 0 defaults to 1"),
        pytest.param(
            [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
            [
                "scoringStrategy.resources[0].weight: Invalid value: -1: "
                "resource weight of memory not in valid range (0, 100]"
            ],
            id="resource with negative weight",
        ),
        pytest.param(
            [{"name": "cpu", "weight": 101}],
            [
                "scoringStrategy.resources[0].weight: Invalid value: 101: "
                "resource weight of cpu not in valid range (0, 100]"
            ],
            id="weight greater than max",
        ),
        pytest.param(
            [{"name": "cpu", "weight": -5}, {"name": "memory", "weight": 101}],
            [
                "scoringStrategy.resources[0].weight: Invalid value: -5: "
                "resource weight of cpu not in valid range (0, 100]",
                "scoringStrategy.resources[1].weight: Invalid value: 101: "
                "resource weight of memory not in valid range (0, 100]",
            ],
            id="multi invalid resources",
        ),
    ],
)
def test_validate_weights(strategy_type: str, resources: list[dict[str, Any]] | None, messages: list[str]) -> None:
    args = {"scoringStrategy": with_resources({"type": strategy_type}, resources)}
    if not messages:
        Fit(args, Handle())
        return
    with pytest.raises(ValueError) as exc:
        Fit(args, Handle())
    for m in messages:
        assert m in str(exc.value)


@pytest.mark.parametrize(
    ("shape", "resources", "messages"),
    [
        pytest.param(
            [], None, ["scoringStrategy.shape: Required value: at least one point must be specified"], id="no shapes"
        ),
        pytest.param(
            [(30, 3)],
            [{"name": "cpu", "weight": 101}],
            [
                "scoringStrategy.resources[0].weight: Invalid value: 101: "
                "resource weight of cpu not in valid range (0, 100]"
            ],
            id="weight greater than max",
        ),
        pytest.param([(30, 3)], None, [], id="valid shapes"),
        pytest.param(
            [(-1, 3)],
            None,
            ["scoringStrategy.shape[0].utilization: Invalid value: -1: not in valid range [0, 100]"],
            id="utilization less than min",
        ),
        pytest.param(
            [(101, 3)],
            None,
            ["scoringStrategy.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]"],
            id="utilization greater than max",
        ),
        pytest.param(
            [(10, 3), (10, 3)],
            None,
            ["scoringStrategy.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order"],
            id="duplicated utilization values",
        ),
        pytest.param([(10, 3), (20, 3), (30, 3)], None, [], id="increasing utilization values"),
        pytest.param(
            [(10, 3), (20, 3), (15, 3)],
            None,
            ["scoringStrategy.shape[2].utilization: Invalid value: 15: values must be sorted in increasing order"],
            id="non-increasing utilization values",
        ),
        pytest.param(
            [(10, -1)],
            None,
            ["scoringStrategy.shape[0].score: Invalid value: -1: not in valid range [0, 10]"],
            id="score less than min",
        ),
        pytest.param(
            [(10, 11)],
            None,
            ["scoringStrategy.shape[0].score: Invalid value: 11: not in valid range [0, 10]"],
            id="score greater than max",
        ),
    ],
)
def test_validate_requested_to_capacity_ratio(
    shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None, messages: list[str]
) -> None:
    args = {"scoringStrategy": rtcr(shape, resources)}
    if not messages:
        Fit(args, Handle())
        return
    with pytest.raises(ValueError) as exc:
        Fit(args, Handle())
    for m in messages:
        assert m in str(exc.value)


def test_requested_to_capacity_ratio_without_shape_is_refused() -> None:
    # Upstream dereferences the nil RequestedToCapacityRatio and panics; refusing is the safe reading.
    with pytest.raises(ValueError):
        Fit({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, Handle())
