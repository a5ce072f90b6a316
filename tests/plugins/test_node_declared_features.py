"""NodeDeclaredFeatures (1.36 beta on, 1.37 GA) and the inference of what a pod's spec needs.

Scenarios from upstream v1.36.3 ``nodedeclaredfeatures_test.go`` (TestPreFilter, TestFilter,
TestEnqueueExtensions*; ids are upstream's case names) with the real registry instead of mocks, and
from component-helpers v0.36.3 / v0.37.2 ``nodedeclaredfeatures/features/*_test.go``
(InferForScheduling of each feature).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.declaredfeatures import (
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
)
from scheduler.api.objects import Node, Pod
from scheduler.config import parse_config
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code
from scheduler.plugins.nodedeclaredfeatures.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    NodeDeclaredFeatures,
)
from scheduler.testing import make_node, make_pod
from tests.helpers import code_of, make_cache

HOST_NETWORK_NO_USERNS = {"hostNetwork": True, "hostUsers": False}
RESTART_ALL = [{"name": "c", "image": "i", "restartPolicyRules": [{"action": "RestartAllContainers", "exitCodes": {}}]}]
BIND_MOUNT = [
    {"name": "c", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["x"]}]}
]


def pod(name: str = "p", uid: str = "u1", **spec: Any) -> Pod:
    b = make_pod(name).set("metadata.uid", uid)
    for key, value in spec.items():
        b = b.set(f"spec.{key}", value)
    built = b.build()
    assert not built.errors, built.error_message
    return built


def node(name: str, *declared: str) -> Node:
    b = make_node(name).capacity(cpu="1", memory="1Gi", pods="10")
    return (b.declared_features(*declared) if declared else b).build()


def plugin(minor: str = "1.36") -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures({}, Handle(), features_at(minor))


# -- what a spec needs (component-helpers' InferForScheduling tables) ---------------------------------


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(HOST_NETWORK_NO_USERNS, {USER_NAMESPACES_HOST_NETWORK}, id="HostNetwork true, HostUsers false"),
        pytest.param({"hostNetwork": True, "hostUsers": True}, set(), id="HostNetwork true, HostUsers true"),
        pytest.param({"hostNetwork": True}, set(), id="HostNetwork true, HostUsers nil"),
        pytest.param({"hostNetwork": False, "hostUsers": False}, set(), id="HostNetwork false, HostUsers false"),
        pytest.param({"containers": RESTART_ALL}, {RESTART_ALL_CONTAINERS}, id="container with RestartAllContainers"),
        pytest.param({"initContainers": RESTART_ALL}, {RESTART_ALL_CONTAINERS}, id="init container rule"),
        pytest.param(
            {"containers": [{"name": "c", "image": "i", "restartPolicyRules": [{"action": "Restart"}]}]},
            set(),
            id="container with another action",
        ),
        pytest.param({"containers": BIND_MOUNT}, {VOLUME_BIND_MOUNT_OPTIONS}, id="bind mount options"),
        pytest.param({"ephemeralContainers": BIND_MOUNT}, {VOLUME_BIND_MOUNT_OPTIONS}, id="ephemeral container"),
    ],
)
def test_feature_uses(spec: dict[str, Any], want: set[str]) -> None:
    assert pod(**spec).feature_uses == want


def test_bind_mount_options_are_a_1_37_requirement_only() -> None:
    p = pod(containers=BIND_MOUNT)
    assert plugin("1.36").requirements(p) == set()
    assert plugin("1.37").requirements(p) == {VOLUME_BIND_MOUNT_OPTIONS}


def test_a_spec_parsed_before_keeps_its_bind_mount_options() -> None:
    """Pods of one template share a parse; mounts differ between them, and bind options count."""
    plain = pod("a", containers=[{"name": "c", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}])
    bound = pod("b", containers=BIND_MOUNT)
    assert (plain.feature_uses, bound.feature_uses) == (frozenset(), {VOLUME_BIND_MOUNT_OPTIONS})


# -- TestPreFilter / TestFilter -------------------------------------------------------------------------


def test_plugin_disabled() -> None:
    off = NodeDeclaredFeatures({}, Handle(), features_at("1.35"))
    _, status = off.pre_filter(CycleState(), pod(**HOST_NETWORK_NO_USERNS), [])
    assert code_of(status) is Code.SKIP
    assert off.filter(CycleState(), pod(**HOST_NETWORK_NO_USERNS), make_cache([node("n")]).get("n")) is None  # type: ignore[arg-type]
    assert off.events_to_register() == []


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(HOST_NETWORK_NO_USERNS, {USER_NAMESPACES_HOST_NETWORK}, id="Pod with feature requirements"),
        pytest.param(
            {**HOST_NETWORK_NO_USERNS, "containers": RESTART_ALL},
            {USER_NAMESPACES_HOST_NETWORK, RESTART_ALL_CONTAINERS},
            id="Pod with multiple feature requirements",
        ),
    ],
)
def test_pre_filter_writes_the_requirements(spec: dict[str, Any], want: set[str]) -> None:
    state = CycleState()
    assert plugin().pre_filter(state, pod(**spec), []) == (None, None)
    assert state.get("PreFilterNodeDeclaredFeatures") == want


def test_pod_with_no_requirements() -> None:
    _, status = plugin().pre_filter(CycleState(), pod(), [])
    assert code_of(status) is Code.SKIP


@pytest.mark.parametrize(
    ("spec", "declared", "fits"),
    [
        pytest.param(HOST_NETWORK_NO_USERNS, [USER_NAMESPACES_HOST_NETWORK], True, id="Node matches requirements"),
        pytest.param(HOST_NETWORK_NO_USERNS, ["Other"], False, id="Node does not match requirements"),
        pytest.param(
            HOST_NETWORK_NO_USERNS,
            [RESTART_ALL_CONTAINERS, "Unknown", USER_NAMESPACES_HOST_NETWORK],
            True,
            id="Node with multiple features, pod requires subset",
        ),
        pytest.param(HOST_NETWORK_NO_USERNS, [], False, id="Node has no declared features"),
        pytest.param(
            {**HOST_NETWORK_NO_USERNS, "containers": RESTART_ALL},
            [RESTART_ALL_CONTAINERS],
            False,
            id="Node with some but not all required features",
        ),
    ],
)
def test_filter(spec: dict[str, Any], declared: list[str], fits: bool) -> None:
    p, pl, state = pod(**spec), plugin(), CycleState()
    pl.pre_filter(state, p, [])
    info = make_cache([node("n", *declared)]).get("n")
    assert info is not None
    status = pl.filter(state, p, info)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (ERR_REASON_UNSATISFIED_REQUIREMENTS,),
        )


def test_error_getting_pre_filter_state() -> None:
    info = make_cache([node("n")]).get("n")
    assert info is not None
    assert code_of(plugin().filter(CycleState(), pod(**HOST_NETWORK_NO_USERNS), info)) is Code.ERROR


# -- TestEnqueueExtensions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, node("node-1", "FeatureA"), QueueingHint.QUEUE, id="Node Add with feature"),
        pytest.param(node("node-1"), node("node-1", "FeatureA"), QueueingHint.QUEUE, id="Node Update (Features Added)"),
        pytest.param(
            node("node-1", "FeatureA"),
            node("node-1", "FeatureA"),
            QueueingHint.QUEUE_SKIP,
            id="Node Update (Features Unchanged)",
        ),
    ],
)
def test_hint_after_node_change(old: Node | None, new: Node, hint: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(pod(), old, new) is hint


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(pod(), pod(**HOST_NETWORK_NO_USERNS), QueueingHint.QUEUE, id="Pod Update adds requirement"),
        pytest.param(pod(**HOST_NETWORK_NO_USERNS), pod(), QueueingHint.QUEUE, id="Pod Update removes requirement"),
        pytest.param(pod(), pod(), QueueingHint.QUEUE_SKIP, id="Pod Update with no change in requirements"),
        pytest.param(
            pod(),
            pod("other", uid="u2", **HOST_NETWORK_NO_USERNS),
            QueueingHint.QUEUE_SKIP,
            id="Updated pod not the same as target pod",
        ),
    ],
)
def test_hint_after_pod_update(old: Pod, new: Pod, hint: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_update(pod(), old, new) is hint


# -- the default profile --------------------------------------------------------------------------------


@pytest.mark.parametrize(("minor", "listed"), [("1.35", False), ("1.36", True), ("1.37", True)])
def test_appended_last_to_the_default_profile(minor: str, listed: bool) -> None:
    points = parse_config({}, features=features_at(minor)).profiles[0].points
    assert (points["filter"][-1] == "NodeDeclaredFeatures") is listed
    assert ("NodeDeclaredFeatures" in points["preFilter"]) is listed


def test_1_36_can_turn_it_off_with_the_gates_that_need_it() -> None:
    gates = {
        "NodeDeclaredFeatures": False,
        "ExtendWebSocketsToKubelet": False,
        "InPlacePodVerticalScalingInitContainers": False,
        "RestartAllContainersOnContainerExits": False,
    }
    with pytest.raises(ValueError, match=r"^InPlacePodLevelResourcesVerticalScaling is enabled, but depends on"):
        features_at("1.36", gates)
    off = features_at("1.36", {**gates, "InPlacePodLevelResourcesVerticalScaling": False})
    assert not off.enable_node_declared_features
    assert "NodeDeclaredFeatures" not in parse_config({}, features=off).profiles[0].points["filter"]
