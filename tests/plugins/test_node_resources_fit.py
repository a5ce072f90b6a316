"""NodeResourcesFit's filtering half: PreFilter → Filter, the insufficient-resource details, the
arguments, the events and the queueing hints.

Ported from upstream v1.35.4 ``noderesources/fit_test.go`` (TestEnoughRequests, TestNotEnoughRequests,
TestStorageRequests, TestRestartableInitContainers, TestPreFilterDisabled, TestEventsToRegister,
Test_isSchedulableAfterPodChange, Test_isSchedulableAfterNodeChange, TestIsFit,
TestHaveAnyRequestedResourcesIncreased) and ``apis/config/validation/validation_pluginargs_test.go``;
ids are upstream's case names. Gates as 1.35's defaults (SidecarContainers, PodLevelResources,
InPlacePodVerticalScaling and SchedulingQueueHint on; DRAExtendedResource off), so gate-off and DRA
cases are not ported. Expected values come from the rules, spelled out in comments.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.objects import Node, Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.noderesources import fit
from scheduler.plugins.noderesources.fit import Fit, InsufficientResource, fits_request
from scheduler.schedule_one import SchedulingAlgorithm
from scheduler.testing import make_node, make_pod
from tests.helpers import Run, as_pod, framework, make_cache, schedule

FIT = "NodeResourcesFit"
UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
DRA_NAME = "extended.resource.dra.io/something"

Req = dict[str, str]


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


def req(milli_cpu: int = 0, memory: int = 0, storage: int = 0, **scalar: int) -> Req:
    """Upstream's ``newResourcePod`` request list: cpu, memory, pods and storage always listed."""
    out = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(storage)}
    out.update({name: str(q) for name, q in scalar.items()})
    return out


def scalars(**names: int) -> dict[str, int]:
    return names


def resource_pod(*containers: Req, init: tuple[Req, ...] = (), name: str = "p", **extra: Any) -> Pod:
    """``newResourcePod``/``newResourceInitPod``: one container per request list."""
    b = make_pod(name).set(
        "spec.containers",
        [{"name": f"c{i}", "image": "pause", "resources": {"requests": r}} for i, r in enumerate(containers)],
    )
    if init:
        b = b.set(
            "spec.initContainers",
            [{"name": f"i{i}", "image": "pause", "resources": {"requests": r}} for i, r in enumerate(init)],
        )
    for path, val in extra.items():
        b = b.set(path.replace("__", "."), val)
    built = b.build()
    assert not built.errors, built.error_message
    return built


def node_info(allocatable: Req, *pods: Pod) -> NodeInfo:
    node = make_node("node").allocatable(**allocatable).build()
    return NodeInfo(node, {p.key: p for p in pods})


# makeAllocatableResources(10, 20, 32, 5, 20, 5): 10m cpu, 20 bytes, 32 pods, 5 aaa, 20 storage, 5 hugepages
ALLOC = {"cpu": "10m", "memory": "20", "pods": "32", EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"}


def existing(*containers: Req) -> Pod:
    return resource_pod(*containers, name="existing")


def run_filter(
    pod: Pod, info: NodeInfo, args: dict[str, Any] | None = None
) -> tuple[Status | None, list[InsufficientResource]]:
    plugin = Fit(args or {}, Handle())
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, [info])
    assert result is None and status is None
    got = plugin.filter(state, pod, info)
    details = fits_request(pod.resources.requests, info, plugin.ignored_resources, plugin.ignored_resource_groups)
    return got, details


def ir(name: str, requested: int, used: int, capacity: int, unresolvable: bool = False) -> InsufficientResource:
    return InsufficientResource(name, insufficient(name), requested, used, capacity, unresolvable)


def status(code: Code, *resources: str) -> Status:
    return Status(code, tuple(insufficient(r) for r in resources), FIT)


# -- TestEnoughRequests --------------------------------------------------------------------------

