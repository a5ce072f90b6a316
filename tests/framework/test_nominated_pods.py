"""Filter with the pods nominated to a node (upstream ``RunFilterPluginsWithNominatedPods``).

``test_filter_plugins_with_nominated_pods`` ports upstream's ``TestFilterPluginsWithNominatedPods``
(``framework/runtime/framework_test.go``, v1.35.4), case names kept. Upstream's fixtures differ only
in UID; ours are told apart by namespace/name, so they get names.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler.api.objects import Node, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.config import load_config
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, NominatingInfo, NominatingMode
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeClock

LOW, HIGH = 0, 1000
LOW_PRIORITY_POD = make_pod("low").set("metadata.uid", "low").priority(LOW).build()
HIGH_PRIORITY_POD = make_pod("high").set("metadata.uid", "high").priority(HIGH).build()
NODE = make_node("testNode").build()


class Nominated:
    """A PodNominator holding given pods per node."""

    def __init__(self, pods: dict[str, list[Pod]]) -> None:
        self.pods = pods

    def has_nominated_pods(self) -> bool:
        return any(self.pods.values())

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self.pods.get(node_name, [])


class PreFilterWithAddPod:
    """Upstream's TestPlugin with ``PreFilterAddPodStatus`` injected; remembers the pods added."""

    def __init__(self, name: str, code: Code) -> None:
        self.NAME = name
        self.code = code
        self.added: list[str] = []

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        self.added.append(pod_to_add.name)
        return Status(self.code, ("injected status",)) if self.code is not Code.SUCCESS else None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return None


class CountingFilter:
    """Upstream's TestPlugin with ``FilterStatus`` injected, or a pods limit; counts its calls."""

    def __init__(self, name: str, code: Code = Code.SUCCESS, max_pods: int | None = None) -> None:
        self.NAME = name
        self.code = code
        self.max_pods = max_pods
        self.calls: list[int] = []  # how many pods each call saw on the node

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls.append(len(node_info.pods))
        if self.max_pods is not None and len(node_info.pods) >= self.max_pods:
            return Status(Code.UNSCHEDULABLE, ("full",))
        if self.code is Code.SUCCESS:
            return None
        return Status(self.code, ("injected filter status",))


def framework(nominator: Nominated | SchedulingQueue | None, *plugins: object) -> Framework:
    pre_filter = [p.NAME for p in plugins if isinstance(p, PreFilterWithAddPod)]  # type: ignore[attr-defined]
    filters = [p.NAME for p in plugins if isinstance(p, CountingFilter)]  # type: ignore[attr-defined]
    return Framework(
        "p",
        {p.NAME: p for p in plugins},  # type: ignore[attr-defined,misc]
        {"preFilter": pre_filter, "filter": filters},
        {},
        Handle(nominator=nominator),
    )


def node_info(*pods: Pod) -> NodeInfo:
    return NodeInfo(Node.from_dict(make_node("testNode").dict()), {p.key: p for p in pods})


@pytest.mark.parametrize(
    ("pre_filter_code", "filter_code", "pod", "nominated_pod", "want"),
    [
        pytest.param(None, None, LOW_PRIORITY_POD, None, None, id="node has no nominated pod"),
        pytest.param(
            Code.SUCCESS,
            Code.SUCCESS,
            LOW_PRIORITY_POD,
            HIGH_PRIORITY_POD,
            None,
            id="node has a high-priority nominated pod and all filters succeed",
        ),
        pytest.param(
            Code.ERROR,
            None,
            LOW_PRIORITY_POD,
            HIGH_PRIORITY_POD,
            Status.as_error('running AddPod on PreFilter plugin "TestPlugin1": injected status'),
            id="node has a high-priority nominated pod and pre filters fail",
        ),
        pytest.param(
            Code.SUCCESS,
            Code.ERROR,
            LOW_PRIORITY_POD,
            HIGH_PRIORITY_POD,
            Status.as_error('running "TestPlugin2" filter plugin: injected filter status').with_plugin("TestPlugin2"),
            id="node has a high-priority nominated pod and filters fail",
        ),
        pytest.param(
            Code.UNSCHEDULABLE,
            Code.SUCCESS,
            HIGH_PRIORITY_POD,
            LOW_PRIORITY_POD,
            None,
            id="node has a low-priority nominated pod and pre filters return unschedulable",
        ),
    ],
)
def test_filter_plugins_with_nominated_pods(
    pre_filter_code: Code | None, filter_code: Code | None, pod: Pod, nominated_pod: Pod | None, want: Status | None
) -> None:
    plugins: list[object] = []
    if pre_filter_code is not None:
        plugins.append(PreFilterWithAddPod("TestPlugin1", pre_filter_code))
    if filter_code is not None:
        plugins.append(CountingFilter("TestPlugin2", filter_code))
    nominator = Nominated({"testNode": [nominated_pod]} if nominated_pod is not None else {})
    fwk = framework(nominator, *plugins)
    info = node_info(make_pod("existing").node("testNode").build())
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), pod, info) == want


