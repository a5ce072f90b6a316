"""The queue's nominator: which pending pods are nominated to which node, as upstream's queue keeps it.

Cases ported from upstream ``pkg/scheduler/backend/queue/scheduling_queue_test.go`` (v1.35.4) keep
the upstream case name as their pytest id or test name. Upstream identifies pods by UID; here by
namespace/name, so the fixtures differ in name where upstream's differ only in UID.
"""

from __future__ import annotations

import pytest

from scheduler.api.objects import Pod, PodKey
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.framework.interface import CLEAR_NOMINATED_NODE, NominatingInfo, NominatingMode
from scheduler.testing import make_pod
from tests.backend.test_scheduling_queue import default_queue, fail, pop
from tests.fakes import FakeClock

LOW, MEDIUM, HIGH = 0, 100, 1000


def override(node: str) -> NominatingInfo:
    return NominatingInfo(node, NominatingMode.OVERRIDE)


# upstream's fixtures (scheduling_queue_test.go)
HIGH_PRIORITY = make_pod("hpp", "ns1").set("metadata.uid", "hppns1").priority(HIGH).build()
HIGH_PRI_NOMINATED = (
    make_pod("hpp", "ns1").set("metadata.uid", "hppns1").priority(HIGH).set("status.nominatedNodeName", "node1").build()
)
MED_PRIORITY = (
    make_pod("mpp", "ns2")
    .set("metadata.uid", "mppns2")
    .priority(MEDIUM)
    .set("status.nominatedNodeName", "node1")
    .build()
)
UNSCHEDULABLE = (
    make_pod("up", "ns1").set("metadata.uid", "upns1").priority(LOW).set("status.nominatedNodeName", "node1").build()
)
NON_EXISTENT = make_pod("ne", "ns1").set("metadata.uid", "nens1").build()
SCHEDULED = make_pod("sp", "ns1").set("metadata.uid", "spns1").node("foo").build()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(10_000.0)


def queue_with(clock: FakeClock, *objects: Pod) -> SchedulingQueue:
    """Upstream's ``NewTestQueueWithObjects``: the pod lister knows ``objects``."""
    q = default_queue(clock)
    known = {p.key: p for p in objects}
    q.nominator.pod_lister = known.get
    return q


def nominated(q: SchedulingQueue) -> dict[str, list[str]]:
    """node -> the keys nominated there, in order (upstream compares the nominator's maps)."""
    nodes: dict[str, list[str]] = {}
    for key in (MED_PRIORITY.key, UNSCHEDULABLE.key, HIGH_PRIORITY.key, NON_EXISTENT.key, SCHEDULED.key):
        node = q.nominator.nominated_node(key)
        if node is not None:
            nodes.setdefault(node, [])
    for node in nodes:
        nodes[node] = [ref.key for ref in q.nominator.nominated_pods_for_node(node)]
    return nodes


def test_priority_queue_add(clock: FakeClock) -> None:
    """TestPriorityQueue_Add: pods with status.nominatedNodeName are nominated as they arrive, and stay
    nominated when popped."""
    q = queue_with(clock, MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY)
    for p in (MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY):
        q.add(p)
    assert nominated(q) == {"node1": [MED_PRIORITY.key, UNSCHEDULABLE.key]}
    assert [pop(q).pod.name for _ in range(3)] == ["hpp", "mpp", "up"]
    assert len(q.nominator.nominated_pods_for_node("node1")) == 2


def test_priority_queue_add_unschedulable_if_not_present(clock: FakeClock) -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent: requeueing a failed pod leaves the nominator as it was."""
    q = queue_with(clock, HIGH_PRI_NOMINATED, UNSCHEDULABLE)
    q.add(UNSCHEDULABLE)
    up = pop(q, "up")
    q.add(HIGH_PRI_NOMINATED)
    fail(q, up, "plugin")
    pop(q, "hpp")
    assert len(nominated(q)) == 1
    assert q.location(UNSCHEDULABLE.key) == "unschedulable"


def test_priority_queue_delete(clock: FakeClock) -> None:
    """TestPriorityQueue_Delete: an update that adds a nomination, then the pod's deletion, leaves only
    the other pod nominated."""
    q = queue_with(clock, HIGH_PRI_NOMINATED, UNSCHEDULABLE)
    q.update(HIGH_PRIORITY, HIGH_PRI_NOMINATED)
    q.add(UNSCHEDULABLE)
    q.delete(HIGH_PRI_NOMINATED.key)
    assert q.location(UNSCHEDULABLE.key) == "active"
    assert q.location(HIGH_PRI_NOMINATED.key) is None
    assert nominated(q) == {"node1": [UNSCHEDULABLE.key]}


def test_priority_queue_nominated_pods_for_node(clock: FakeClock) -> None:
    """TestPriorityQueue_NominatedPodsForNode: the queue's own version of each pod, in nomination order."""
    q = queue_with(clock, MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY)
    for p in (MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY):
        q.add(p)
    pop(q, "hpp")
    assert q.nominated_pods_for_node("node1") == [MED_PRIORITY, UNSCHEDULABLE]
    assert q.nominated_pods_for_node("node2") == []


def test_a_nominated_pod_the_queue_no_longer_holds_is_only_its_name() -> None:
    """nominatedPodToInfo: popped (in flight, or skipped while being deleted), the pod is its name and
    UID only: priority 0, no requests, no labels."""
    q = queue_with(FakeClock(0.0), MED_PRIORITY)
    q.add(MED_PRIORITY)
    pop(q, "mpp")
    (bare,) = q.nominated_pods_for_node("node1")
    assert (bare.key, bare.uid, bare.priority, dict(bare.labels)) == (MED_PRIORITY.key, "mppns2", 0, {})
    assert bare.resources.usage.milli_cpu == 0