ENOUGH_CASES = [
    pytest.param(
        resource_pod(),
        [req(10, 20)],
        {},
        None,
        [],
        id="no resources requested always fits",
    ),
    pytest.param(
        resource_pod(req(1, 1)),
        [req(10, 20)],
        {},
        status(UNSCHED, "cpu", "memory"),
        # cpu 1 > 10 - 10; memory 1 > 20 - 20; neither exceeds the node itself
        [ir("cpu", 1, 10, 10), ir("memory", 1, 20, 20)],
        id="too many resources fails",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(3, 1),)),
        [req(8, 19)],
        {},
        status(UNSCHED, "cpu"),
        [ir("cpu", 3, 8, 10)],  # max(1, 3) = 3 > 10 - 8
        id="too many resources fails due to init container cpu",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(3, 1), req(2, 1))),
        [req(8, 19)],
        {},
        status(UNSCHED, "cpu"),
        [ir("cpu", 3, 8, 10)],  # max(1, 3, 2) = 3
        id="too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(1, 3),)),
        [req(9, 19)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 3, 19, 20)],
        id="too many resources fails due to init container memory",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(1, 3), req(1, 2))),
        [req(9, 19)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 3, 19, 20)],
        id="too many resources fails due to highest init container memory",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(1, 1),)),
        [req(9, 19)],
        {},
        None,
        [],  # max(1, 1) = 1 ≤ 1 left of each
        id="init container fits because it's the max, not sum, of containers and init containers",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(1, 1), req(1, 1))),
        [req(9, 19)],
        {},
        None,
        [],
        id="multiple init containers fit because it's the max, not sum, of containers and init containers",
    ),
    pytest.param(resource_pod(req(1, 1)), [req(5, 5)], {}, None, [], id="both resources fit"),
    pytest.param(
        resource_pod(req(2, 1)),
        [req(9, 5)],
        {},
        status(UNSCHED, "cpu"),
        [ir("cpu", 2, 9, 10)],
        id="one resource memory fits",
    ),
    pytest.param(
        resource_pod(req(1, 2)),
        [req(5, 19)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 2, 19, 20)],
        id="one resource cpu fits",
    ),
    pytest.param(resource_pod(req(5, 1)), [req(5, 19)], {}, None, [], id="equal edge case"),
    pytest.param(
        resource_pod(req(4, 1), init=(req(5, 1),)),
        [req(5, 19)],
        {},
        None,
        [],
        id="equal edge case for init container",
    ),
    pytest.param(resource_pod(req(**{EXT_A: 1})), [req()], {}, None, [], id="extended resource fits"),
    pytest.param(
        resource_pod(req(), init=(req(**{EXT_A: 1}),)),
        [req()],
        {},
        None,
        [],
        id="extended resource fits for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_A: 10})),
        [req(0, 0, **{EXT_A: 0})],
        {},
        status(UNRESOLVABLE, EXT_A),
        [ir(EXT_A, 10, 0, 5, True)],  # 10 > 5: even an empty node is too small
        id="extended resource capacity enforced",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{EXT_A: 10}),)),
        [req(0, 0, **{EXT_A: 0})],
        {},
        status(UNRESOLVABLE, EXT_A),
        [ir(EXT_A, 10, 0, 5, True)],
        id="extended resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_A: 1})),
        [req(0, 0, **{EXT_A: 5})],
        {},
        status(UNSCHED, EXT_A),
        [ir(EXT_A, 1, 5, 5)],
        id="extended resource allocatable enforced",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{EXT_A: 1}),)),
        [req(0, 0, **{EXT_A: 5})],
        {},
        status(UNSCHED, EXT_A),
        [ir(EXT_A, 1, 5, 5)],
        id="extended resource allocatable enforced for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_A: 3}), req(1, 1, **{EXT_A: 3})),
        [req(0, 0, **{EXT_A: 2})],
        {},
        status(UNRESOLVABLE, EXT_A),
        [ir(EXT_A, 6, 2, 5, True)],  # 3 + 3 = 6 > 5
        id="extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{EXT_A: 3}), req(1, 1, **{EXT_A: 3}))),
        [req(0, 0, **{EXT_A: 2})],
        {},
        None,
        [],  # max(3, 3) = 3 ≤ 5 - 2
        id="extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{EXT_A: 6}), req(1, 1, **{EXT_A: 3}))),
        [req(0, 0, **{EXT_A: 2})],
        {},
        status(UNRESOLVABLE, EXT_A),
        [ir(EXT_A, 6, 2, 5, True)],
        id="extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_B: 1})),
        [req()],
        {},
        status(UNRESOLVABLE, EXT_B),
        [ir(EXT_B, 1, 0, 0, True)],  # the node does not offer bbb at all
        id="extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{EXT_B: 1}),)),
        [req()],
        {},
        status(UNRESOLVABLE, EXT_B),
        [ir(EXT_B, 1, 0, 0, True)],
        id="extended resource allocatable enforced for unknown resource for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{K8S_A: 10})),
        [req()],
        {},
        status(UNRESOLVABLE, K8S_A),
        [ir(K8S_A, 10, 0, 0, True)],
        id="kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{K8S_B: 10}),)),
        [req()],
        {},
        status(UNRESOLVABLE, K8S_B),
        [ir(K8S_B, 10, 0, 0, True)],
        id="kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{HUGE_A: 10})),
        [req(0, 0, **{HUGE_A: 0})],
        {},
        status(UNRESOLVABLE, HUGE_A),
        [ir(HUGE_A, 10, 0, 5, True)],
        id="hugepages resource capacity enforced",
    ),
    pytest.param(
        resource_pod(req(), init=(req(1, 1, **{HUGE_A: 10}),)),
        [req(0, 0, **{HUGE_A: 0})],
        {},
        status(UNRESOLVABLE, HUGE_A),
        [ir(HUGE_A, 10, 0, 5, True)],
        id="hugepages resource capacity enforced for init container",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{HUGE_A: 3}), req(1, 1, **{HUGE_A: 3})),
        [req(0, 0, **{HUGE_A: 2})],
        {},
        status(UNRESOLVABLE, HUGE_A),
        [ir(HUGE_A, 6, 2, 5, True)],
        id="hugepages resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_B: 1})),
        [req()],
        {"ignoredResources": ["example.com/bbb"]},
        None,
        [],
        id="skip checking ignored extended resource",
    ),
    pytest.param(
        resource_pod(req(1, 1), spec__overhead={"cpu": "3m", "memory": "13"}),
        [req(5, 5)],
        {},
        None,
        [],  # 1m + 3m = 4m ≤ 10 - 5; 1 + 13 = 14 ≤ 20 - 5
        id="resources + pod overhead fits",
    ),
    pytest.param(
        resource_pod(req(1, 1), spec__overhead={"cpu": "1m", "memory": "15"}),
        [req(5, 5)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 16, 5, 20)],  # 1 + 15 = 16 > 20 - 5
        id="requests + overhead does not fit for memory",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_B: 1, K8S_A: 1})),
        [req()],
        {"ignoredResourceGroups": ["example.com"]},
        status(UNRESOLVABLE, K8S_A),
        [ir(K8S_A, 1, 0, 0, True)],  # kubernetes.io names are not extended: never ignored
        id="skip checking ignored extended resource via resource groups",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{EXT_A: 0})),
        [req(0, 0, **{EXT_A: 6})],
        {},
        None,
        [],  # a zero request is skipped even though 6 > 5 are in use
        id="skip checking extended resource request with quantity zero via resource groups",
    ),
    pytest.param(
        resource_pod(req(**{EXT_A: 1})),
        [req(20, 30, **{EXT_A: 1})],
        {},
        None,
        [],  # cpu and memory requests are 0: skipped although the node is over-committed
        id="skip checking resource request with quantity zero",
    ),
    pytest.param(
        resource_pod(req(1, 1), spec__resources={"requests": {"cpu": "1m", "memory": "2"}}),
        [req(5, 5)],
        {},
        None,
        [],
        id="both pod-level and container-level resources fit",
    ),
    pytest.param(
        resource_pod(req(1, 1), spec__resources={"requests": {"cpu": "7m", "memory": "2"}}),
        [req(5, 5)],
        {},
        status(UNSCHED, "cpu"),
        [ir("cpu", 7, 5, 10)],  # pod-level 7m replaces the container's 1m
        id="pod-level cpu resource not fit",
    ),
    pytest.param(
        resource_pod(req(1, 1), spec__resources={"requests": {"cpu": "3m", "memory": "2"}}),
        [req(5, 19)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 2, 19, 20)],
        id="pod-level memory resource not fit",
    ),
    pytest.param(
        resource_pod(spec__resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        [],
        {},
        None,
        [],
        id="pod-level hugepages resource fit",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{HUGE_A: 3}), spec__resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        [],
        {},
        None,
        [],  # pod-level 5 replaces the container's 3; 5 ≤ 5
        id="both pod-level and container-level hugepages resource fit",
    ),
    pytest.param(
        resource_pod(spec__resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}}),
        [],
        {},
        status(UNRESOLVABLE, HUGE_A),
        [ir(HUGE_A, 10, 0, 5, True)],
        id="pod-level hugepages resource not fit",
    ),
    pytest.param(
        resource_pod(req(1, 1), init=(req(1, 1),), spec__resources={"requests": {"cpu": "3m", "memory": "2"}}),
        [req(5, 19)],
        {},
        status(UNSCHED, "memory"),
        [ir("memory", 2, 19, 20)],
        id="one pod-level cpu resource fits and all init and non-init containers resources fit",
    ),
    pytest.param(
        resource_pod(req(1, 1, **{DRA_NAME: 1})),
        [req()],
        {},
        status(UNRESOLVABLE, DRA_NAME),
        [ir(DRA_NAME, 1, 0, 0, True)],  # DRAExtendedResource is off: an ordinary unknown resource
        id="extended resource backed by DRA not enabled",
    ),
]


