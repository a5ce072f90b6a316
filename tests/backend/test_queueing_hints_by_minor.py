"""The queueing hints and cluster events that differ between the minors we decide as (issue #47).

Cases carry over from upstream's own tests of these functions at each release
(``podtopologyspread/plugin_test.go``, ``interpodaffinity/plugin_test.go`` at v1.35.4, v1.36.3 and
v1.37.2); each is asked at every minor, with the answer that minor's kube-scheduler gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.backend.queue.queueing_hints import QueueingStrategy, build_hint_map
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.config import load_config
from scheduler.features import SUPPORTED, Features, features_at
from scheduler.framework import events as ev
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, Handle
from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.fakes import FakeClock

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A = ActionType
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def at(minor: str) -> Features:
    return features_at(minor)


def by_minor(q35: QueueingHint, q36: QueueingHint, q37: QueueingHint) -> dict[str, QueueingHint]:
    return dict(zip(SUPPORTED, (q35, q36, q37), strict=True))


def pts(minor: str) -> PodTopologySpread:
    """As upstream's hint tests set it up: List defaulting, an (empty) snapshot."""
    return PodTopologySpread({"defaultingType": "List"}, Handle(Cache()), at(minor))


def ipa(minor: str) -> InterPodAffinity:
    return InterPodAffinity({}, Handle(snapshot=Cache()), at(minor))


def registered(plugin: object) -> list[tuple[EventResource, ActionType]]:
    assert isinstance(plugin, EnqueueExtensions)
    return [(r.event.resource, r.event.action) for r in plugin.events_to_register()]


def assigned_pod_hint(plugin: PodTopologySpread | InterPodAffinity, minor: str) -> Any:
    """The hint a minor asks about another pod's Add, relabelling or Delete (1.37 has one of its own)."""
    if minor == "1.37":
        return plugin.is_schedulable_after_assigned_pod_change
    return plugin.is_schedulable_after_pod_change


def built(value: PodBuilder | None) -> Pod | None:
    return value.build() if value is not None else None


# -- the table of changes ----------------------------------------------------------------------


def test_each_minor_has_the_hint_changes_of_its_release() -> None:
    """1.35 has none; 1.36 counts nominated pods and reads affinity both ways; 1.37 adds the rest."""
    got = {
        minor: (
            at(minor).hints_count_nominated_pods,
            at(minor).affinity_hints_both_ways,
            at(minor).target_pod_events,
            at(minor).anti_affinity_hints_any_term,
            at(minor).node_taint_fallback_removed,
        )
        for minor in SUPPORTED
    }
    assert got == {
        "1.35": (False, False, False, False, False),
        "1.36": (True, True, False, False, False),
        "1.37": (True, True, True, True, True),
    }


# -- PodTopologySpread -------------------------------------------------------------------------


def spread_pod() -> PodBuilder:
    return make_pod("p").label("foo").spread("zone", 1, selector=FOO)


@pytest.mark.parametrize("minor", SUPPORTED)
@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            make_pod("p2").set("status.nominatedNodeName", "fake-node").label("bar"),
            None,
            by_minor(SKIP, SKIP, SKIP),
            id="delete nominated pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            make_pod("p2").set("status.nominatedNodeName", "fake-node").label("foo"),
            None,
            by_minor(SKIP, Q, Q),
            id="delete nominated pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            None,
            make_pod("p2").set("status.nominatedNodeName", "fake-node").label("foo"),
            by_minor(SKIP, Q, Q),
            id="add nominated pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(None, make_pod("p2").label("foo"), by_minor(SKIP, SKIP, SKIP), id="add un-scheduled pod"),
        pytest.param(make_pod("p2").label("foo"), None, by_minor(SKIP, SKIP, SKIP), id="delete un-scheduled pod"),
        pytest.param(
            None, make_pod("p2").node("fake-node").label("foo"), by_minor(Q, Q, Q), id="add pod with labels match"
        ),
        pytest.param(
            None,
            make_pod("p2", "ns2").node("fake-node").label("foo"),
            by_minor(SKIP, SKIP, SKIP),
            id="add pod with different namespace",
        ),
        pytest.param(
            make_pod("p2").node("fake-node").label("foo"),
            make_pod("p2").node("fake-node").label("foo").label("bar"),
            by_minor(SKIP, SKIP, SKIP),
            id="update pod's label that matches no more or less",
        ),
        pytest.param(
            make_pod("p2").node("fake-node").label("foo"),
            make_pod("p2").node("fake-node"),
            by_minor(Q, Q, Q),
            id="delete pod label that matches topologySpreadConstraints selector",
        ),
    ],
)
def test_pts_assigned_pod_change(
    minor: str, old: PodBuilder | None, new: PodBuilder | None, want: dict[str, QueueingHint]
) -> None:
    """Test_isSchedulableAfterPodChange (1.35, 1.36) and Test_isSchedulableAfterAssignedPodChange (1.37):
    a pod with a ``status.nominatedNodeName`` counts from 1.36 on (#135392)."""
    hint = assigned_pod_hint(pts(minor), minor)
    assert hint(spread_pod().build(), built(old), built(new)) is want[minor]


