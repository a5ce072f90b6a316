"""NodeResourcesBalancedAllocation: the score, its best-effort skip, its signature and its arguments.

Ported from upstream v1.35.4 ``noderesources/balanced_allocation_test.go``
(TestNodeResourcesBalancedAllocation) and ``validation_pluginargs_test.go``
(TestValidateNodeResourcesBalancedAllocationArgs); ids are upstream's case names. Upstream's
``makeNode(name, milliCPU, memory, scalar)`` is ``node()`` below: cpu in millicores, memory in bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.config import ConfigError, parse_config
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code
from scheduler.plugins.noderesources.balanced_allocation import (
    BalancedAllocation,
    balanced_change_scorer,
    balanced_resource_scorer,
    parse_balanced_allocation_args,
)
from scheduler.testing import NodeBuilder, make_node, make_pod
from tests.helpers import code_of, config_with, make_cache

Req = dict[str, str]
GPU = "nvidia.com/gpu"
DEFAULT_SET = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*DEFAULT_SET, {"name": GPU, "weight": 1}]


def pod(*requests: Req, node: str = "", name: str = "p") -> Pod:
    """One container per request map (none without a map), as upstream's PodSpecs and ``st.MakePod().Req``."""
    b = make_pod(name).set(
        "spec.containers",
        [{"name": f"c{i}", "image": "pause", "resources": {"requests": dict(r)}} for i, r in enumerate(requests)],
    )
    if node:
        b = b.node(node)
    built = b.build()
    assert not built.errors, built.error_message
    return built


def node(name: str, milli_cpu: int, memory: int, scalar: dict[str, int] | None = None) -> NodeBuilder:
    """Upstream's ``makeNode``: capacity = allocatable = the given cpu, memory and scalar resources."""
    resources = {"cpu": f"{milli_cpu}m", "memory": str(memory), **{k: str(v) for k, v in (scalar or {}).items()}}
    return make_node(name).capacity(**resources)


# Upstream's PodSpecs: two containers each.
def cpu_and_memory(node_name: str = "", name: str = "p") -> Pod:
    return pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node=node_name, name=name)


def cpu_only(node_name: str = "", name: str = "p") -> Pod:
    return pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node=node_name, name=name)


def cpu_and_memory_and_gpu(node_name: str, name: str) -> Pod:
    return pod(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}, node=node_name, name=name
    )


GPU8 = {GPU: 8}


def scheduled_cpu_only_and_cpu_and_memory() -> list[Pod]:
    """``{Spec: cpuOnly}`` on node1 and ``{Spec: cpuAndMemory}`` on node2."""
    return [cpu_only("node1", "e1"), cpu_and_memory("node2", "e2")]


CASES = [
    pytest.param(
        pod(),
        [],
        [node("node1", 4000, 10000), node("node2", 4000, 10000)],
        DEFAULT_SET,
        True,
        Code.SKIP,
        None,
        id="nothing scheduled, nothing requested, skip in PreScore",
    ),
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 4000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        Code.SUCCESS,
        # node1: cpu 3000/4000 = 0.75, memory 5000/10000 = 0.5, std 0.125 → 87; node2: 0.5, 0.5 → 100
        [87, 100],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        True,
        Code.SUCCESS,
        # node1: 6000/10000 = 0.6, 5000/20000 = 0.25 → std 0.175 → 82; node2: 0.6, 0.5 → 95
        [82, 95],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 50000)],
        DEFAULT_SET,
        True,
        Code.SUCCESS,
        # node2: 0.6, 10000/50000 = 0.2 → std 0.2 → 80
        [82, 80],
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        cpu_only(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 6000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        Code.SUCCESS,
        # node1: cpu 6000/6000 = 1, memory 0 → std 0.5 → 50; node2: 1, 0.5 → 75
        [50, 75],
        id="requested resources at node capacity",
    ),
    pytest.param(
        pod({"memory": "0", GPU: "1"}),
        [cpu_and_memory("node2", "e1"), cpu_and_memory_and_gpu("node1", "e2")],
        [node("node1", 3500, 40000, GPU8), node("node2", 3500, 40000, GPU8)],
        WITH_GPU,
        True,
        Code.SUCCESS,
        # three fractions, the general formula: node1 0.857, 0.125, 4/8 → std 0.300 → 70;
        # node2 0.857, 0.125, 1/8 → std 0.345 → 65
        [70, 65],
        id="include scalar resource on a node for balanced resource allocation",
    ),
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 3500, 40000, GPU8), node("node2", 3500, 40000)],
        WITH_GPU,
        True,
        Code.SUCCESS,
        # the pod asks for no GPU, so the GPU is left out on both nodes: 0.857, 0.125 → 63
        [63, 63],
        id="node without the scalar resource should skip the scalar resource",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        False,
        Code.SUCCESS,
        [82, 95],
        id="resources requested, pods scheduled with resources if PreScore not called",
    ),
]