@pytest.mark.parametrize(("pod", "existing_pods", "args", "want_status", "want_details"), ENOUGH_CASES)
def test_enough_requests(
    pod: Pod,
    existing_pods: list[Req],
    args: dict[str, Any],
    want_status: Status | None,
    want_details: list[InsufficientResource],
) -> None:
    pods = [existing(*existing_pods)] if existing_pods else []
    got, details = run_filter(pod, node_info(ALLOC, *pods), args)
    assert got == want_status
    assert details == want_details


# -- TestNotEnoughRequests: "Too many pods" ------------------------------------------------------

TOO_MANY = Status(UNSCHED, ("Too many pods",), FIT)
ONE_POD = {"cpu": "10m", "memory": "20", "pods": "1"}


@pytest.mark.parametrize(
    ("pod", "existing_pod"),
    [
        pytest.param(
            resource_pod(),
            req(10, 20),
            id="even without specified resources, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            resource_pod(req(1, 1)),
            req(5, 5),
            id="even if both resources fit, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            resource_pod(req(5, 1)),
            req(5, 19),
            id="even for equal edge case, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            resource_pod(req(5, 1), init=(req(5, 1),)),
            req(5, 19),
            id=(
                "even for equal edge case, predicate fails when there's no space for additional pod "
                "due to init container"
            ),
        ),
    ],
)
def test_not_enough_requests(pod: Pod, existing_pod: Req) -> None:
    info = node_info(ONE_POD, existing(existing_pod))
    got, details = run_filter(pod, info)
    # 1 pod + 1 > 1 allowed; "Too many pods" is never unresolvable (it names no capacity shortfall).
    assert got == TOO_MANY
    assert details[0] == InsufficientResource("pods", "Too many pods", 1, 1, 1, False)


