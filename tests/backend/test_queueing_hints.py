"""Queueing hints: what each plugin registers, every hint branch, event matching and classification.

Spec 2.6 (NodeAffinity), 3.4 (TaintToleration), 4.9 (PodTopologySpread, TV-25), 5.4 (events).
Cases ported from upstream v1.35.4's hint tests keep upstream's names as ids (``*_test.go`` in
``pkg/scheduler/framework/plugins/<plugin>/`` and ``pkg/scheduler/framework/events_test.go``);
cases of our own have kebab-case ids. Hints are called as the queue calls them:
``hint(pending pod, old object, new object)`` with ``None`` for a missing side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.api.objects import Node, Pod, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.backend.queue.queued_pod_info import QueuedPodInfo
from scheduler.backend.queue.queueing_hints import QueueingHints, QueueingStrategy, build_hint_map
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.config import load_config, parse_config
from scheduler.framework import events as ev
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, Handle
from scheduler.plugins.defaultbinder.default_binder import DefaultBinder
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.plugins.nodename.node_name import NodeName
from scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.queuesort.priority_sort import PrioritySort
from scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.plugins.tainttoleration.taint_toleration import TaintToleration
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.simulate import Simulation
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod
from tests.fakes import FakeClock

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A = ActionType
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FOO = {"foo": "bar"}
FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}  # upstream's fooSelector
BAR_EXISTS = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}  # upstream's barSelector

Obj = NodeBuilder | PodBuilder | str | None


def obj(value: Obj) -> object:
    """Builders become parsed objects; strings stand for objects of the wrong type; None stays None."""
    if isinstance(value, NodeBuilder | PodBuilder):
        return value.build()
    return value


def registered(plugin: object) -> list[tuple[EventResource, ActionType]]:
    assert isinstance(plugin, EnqueueExtensions)
    return [(r.event.resource, r.event.action) for r in plugin.events_to_register()]


def bare_node(name: str = "node-a") -> NodeBuilder:
    """A node with no labels at all (upstream's ``st.MakeNode()``)."""
    return make_node(name).unlabel(HOSTNAME)


def pts(args: Mapping[str, Any] | None = None, cache: Cache | None = None) -> PodTopologySpread:
    """PodTopologySpread as upstream's hint tests set it up: List defaulting, an (empty) snapshot."""
    return PodTopologySpread(args if args is not None else {"defaultingType": "List"}, Handle(cache or Cache()))


# -- events_to_register ------------------------------------------------------------------------


class TestRegistrations:
    """Each plugin registers exactly upstream's events (queueing hints on, 1.34+)."""

    @pytest.mark.parametrize(
        ("plugin", "expected"),
        [
            pytest.param(
                NodeAffinity({}, Handle()),
                [(EventResource.NODE, A.ADD | A.UPDATE_NODE_LABEL)],
                id="NodeAffinity",
            ),
            pytest.param(
                TaintToleration({}, Handle()),
                [
                    (EventResource.NODE, A.ADD | A.UPDATE_NODE_TAINT),
                    (EventResource.POD, A.UPDATE_POD_TOLERATION),
                ],
                id="TaintToleration",
            ),
            pytest.param(
                pts(),
                [
                    (EventResource.POD, A.ADD | A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION | A.DELETE),
                    (EventResource.NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                ],
                id="PodTopologySpread",
            ),
            pytest.param(
                NodeUnschedulable({}, Handle()),
                [
                    (EventResource.NODE, A.ADD | A.UPDATE_NODE_TAINT),
                    (EventResource.POD, A.UPDATE_POD_TOLERATION),
                ],
                id="NodeUnschedulable",
            ),
            pytest.param(NodeName({}, Handle()), [(EventResource.NODE, A.ADD)], id="NodeName"),
            pytest.param(
                SchedulingGates({}, Handle()),
                [(EventResource.POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)],
                id="SchedulingGates",
            ),
            pytest.param(
                pts({}),
                [
                    (EventResource.POD, A.ADD | A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION | A.DELETE),
                    (EventResource.NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                ],
                id="PodTopologySpread-system-defaulting",
            ),
        ],
    )
    def test_events(self, plugin: object, expected: list[tuple[EventResource, ActionType]]) -> None:
        """Resources and action bits, in registration order."""
        assert registered(plugin) == expected

    @pytest.mark.parametrize("plugin", [PrioritySort({}, Handle()), DefaultBinder({}, Handle())])
    def test_plugins_that_never_reject_register_nothing(self, plugin: object) -> None:
        """QueueSort and Bind plugins are no EnqueueExtensions."""
        assert not isinstance(plugin, EnqueueExtensions)

    def test_node_name_has_no_hint_of_its_own(self) -> None:
        """Upstream registers Node/Add without a hint: every added node means Queue, whatever its name."""
        (registration,) = NodeName({}, Handle()).events_to_register()
        pod = make_pod("p").build()
        assert registration.hint(pod, None, make_node("other").build()) is Q
        assert registration.hint(pod, None, None) is Q

    def test_hint_map_adds_the_taint_update_work_around_109437(self) -> None:
        """Plugins registering Node/Add but not Node/UpdateNodeTaint also get it, with an always-Queue hint."""
        hint_map = build_hint_map(build_frameworks(load_config(None)))["spread-scheduler"]
        taint_only = [
            plugin
            for plugin, reg in hint_map
            if reg.event.resource is EventResource.NODE and reg.event.action == A.UPDATE_NODE_TAINT
        ]
        assert sorted(taint_only) == [
            "DynamicResources",  # registers Node/Add (upstream's plugin; the stand-in did not)
            "InterPodAffinity",
            "NodeAffinity",
            "NodeName",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeBinding",
            "VolumeRestrictions",
            "VolumeZone",
        ]
        extra = [
            reg for plugin, reg in hint_map if plugin == "NodeAffinity" and reg.event.action == A.UPDATE_NODE_TAINT
        ]
        assert extra[0].hint(make_pod("p").node_selector({"x": "y"}).build(), None, None) is Q


# -- NodeAffinity (spec 2.6) --------------------------------------------------------------------

POD_WITH_NODE_AFFINITY = make_pod("p").required_terms(
    {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}
)
ENFORCED_FOO_BAR = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
        }
    }
}


DISK_SSD = make_pod("p").node_selector({"disk": "ssd"})