@pytest.mark.parametrize("minor", SUPPORTED)
@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            make_pod("p")
            .label("foo")
            .spread("zone", 1, selector=FOO, nodeTaintsPolicy="Honor")
            .spread("node", 1, selector=BAR),
            make_pod("p").label("foo"),
            make_pod("p").label("foo").toleration("node.kubernetes.io/unschedulable", "Exists"),
            Q,
            id="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new "
            "toleration",
        ),
        pytest.param(
            make_pod("p")
            .label("foo")
            .spread("zone", 1, selector=FOO, nodeTaintsPolicy="Ignore")
            .spread("node", 1, selector=BAR),
            make_pod("p").label("foo"),
            make_pod("p").label("foo").toleration("node.kubernetes.io/unschedulable", "Exists"),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new "
            "toleration",
        ),
        pytest.param(
            make_pod("p").label("foo").spread("zone", 1, selector=FOO).spread("node", 1, selector=BAR),
            make_pod("p"),
            make_pod("p").label("foo"),
            Q,
            id="the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector",
        ),
        pytest.param(
            make_pod("p").label("foo").spread("zone", 1, selector=FOO).spread("node", 1, selector=BAR),
            make_pod("p"),
            make_pod("p").label("unrelated"),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        ),
    ],
)
def test_pts_target_pod_change(
    minor: str, pod: PodBuilder, old: PodBuilder, new: PodBuilder, want: QueueingHint
) -> None:
    """Test_isSchedulableAfterTargetPodChange (1.37); before, the same cases through the Pod hint."""
    plugin = pts(minor)
    hint = plugin.is_schedulable_after_target_pod_change if minor == "1.37" else plugin.is_schedulable_after_pod_change
    assert hint(pod.build(), old.build(), new.build()) is want


def test_pts_registers_assigned_and_target_pod_events_from_1_37() -> None:
    """EventsToRegister: ``Pod`` Add|UpdatePodLabel|UpdatePodToleration|Delete until 1.36; then
    ``AssignedPod`` Add|UpdatePodLabel|Delete and ``TargetPod`` UpdatePodToleration|UpdatePodLabel (#135905)."""
    node = (EventResource.NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT)
    before = [(EventResource.POD, A.ADD | A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION | A.DELETE), node]
    assert registered(pts("1.35")) == before
    assert registered(pts("1.36")) == before
    assert registered(pts("1.37")) == [
        (EventResource.ASSIGNED_POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE),
        (EventResource.TARGET_POD, A.UPDATE_POD_TOLERATION | A.UPDATE_POD_LABEL),
        node,
    ]


# -- InterPodAffinity --------------------------------------------------------------------------


def anti(*terms: tuple[str, tuple[str, ...]]) -> PodBuilder:
    p = make_pod("p")
    for key, values in terms:
        p.pod_affinity(
            "region", {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}, anti=True
        )
    return p


ANTI_SERVICE = (("service", ("securityscan", "value2")),)
ANTI_TWO_TERMS = (("service", ("securityscan",)), ("app", ("web",)))


def other(node: str = "fake-node", **labels: str) -> PodBuilder:
    p = make_pod("other").labels(dict(labels))
    return p.node(node) if node else p