def test_too_many_pods_comes_first_and_keeps_other_reasons() -> None:
    info = node_info(ONE_POD, existing(req(10, 20)))
    got, details = run_filter(resource_pod(req(1, 30)), info)
    # pods first, then cpu (1 > 0 left, resolvable), then memory (30 > 20 itself: unresolvable)
    assert got == Status(UNRESOLVABLE, ("Too many pods", "Insufficient cpu", "Insufficient memory"), FIT)
    assert [d.resource for d in details] == ["pods", "cpu", "memory"]
    assert got.message() == "Too many pods, Insufficient cpu, Insufficient memory"


def test_node_without_pods_allocatable_fits_nothing() -> None:
    # NodeInfo.SetNode: no "pods" in allocatable means 0 allowed pods.
    info = node_info({"cpu": "1", "memory": "1Gi"})
    got, _ = run_filter(resource_pod(), info)
    assert got == TOO_MANY


# -- TestStorageRequests ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "existing_pod", "want"),
    [
        pytest.param(resource_pod(req(1, 1)), req(2, 10), None, id="empty storage requested, and pod fits"),
        pytest.param(
            resource_pod(req(storage=25)),
            req(2, 2),
            status(UNRESOLVABLE, "ephemeral-storage"),  # 25 > 20 allocatable
            id="storage ephemeral local storage request exceeds allocatable",
        ),
        pytest.param(
            resource_pod(req(storage=5)),
            req(2, 2, storage=10),
            None,  # 5 ≤ 20 - 10
            id="ephemeral local storage is sufficient",
        ),
        pytest.param(resource_pod(req(storage=10)), req(2, 2), None, id="pod fits"),
    ],
)
def test_storage_requests(pod: Pod, existing_pod: Req, want: Status | None) -> None:
    got, _ = run_filter(pod, node_info(ALLOC, existing(existing_pod)))
    assert got == want


def test_storage_shortfall_on_a_used_node_is_resolvable() -> None:
    got, details = run_filter(resource_pod(req(storage=15)), node_info(ALLOC, existing(req(storage=10))))
    assert got == status(UNSCHED, "ephemeral-storage")  # 15 > 20 - 10, but 15 ≤ 20
    assert details == [ir("ephemeral-storage", 15, 10, 20)]