@pytest.mark.parametrize(
    ("pod", "delete_pod", "want_len"),
    [
        pytest.param(MED_PRIORITY, False, 1, id="alive pod gets added into PodNominator"),
        pytest.param(HIGH_PRI_NOMINATED, True, 0, id="deleted pod shouldn't be added into PodNominator"),
        pytest.param(
            HIGH_PRIORITY,
            False,
            0,
            id="pod without .status.nominatedPodName specified shouldn't be added into PodNominator",
        ),
    ],
)
def test_priority_queue_nominated_pod_deleted(pod: Pod, delete_pod: bool, want_len: int, clock: FakeClock) -> None:
    """TestPriorityQueue_NominatedPodDeleted"""
    q = queue_with(clock, *(() if delete_pod else (pod,)))
    q.add_nominated_pod(pod, None)
    assert len(q.nominated_pods_for_node(pod.nominated_node_name)) == want_len


def test_priority_queue_update_nominated_pod_for_node(clock: FakeClock) -> None:
    """TestPriorityQueue_UpdateNominatedPodForNode"""
    q = queue_with(clock, MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY, SCHEDULED)
    q.add(MED_PRIORITY)
    q.add_nominated_pod(UNSCHEDULABLE, override("node5"))  # another node than the pod's own
    q.add_nominated_pod(HIGH_PRIORITY, override("node2"))  # a pod without a nominated node
    want = {"node1": [MED_PRIORITY.key], "node2": [HIGH_PRIORITY.key], "node5": [UNSCHEDULABLE.key]}
    assert nominated(q) == want
    pop(q, "mpp")
    assert nominated(q) == want  # popping changes nothing
    q.add_nominated_pod(HIGH_PRIORITY, override("node4"))
    want = {"node1": [MED_PRIORITY.key], "node4": [HIGH_PRIORITY.key], "node5": [UNSCHEDULABLE.key]}
    assert nominated(q) == want
    q.add_nominated_pod(NON_EXISTENT, override("node1"))  # deleted from the informer: nothing changes
    assert nominated(q) == want
    unbound_copy = make_pod("sp", "ns1").set("metadata.uid", "spns1").build()
    q.add_nominated_pod(unbound_copy, override("node1"))  # the lister has it scheduled: nothing changes
    assert nominated(q) == want
    q.delete_nominated_pod_if_exists(HIGH_PRIORITY)
    assert nominated(q) == {"node1": [MED_PRIORITY.key], "node5": [UNSCHEDULABLE.key]}


# -- beyond upstream's cases: the rules they rest on ---------------------------------------------


def test_a_gated_pod_is_not_nominated_on_add_but_is_on_update(clock: FakeClock) -> None:
    """moveToActiveQ nominates only a pod that enters activeQ; Update nominates a gated pod anyway."""
    gated = make_pod("g", "ns1").gate("example.com/gate").set("status.nominatedNodeName", "node1").build()
    q = queue_with(clock, gated)
    q.add(gated)
    assert q.location(gated.key) == "unschedulable"
    assert q.nominated_pods_for_node("node1") == []
    newer = make_pod("g", "ns1").gate("example.com/gate").set("status.nominatedNodeName", "node1").build()
    q.update(gated, newer)
    assert q.nominated_pods_for_node("node1") == [newer]


def test_an_update_without_a_nominated_node_keeps_the_one_held_in_memory(clock: FakeClock) -> None:
    """UpdateNominatedPod: a nomination made in memory (its status patch not back yet) survives an
    update with no nominatedNodeName on either side; an update that sets or clears one decides."""
    q = queue_with(clock, HIGH_PRIORITY)
    q.add(HIGH_PRIORITY)
    q.add_nominated_pod(HIGH_PRIORITY, override("node3"))
    relabelled = make_pod("hpp", "ns1").set("metadata.uid", "hppns1").priority(HIGH).label("x", "1").build()
    q.update(HIGH_PRIORITY, relabelled)
    assert q.nominated_pods_for_node("node3") == [relabelled]
    moved = make_pod("hpp", "ns1").priority(HIGH).set("status.nominatedNodeName", "node4").build()
    q.update(relabelled, moved)
    assert (q.nominated_pods_for_node("node3"), q.nominated_pods_for_node("node4")) == ([], [moved])
    cleared = make_pod("hpp", "ns1").priority(HIGH).build()
    q.update(moved, cleared)
    assert q.nominator.nominated_node(PodKey(cleared.key)) is None


def test_an_update_in_flight_leaves_the_nominator_alone(clock: FakeClock) -> None:
    """Upstream records the event for the in-flight pod and returns before the nominator."""
    q = queue_with(clock, MED_PRIORITY)
    q.add(MED_PRIORITY)
    pop(q, "mpp")
    cleared = make_pod("mpp", "ns2").priority(MEDIUM).build()
    q.update(MED_PRIORITY, cleared)
    assert q.nominator.nominated_node(MED_PRIORITY.key) == "node1"


def test_failure_modes_noop_keeps_override_moves_or_clears(clock: FakeClock) -> None:
    """The failure handler's NominatingInfo: Noop keeps status.nominatedNodeName, Override "" clears,
    Override "n" nominates there."""
    q = queue_with(clock, MED_PRIORITY)
    q.add_nominated_pod(MED_PRIORITY, None)
    assert q.nominator.nominated_node(MED_PRIORITY.key) == "node1"
    q.add_nominated_pod(MED_PRIORITY, override("node7"))
    assert q.nominator.nominated_node(MED_PRIORITY.key) == "node7"
    q.add_nominated_pod(MED_PRIORITY, CLEAR_NOMINATED_NODE)
    assert q.nominator.nominated_node(MED_PRIORITY.key) is None
    assert not q.has_nominated_pods()
