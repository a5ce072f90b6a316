"""Queueing hints per plugin (spec 2.6, 3.4, 4.9) and cluster-event classification (5.4)."""

from __future__ import annotations

import pytest

from scheduler.backend.cache.cache import Cache
from scheduler.framework import events as ev
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from scheduler.testing import make_node, make_pod
from tests.core.harness import FOO, HOSTNAME

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def pts() -> PodTopologySpread:
    return PodTopologySpread({}, Handle(Cache()))


def registered(plugin: object) -> set[tuple[str, int]]:
    return {(r.event.resource.value, int(r.event.action)) for r in plugin.events_to_register()}  # type: ignore[attr-defined]


def test_registrations_match_upstream() -> None:
    a = ActionType
    assert registered(NodeAffinity({}, Handle())) == {("Node", int(a.ADD | a.UPDATE_NODE_LABEL))}
    assert registered(TaintToleration({}, Handle())) == {
        ("Node", int(a.ADD | a.UPDATE_NODE_TAINT)),
        ("Pod", int(a.UPDATE_POD_TOLERATION)),
    }
    assert registered(pts()) == {
        ("Pod", int(a.ADD | a.UPDATE_POD_LABEL | a.UPDATE_POD_TOLERATION | a.DELETE)),
        ("Node", int(a.ADD | a.DELETE | a.UPDATE_NODE_LABEL | a.UPDATE_NODE_TAINT)),
    }


SPREAD_POD = make_pod("pending").labels(FOO).spread(HOSTNAME, 1, match=FOO)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n4"), Q, id="a-node-with-the-key-added"),
        pytest.param(None, make_node("n5").unlabel(HOSTNAME), SKIP, id="b-node-without-the-key-added"),
        pytest.param(make_node("n1"), make_node("n1").label("team", "x"), SKIP, id="e-unrelated-label"),
        pytest.param(make_node("n2"), make_node("n2").taint("k", "v"), Q, id="f-taint-changed"),
        pytest.param(make_node("n1").unlabel(HOSTNAME), make_node("n1"), Q, id="key-appeared"),
        pytest.param(make_node("n1"), make_node("n1").unlabel(HOSTNAME), Q, id="key-vanished"),
        pytest.param(make_node("n1"), None, Q, id="matching-node-deleted"),
        pytest.param(make_node("n1").unlabel(HOSTNAME), None, SKIP, id="other-node-deleted"),
    ],
)
def test_pts_node_hint(old: object, new: object, hint: QueueingHint) -> None:
    o = old.build() if old is not None else None  # type: ignore[attr-defined]
    n = new.build() if new is not None else None  # type: ignore[attr-defined]
    assert pts().is_schedulable_after_node_change(SPREAD_POD.build(), o, n) is hint


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_pod("x", "other").labels(FOO).node("n1"), SKIP, id="c-other-namespace"),
        pytest.param(make_pod("x").labels(FOO).node("n1"), None, Q, id="d-matching-pod-deleted"),
        pytest.param(None, make_pod("x").label("app", "other").node("n1"), SKIP, id="g-non-matching-pod"),
        pytest.param(None, make_pod("x").labels(FOO).node("n1"), Q, id="matching-pod-added"),
        pytest.param(None, make_pod("x").labels(FOO), SKIP, id="unassigned-other-pod"),
        pytest.param(
            make_pod("x").labels(FOO).node("n1"),
            make_pod("x").label("a", "b").node("n1"),
            Q,
            id="label-no-longer-matches",
        ),
        pytest.param(
            make_pod("x").labels(FOO).node("n1"),
            make_pod("x").labels(FOO).label("z", "1").node("n1"),
            SKIP,
            id="label-change-same-match",
        ),
    ],
)
def test_pts_pod_hint(old: object, new: object, hint: QueueingHint) -> None:
    o = old.build() if old is not None else None  # type: ignore[attr-defined]
    n = new.build() if new is not None else None  # type: ignore[attr-defined]
    assert pts().is_schedulable_after_pod_change(SPREAD_POD.build(), o, n) is hint