# -- TestRestartableInitContainers (SidecarContainers on) ----------------------------------------


def _sidecar_pod(request: Req | None, sidecar_request: Req | None, *, sidecar: bool = True) -> Pod:
    container: dict[str, Any] = {"name": "regular", "image": "pause"}
    if request is not None:
        container["resources"] = {"requests": request}
    b = make_pod("p").set("spec.containers", [container])
    if sidecar:
        init: dict[str, Any] = {"name": "restartable-init", "image": "pause", "restartPolicy": "Always"}
        if sidecar_request is not None:
            init["resources"] = {"requests": sidecar_request}
        b = b.set("spec.initContainers", [init])
    return b.build()


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            _sidecar_pod(None, None, sidecar=False),
            None,
            id="allow pod without restartable init containers if sidecar containers is enabled",
        ),
        pytest.param(
            _sidecar_pod(None, None),
            None,
            id="allow pod with restartable init containers if sidecar containers is enabled",
        ),
        pytest.param(
            _sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}),
            None,  # 1m + 1m = 2m ≤ 2m
            id="allow pod if the total requested resources do not exceed the node's allocatable resources",
        ),
        pytest.param(
            _sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
            status(UNRESOLVABLE, "cpu"),  # 1m + 2m = 3m > 2m allocatable
            id="not allow pod if the total requested resources do exceed the node's allocatable resources",
        ),
    ],
)
def test_restartable_init_containers(pod: Pod, want: Status | None) -> None:
    # makeAllocatableResources(2, 0, 1, 0, 0, 0)
    info = node_info({"cpu": "2m", "memory": "0", "pods": "1", EXT_A: "0", "ephemeral-storage": "0", HUGE_A: "0"})
    got, _ = run_filter(pod, info)
    assert got == want


# -- TestPreFilterDisabled -----------------------------------------------------------------------


def test_filter_without_pre_filter_is_an_error() -> None:
    got = Fit({}, Handle()).filter(CycleState(), make_pod("p").build(), node_info({}))
    assert got is not None
    assert got.code is Code.ERROR
    assert got.message() == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'


def test_pre_filter_never_restricts_nodes() -> None:
    state = CycleState()
    assert Fit({}, Handle()).pre_filter(state, make_pod("p").requests(cpu="1").build(), []) == (None, None)


# -- through the pipeline ------------------------------------------------------------------------


def schedule_resources(nodes: list[Any], pods: list[Any], pending: Any) -> Any:
    """``schedule`` with NodeResourcesFit and NodePorts on (our default profile)."""
    cache = make_cache(nodes, pods)
    attempt = SchedulingAlgorithm(random.Random(0)).schedule_pod(framework(resources=True), cache, as_pod(pending))
    return Run(attempt, cache)


def test_filter_reasons_through_the_pipeline() -> None:
    nodes = [
        make_node("small").capacity(cpu="1", memory="1Gi", pods="10"),
        make_node("busy").capacity(cpu="4", memory="8Gi", pods="10"),
        make_node("full").capacity(cpu="4", memory="8Gi", pods="1"),
    ]
    pods = [
        make_pod("hog").requests(cpu="3500m").node("busy"),
        make_pod("one").node("full"),
    ]
    r = schedule_resources(nodes, pods, make_pod("in").requests(cpu="2", memory="512Mi"))
    assert r.host is None
    assert r.reasons() == {
        "small": ("Insufficient cpu", UNRESOLVABLE, FIT),  # 2 > 1 even empty
        "busy": ("Insufficient cpu", UNSCHED, FIT),  # 2 > 4 - 3.5
        "full": ("Too many pods", UNSCHED, FIT),
    }
    assert r.message == "0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu."


def test_mission_vectors_run_without_resource_plugins() -> None:
    # Sanity of the helper split: without the resource plugins a full node is not filtered.
    nodes = [make_node("full").capacity(cpu="4", memory="8Gi", pods="1")]
    r = schedule(nodes, [make_pod("one").node("full")], make_pod("in"))
    assert r.host == "full"


# -- arguments (ValidateNodeResourcesFitArgs, v1 defaults) ---------------------------------------


def test_default_args() -> None:
    plugin = Fit({}, Handle())
    assert plugin.ignored_resources == frozenset()
    assert plugin.ignored_resource_groups == frozenset()
    # SetDefaults_NodeResourcesFitArgs: LeastAllocated over cpu and memory, weight 1 each
    assert plugin.scorer.names == ("cpu", "memory")