@pytest.mark.parametrize(
    ("pod", "expected_count"),
    [
        pytest.param(HIGH_PRIORITY_POD, 1, id="nominated pods have lower priority, predicate is called once"),
        pytest.param(LOW_PRIORITY_POD, 2, id="nominated pods have higher priority, predicate is called twice"),
    ],
)
def test_find_fit_predicate_call_counts(pod: Pod, expected_count: int) -> None:
    """schedule_one_test.go TestFindFitPredicateCallCounts: the nominated pod is not in the queue (only
    nominated), so Filter sees it as upstream's bare pod: priority 0."""
    frameworks = build_frameworks(load_config(None))
    queue = SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=FakeClock(0.0))
    queue.add_nominated_pod(
        make_pod("nominated").priority(500).build(), NominatingInfo("testNode", NominatingMode.OVERRIDE)
    )
    fake = CountingFilter("FakeFilter")
    fwk = framework(queue, fake)
    node_filter = fwk.node_filter(CycleState(), pod, 1)
    assert node_filter(node_info()) is None
    assert len(fake.calls) == expected_count


def test_a_node_fits_only_if_it_fits_with_and_without_its_nominated_pods() -> None:
    """Both passes: the first sees the nominated pod on the node (and the state it added), the second
    the node as it is; a rejection in the first decides."""
    full = CountingFilter("Full", max_pods=2)
    add = PreFilterWithAddPod("AddPod", Code.SUCCESS)
    fwk = framework(Nominated({"testNode": [HIGH_PRIORITY_POD]}), add, full)
    info = node_info(make_pod("existing").node("testNode").build())
    status = fwk.run_filter_plugins_with_nominated_pods(CycleState(), LOW_PRIORITY_POD, info)
    assert status == Status(Code.UNSCHEDULABLE, ("full",), "Full")
    assert (full.calls, add.added) == ([2], ["high"])
    assert list(info.pods) == ["default/existing"]  # the node itself is never touched
    full.calls.clear()
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), HIGH_PRIORITY_POD, info) is None
    assert full.calls == [1]  # a lower-priority nominated pod is not counted: one pass


def test_equal_priority_counts_and_the_pod_itself_does_not() -> None:
    full = CountingFilter("Full", max_pods=1)
    twin = make_pod("twin").priority(HIGH).build()
    fwk = framework(Nominated({"testNode": [HIGH_PRIORITY_POD, twin]}), full)
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), twin, node_info()) is not None
    full.calls.clear()
    fwk = framework(Nominated({"testNode": [HIGH_PRIORITY_POD]}), full)
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), HIGH_PRIORITY_POD, node_info()) is None
    assert full.calls == [0]


def test_the_search_reuses_results_only_without_nominated_pods() -> None:
    """node_filter: per-node results of signed plugins answer the pass without nominated pods; the
    pass with them is never remembered, so the next pod of the signature is not refused for them."""
    frameworks = build_frameworks(load_config(None))
    (fwk,) = frameworks.values()
    node = make_node("n1").capacity(cpu="2", memory="4Gi", pods="110").build()
    info = NodeInfo(node)
    cache = Cache()
    cache.add_node(node)
    fwk.handle.snapshot = cache
    big = make_pod("big").priority(HIGH).requests(cpu="2").build()
    small = make_pod("small").requests(cpu="1").build()
    fwk.handle.nominator = Nominated({"n1": [big]})
    state = CycleState()
    fwk.run_pre_filter_plugins(state, small, [info])
    verdict = fwk.node_filter(state, small, 1)(cache.get("n1"))  # type: ignore[arg-type]
    assert verdict is not None and verdict.reasons == ("Insufficient cpu",)
    fwk.handle.nominator = Nominated({})
    state = CycleState()
    fwk.run_pre_filter_plugins(state, small, [info])
    assert fwk.node_filter(state, small, 1)(cache.get("n1")) is None  # type: ignore[arg-type]