class TestNodeAffinityHint:
    """``isSchedulableAfterNodeChange``: Queue only when a node newly matches the pod (and the enforced part)."""

    @pytest.mark.parametrize(
        ("args", "pod", "old", "new", "hint"),
        [
            pytest.param({}, POD_WITH_NODE_AFFINITY, None, "not-a-node", Q, id="backoff-wrong-new-object"),
            pytest.param({}, POD_WITH_NODE_AFFINITY, None, bare_node(), SKIP, id="skip-queue-on-add"),
            pytest.param({}, POD_WITH_NODE_AFFINITY, None, bare_node().label("foo", "bar"), Q, id="queue-on-add"),
            pytest.param(
                {},
                POD_WITH_NODE_AFFINITY,
                bare_node(),
                bare_node().label("foo", "bar").unlabel("foo"),
                SKIP,
                id="skip-unrelated-changes",
            ),
            pytest.param(
                {},
                POD_WITH_NODE_AFFINITY,
                bare_node(),
                bare_node().label("k", "v"),
                SKIP,
                id="skip-unrelated-changes-on-labels",
            ),
            pytest.param(
                {},
                POD_WITH_NODE_AFFINITY,
                bare_node().label("foo", "bar"),
                bare_node().label("k", "v"),
                SKIP,
                id="skip-labels-changes-on-node-from-suitable-to-unsuitable",
            ),
            pytest.param(
                {},
                POD_WITH_NODE_AFFINITY,
                bare_node(),
                bare_node().label("foo", "bar"),
                Q,
                id="queue-on-labels-change-makes-pod-schedulable",
            ),
            pytest.param(
                {},
                POD_WITH_NODE_AFFINITY,
                bare_node().label("foo", "bar"),
                bare_node().label("foo", "bar").taint("k"),
                SKIP,
                id="skip-unrelated-change-that-keeps-pod-schedulable",
            ),
            pytest.param(
                ENFORCED_FOO_BAR,
                POD_WITH_NODE_AFFINITY,
                None,
                bare_node(),
                SKIP,
                id="skip-queue-on-add-scheduler-enforced-node-affinity",
            ),
            pytest.param(
                ENFORCED_FOO_BAR,
                POD_WITH_NODE_AFFINITY,
                None,
                bare_node().label("foo", "bar"),
                Q,
                id="queue-on-add-scheduler-enforced-node-affinity",
            ),
            pytest.param(
                ENFORCED_FOO_BAR,
                make_pod("p"),
                None,
                bare_node().label("other", "x"),
                SKIP,
                id="enforced-affinity-rejects-a-node-even-for-a-pod-without-affinity",
            ),
            pytest.param({}, make_pod("p"), None, bare_node(), Q, id="pod-without-affinity-any-added-node"),
            pytest.param(
                {},
                make_pod("p"),
                bare_node(),
                bare_node().label("x", "y"),
                SKIP,
                id="pod-without-affinity-matched-before",
            ),
            pytest.param(
                {},
                make_pod("p").node_selector({"disk": "ssd"}),
                bare_node().label("disk", "hdd"),
                bare_node().label("disk", "ssd"),
                Q,
                id="node-selector-now-matches",
            ),
            pytest.param(
                {},
                make_pod("p")
                .node_selector({"disk": "ssd"})
                .required_terms({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
                None,
                bare_node().label("zone", "a"),
                SKIP,
                id="node-selector-and-affinity-both-needed",
            ),
            pytest.param(
                {},
                make_pod("p").required_terms(
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ),
                None,
                bare_node("n2"),
                SKIP,
                id="match-fields-other-node-added",
            ),
            pytest.param(
                {},
                make_pod("p").required_terms(
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ),
                None,
                bare_node("n1"),
                Q,
                id="match-fields-named-node-added",
            ),
            pytest.param(
                {}, DISK_SSD, None, make_node("n").label("disk", "ssd"), Q, id="node-selector-matching-node-added"
            ),
            pytest.param({}, DISK_SSD, None, make_node("n"), SKIP, id="node-selector-non-matching-node-added"),
            pytest.param(
                {}, DISK_SSD, make_node("n"), make_node("n").label("disk", "ssd"), Q, id="node-selector-label-added"
            ),
            pytest.param(
                {},
                DISK_SSD,
                make_node("n").label("disk", "ssd"),
                make_node("n").label("disk", "ssd").label("x"),
                SKIP,
                id="node-selector-matched-before",
            ),
        ],
    )
    def test_node_change(
        self, args: Mapping[str, Any], pod: PodBuilder, old: Obj, new: Obj, hint: QueueingHint
    ) -> None:
        """One branch of the decision tree per case."""
        plugin = NodeAffinity(args, Handle())
        assert plugin.is_schedulable_after_node_change(pod.build(), obj(old), obj(new)) is hint

    @pytest.mark.parametrize(
        ("old", "new"),
        [
            pytest.param(make_node("n").unschedulable(), make_node("n"), id="uncordon"),
            pytest.param(make_node("n"), make_node("n").taint("k"), id="taint-added"),
        ],
    )
    def test_any_taint_update_requeues_a_pod_it_rejected(self, old: NodeBuilder, new: NodeBuilder) -> None:
        """The #109437 registration (Node/UpdateNodeTaint, always Queue) fires even for a non-matching node."""
        frameworks = build_frameworks(load_config(None))
        queue = SchedulingQueue(frameworks, sort_key=queue_sort_key(frameworks), clock=FakeClock())
        pod = make_pod("p").node_selector({"disk": "ssd"}).build()
        qpi = QueuedPodInfo(pod, 0.0, unschedulable_plugins={"NodeAffinity"})
        o, n = old.build(), new.build()
        (event,) = ev.node_scheduling_properties_change(n, o)
        assert queue.is_pod_worth_requeuing(qpi, event, o, n) is QueueingStrategy.QUEUE_AFTER_BACKOFF
        before, after = make_node("n").build(), make_node("n").label("team", "x").build()
        (label_event,) = ev.node_scheduling_properties_change(after, before)
        assert queue.is_pod_worth_requeuing(qpi, label_event, before, after) is QueueingStrategy.QUEUE_SKIP


# -- TaintToleration (spec 3.4) -----------------------------------------------------------------


def tainted(name: str, *taints: tuple[str, str, str]) -> NodeBuilder:
    node = make_node(name)
    for key, value, effect in taints:
        node.taint(key, value, effect)
    return node


USER2 = make_pod("pod1").toleration("dedicated", "Equal", "user2", "NoSchedule")


class TestTaintTolerationHints:
    """Queue only when a node goes from untolerated to tolerated, or the pod itself gains a toleration."""

    @pytest.mark.parametrize(
        ("pod", "old", "new", "hint"),
        [
            pytest.param(USER2, None, "not-a-node", Q, id="backoff-wrong-new-object"),
            pytest.param(
                USER2,
                None,
                tainted("nodeA", ("dedicated", "user1", "NoSchedule")),
                SKIP,
                id="skip-queue-on-untoleratedtaint-node-added",
            ),
            pytest.param(
                USER2,
                None,
                tainted("nodeA", ("dedicated", "user2", "NoSchedule")),
                Q,
                id="queue-on-toleratedtaint-node-added",
            ),
            pytest.param(
                USER2,
                tainted("nodeA", ("dedicated", "user1", "NoSchedule")),
                tainted("nodeA", ("dedicated", "user1", "NoSchedule"), ("dedicated", "user3", "NoSchedule")),
                SKIP,
                id="skip-unrelated-change",
            ),
            pytest.param(
                USER2,
                tainted("nodeA", ("dedicated", "user1", "NoSchedule")),
                tainted("nodeA", ("dedicated", "user2", "NoSchedule")),
                Q,
                id="queue-on-taint-change",
            ),
            pytest.param(
                make_pod("p"),
                tainted("n", ("k", "v", "NoExecute")),
                tainted("n", ("k", "v", "PreferNoSchedule")),
                Q,
                id="no-execute-became-prefer-no-schedule",
            ),
            pytest.param(
                make_pod("p"),
                tainted("n"),
                tainted("n", ("k", "v", "PreferNoSchedule")),
                SKIP,
                id="was-tolerated-already",
            ),
            pytest.param(make_pod("p"), None, tainted("n"), Q, id="untainted-node-added"),
            pytest.param(make_pod("p"), None, tainted("n", ("k", "v", "NoSchedule")), SKIP, id="tainted-node-added"),
            pytest.param(make_pod("p"), tainted("n", ("k", "v", "NoSchedule")), tainted("n"), Q, id="taint-removed"),
        ],
    )
    def test_node_change(self, pod: PodBuilder, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """A missing old node counts as untolerated."""
        plugin = TaintToleration({}, Handle())
        assert plugin.is_schedulable_after_node_change(pod.build(), obj(old), obj(new)) is hint

    @pytest.mark.parametrize(
        ("old", "new", "hint"),
        [
            pytest.param(
                make_pod("pod-2", "ns-1"),
                make_pod("pod-2", "ns-1").toleration("foo", effect="NoSchedule", operator="Exists"),
                SKIP,
                id="skip-updates-other-pod",
            ),
            pytest.param(
                make_pod("pod-1", "ns-1"),
                make_pod("pod-1", "ns-1").toleration("foo", effect="NoSchedule", operator="Exists"),
                Q,
                id="queue-on-toleration-added",
            ),
        ],
    )
    def test_pod_toleration_change(self, old: PodBuilder, new: PodBuilder, hint: QueueingHint) -> None:
        """Only an update of the pending pod itself can help."""
        plugin = TaintToleration({}, Handle())
        pending = make_pod("pod-1", "ns-1").build()
        assert plugin.is_schedulable_after_pod_toleration_change(pending, old.build(), new.build()) is hint

    def test_taint_toleration_pod_hint_only_for_the_pod_itself(self) -> None:
        """The pending pod gaining a toleration queues; another pod appearing does not."""
        plugin = TaintToleration({}, Handle())
        pod = make_pod("p").build()
        updated = make_pod("p").toleration("k", "Exists").build()
        assert plugin.is_schedulable_after_pod_toleration_change(pod, pod, updated) is Q
        assert plugin.is_schedulable_after_pod_toleration_change(pod, None, make_pod("other").build()) is SKIP


# -- NodeUnschedulable --------------------------------------------------------------------------


class TestNodeUnschedulableHints:
    """Queue for an added schedulable node, an uncordon, or the pod tolerating the unschedulable taint."""

    @pytest.mark.parametrize(
        ("old", "new", "hint"),
        [
            pytest.param(None, "not-a-node", Q, id="error-wrong-new-object"),
            pytest.param("not-a-node", make_node("n").unschedulable(), Q, id="error-wrong-old-object"),
            pytest.param(None, make_node("n").unschedulable(), SKIP, id="skip-queue-on-unschedulable-node-added"),
            pytest.param(None, make_node("n").unschedulable(False), Q, id="queue-on-schedulable-node-added"),
            pytest.param(
                make_node("n").unschedulable(),
                make_node("n").unschedulable().taint("node.kubernetes.io/not-ready", effect="NoExecute"),
                SKIP,
                id="skip-unrelated-change-unschedulable-true",
            ),
            pytest.param(
                make_node("n").unschedulable(False),
                make_node("n").unschedulable(False).taint("node.kubernetes.io/not-ready", effect="NoExecute"),
                SKIP,
                id="skip-unrelated-change-unschedulable-false",
            ),
            pytest.param(
                make_node("n").unschedulable(),
                make_node("n").unschedulable(False),
                Q,
                id="queue-on-unschedulable-field-change",
            ),
            pytest.param(make_node("n"), make_node("n").unschedulable(), SKIP, id="cordon-never-helps"),
            pytest.param(make_node("n").unschedulable(), make_node("n"), Q, id="uncordon-field-removed"),
            pytest.param(make_node("n"), make_node("n").label("x"), SKIP, id="schedulable-node-relabelled"),
        ],
    )
    def test_node_change(self, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """Upstream's TestIsSchedulableAfterNodeChange."""
        plugin = NodeUnschedulable({}, Handle())
        assert plugin.is_schedulable_after_node_change(make_pod("p").build(), obj(old), obj(new)) is hint

    @pytest.mark.parametrize(
        ("old", "new", "hint"),
        [
            pytest.param(None, "not-a-pod", Q, id="error-wrong-new-object"),
            pytest.param("not-a-pod", make_pod("p"), Q, id="error-wrong-old-object"),
            pytest.param(
                make_pod("other"),
                make_pod("other").toleration("node.kubernetes.io/unschedulable", "Exists"),
                SKIP,
                id="skip-different-pod-update",
            ),
            pytest.param(
                make_pod("p"),
                make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists"),
                Q,
                id="queue-when-the-unsched-pod-gets-toleration",
            ),
            pytest.param(
                make_pod("p"),
                make_pod("p").toleration("unrelated-key", "Exists"),
                SKIP,
                id="skip-when-the-unsched-pod-gets-unrelated-toleration",
            ),
            pytest.param(
                make_pod("p"),
                make_pod("p").toleration(operator="Exists"),
                Q,
                id="tolerate-everything-covers-it",
            ),
            pytest.param(
                make_pod("p"),
                make_pod("p").toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute"),
                SKIP,
                id="toleration-of-the-wrong-effect",
            ),
        ],
    )
    def test_pod_toleration_change(self, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """Upstream's TestIsSchedulableAfterPodTolerationChange."""
        plugin = NodeUnschedulable({}, Handle())
        assert plugin.is_schedulable_after_pod_toleration_change(make_pod("p").build(), obj(old), obj(new)) is hint


# -- SchedulingGates ----------------------------------------------------------------------------


class TestSchedulingGatesHint:
    """Only the pending pod losing its last gate releases it."""

    @pytest.mark.parametrize(
        ("old", "new", "hint"),
        [
            pytest.param("not-a-pod", None, Q, id="backoff-wrong-old-object"),
            pytest.param(None, "not-a-pod", Q, id="backoff-wrong-new-object"),
            pytest.param(
                make_pod("p1").gate("foo").gate("bar"),
                make_pod("p1").gate("foo"),
                SKIP,
                id="skip-queue-on-other-pod-updated",
            ),
            pytest.param(make_pod("p").gate("foo"), make_pod("p"), Q, id="queue-on-the-unsched-pod-updated"),
        ],
    )
    def test_gates_eliminated(self, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """Upstream's Test_isSchedulableAfterPodChange of schedulinggates."""
        plugin = SchedulingGates({}, Handle())
        pending = make_pod("p").gate("foo").build()
        assert plugin.is_schedulable_after_update_pod_scheduling_gates_eliminated(pending, obj(old), obj(new)) is hint

    def test_pre_enqueue_lists_the_gates(self) -> None:
        """The gating status carries upstream's message with Go's ``%v`` of the gate names."""
        status = SchedulingGates({}, Handle()).pre_enqueue(make_pod("p").gate("a").gate("b").build())
        assert status is not None and status.message() == "waiting for scheduling gates: [a b]"
        assert SchedulingGates({}, Handle()).pre_enqueue(make_pod("p").build()) is None


# -- PodTopologySpread (spec 4.9) ---------------------------------------------------------------


ConstraintSpec = tuple[str, Mapping[str, Any], dict[str, Any]]


def spread_pod(*constraints: ConstraintSpec) -> PodBuilder:
    pod = make_pod("p")
    for key, selector, extra in constraints:
        pod.spread(key, 1, selector=dict(selector), **extra)
    return pod


TV25_POD = make_pod("pending").labels(FOO).spread(HOSTNAME, 1, match=FOO)  # TV-10's pod, left pending
ZONE_FOO: ConstraintSpec = ("zone", FOO_EXISTS, {})
NODE_FOO: ConstraintSpec = ("node", FOO_EXISTS, {})


class TestPodTopologySpreadNodeHint:
    """``isSchedulableAfterNodeChange``: "matching" = the node carries every hard constraint's key."""

    @pytest.mark.parametrize(
        ("pod", "old", "new", "hint"),
        [
            pytest.param(
                spread_pod(ZONE_FOO),
                bare_node().label("zone", "zone1"),
                bare_node().label("zone", "zone2"),
                Q,
                id="node updates label which matches topologyKey",
            ),
            pytest.param(
                spread_pod(ZONE_FOO),
                bare_node().label("foo", "bar1"),
                bare_node().label("foo", "bar2"),
                SKIP,
                id="node that doesn't match topologySpreadConstraints updates non-related label",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                bare_node().label("zone", "zone1").label("node", "node1").label("foo", "bar"),
                bare_node().label("zone", "zone1").label("node", "node1"),
                SKIP,
                id="node that match topologySpreadConstraints adds non-related label",
            ),
            pytest.param(
                spread_pod(ZONE_FOO),
                None,
                bare_node().label("foo", "bar"),
                SKIP,
                id="create node with non-related labels",
            ),
            pytest.param(
                spread_pod(ZONE_FOO), None, bare_node().label("zone", "zone1"), Q, id="create node with related labels"
            ),
            pytest.param(
                spread_pod(ZONE_FOO),
                bare_node().label("foo", "bar"),
                None,
                SKIP,
                id="delete node with non-related labels",
            ),
            pytest.param(
                spread_pod(ZONE_FOO), bare_node().label("zone", "zone1"), None, Q, id="delete node with related labels"
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                None,
                bare_node().label("zone", "zone1"),
                SKIP,
                id="add node with related labels that only match one of topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                None,
                bare_node().label("zone", "zone1").label("node", "node1"),
                Q,
                id="add node with related labels that match all topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                bare_node().label("zone", "zone1"),
                bare_node().label("zone", "zone1"),
                SKIP,
                id="update node with related labels that only match one of topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                bare_node().label("zone", "zone1").label("node", "node1"),
                bare_node().label("zone", "zone1").label("node", "node2"),
                Q,
                id="update node with related labels that match all topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                bare_node().label("zone", "zone1").label("node", "node1").taint("aaa", "bbb"),
                bare_node().label("zone", "zone1").label("node", "node1").taint("ccc", "bbb"),
                Q,
                id="update node with different taints that match all topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO, NODE_FOO),
                bare_node().label("node", "node1").taint("aaa", "bbb"),
                bare_node().label("node", "node1").taint("ccc", "bbb"),
                SKIP,
                id="update node with different taints that only match one of topologySpreadConstraints",
            ),
            pytest.param(
                spread_pod(ZONE_FOO),
                bare_node().label("zone", "zone1"),
                bare_node(),
                Q,
                id="matching-node-loses-the-key",
            ),
            pytest.param(
                spread_pod(ZONE_FOO),
                bare_node().label("zone", "zone1").taint("k", "v", "PreferNoSchedule"),
                bare_node().label("zone", "zone1").taint("k", "v", "PreferNoSchedule"),
                SKIP,
                id="matching-node-same-taints-same-values",
            ),
            pytest.param(spread_pod(ZONE_FOO), None, "not-a-node", Q, id="wrong-new-object"),
            pytest.param(spread_pod(ZONE_FOO), "not-a-node", bare_node(), Q, id="wrong-old-object"),
            pytest.param(spread_pod(ZONE_FOO), None, None, SKIP, id="neither-node"),
            pytest.param(make_pod("p"), None, bare_node(), Q, id="no-hard-constraints-any-node-matches"),
            pytest.param(
                spread_pod(("zone", FOO_EXISTS, {"whenUnsatisfiable": "ScheduleAnyway"})),
                None,
                bare_node(),
                Q,
                id="soft-constraints-are-not-hard-ones",
            ),
        ],
    )
    def test_node_change(self, pod: PodBuilder, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """Upstream's Test_isSchedulableAfterNodeChange plus our own branches."""
        assert pts().is_schedulable_after_node_change(pod.build(), obj(old), obj(new)) is hint

    def test_taint_change_counts_even_when_only_time_added_differs(self) -> None:
        """Taints compare with DeepEqual upstream: ``timeAdded`` is part of a taint."""
        old = bare_node().label("zone", "z").obj
        old["spec"]["taints"] = [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]
        new = bare_node().label("zone", "z").obj
        new["spec"]["taints"] = [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:05:00Z"}]
        hint = pts().is_schedulable_after_node_change(
            spread_pod(ZONE_FOO).build(), Node.from_dict(old), Node.from_dict(new)
        )
        assert hint is Q

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
    def test_node_change_for_the_tv25_pod(self, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """TV-25's node events on the plugin alone (System defaulting): a hard hostname spread of foo=bar."""
        assert pts({}).is_schedulable_after_node_change(TV25_POD.build(), obj(old), obj(new)) is hint

    def test_without_a_snapshot_the_hint_queues(self) -> None:
        """Constraints may come from defaults, which need the snapshot: without one, Queue (never strand)."""
        plugin = PodTopologySpread({"defaultingType": "List"}, Handle())
        pod = spread_pod(ZONE_FOO).build()
        assert plugin.is_schedulable_after_node_change(pod, None, bare_node().build()) is Q
        assert plugin.is_schedulable_after_pod_change(pod, None, make_pod("x").node("n").label("bar").build()) is Q


class TestPodTopologySpreadPodHint:
    """``isSchedulableAfterPodChange``: only pods involved in the spreading, and only selector flips."""

    FOO_ZONE = make_pod("p").label("foo").spread("zone", 1, selector=FOO_EXISTS)
    FOO_ZONE_BAR_NODE = (
        make_pod("p").label("foo").spread("zone", 1, selector=FOO_EXISTS).spread("node", 1, selector=BAR_EXISTS)
    )

    @pytest.mark.parametrize(
        ("pod", "old", "new", "hint"),
        [
            pytest.param(
                FOO_ZONE,
                None,
                make_pod("p2").node("fake-node").label("foo"),
                Q,
                id="add pod with labels match topologySpreadConstraints selector",
            ),
            pytest.param(FOO_ZONE, None, make_pod("p2").label("foo"), SKIP, id="add un-scheduled pod"),
            pytest.param(
                FOO_ZONE, make_pod("p2").label("bar"), make_pod("p2").label("foo"), SKIP, id="update un-scheduled pod"
            ),
            pytest.param(FOO_ZONE, make_pod("p2").label("foo"), None, SKIP, id="delete un-scheduled pod"),
            pytest.param(
                FOO_ZONE,
                None,
                make_pod("p2", "fake-namespace").node("fake-node").label("foo"),
                SKIP,
                id="add pod with different namespace",
            ),
            pytest.param(
                FOO_ZONE,
                None,
                make_pod("p2").node("fake-node").label("bar"),
                SKIP,
                id="add pod with labels don't match topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("foo"),
                None,
                Q,
                id="delete pod with labels that match topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("bar"),
                None,
                SKIP,
                id="delete pod with labels that don't match topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar1"),
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar2"),
                SKIP,
                id="update pod's non-related label",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node"),
                make_pod("p2").node("fake-node").label("foo"),
                Q,
                id="add pod's label that matches topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("foo"),
                make_pod("p2").node("fake-node"),
                Q,
                id="delete pod label that matches topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("foo", "foo1"),
                make_pod("p2").node("fake-node").label("foo", "foo2"),
                SKIP,
                id="change pod's label that matches topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE,
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar1"),
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar2"),
                SKIP,
                id="change pod's label that doesn't match topologySpreadConstraints selector",
            ),
            pytest.param(
                FOO_ZONE_BAR_NODE,
                make_pod("p2").node("fake-node").label("foo"),
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar2"),
                Q,
                id="add pod's label that matches topologySpreadConstraints selector with multi "
                "topologySpreadConstraints",
            ),
            pytest.param(
                FOO_ZONE_BAR_NODE,
                make_pod("p2").node("fake-node").label("foo"),
                make_pod("p2").node("fake-node").label("foo").label("baz"),
                SKIP,
                id="change pod's label that doesn't match topologySpreadConstraints selector with multi "
                "topologySpreadConstraints",
            ),
            pytest.param(
                FOO_ZONE_BAR_NODE,
                make_pod("p2").node("fake-node").label("foo").label("bar"),
                make_pod("p2").node("fake-node").label("foo").label("bar", "bar2"),
                SKIP,
                id="change pod's label that match topologySpreadConstraints selector with multi "
                "topologySpreadConstraints",
            ),
            # Upstream's cases of the pod's own toleration or label change are asked at every minor in
            # test_queueing_hints_by_minor.py (1.37 has a TargetPod hint of its own).
            pytest.param(
                make_pod("p").label("foo").spread("zone", 1, selector=FOO_EXISTS, nodeTaintsPolicy="Honor"),
                make_pod("p").label("foo").toleration("k", "Exists", effect="NoExecute", tolerationSeconds=10),
                make_pod("p").label("foo").toleration("k", "Exists", effect="NoExecute", tolerationSeconds=20),
                Q,
                id="honor-taints-toleration-seconds-changed-is-a-toleration-change",
            ),
            pytest.param(
                make_pod("p").label("foo").spread("zone", 1, selector=FOO_EXISTS, nodeTaintsPolicy="Honor"),
                make_pod("p").label("foo").toleration("k", "Exists"),
                make_pod("p").label("foo").toleration("k", "Exists"),
                SKIP,
                id="honor-taints-same-tolerations-same-labels",
            ),
            pytest.param(
                make_pod("p").label("foo").spread("zone", 1, selector=FOO_EXISTS, nodeTaintsPolicy="Honor"),
                make_pod("other").node("n").label("foo"),
                make_pod("other").node("n").label("foo").toleration("k", "Exists"),
                SKIP,
                id="honor-taints-but-another-pods-tolerations",
            ),
            pytest.param(FOO_ZONE, None, "not-a-pod", Q, id="wrong-new-object"),
            pytest.param(FOO_ZONE, "not-a-pod", make_pod("p2").node("n").label("foo"), Q, id="wrong-old-object"),
            pytest.param(
                make_pod("p").label("foo"), None, make_pod("p2").node("n").label("foo"), SKIP, id="no-constraints"
            ),
            pytest.param(
                make_pod("p").label("foo").spread("zone", 1),
                None,
                make_pod("p2").node("n").label("foo"),
                SKIP,
                id="nil-selector-matches-no-pod",
            ),
            pytest.param(
                make_pod("p").label("foo").spread("zone", 1, selector={}),
                None,
                make_pod("p2").node("n").label("x"),
                Q,
                id="empty-selector-matches-every-pod",
            ),
            pytest.param(
                make_pod("p")
                .labels({"foo": "x", "hash": "v2"})
                .spread("zone", 1, selector=FOO_EXISTS, matchLabelKeys=["hash"]),
                None,
                make_pod("p2").node("n").labels({"foo": "x", "hash": "v1"}),
                SKIP,
                id="match-label-keys-narrow-the-selector",
            ),
            pytest.param(
                make_pod("p")
                .labels({"foo": "x", "hash": "v2"})
                .spread("zone", 1, selector=FOO_EXISTS, matchLabelKeys=["hash"]),
                None,
                make_pod("p2").node("n").labels({"foo": "y", "hash": "v2"}),
                Q,
                id="match-label-keys-same-value",
            ),
        ],
    )
    def test_pod_change(self, pod: PodBuilder, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """Upstream's Test_isSchedulableAfterPodChange plus our own branches."""
        assert pts().is_schedulable_after_pod_change(pod.build(), obj(old), obj(new)) is hint

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
    def test_pod_change_for_the_tv25_pod(self, old: Obj, new: Obj, hint: QueueingHint) -> None:
        """TV-25's pod events on the plugin alone (System defaulting): a hard hostname spread of foo=bar."""
        assert pts({}).is_schedulable_after_pod_change(TV25_POD.build(), obj(old), obj(new)) is hint

    def test_pts_own_toleration_change_with_honor_taints_queues(self) -> None:
        """The pending pod itself gaining a toleration, with nodeTaintsPolicy Honor."""
        pending = make_pod("pending").labels(FOO).spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
        updated = (
            make_pod("pending")
            .labels(FOO)
            .spread(HOSTNAME, 1, match=FOO, nodeTaintsPolicy="Honor")
            .toleration("k", "Exists")
        )
        assert pts({}).is_schedulable_after_pod_change(pending.build(), pending.build(), updated.build()) is Q


DEFAULT_HARD_HOSTNAME = {
    "defaultingType": "List",
    "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule"}],
}
WEB_SERVICE = {
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"selector": {"app": "web"}},
}


class TestPodTopologySpreadDefaultConstraints:
    """Hard constraints may come from ``defaultConstraints``: the hints read them through the snapshot."""

    def plugin(self, *, with_service: bool) -> PodTopologySpread:
        cache = Cache()
        if with_service:
            selecting = parse_selecting_object(WEB_SERVICE)
            assert selecting is not None
            cache.upsert_selecting_object(selecting)
        return pts(DEFAULT_HARD_HOSTNAME, cache)

    @pytest.mark.parametrize(
        ("with_service", "new", "hint"),
        [
            pytest.param(True, make_pod("w").node("n").label("app", "web"), Q, id="service-selects-the-added-pod"),
            pytest.param(True, make_pod("w").node("n").label("app", "db"), SKIP, id="service-selector-misses"),
            pytest.param(
                False, make_pod("w").node("n").label("app", "web"), SKIP, id="no-service-no-default-constraints"
            ),
        ],
    )
    def test_pod_added(self, with_service: bool, new: PodBuilder, hint: QueueingHint) -> None:
        """The default constraint's selector is the Service's; without one the pod has no constraints."""
        pending = make_pod("p").label("app", "web").build()
        assert (
            self.plugin(with_service=with_service).is_schedulable_after_pod_change(pending, None, new.build()) is hint
        )

    @pytest.mark.parametrize(
        ("with_service", "new", "hint"),
        [
            pytest.param(True, make_node("n9"), Q, id="node-with-hostname"),
            pytest.param(True, make_node("n9").unlabel(HOSTNAME), SKIP, id="node-without-hostname"),
            pytest.param(False, make_node("n9").unlabel(HOSTNAME), Q, id="no-constraints-every-node-matches"),
        ],
    )
    def test_node_added(self, with_service: bool, new: NodeBuilder, hint: QueueingHint) -> None:
        """ "Matching" needs the default constraint's key, hostname."""
        pending = make_pod("p").label("app", "web").build()
        assert (
            self.plugin(with_service=with_service).is_schedulable_after_node_change(pending, None, new.build()) is hint
        )

    def test_system_defaults_are_soft_so_never_hard(self) -> None:
        """System defaulting only adds ScheduleAnyway constraints: the hints see no hard one."""
        cache = Cache()
        selecting = parse_selecting_object(WEB_SERVICE)
        assert selecting is not None
        cache.upsert_selecting_object(selecting)
        plugin = pts({}, cache)
        pending = make_pod("p").label("app", "web").build()
        assert (
            plugin.is_schedulable_after_pod_change(pending, None, make_pod("w").node("n").label("app", "web").build())
            is SKIP
        )
        assert plugin.is_schedulable_after_node_change(pending, None, make_node("n9").unlabel(HOSTNAME).build()) is Q


class TestTV25:
    """TV-25: the pod left pending by TV-10 (rejectors {PodTopologySpread}) and each cluster event."""

    @staticmethod
    def tv10() -> tuple[Simulation, Pod]:
        sim = Simulation(load_config(None), seed=0)
        objects: list[dict[str, Any]] = [make_node(n).dict() for n in ("n1", "n2", "n3")]
        objects += [make_pod(f"e{i}").labels(FOO).node(n).dict() for i, n in enumerate(("n1", "n2", "n3"), 1)]
        pending = make_pod("pending").labels(FOO).spread(HOSTNAME, 1, match=FOO, minDomains=5)
        objects.append(pending.dict())
        sim.add_objects(objects)
        (attempt,) = sim.run()
        assert attempt.host is None
        assert attempt.diagnosis.unschedulable_plugins == {"PodTopologySpread"}
        return sim, attempt.pod

    @staticmethod
    def strategy(sim: Simulation, pod: Pod, event: ClusterEvent, old: object, new: object) -> QueueingStrategy:
        """What the queue decides for the pending pod (rejected by PodTopologySpread) and one event."""
        queue = SchedulingQueue(sim.frameworks, sort_key=queue_sort_key(sim.frameworks), clock=FakeClock())
        qpi = QueuedPodInfo(pod, 0.0, unschedulable_plugins={"PodTopologySpread"})
        return queue.is_pod_worth_requeuing(qpi, event, old, new)

    def test_a_hostname_node_added_queues_and_the_next_attempt_binds_there(self) -> None:
        """(a) 4 domains < 5: the minimum stays 0, so n4 takes the pod with skew 0 + 1 - 0 = 1."""
        sim, pod = self.tv10()
        n4 = make_node("n4").build()
        assert self.strategy(sim, pod, ev.NODE_ADD, None, n4) is QueueingStrategy.QUEUE_AFTER_BACKOFF
        sim.cache.add_node(n4)
        fwk = sim.frameworks["spread-scheduler"]
        assert sim.algorithm.schedule_pod(fwk, sim.cache, pod).host == "n4"

    def test_b_node_without_the_hostname_label_added_skips(self) -> None:
        """(b) Such a node is no domain and can never hold the pod."""
        sim, pod = self.tv10()
        node = make_node("n5").unlabel(HOSTNAME).build()
        assert self.strategy(sim, pod, ev.NODE_ADD, None, node) is QueueingStrategy.QUEUE_SKIP

    def test_c_matching_pod_bound_in_another_namespace_skips(self) -> None:
        """(c) Only pods of the pending pod's namespace count."""
        sim, pod = self.tv10()
        other = make_pod("x", "other").labels(FOO).node("n1").build()
        assert self.strategy(sim, pod, ev.ASSIGNED_POD_ADD, None, other) is QueueingStrategy.QUEUE_SKIP

    def test_d_matching_pod_deleted_queues_and_its_node_fits(self) -> None:
        """(d) n1 drops to 0: 0 + 1 - 0 = 1 <= 1."""
        sim, pod = self.tv10()
        gone = sim.cache.pod("default/e1")
        assert gone is not None
        assert self.strategy(sim, pod, ev.ASSIGNED_POD_DELETE, gone, None) is QueueingStrategy.QUEUE_AFTER_BACKOFF
        sim.cache.remove_pod(gone)
        fwk = sim.frameworks["spread-scheduler"]
        assert sim.algorithm.schedule_pod(fwk, sim.cache, pod).feasible == ["n1"]

    def test_e_unrelated_node_label_skips(self) -> None:
        """(e) A label that is no topology key changes nothing."""
        sim, pod = self.tv10()
        old, new = make_node("n1").build(), make_node("n1").label("team", "x").build()
        (event,) = ev.node_scheduling_properties_change(new, old)
        assert event.action == A.UPDATE_NODE_LABEL
        assert self.strategy(sim, pod, event, old, new) is QueueingStrategy.QUEUE_SKIP

    def test_f_taint_on_a_matching_node_queues(self) -> None:
        """(f) Any taint difference on a node carrying the keys requeues."""
        sim, pod = self.tv10()
        old, new = make_node("n2").build(), make_node("n2").taint("k", "v").build()
        (event,) = ev.node_scheduling_properties_change(new, old)
        assert event.action == A.UPDATE_NODE_TAINT
        assert self.strategy(sim, pod, event, old, new) is QueueingStrategy.QUEUE_AFTER_BACKOFF

    def test_g_non_matching_pod_bound_skips(self) -> None:
        """(g) An app=other pod does not match the selector foo=bar."""
        sim, pod = self.tv10()
        other = make_pod("y").label("app", "other").node("n1").build()
        assert self.strategy(sim, pod, ev.ASSIGNED_POD_ADD, None, other) is QueueingStrategy.QUEUE_SKIP

    def test_a_taint_update_is_not_asked_of_plugins_that_did_not_reject(self) -> None:
        """NodeAffinity's always-Queue taint registration does not matter: it did not reject the pod."""
        sim, pod = self.tv10()
        old, new = make_node("n1").unlabel(HOSTNAME).build(), make_node("n1").unlabel(HOSTNAME).taint("k").build()
        (event,) = ev.node_scheduling_properties_change(new, old)
        assert self.strategy(sim, pod, event, old, new) is QueueingStrategy.QUEUE_SKIP


# -- match_cluster_events (spec 5.4) ------------------------------------------------------------

POD, NODE, WILD = EventResource.POD, EventResource.NODE, EventResource.WILDCARD
ASSIGNED, UNSCHED = EventResource.ASSIGNED_POD, EventResource.UNSCHEDULABLE_POD


class TestMatchClusterEvents:
    """``MatchClusterEvents(registered, incoming)``: wildcard, resource, overlap and ``incoming <= registered``."""

    @pytest.mark.parametrize(
        ("registered", "incoming", "matches"),
        [
            pytest.param(
                (WILD, A.ALL),
                (POD, A.UPDATE_NODE_LABEL),
                True,
                id="wildcard event matches with all kinds of coming events",
            ),
            pytest.param(
                (POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                (POD, A.UPDATE_NODE_LABEL),
                True,
                id="event with resource = 'Pod' matching with coming events carries same actionType",
            ),
            pytest.param(
                (POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                (UNSCHED, A.UPDATE_NODE_LABEL),
                True,
                id="event with resource = 'Pod' matching with coming events carries unschedulablePod",
            ),
            pytest.param(
                (WILD, A.UPDATE_NODE_LABEL),
                (POD, A.UPDATE_NODE_LABEL),
                True,
                id="event with resource = '*' matching with coming events carries same actionType",
            ),
            pytest.param(
                (WILD, A.UPDATE_NODE_LABEL),
                (POD, A.UPDATE_NODE_ALLOCATABLE),
                False,
                id="event with resource = '*' matching with coming events carries different actionType",
            ),
            pytest.param(
                (POD, A.UPDATE_NODE_LABEL),
                (WILD, A.UPDATE_NODE_LABEL),
                False,
                id="event matching with coming events carries '*' resources",
            ),
            pytest.param(
                (WILD, A.UPDATE_NODE_LABEL),
                (POD, A.UPDATE),
                False,
                id="event with resource = '*' matching with coming events carrying a too broad actionType",
            ),
            pytest.param(
                (WILD, A.UPDATE),
                (POD, A.UPDATE_NODE_LABEL),
                True,
                id="event with resource = '*' matching with coming events carrying a more specific actionType",
            ),
            pytest.param(
                (POD, A.UPDATE_POD_LABEL), (ASSIGNED, A.UPDATE_POD_LABEL), True, id="pod-matches-assigned-pod"
            ),
            pytest.param(
                (POD, A.UPDATE_POD_LABEL), (UNSCHED, A.UPDATE_POD_LABEL), True, id="pod-matches-unschedulable-pod"
            ),
            pytest.param((ASSIGNED, A.ADD), (POD, A.ADD), False, id="assigned-pod-registration-does-not-take-pod"),
            pytest.param((NODE, A.ADD), (ASSIGNED, A.ADD), False, id="node-is-not-a-pod"),
            pytest.param((POD, A.ADD | A.DELETE), (ASSIGNED, A.DELETE), True, id="one-bit-of-several"),
            pytest.param((POD, A.ADD), (ASSIGNED, A.DELETE), False, id="no-common-bit"),
            pytest.param(
                (POD, A.UPDATE_POD_LABEL),
                (ASSIGNED, A.UPDATE),
                False,
                id="generic-update-does-not-match-a-label-only-registration",
            ),
            pytest.param(
                (POD, A.UPDATE), (ASSIGNED, A.UPDATE_POD_TOLERATION), True, id="update-registration-takes-every-update"
            ),
            pytest.param(
                (POD, A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION),
                (ASSIGNED, A.UPDATE_POD_LABEL | A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                False,
                id="incoming-wider-than-registered-although-overlapping",
            ),
            pytest.param(
                (NODE, A.ADD | A.UPDATE_NODE_LABEL),
                (NODE, A.UPDATE_NODE_TAINT),
                False,
                id="node-taint-update-not-registered",
            ),
            pytest.param((NODE, A.ALL), (NODE, A.UPDATE_NODE_CONDITION), True, id="all-actions-of-one-resource"),
            pytest.param(
                (POD, A.UPDATE), (ASSIGNED, A.UPDATE_POD_LABEL), True, id="update-registration-takes-a-label-update"
            ),
            pytest.param(
                (POD, A.UPDATE_POD_LABEL), ev.UNSCHEDULABLE_TIMEOUT, True, id="unschedulable-timeout-matches-all"
            ),
            pytest.param((POD, A.UPDATE_POD_LABEL), ev.NODE_ADD, False, id="node-add-is-no-pod-label-update"),
        ],
    )
    def test_match(
        self,
        registered: tuple[EventResource, ActionType],
        incoming: tuple[EventResource, ActionType] | ClusterEvent,
        matches: bool,
    ) -> None:
        """Upstream's TestCloudEvent_Match plus the rules of spec 5.4."""
        event = incoming if isinstance(incoming, ClusterEvent) else ClusterEvent(*incoming)
        assert ev.match_cluster_events(ClusterEvent(*registered), event) is matches

    def test_action_bits_keep_upstream_order(self) -> None:
        """``<=`` compares numbers, so the bit order must be upstream's (Add, Delete, node updates, pod updates)."""
        order = [
            A.ADD,
            A.DELETE,
            A.UPDATE_NODE_ALLOCATABLE,
            A.UPDATE_NODE_LABEL,
            A.UPDATE_NODE_TAINT,
            A.UPDATE_NODE_CONDITION,
            A.UPDATE_NODE_ANNOTATION,
            A.UPDATE_POD_LABEL,
            A.UPDATE_POD_SCALE_DOWN,
            A.UPDATE_POD_TOLERATION,
            A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            A.UPDATE_POD_GENERATED_RESOURCE_CLAIM,
        ]
        assert [int(a) for a in order] == sorted(int(a) for a in order)
        assert A.UPDATE == A.ALL & ~(A.ADD | A.DELETE)


# -- classification of updates (framework/events.go) ---------------------------------------------


def node_actions(new: NodeBuilder | Node, old: NodeBuilder | Node) -> list[ActionType]:
    n = new.build() if isinstance(new, NodeBuilder) else new
    o = old.build() if isinstance(old, NodeBuilder) else old
    events = ev.node_scheduling_properties_change(n, o)
    assert all(e.resource is NODE for e in events)
    return [e.action for e in events]


def with_status(node: NodeBuilder, **status: Any) -> NodeBuilder:
    node.obj["status"].update(status)
    return node


def without_allocatable(node: NodeBuilder) -> NodeBuilder:
    del node.obj["status"]["allocatable"]
    return node


def with_annotations(node: NodeBuilder, annotations: dict[str, str] | None) -> NodeBuilder:
    node.obj["metadata"]["annotations"] = annotations
    return node


class TestNodeSchedulingPropertiesChange:
    """One event per changed aspect, in upstream's extractor order; nothing for irrelevant changes."""

    @pytest.mark.parametrize(
        ("new", "old", "actions"),
        [
            pytest.param(
                make_node("n").unschedulable(False),
                make_node("n").unschedulable(False),
                [],
                id="no specific changed applied",
            ),
            pytest.param(
                make_node("n").unschedulable(False),
                make_node("n").unschedulable(True),
                [A.UPDATE_NODE_TAINT],
                id="only node spec unavailable changed",
            ),
            pytest.param(
                with_status(make_node("n"), allocatable={"cpu": "1", "example.com/foo": "1"}),
                with_status(make_node("n"), allocatable={"cpu": "1", "example.com/foo": "2"}),
                [A.UPDATE_NODE_ALLOCATABLE],
                id="only node allocatable changed",
            ),
            pytest.param(
                make_node("n").label("foo", "bar"),
                make_node("n").label("foo", "fuz"),
                [A.UPDATE_NODE_LABEL],
                id="only node label changed",
            ),
            pytest.param(
                make_node("n").taint("node.kubernetes.io/unschedulable", ""),
                make_node("n").taint("node.kubernetes.io/unschedulable", "foo"),
                [A.UPDATE_NODE_TAINT],
                id="only node taint changed",
            ),
            pytest.param(
                with_annotations(make_node("n"), {"foo": "bar"}),
                with_annotations(make_node("n"), {"foo": "fuz"}),
                [A.UPDATE_NODE_ANNOTATION],
                id="only node annotation changed",
            ),
            pytest.param(
                with_status(make_node("n"), conditions=[]),
                with_status(make_node("n"), conditions=[{"type": "Ready", "status": "True"}]),
                [A.UPDATE_NODE_CONDITION],
                id="only node condition changed",
            ),
            pytest.param(
                make_node("n").label("foo", "bar").taint("node.kubernetes.io/unschedulable", ""),
                make_node("n").taint("node.kubernetes.io/unschedulable", "foo"),
                [A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT],
                id="both node label and node taint changed",
            ),
            pytest.param(make_node("n").unschedulable(), make_node("n"), [], id="cordon-is-no-event"),
            pytest.param(
                make_node("n").label("x", "y"),
                make_node("n").unschedulable(),
                [A.UPDATE_NODE_TAINT, A.UPDATE_NODE_LABEL],
                id="uncordon-first-then-labels",
            ),
            pytest.param(
                make_node("n").taint("k"),
                make_node("n").unschedulable(),
                [A.UPDATE_NODE_TAINT, A.UPDATE_NODE_TAINT],
                id="uncordon-and-taint-are-two-taint-events",
            ),
            pytest.param(
                with_status(make_node("n"), conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": "b"}]),
                with_status(make_node("n"), conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": "a"}]),
                [],
                id="only LastHeartbeatTime changed",
            ),
            pytest.param(
                with_status(make_node("n"), conditions=[{"type": "Ready", "status": "True"}]),
                with_status(make_node("n"), conditions=[{"type": "Ready", "status": "False"}]),
                [A.UPDATE_NODE_CONDITION],
                id="condition status changed",
            ),
            pytest.param(
                with_annotations(make_node("n"), {}),
                with_annotations(make_node("n"), None),
                [],
                id="absent-and-empty-annotations-are-equal",
            ),
            pytest.param(
                with_status(make_node("n"), allocatable={}),
                without_allocatable(make_node("n")),
                [],
                id="absent-and-empty-allocatable-are-equal",
            ),
            pytest.param(
                make_node("n").allocatable(cpu="8", memory="32Gi", pods="111"),
                make_node("n").allocatable(cpu="8", memory="32Gi", pods="110"),
                [A.UPDATE_NODE_ALLOCATABLE],
                id="allocatable-changed",
            ),
            pytest.param(
                make_node("n").label("test", "value"),
                make_node("n"),
                [A.UPDATE_NODE_LABEL],
                id="new object has more labels",
            ),
            pytest.param(
                make_node("n").taint("k", "v", "PreferNoSchedule"),
                make_node("n").taint("k", "v", "NoSchedule"),
                [A.UPDATE_NODE_TAINT],
                id="taint-effect-changed",
            ),
            pytest.param(make_node("n"), make_node("n").unschedulable(), [A.UPDATE_NODE_TAINT], id="uncordon"),
            pytest.param(
                make_node("n").zone("z").taint("k"),
                make_node("n"),
                [A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT],
                id="zone-label-and-taint-added",
            ),
            pytest.param(make_node("n"), make_node("n"), [], id="identical-nodes"),
        ],
    )
    def test_classification(self, new: NodeBuilder, old: NodeBuilder, actions: list[ActionType]) -> None:
        """Upstream's TestNodeSchedulingPropertiesChange and extractor tests."""
        assert node_actions(new, old) == actions

    def test_taint_time_added_is_part_of_the_taint(self) -> None:
        """``equality.Semantic.DeepEqual`` on taints sees ``timeAdded``."""
        old, new = make_node("n"), make_node("n")
        old.obj["spec"]["taints"] = [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]
        new.obj["spec"]["taints"] = [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:01:00Z"}]
        assert node_actions(new, old) == [A.UPDATE_NODE_TAINT]

    def test_taint_compares_as_a_struct(self) -> None:
        """An omitted value is the empty value: the same taint spelled two ways is no change."""
        old, new = make_node("n"), make_node("n")
        old.obj["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        new.obj["spec"]["taints"] = [{"key": "k", "value": "", "effect": "NoSchedule", "timeAdded": None}]
        assert node_actions(new, old) == []

    def test_uncordon_requeues_a_pod_rejected_by_node_unschedulable(self) -> None:
        """The uncordon's UpdateNodeTaint reaches NodeUnschedulable's hint, which says Queue."""
        old, new = make_node("n").unschedulable().build(), make_node("n").build()
        (event,) = ev.node_scheduling_properties_change(new, old)
        (node_reg, _pod_reg) = NodeUnschedulable({}, Handle()).events_to_register()
        assert ev.match_cluster_events(node_reg.event, event)
        assert node_reg.hint(make_pod("p").build(), old, new) is Q


def pod_actions(
    new: PodBuilder, old: PodBuilder, resource: EventResource = UNSCHED
) -> list[tuple[EventResource, ActionType]]:
    return [(e.resource, e.action) for e in ev.pod_scheduling_properties_change(new.build(), old.build(), resource)]


class TestPodSchedulingPropertiesChange:
    """Specific update events for labels, tolerations and gates; anything else is the generic Update."""

    @pytest.mark.parametrize(
        ("new", "old", "resource", "expected"),
        [
            pytest.param(
                make_pod("p").label("foo", "bar").node("node"),
                make_pod("p").label("foo", "bar2").node("node"),
                ASSIGNED,
                [(ASSIGNED, A.UPDATE_POD_LABEL)],
                id="assigned pod is updated",
            ),
            pytest.param(
                make_pod("p").label("foo", "bar"),
                make_pod("p").label("foo", "bar2"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_LABEL)],
                id="only label is updated",
            ),
            pytest.param(
                make_pod("p").set("metadata.annotations", {"foo": "bar"}),
                make_pod("p").set("metadata.annotations", {"foo": "bar2"}),
                UNSCHED,
                [(UNSCHED, A.UPDATE)],
                id="untracked properties of pod is updated",
            ),
            pytest.param(
                make_pod("p"),
                make_pod("p").gate("foo"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)],
                id="scheduling gate is eliminated",
            ),
            pytest.param(
                make_pod("p").gate("foo"),
                make_pod("p").gate("foo").gate("bar"),
                UNSCHED,
                [(UNSCHED, A.UPDATE)],
                id="scheduling gate is removed, but not completely eliminated",
            ),
            pytest.param(
                make_pod("p").toleration("key", "Exists").toleration("key2", "Exists"),
                make_pod("p").toleration("key", "Exists"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_TOLERATION)],
                id="pod's tolerations are updated",
            ),
            pytest.param(
                make_pod("p").toleration("k", "Exists", effect="NoExecute", tolerationSeconds=20),
                make_pod("p").toleration("k", "Exists", effect="NoExecute", tolerationSeconds=10),
                UNSCHED,
                [(UNSCHED, A.UPDATE)],
                id="toleration-seconds-change-keeps-the-count",
            ),
            pytest.param(
                make_pod("p").label("a", "b").toleration("k", "Exists"),
                make_pod("p"),
                ASSIGNED,
                [(ASSIGNED, A.UPDATE_POD_LABEL), (ASSIGNED, A.UPDATE_POD_TOLERATION)],
                id="labels-and-tolerations",
            ),
            pytest.param(
                make_pod("p").label("a", "b"),
                make_pod("p").gate("g"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_LABEL), (UNSCHED, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)],
                id="labels-and-gates",
            ),
            pytest.param(make_pod("p"), make_pod("p"), ASSIGNED, [(ASSIGNED, A.UPDATE)], id="nothing-changed"),
            # DynamicResourceAllocation is locked on in 1.35: only upstream's "feature enabled" cases apply.
            pytest.param(
                make_pod("p").resource_claim_status("a", "claim-a"),
                make_pod("p"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)],
                id="pod claim statuses change, feature enabled",
            ),
            pytest.param(
                make_pod("p").resource_claim_status("a", "claim-a").resource_claim_status("b", "claim-b"),
                make_pod("p").resource_claim_status("b", "claim-b").resource_claim_status("a", "claim-a"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)],
                id="pod claim statuses swapped",
            ),
            pytest.param(
                make_pod("p").resource_claim_status("a", None),
                make_pod("p").resource_claim_status("a", "claim-a"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)],
                id="generated-claim-name-dropped",
            ),
            pytest.param(
                make_pod("p").set("status.extendedResourceClaimStatus", {"resourceClaimName": "x"}),
                make_pod("p"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)],
                id="pod extended resource claim status change, feature enabled",
            ),
            pytest.param(
                make_pod("p").set("status.extendedResourceClaimStatus", {"resourceClaimName": "b"}),
                make_pod("p").set("status.extendedResourceClaimStatus", {"resourceClaimName": "a"}),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)],
                id="pod extended resource claim status swapped",
            ),
            pytest.param(
                make_pod("p").requests(cpu="1"),
                make_pod("p").requests(cpu="2"),
                UNSCHED,
                [(UNSCHED, A.UPDATE_POD_SCALE_DOWN)],
                id="pod's resource request is scaled down",
            ),
            pytest.param(
                make_pod("p").requests(cpu="2"),
                make_pod("p").requests(cpu="1"),
                UNSCHED,
                [(UNSCHED, A.UPDATE)],
                id="pod's resource request is scaled up",
            ),
            pytest.param(
                make_pod("p").requests(cpu="1"),
                make_pod("p").requests(cpu="1", memory="1Gi"),
                ASSIGNED,
                [(ASSIGNED, A.UPDATE_POD_SCALE_DOWN)],
                id="a resource request is removed",
            ),
            pytest.param(
                make_pod("p").requests(cpu="1000500u"),
                make_pod("p").requests(cpu="1000900u"),
                ASSIGNED,
                [(ASSIGNED, A.UPDATE)],
                id="same-milli-value-is-no-scale-down",
            ),
            pytest.param(
                make_pod("p").label("a", "b").requests(cpu="1").toleration("k", "Exists"),
                make_pod("p").requests(cpu="2").gate("g"),
                UNSCHED,
                [
                    (UNSCHED, A.UPDATE_POD_LABEL),
                    (UNSCHED, A.UPDATE_POD_SCALE_DOWN),
                    (UNSCHED, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                    (UNSCHED, A.UPDATE_POD_TOLERATION),
                ],
                id="all-four-in-upstream-extractor-order",
            ),
            pytest.param(
                make_pod("p").label("a", "b").toleration("k", "Exists"),
                make_pod("p").gate("g"),
                UNSCHED,
                [
                    (UNSCHED, A.UPDATE_POD_LABEL),
                    (UNSCHED, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                    (UNSCHED, A.UPDATE_POD_TOLERATION),
                ],
                id="labels-gates-and-tolerations",
            ),
        ],
    )
    def test_classification(
        self,
        new: PodBuilder,
        old: PodBuilder,
        resource: EventResource,
        expected: list[tuple[EventResource, ActionType]],
    ) -> None:
        """Upstream's Test_podSchedulingPropertiesChange, scale-down cases included."""
        assert pod_actions(new, old, resource) == expected

    def test_generic_update_reaches_no_plugin_of_ours(self) -> None:
        """No default plugin registers the generic Pod/Update: an annotation change wakes nobody."""
        hint_map = build_hint_map(build_frameworks(parse_config({})))["spread-scheduler"]
        generic = ClusterEvent(UNSCHED, A.UPDATE)
        assert [p for p, reg in hint_map if ev.match_cluster_events(reg.event, generic)] == []


def test_malformed_conditions_in_an_update_are_no_conditions() -> None:
    """A file may hold ``status.conditions: true`` (the API server refuses it, simulate must not
    crash): the update compares as one with no conditions. Found by the fuzz test."""
    old = make_node("n").build()
    raw = old.raw | {"status": {**old.raw.get("status", {}), "conditions": True}}
    new = Node.from_dict(raw)
    assert isinstance(ev.node_scheduling_properties_change(new, old), list)
    assert isinstance(ev.node_scheduling_properties_change(old, new), list)


def test_the_registrations_an_event_matches_are_the_same_when_asked_again_for_any_resource_and_action() -> None:
    """``QueueingHints.matching`` keeps its answer per resource and action: every pair, asked in an
    order that alternates actions on one resource, gets what a fresh match over the hint map says."""
    frameworks = build_frameworks(load_config(None))
    hints = QueueingHints(frameworks)
    hint_map = build_hint_map(frameworks)
    actions = [ActionType(1 << bit) for bit in range(12)] + [ActionType.ALL, ActionType.UPDATE, ActionType.NONE]
    for _ in range(2):
        for resource in EventResource:
            for action in actions:
                event = ClusterEvent(resource, action, "any label")
                fresh = {
                    profile: [(plugin, reg) for plugin, reg in regs if ev.match_cluster_events(reg.event, event)]
                    for profile, regs in hint_map.items()
                }
                assert {profile: list(regs) for profile, regs in hints.matching(event).items()} == fresh