@pytest.mark.parametrize(
    ("args", "messages"),
    [
        pytest.param(
            {"ignoredResources": ["longvalue" + "a" * 64]},
            # upstream (apimachinery 0.35) says "... 63 bytes"; see the report on names.py
            ['ignoredResources[0]: Invalid value: "longvalue' + "a" * 64 + '": name part must be no more than 63'],
            id="IgnoredResources: too long value",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/"]},
            ['ignoredResources[0]: Invalid value: "example.com/": name part must be non-empty'],
            id="IgnoredResources: name is empty",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/aaa/bbb"]},
            ['ignoredResources[0]: Invalid value: "example.com/aaa/bbb": a '],
            id="IgnoredResources: name has too many slash",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/"]},
            [
                "ignoredResourceGroups[0]: Invalid value: \"example.com/\": resource group name can't contain '/'",
                'ignoredResourceGroups[0]: Invalid value: "example.com/": name part must be non-empty',
            ],
            id="IgnoredResourceGroups: illegal args",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["a" * 64]},
            ['ignoredResourceGroups[0]: Invalid value: "' + "a" * 64 + '": name part must be no more than 63'],
            id="IgnoredResourceGroups: name is too long",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/aa"]},
            ["ignoredResourceGroups[0]: Invalid value: \"example.com/aa\": resource group name can't contain '/'"],
            id="IgnoredResourceGroups: name cannot be contain slash",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "Invalid"}},
            [
                'scoringStrategy.type: Unsupported value: "Invalid": supported values: '
                '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
            id="ScoringStrategy: type is unsupported",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], messages: list[str]) -> None:
    with pytest.raises(ValueError) as exc:
        Fit(args, Handle())
    text = str(exc.value)
    for m in messages:
        assert m in text


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"ignoredResources": ["example.com"]}, id="IgnoredResources: valid args"),
        pytest.param({"ignoredResourceGroups": ["example.com"]}, id="IgnoredResourceGroups: valid args "),
    ],
)
def test_valid_args(args: dict[str, Any]) -> None:
    Fit(args, Handle())


def test_ignored_resources_only_apply_to_extended_resources() -> None:
    # kubernetes.io/... and hugepages are not extended: naming them in ignoredResources changes nothing.
    pod = resource_pod(req(**{K8S_A: 1, HUGE_A: 10}))
    got, _ = run_filter(pod, node_info(ALLOC), {"ignoredResources": [K8S_A, HUGE_A]})
    assert got == status(UNRESOLVABLE, HUGE_A, K8S_A)


def test_ignored_resource_group_matches_the_prefix_only() -> None:
    pod = resource_pod(req(**{"example.com/x": 1, "other.example.com/y": 1}))
    got, _ = run_filter(pod, node_info(ALLOC), {"ignoredResourceGroups": ["example.com"]})
    assert got == status(UNRESOLVABLE, "other.example.com/y")


# -- TestEventsToRegister (QHint and InPlacePodVerticalScaling on) --------------------------------