def test_pts_own_toleration_change_with_honor_taints_queues() -> None:
    pending = make_pod("pending").labels(FOO).spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
    updated = (
        make_pod("pending")
        .labels(FOO)
        .spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
        .toleration("k", "Exists")
    )
    assert pts().is_schedulable_after_pod_change(pending.build(), pending.build(), updated.build()) is Q


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n").label("disk", "ssd"), Q, id="matching-node-added"),
        pytest.param(None, make_node("n"), SKIP, id="non-matching-node-added"),
        pytest.param(make_node("n"), make_node("n").label("disk", "ssd"), Q, id="now-matches"),
        pytest.param(
            make_node("n").label("disk", "ssd"),
            make_node("n").label("disk", "ssd").label("x"),
            SKIP,
            id="matched-before",
        ),
    ],
)
def test_node_affinity_hint(old: object, new: object, hint: QueueingHint) -> None:
    pod = make_pod("p").node_selector({"disk": "ssd"}).build()
    o = old.build() if old is not None else None  # type: ignore[attr-defined]
    assert NodeAffinity({}, Handle()).is_schedulable_after_node_change(pod, o, new.build()) is hint  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n"), Q, id="untainted-node-added"),
        pytest.param(None, make_node("n").taint("k", "v"), SKIP, id="tainted-node-added"),
        pytest.param(make_node("n").taint("k", "v"), make_node("n"), Q, id="taint-removed"),
        pytest.param(make_node("n"), make_node("n").taint("k", "v", "PreferNoSchedule"), SKIP, id="was-fine-already"),
    ],
)
def test_taint_toleration_node_hint(old: object, new: object, hint: QueueingHint) -> None:
    o = old.build() if old is not None else None  # type: ignore[attr-defined]
    plugin = TaintToleration({}, Handle())
    assert plugin.is_schedulable_after_node_change(make_pod("p").build(), o, new.build()) is hint  # type: ignore[attr-defined]


def test_taint_toleration_pod_hint_only_for_the_pod_itself() -> None:
    plugin = TaintToleration({}, Handle())
    pod = make_pod("p").build()
    assert (
        plugin.is_schedulable_after_pod_toleration_change(pod, pod, make_pod("p").toleration("k", "Exists").build())
        is Q
    )
    assert plugin.is_schedulable_after_pod_toleration_change(pod, None, make_pod("other").build()) is SKIP


def test_node_unschedulable_hint_on_uncordon() -> None:
    plugin = NodeUnschedulable({}, Handle())
    pod = make_pod("p").build()
    assert (
        plugin.is_schedulable_after_node_change(pod, make_node("n").unschedulable().build(), make_node("n").build())
        is Q
    )
    assert (
        plugin.is_schedulable_after_node_change(pod, make_node("n").build(), make_node("n").label("x").build()) is SKIP
    )


def test_event_matching_rules() -> None:
    pod_label = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
    assert ev.match_cluster_events(pod_label, ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL))
    assert ev.match_cluster_events(
        pod_label, ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_LABEL)
    )
    assert not ev.match_cluster_events(pod_label, ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE))
    assert ev.match_cluster_events(
        ClusterEvent(EventResource.POD, ActionType.UPDATE),
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL),
    )
    assert ev.match_cluster_events(pod_label, ev.UNSCHEDULABLE_TIMEOUT)
    assert not ev.match_cluster_events(pod_label, ev.NODE_ADD)


def test_node_update_classification() -> None:
    old = make_node("n").unschedulable().build()
    changes = ev.node_scheduling_properties_change(make_node("n").build(), old)
    assert [c.action for c in changes] == [ActionType.UPDATE_NODE_TAINT]  # uncordon counts as a taint update
    relabel = ev.node_scheduling_properties_change(make_node("n").zone("z").taint("k").build(), make_node("n").build())
    assert [c.action for c in relabel] == [ActionType.UPDATE_NODE_LABEL, ActionType.UPDATE_NODE_TAINT]
    assert ev.node_scheduling_properties_change(make_node("n").build(), make_node("n").build()) == []


def test_pod_update_classification() -> None:
    old = make_pod("p").gate("g").build()
    new = make_pod("p").label("a", "b").toleration("k", "Exists").build()
    actions = [e.action for e in ev.pod_scheduling_properties_change(new, old, EventResource.UNSCHEDULABLE_POD)]
    assert actions == [
        ActionType.UPDATE_POD_LABEL,
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        ActionType.UPDATE_POD_TOLERATION,
    ]
    same = ev.pod_scheduling_properties_change(make_pod("p").build(), make_pod("p").build(), EventResource.ASSIGNED_POD)
    assert [e.action for e in same] == [ActionType.UPDATE]