@pytest.mark.parametrize(
    ("incoming", "existing", "nodes", "resources", "run_pre_score", "pre_score_code", "want"), CASES
)
def test_node_resources_balanced_allocation(
    incoming: Pod,
    existing: list[Pod],
    nodes: list[NodeBuilder],
    resources: list[dict[str, Any]],
    run_pre_score: bool,
    pre_score_code: Code,
    want: list[int] | None,
) -> None:
    cache = make_cache(nodes, existing)
    plugin = BalancedAllocation({"resources": resources}, Handle(cache))
    infos = [cache.get(n.obj["metadata"]["name"]) for n in nodes]
    assert all(i is not None for i in infos)
    state = CycleState()
    if run_pre_score:
        status = plugin.pre_score(state, incoming, [i for i in infos if i is not None])
        assert code_of(status) is pre_score_code
        if status is not None and status.is_skip():
            return
    assert [plugin.score(state, incoming, i) for i in infos if i is not None] == want


# 1.36 (#135573): the score is the change in balance the pod makes. Upstream v1.36.3's table, same
# ids; its comments give each node's 1.35 score without and with the pod.
CASES_1_36 = [
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 4000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        # node1 100 -> 87: 50 + (50 - 13) / 2 = 68; node2 100 -> 100: 75
        [68, 75],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        True,
        [73, 74],  # node1 85 -> 82, node2 97 -> 95
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 50000)],
        DEFAULT_SET,
        True,
        [73, 70],  # node2 90 -> 80
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        pod({"memory": "2000"}, {"memory": "3000"}),
        [cpu_only("node1", "e1")],
        [node("node1", 3000, 5000), node("node2", 3000, 5000)],
        DEFAULT_SET,
        True,
        [100, 50],  # node1 50 -> 100 (the pod balances it), node2 100 -> 50
        id="resources requested, pods scheduled with resources, nodes to reach min/max score",
    ),
    pytest.param(
        cpu_only(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 6000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        [62, 62],  # node1 75 -> 50, node2 100 -> 75
        id="requested resources at node capacity",
    ),
    pytest.param(
        pod({"cpu": "0", "memory": "0", GPU: "1"}),
        [cpu_and_memory_and_gpu("node1", "e1"), cpu_and_memory("node2", "e2")],
        [node("node1", 3500, 40000, GPU8), node("node2", 3500, 40000, GPU8)],
        WITH_GPU,
        True,
        [75, 76],  # node1 69 -> 70, node2 62 -> 65
        id="scalar resource is included in the score computation if pod requests the scalar resource",
    ),
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 3500, 40000, GPU8), node("node2", 3500, 40000)],
        WITH_GPU,
        True,
        [56, 56],  # 100 -> 63 on both: the GPU the pod does not ask for is left out
        id="scalar resource is not included in the score computation if pod doesn't request the scalar resource",
    ),
    pytest.param(
        cpu_and_memory(),
        scheduled_cpu_only_and_cpu_and_memory(),
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        False,
        [73, 74],
        id="resources requested, pods scheduled with resources if PreScore not called",
    ),
]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
@pytest.mark.parametrize(("incoming", "existing", "nodes", "resources", "run_pre_score", "want"), CASES_1_36)
def test_node_resources_balanced_allocation_scores_the_change(
    minor: str,
    incoming: Pod,
    existing: list[Pod],
    nodes: list[NodeBuilder],
    resources: list[dict[str, Any]],
    run_pre_score: bool,
    want: list[int],
) -> None:
    cache = make_cache(nodes, existing)
    plugin = BalancedAllocation({"resources": resources}, Handle(cache), features_at(minor))
    infos = [i for i in (cache.get(n.obj["metadata"]["name"]) for n in nodes) if i is not None]
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, incoming, infos) is None
    assert [plugin.score(state, incoming, i) for i in infos] == want


def test_best_effort_pod_is_still_skipped_in_1_36() -> None:
    cache = make_cache([node("node1", 4000, 10000)])
    plugin = BalancedAllocation({}, Handle(cache), features_at("1.36"))
    assert code_of(plugin.pre_score(CycleState(), pod(), [])) is Code.SKIP