def test_events_to_register() -> None:
    got = [e.event for e in Fit({}, Handle()).events_to_register()]
    assert got == [
        ClusterEvent(EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]


# -- Test_isSchedulableAfterPodChange ------------------------------------------------------------


def _p(name: str, *, node: str = "", pod_level: bool = False, **requests: str) -> Pod:
    b = make_pod(name)
    b = b.set("spec.resources", {"requests": requests}) if pod_level else b.requests(**requests)
    if node:
        b = b.node(node)
    return b.build()


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(make_pod("p").build(), "not-a-pod", None, QUEUE, id="backoff-wrong-old-object"),
        pytest.param(make_pod("p").build(), None, "not-a-pod", QUEUE, id="backoff-wrong-new-object"),
        pytest.param(
            _p("pod1", cpu="1"), _p("pod2", cpu="1", node="fake"), None, QUEUE, id="queue-on-other-pod-deleted"
        ),
        pytest.param(
            make_pod("p").build(), make_pod("q").build(), None, SKIP, id="skip-queue-on-unscheduled-pod-deleted"
        ),
        pytest.param(
            _p("pod1", cpu="1"),
            _p("pod2", cpu="2"),
            _p("pod2", cpu="1"),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            _p("pod1", cpu="1"),
            _p("pod2", memory="2", node="fake"),
            _p("pod2", memory="1", node="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            _p("pod1", pod_level=True, cpu="1"),
            _p("pod2", pod_level=True, memory="2", node="fake"),
            _p("pod2", pod_level=True, memory="1", node="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        ),
        pytest.param(
            _p("pod1", cpu="1"),
            _p("pod2", cpu="2", node="fake"),
            _p("pod2", cpu="1", node="fake"),
            QUEUE,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            _p("pod1", pod_level=True, cpu="1"),
            _p("pod2", pod_level=True, cpu="2", node="fake"),
            _p("pod2", pod_level=True, cpu="1", node="fake"),
            QUEUE,
            id="queue-on-other-pod-some-pod-level-resource-scale-down",
        ),
        pytest.param(
            _p("pod1", cpu="1"),
            _p("pod1", cpu="2"),
            _p("pod1", cpu="1"),
            QUEUE,
            id="queue-on-target-pod-some-resource-scale-down",
        ),
        pytest.param(
            _p("pod1", pod_level=True, cpu="1"),
            _p("pod1", pod_level=True, cpu="2"),
            _p("pod1", pod_level=True, cpu="1"),
            QUEUE,
            id="queue-on-target-pod-some-pod-level-resource-scale-down",
        ),
        # Beyond upstream's table: the other rules of isSchedulableAfterPodEvent.
        pytest.param(
            _p("pod1", cpu="1"),
            make_pod("pod2").set("status.nominatedNodeName", "fake").build(),
            None,
            QUEUE,
            id="queue-on-nominated-pod-deleted",
        ),
        pytest.param(
            _p("pod1", **{EXT_A: "1"}),
            _p("pod2", node="fake", **{EXT_A: "2"}),
            _p("pod2", node="fake", **{EXT_A: "1"}),
            QUEUE,
            id="queue-on-other-pod-extended-resource-scale-down",
        ),
        pytest.param(
            _p("pod1", cpu="1"), None, _p("pod2", cpu="1", node="fake"), QUEUE, id="queue-on-pod-add-without-old"
        ),
    ],
)
def test_is_schedulable_after_pod_change(pod: Pod, old: object, new: object, want: QueueingHint) -> None:
    assert Fit({}, Handle()).is_schedulable_after_pod_event(pod, old, new) is want


def test_pod_scale_down_counts_resized_status() -> None:
    # InPlacePodVerticalScaling: an assigned pod whose status shows a smaller actuated request
    # than before frees cpu (max(spec 2, actuated 2) → max(spec 1, actuated 1)).
    def resized(cpu: str) -> Pod:
        return (
            make_pod("pod2")
            .requests(cpu=cpu)
            .node("fake")
            .set("status.containerStatuses", [{"name": "c", "resources": {"requests": {"cpu": cpu}}}])
            .build()
        )

    target = _p("pod1", cpu="1")
    assert Fit({}, Handle()).is_schedulable_after_pod_event(target, resized("2"), resized("1")) is QUEUE


# -- Test_isSchedulableAfterNodeChange -----------------------------------------------------------


def _node(**allocatable: str) -> Node:
    """``st.MakeNode().Capacity(...)``: pods 32 unless given."""
    return make_node("n").capacity(**{"pods": "32", **allocatable}).build()


def _mem_a(memory: int, a: int = 0) -> Pod:
    return resource_pod(req(memory=memory, **({EXT_A: a} if a else {})))


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(make_pod("p").build(), None, "not-a-node", QUEUE, id="backoff-wrong-new-object"),
        pytest.param(make_pod("p").build(), "not-a-node", _node(), QUEUE, id="backoff-wrong-old-object"),
        pytest.param(
            resource_pod(req(memory=2)),
            None,
            _node(memory="1"),
            SKIP,  # 2 > 1
            id="skip-queue-on-node-add-without-sufficient-resources",
        ),
        pytest.param(
            resource_pod(req(**{EXT_A: 1})),
            None,
            _node(**{EXT_B: "1"}),
            SKIP,  # offers bbb, not aaa
            id="skip-queue-on-node-add-without-required-resource-type",
        ),
        pytest.param(
            _mem_a(2, 1),
            None,
            _node(memory="4", **{EXT_A: "2"}),
            QUEUE,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            _mem_a(2, 1),
            _node(memory="2", **{EXT_A: "2"}),
            _node(memory="2", **{EXT_A: "1", EXT_B: "2"}),
            SKIP,  # still fits, but nothing the pod asks for grew (aaa shrank, bbb is not requested)
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            _mem_a(2, 1),
            _node(memory="2", **{EXT_A: "1"}),
            _node(memory="2", **{EXT_A: "2"}),
            QUEUE,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            _mem_a(2, 1),
            _node(memory="4", **{EXT_A: "2"}),
            _node(memory="1", **{EXT_A: "2"}),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            _mem_a(2, 1),
            _node(memory="1", **{EXT_A: "2"}),
            _node(memory="4", **{EXT_A: "2"}),
            QUEUE,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
        pytest.param(
            resource_pod(),
            None,
            make_node("n").capacity(cpu="1").build(),
            SKIP,  # no "pods" allocatable: not even one pod fits
            id="skip-queue-on-node-add-with-no-pod-room",
        ),
    ],
)
def test_is_schedulable_after_node_change(pod: Pod, old: object, new: object, want: QueueingHint) -> None:
    assert Fit({}, Handle()).is_schedulable_after_node_change(pod, old, new) is want


# -- TestIsFit -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "node", "want"),
    [
        pytest.param(make_pod("p").set("spec.containers", []).build(), None, False, id="nil node"),
        pytest.param(make_pod("p").requests(cpu="2").build(), _node(cpu="1"), False, id="insufficient resource"),
        pytest.param(make_pod("p").requests(cpu="1").build(), _node(cpu="2"), True, id="sufficient resource"),
        pytest.param(
            make_pod("p").set("spec.resources", {"requests": {"cpu": "2"}}).build(),
            _node(cpu="1"),
            False,
            id="insufficient pod-level resource",
        ),
        pytest.param(
            make_pod("p").set("spec.resources", {"requests": {"cpu": "2"}}).build(),
            _node(cpu="2"),
            True,
            id="sufficient pod-level resource",
        ),
        pytest.param(
            make_pod("p").set("spec.resources", {"requests": {HUGE_A: "2Mi"}}).build(),
            _node(**{HUGE_A: "2Mi"}),
            True,
            id="sufficient pod-level resource hugepages",
        ),
        pytest.param(
            make_pod("p").set("spec.resources", {"requests": {HUGE_A: "4Mi"}}).build(),
            _node(**{HUGE_A: "2Mi"}),
            False,
            id="insufficient pod-level resource hugepages",
        ),
    ],
)
def test_is_fit(pod: Pod, node: Node | None, want: bool) -> None:
    assert fit._fits_empty(pod, node) is want