@pytest.mark.parametrize("minor", SUPPORTED)
@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            anti(*ANTI_SERVICE),
            make_pod("other").set("status.nominatedNodeName", "fake-node").label("service", "securityscan"),
            None,
            by_minor(SKIP, Q, Q),
            id="delete a nominated pod which matches pod's anti-affinity",
        ),
        pytest.param(
            anti(*ANTI_SERVICE),
            make_pod("other").set("status.nominatedNodeName", "fake-node").label("aaa", "a"),
            None,
            by_minor(SKIP, SKIP, SKIP),
            id="delete a nominated pod which doesn't match pod's anti-affinity",
        ),
        pytest.param(
            make_pod("p").label("service", "securityscan"),
            anti(*ANTI_SERVICE).node("fake-node"),
            None,
            by_minor(SKIP, Q, Q),
            id="delete a pod with anti-affinity that matches pending pod",
        ),
        pytest.param(
            make_pod("p").label("service", "foo"),
            anti(*ANTI_SERVICE).node("fake-node"),
            None,
            by_minor(SKIP, SKIP, SKIP),
            id="delete a pod with anti-affinity that doesn't match pending pod",
        ),
        pytest.param(
            anti(*ANTI_SERVICE).label("service", "foo"),
            anti(*ANTI_SERVICE).label("service", "foo").node("fake-node"),
            None,
            by_minor(SKIP, SKIP, SKIP),
            id="delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't "
            "match pending pod",
        ),
        pytest.param(
            anti(*ANTI_SERVICE),
            other(service="securityscan"),
            None,
            by_minor(Q, Q, Q),
            id="delete a pod which matches pod's anti-affinity",
        ),
        pytest.param(
            anti(*ANTI_TWO_TERMS),
            other(service="securityscan", app="bar"),
            other(service="foo", app="bar"),
            by_minor(SKIP, SKIP, Q),
            id="modify pod label to change it from matching only one of target pod's anti-affinity terms to "
            "matching none",
        ),
        pytest.param(
            anti(*ANTI_TWO_TERMS),
            other(service="securityscan", app="bar"),
            other(service="foo", app="web"),
            by_minor(SKIP, SKIP, SKIP),
            id="modify pod label but it still matches one of target pod's anti-affinity terms",
        ),
        pytest.param(
            anti(*ANTI_TWO_TERMS),
            other(service="securityscan"),
            None,
            by_minor(SKIP, SKIP, Q),
            id="delete a pod which matches only one of target pod's anti-affinity terms",
        ),
        pytest.param(
            make_pod("p").label("service", "securityscan"),
            anti(*ANTI_TWO_TERMS).node("fake-node"),
            None,
            by_minor(SKIP, SKIP, Q),
            id="delete a pod with anti-affinity that matches pending pod on only one term",
        ),
        pytest.param(
            make_pod("p").pod_affinity(
                "region", {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan"]}]}
            ),
            other("", aaa="a"),
            other("", service="securityscan"),
            by_minor(SKIP, SKIP, SKIP),
            id="update an un-scheduled pod",
        ),
    ],
)
def test_ipa_assigned_pod_change(
    minor: str, pod: PodBuilder, old: PodBuilder | None, new: PodBuilder | None, want: dict[str, QueueingHint]
) -> None:
    """Test_isSchedulableAfterPodChange (1.35, 1.36) and Test_isSchedulableAfterAssignedPodChange (1.37):
    nominated pods count and a deleted pod's own anti-affinity is read from 1.36; one matching
    anti-affinity term is a conflict from 1.37."""
    hint = assigned_pod_hint(ipa(minor), minor)
    assert hint(pod.build(), built(old), built(new)) is want[minor]


@pytest.mark.parametrize("minor", SUPPORTED)
def test_ipa_target_pod_label_update(minor: str) -> None:
    """ "updated pod is the target pod" (1.36) and Test_isSchedulableAfterTargetPodUpdateLabel (1.37):
    its new labels may no longer match another pod's anti-affinity; 1.35 skipped it as unscheduled."""
    plugin = ipa(minor)
    pod = make_pod("p").label("foo", "baz").build()
    old = make_pod("p").label("foo", "bar").build()
    if minor == "1.37":
        assert plugin.is_schedulable_after_target_pod_update_label(pod, old, pod) is Q
    else:
        assert plugin.is_schedulable_after_pod_change(pod, old, pod) is by_minor(SKIP, Q, Q)[minor]


def test_ipa_registers_assigned_and_target_pod_events_from_1_37() -> None:
    node = (EventResource.NODE, A.ADD | A.UPDATE_NODE_LABEL)
    before = [(EventResource.POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE), node]
    assert registered(ipa("1.35")) == before
    assert registered(ipa("1.36")) == before
    assert registered(ipa("1.37")) == [
        (EventResource.ASSIGNED_POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE),
        (EventResource.TARGET_POD, A.UPDATE_POD_LABEL),
        node,
    ]


# -- every default plugin's pod registrations --------------------------------------------------