@pytest.mark.parametrize(
    ("requested", "allocated", "allocatable", "want"),
    [
        ([3, 5], [0, 0], [4, 10], 68),  # 87 with, 100 without
        ([5, 5], [5, 5], [10, 10], 75),  # the pod changes nothing
        ([0, 0], [0, 0], [0, 0], 75),  # a node that offers none of the resources
    ],
)
def test_balanced_change_scorer(requested: list[int], allocated: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_change_scorer(requested, allocated, allocatable) == want


# -- beyond upstream's table ---------------------------------------------------------------------


def test_best_effort_pod_scores_zero_without_pre_score() -> None:
    """Score without PreScore gives a best-effort pod 0, as upstream's fallback does."""
    cache = make_cache([node("node1", 4000, 10000)])
    info = cache.get("node1")
    assert info is not None
    assert BalancedAllocation({}, Handle(cache)).score(CycleState(), pod(), info) == 0


def test_requests_have_no_non_zero_defaults() -> None:
    """``useRequested``: a container without a memory request counts 0 memory, not 200Mi."""
    cache = make_cache([node("node1", 4000, 10000)])
    info = cache.get("node1")
    assert info is not None
    incoming = pod({"cpu": "1000m"}, {})
    plugin = BalancedAllocation({}, Handle(cache))
    assert plugin.scorer.pod_requests(incoming) == [1000, 0]
    state = CycleState()
    assert plugin.pre_score(state, incoming, [info]) is None
    # cpu 1000/4000 = 0.25, memory 0 → std 0.125 → 87
    assert plugin.score(state, incoming, info) == 87


def test_node_requests_count_plain_requests() -> None:
    """The node side reads the pods' requests, not the non-zero ones: an empty-request pod adds nothing."""
    cache = make_cache([node("node1", 4000, 10000)], [pod({}, node="node1", name="e")])
    info = cache.get("node1")
    assert info is not None
    incoming = pod({"cpu": "2000m", "memory": "5000"})
    # cpu 2000/4000 = 0.5, memory 5000/10000 = 0.5 → 100 (with non-zero defaults it would not be balanced)
    assert BalancedAllocation({}, Handle(cache)).score(CycleState(), incoming, info) == 100


def test_pod_level_requests_count() -> None:
    """PodLevelResources is on in 1.35 and BalancedAllocation is built with it: pod-level requests win."""
    incoming = make_pod("p").requests(cpu="100m").set("spec.resources", {"requests": {"cpu": "2", "memory": "1Gi"}})
    plugin = BalancedAllocation({}, Handle())
    assert plugin.scorer.pod_requests(incoming.build()) == [2000, 1024**3]


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([], [], 100, id="no resources"),
        pytest.param([1, 5], [0, 10], 100, id="one offered resource: std 0"),
        pytest.param([20, 5], [10, 10], 75, id="fraction capped at 1"),
        pytest.param([0, 0, 0], [4, 4, 4], 100, id="three equal fractions"),
        pytest.param([4, 0, 0], [4, 4, 4], 52, id="three fractions: sqrt(2/9) = 0.471"),
    ],
)
def test_balanced_resource_scorer(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_scorer(requested, allocatable) == want


def test_sign_pod_is_the_configured_requests() -> None:
    plugin = BalancedAllocation({"resources": WITH_GPU}, Handle())
    assert plugin.sign_pod(cpu_and_memory()) == (3000, 5000, 0)
    assert plugin.sign_pod(cpu_and_memory(name="other")) == plugin.sign_pod(cpu_and_memory())
    assert plugin.sign_pod(cpu_only()) != plugin.sign_pod(cpu_and_memory())


def test_no_normalize_score_and_no_events() -> None:
    plugin = BalancedAllocation({}, Handle())
    assert not hasattr(plugin, "normalize_score")
    assert not hasattr(plugin, "events_to_register")


# -- arguments (TestValidateNodeResourcesBalancedAllocationArgs, SetDefaults) -----------------------


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        pytest.param(DEFAULT_SET, ("cpu", "memory"), id="valid config"),
        pytest.param(None, ("cpu", "memory"), id="defaults: no resources"),
        pytest.param([], ("cpu", "memory"), id="defaults: empty resources"),
        pytest.param([{"name": "cpu"}, {"name": GPU, "weight": 0}], ("cpu", GPU), id="defaults: weight 0 is 1"),
    ],
)
def test_args_valid(resources: list[dict[str, Any]] | None, want: tuple[str, ...]) -> None:
    args = {} if resources is None else {"resources": resources}
    assert parse_balanced_allocation_args(args) == want


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        pytest.param(
            [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            "resources[0].weight: Invalid value: 2: must be 1",
            id="invalid config",
        ),
        pytest.param(
            [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}],
            'resources[1].name: Duplicate value: "cpu"',
            id="repeated resources",
        ),
        pytest.param(
            [{"name": "cpu", "weight": -1}, {"name": "cpu", "weight": 3}],
            "resources[0].weight: Invalid value: -1: must be 1; "
            'resources[1].name: Duplicate value: "cpu"; resources[1].weight: Invalid value: 3: must be 1',
            id="every error named",
        ),
        pytest.param("cpu", "resources: must be a list, got str", id="not a list"),
        pytest.param([{"name": 1}], "resources[0].name: must be a string, got int", id="name not a string"),
        pytest.param([{"name": "cpu", "weight": "1"}], "resources[0].weight: must be an integer, got '1'", id="weight"),
    ],
)
def test_args_invalid(resources: object, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        BalancedAllocation({"resources": resources}, Handle())
    assert str(exc.value) == message


def test_bad_args_stop_the_config() -> None:
    doc = config_with(
        [{"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu", "weight": 2}]}}]
    )
    with pytest.raises(ConfigError) as exc:
        parse_config(doc)
    assert str(exc.value) == (
        "profiles[0].pluginConfig[NodeResourcesBalancedAllocation].args: "
        "resources[0].weight: Invalid value: 2: must be 1"
    )