# -- TestHaveAnyRequestedResourcesIncreased (DRAExtendedResource off) ----------------------------

FULL_REQ = req(2, 2, 2, **{EXT_A: 2})


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            resource_pod(req()),
            _node(pods="1", cpu="1", memory="1", **{"ephemeral-storage": "1", EXT_A: "1"}),
            _node(pods="1", cpu="2", memory="2", **{"ephemeral-storage": "2", EXT_A: "2"}),
            False,  # a pod asking for nothing only cares about the pod count
            id="no-requested-resources",
        ),
        pytest.param(
            resource_pod(req()),
            _node(pods="1", cpu="1", memory="1", **{"ephemeral-storage": "1", EXT_A: "1"}),
            _node(pods="2", cpu="1", memory="1", **{"ephemeral-storage": "1", EXT_A: "1"}),
            True,
            id="no-requested-resources-pods-increased",
        ),
        pytest.param(
            resource_pod(FULL_REQ),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "3"}),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "1"}),
            False,
            id="scalar-resources-not-in-node",
        ),
        pytest.param(
            resource_pod(FULL_REQ),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "3", EXT_A: "4"}),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "1", EXT_A: "1"}),
            False,
            id="requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(FULL_REQ),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "3", EXT_A: "4"}),
            _node(cpu="3", memory="4", **{"ephemeral-storage": "3", EXT_A: "4"}),
            True,
            id="requested-resources-increased",
        ),
        pytest.param(
            resource_pod(req(2, 2)),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "3", EXT_A: "4"}),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "1", EXT_A: "1"}),
            False,
            id="non-requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(req(2, 2)),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "3", EXT_A: "4"}),
            _node(cpu="1", memory="2", **{"ephemeral-storage": "5", EXT_A: "6"}),
            False,  # storage and aaa grew, but the pod asks for neither
            id="non-requested-resources-increased",
        ),
        pytest.param(
            resource_pod(req(storage=1)),
            _node(**{"ephemeral-storage": "1"}),
            _node(**{"ephemeral-storage": "2"}),
            True,
            id="requested-ephemeral-storage-increased",
        ),
    ],
)
def test_have_any_requested_resources_increased(pod: Pod, old: Node, new: Node, want: bool) -> None:
    assert fit._any_requested_increased(pod, old, new) is want