@pytest.mark.parametrize("minor", SUPPORTED)
def test_no_default_plugin_registers_pod_events_at_1_37(minor: str) -> None:
    """From 1.37 upstream's default plugins name ``AssignedPod`` or ``TargetPod``, never ``Pod``; before,
    ``Pod`` and never the others."""
    hint_map = build_hint_map(build_frameworks(load_config(None, at(minor))))["spread-scheduler"]
    resources = {reg.event.resource for _, reg in hint_map} - {EventResource.NODE}
    pod_kinds = {EventResource.POD, EventResource.ASSIGNED_POD, EventResource.TARGET_POD}
    expected = {EventResource.ASSIGNED_POD, EventResource.TARGET_POD} if minor == "1.37" else {EventResource.POD}
    assert resources & pod_kinds == expected


@pytest.mark.parametrize("minor", SUPPORTED)
def test_a_target_pod_hint_asks_no_uid_from_1_37(minor: str) -> None:
    """Before 1.37 a hint for the pod's own update also saw other pods' and skipped them by UID; from
    1.37 it is registered for TargetPod and upstream dropped the check."""
    frameworks = build_frameworks(load_config(None, at(minor)))
    plugins = frameworks["spread-scheduler"].plugins
    pod = make_pod("p").build()
    old = make_pod("other").build()
    new = make_pod("other").toleration("node.kubernetes.io/unschedulable", "Exists").build()
    taint = plugins["TaintToleration"].is_schedulable_after_pod_toleration_change  # type: ignore[attr-defined]
    cordon = plugins["NodeUnschedulable"].is_schedulable_after_pod_toleration_change  # type: ignore[attr-defined]
    want = Q if minor == "1.37" else SKIP
    assert (taint(pod, old, new), cordon(pod, old, new)) == (want, want)


# -- the queue ---------------------------------------------------------------------------------


def queue_at(minor: str) -> SchedulingQueue:
    frameworks = build_frameworks(load_config(None, at(minor)))
    return SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=FakeClock())


@pytest.mark.parametrize("minor", SUPPORTED)
def test_uncordon_wakes_a_node_affinity_reject_only_until_1_37(minor: str) -> None:
    """buildQueueingHintMap's #109437 fallback (Node/UpdateNodeTaint, always Queue, for a plugin that
    registered Node/Add without it) is gone at 1.37: an uncordon no longer wakes a pod NodeAffinity
    rejected."""
    queue = queue_at(minor)
    qpi = QueuedPodInfo(
        make_pod("p").node_selector({"disk": "ssd"}).build(), 0.0, unschedulable_plugins={"NodeAffinity"}
    )
    old, new = make_node("n").unschedulable().build(), make_node("n").build()
    (event,) = ev.node_scheduling_properties_change(new, old)
    want = QueueingStrategy.QUEUE_SKIP if minor == "1.37" else QueueingStrategy.QUEUE_AFTER_BACKOFF
    assert queue.is_pod_worth_requeuing(qpi, event, old, new) is want


@pytest.mark.parametrize("minor", SUPPORTED)
def test_own_relabelling_wakes_an_inter_pod_affinity_reject_from_1_36(minor: str) -> None:
    """A pending pod rejected by InterPodAffinity whose own labels change: the queue's Update asks the
    rejector with the pod's own event (UnschedulablePod until 1.36, TargetPod from 1.37); 1.35's hint
    skipped it as an unscheduled pod, 1.36's and 1.37's requeue it."""
    queue = queue_at(minor)
    pod = make_pod("p").label("app", "a").build()
    queue.add(pod)
    popped = queue.pop()
    assert popped is not None
    popped.unschedulable_plugins.add("InterPodAffinity")
    queue.add_unschedulable_if_not_present(popped, error=False)
    assert queue.location(pod.key) == "unschedulable"
    queue.update(pod, make_pod("p").label("app", "b").build())
    assert queue.location(pod.key) == ("unschedulable" if minor == "1.35" else "backoff")


@pytest.mark.parametrize("minor", SUPPORTED)
def test_the_pods_own_update_is_a_target_pod_event_from_1_37(minor: str) -> None:
    """``PodSchedulingPropertiesChange(new, old, isTargetPod=true)``: the resource of the events the queue
    hands a pending pod about itself."""
    assert ev.target_pod_update_resource(at(minor)) is (
        EventResource.TARGET_POD if minor == "1.37" else EventResource.UNSCHEDULABLE_POD
    )
    registration = ClusterEvent(EventResource.POD, A.UPDATE_POD_LABEL)
    assert ev.match_cluster_events(registration, ClusterEvent(EventResource.TARGET_POD, A.UPDATE_POD_LABEL))
    assigned = ClusterEvent(EventResource.ASSIGNED_POD, A.UPDATE_POD_LABEL)
    assert not ev.match_cluster_events(assigned, ClusterEvent(EventResource.TARGET_POD, A.UPDATE_POD_LABEL))
