"""What was the refusing stand-ins' (the four volume plugins and DynamicResources are ported:
tests/plugins/test_{volume_restrictions,node_volume_limits,volume_binding,volume_zone}.py,
tests/plugins/dynamicresources/): volume sources leave DynamicResources alone (Skip), the messages
through the pipeline, and how a profile that disables them behaves. Plus DefaultPreemption,
accepted in configurations.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.api.storage import PersistentVolumeClaim
from scheduler.config import load_config, parse_config
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.helper import not_run
from scheduler.profile import build_frameworks
from scheduler.schedule_one import Attempt, SchedulingAlgorithm
from scheduler.simulate import Simulation
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import make_cache

# The four volume plugins, ported, in upstream's order.
VR, NVL, VB, VZ = names.VOLUME_RESTRICTIONS, names.NODE_VOLUME_LIMITS, names.VOLUME_BINDING, names.VOLUME_ZONE
StandIn = StructuredDynamicResources
DRA = names.DYNAMIC_RESOURCES
STAND_INS: dict[str, type[StandIn]] = {DRA: StructuredDynamicResources}
ALL = frozenset(STAND_INS)


def pre_filter(plugin: str, pod: PodBuilder) -> tuple[PreFilterResult | None, Status | None]:
    nodes = [NodeInfo(make_node("n").build())]
    return STAND_INS[plugin]({}, Handle()).pre_filter(CycleState(), pod.build(), nodes)


def with_volume(source: str, value: object | None = None) -> PodBuilder:
    """A pod whose only volume ``v`` uses ``source`` (the kube-api-access volume of real pods first)."""
    if value is None:
        value = {"claimName": "data"} if source == "persistentVolumeClaim" else {}
    return make_pod("p").volume("kube-api-access", projected={"sources": []}).volume("v", **{source: value})


# Which stand-ins act on a pod whose only non-projected volume uses this source: none any more (the
# volume plugins are ported); DynamicResources reads no volume.
VOLUME_CASES = [
    ("persistentVolumeClaim", set()),
    ("ephemeral", set()),
    ("gcePersistentDisk", set()),
    ("awsElasticBlockStore", set()),
    ("rbd", set()),
    ("iscsi", set()),
    ("cinder", set()),
    ("azureDisk", set()),
    ("azureFile", set()),
    ("vsphereVolume", set()),
    ("portworxVolume", set()),
    # Sources no stand-in reads (inline-migratable disks are NodeVolumeLimits', ported).
    ("csi", set()),
    ("emptyDir", set()),
    ("hostPath", set()),
    ("configMap", set()),
    ("secret", set()),
    ("projected", set()),
    ("downwardAPI", set()),
    ("nfs", set()),
    ("image", set()),
]


@pytest.mark.parametrize("plugin", sorted(ALL))
@pytest.mark.parametrize(("source", "acting"), [pytest.param(s, a, id=s) for s, a in VOLUME_CASES])
def test_volume_sources(plugin: str, source: str, acting: set[str]) -> None:
    """Refuse exactly when the upstream PreFilter would act; otherwise Skip, as upstream's does."""
    result, status = pre_filter(plugin, with_volume(source))
    assert result is None
    assert status is not None
    if plugin in acting:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message().startswith(f'spec.volumes[1].{source} (volume "v") needs the {plugin} plugin')
    else:
        assert status.code is Code.SKIP


@pytest.mark.parametrize("plugin", sorted(ALL))
def test_a_pod_without_volumes_or_claims_is_skipped_by_all(plugin: str) -> None:
    assert pre_filter(plugin, make_pod("p"))[1] == Status(Code.SKIP)


# DynamicResources is no stand-in any more (``plugins/dynamicresources/plugin``): which claims a pod
# uses, their messages and hints are tests/plugins/dynamicresources/test_dra_plugin.py's.
DRA_MESSAGE = 'could not find ResourceClaim "default/gpu-0"'


# -- through the pipeline --------------------------------------------------------------------------


def default_framework(doc: Mapping[str, Any] | None = None) -> Framework:
    config = load_config(None) if doc is None else parse_config(dict(doc))
    return build_frameworks(config)["spread-scheduler"]


def attempt(pod: PodBuilder, fwk: Framework | None = None) -> Attempt:
    cache = make_cache([make_node(f"n{i}") for i in range(3)], [])
    return SchedulingAlgorithm(random.Random(0)).schedule_pod(fwk or default_framework(), cache, pod.build())


def disabling(*plugins: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": p} for p in plugins]}}}],
    }


def test_fit_error_is_upstreams_prefilter_format() -> None:
    """``0/N nodes are available: <PreFilter message>.``; the stand-in is the one rejector. A missing
    claim is VolumeRestrictions' (ported) refusal first, with the lister's text, as upstream."""
    a = attempt(make_pod("p").pvc("data", "d"))
    assert a.host is None and a.status.code is Code.UNSCHEDULABLE
    assert a.message == '0/3 nodes are available: persistentvolumeclaim "d" not found.'
    assert a.diagnosis.unschedulable_plugins == {VR}
    cache = make_cache([make_node(f"n{i}") for i in range(3)], [])
    cache.storage.upsert(PersistentVolumeClaim("default", "d", access_modes=frozenset({"ReadWriteOnce"})))
    a = SchedulingAlgorithm(random.Random(0)).schedule_pod(
        default_framework(), cache, make_pod("p").pvc("data", "d").build()
    )
    assert a.message == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert a.diagnosis.unschedulable_plugins == {VB}


def test_resource_claims_fit_error() -> None:
    """A missing claim: DynamicResources' PreFilter refusal with the lister's text, as upstream's (its
    PreEnqueue holds such a pod back in the queue; ``schedule_pod`` runs the cycle alone)."""
    a = attempt(make_pod("p").resource_claim("gpu", claim="gpu-0"))
    assert a.message == f"0/3 nodes are available: {DRA_MESSAGE}."
    assert a.diagnosis.unschedulable_plugins == {DRA}


@pytest.mark.parametrize(
    ("disabled", "rejector"),
    [
        pytest.param((), VR, id="default-profile"),
        # NodeVolumeLimits (ported) acts in Filter, after every PreFilter: VolumeBinding's refuses first.
        pytest.param((VR,), VB, id="without-volume-restrictions"),
        pytest.param((VR, NVL), VB, id="without-two"),
        pytest.param((VR, NVL, VB), VZ, id="without-three"),
        pytest.param((VR, NVL, VB, VZ), None, id="all-four-disabled-places-it-ignoring-volumes"),
    ],
)
def test_disabling_a_stand_in_is_disabling_the_upstream_plugin(disabled: tuple[str, ...], rejector: str | None) -> None:
    """In upstream's order the next plugin that acts on a PVC refuses; with none left the pod is placed."""
    a = attempt(make_pod("p").pvc("data", "d"), default_framework(disabling(*disabled)))
    if rejector is None:
        assert a.host is not None
    else:
        assert a.host is None and a.diagnosis.unschedulable_plugins == {rejector}


def test_a_pod_none_of_them_acts_on_is_decided_as_before() -> None:
    """Same feasible nodes, host and totals with and without the stand-ins (DynamicResources adds 0)."""
    pod = make_pod("p").volume("kube-api-access", projected={"sources": []}).volume("x", csi={"driver": "d"})
    with_them = attempt(pod)
    without = attempt(pod, default_framework(disabling(VR, NVL, VB, VZ, DRA)))
    assert with_them.host == without.host is not None
    assert with_them.totals == without.totals
    dra = next(s for s in with_them.scores if s.plugin == DRA)
    assert (dra.weight, set(dra.raw), set(dra.normalized)) == (2, {0}, {0})


class TestDefaultPreemption:
    """kube-scheduler configurations name it; it loads with its args, in upstream's order."""

    @pytest.mark.parametrize(
        ("plugins", "post_filter"),
        [
            pytest.param(
                {"multiPoint": {"enabled": [{"name": "DefaultPreemption"}]}},
                [names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION],
                id="multipoint-enabled",
            ),
            pytest.param(
                {"postFilter": {"enabled": [{"name": "DefaultPreemption"}]}},
                # Named at the point itself, it comes before the multiPoint plugins (upstream's
                # expandMultiPointPlugins: the overriding plugins first).
                [names.DEFAULT_PREEMPTION, names.DYNAMIC_RESOURCES],
                id="postfilter-enabled",
            ),
            pytest.param(
                {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}},
                [names.DYNAMIC_RESOURCES],
                id="postfilter-disabled",
            ),
        ],
    )
    def test_accepted_with_its_args(self, plugins: dict[str, Any], post_filter: list[str]) -> None:
        """Named anywhere, with DefaultPreemptionArgs: the configuration loads, in upstream's order."""
        doc = disabling()
        doc["profiles"][0]["plugins"] = plugins
        doc["profiles"][0]["pluginConfig"] = [
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}}
        ]
        assert default_framework(doc).points["postFilter"] == post_filter

    def test_in_the_default_profile_after_dynamic_resources(self) -> None:
        """As upstream's default profile: applyDynamicResources puts DynamicResources right before it."""
        fwk = default_framework()
        assert fwk.points["postFilter"] == [names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION]
        assert fwk.points["preEnqueue"] == [names.SCHEDULING_GATES, names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION]

    def test_answers_no_victims(self) -> None:
        plugin = DefaultPreemption({}, Handle())
        assert plugin.post_filter(CycleState(), make_pod("p").build(), {}) == (None, Status(Code.UNSCHEDULABLE))


class TestPostFilter:
    """DynamicResources' PostFilter ends an unschedulable pod's message, as upstream's does."""

    @staticmethod
    def post_filter(pod: PodBuilder, pre_filter_ran: bool = True) -> Status:
        fwk = default_framework()
        fwk.handle.snapshot = make_cache([])  # the claims' lister
        state = CycleState()
        if pre_filter_ran:
            fwk.plugins[names.DYNAMIC_RESOURCES].pre_filter(state, pod.build(), [])  # type: ignore[attr-defined]
        return fwk.run_post_filter_plugins(state, pod.build(), {})[1]

    def test_a_pod_without_claims_has_none_to_deallocate(self) -> None:
        status = self.post_filter(make_pod("p"))
        assert status == Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), names.DYNAMIC_RESOURCES)

    @pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
    def test_a_pod_without_claims_at_each_minor(self, minor: str) -> None:
        """Upstream's testPlugin "empty" and "empty-with-extended-resources-enabled" (v1.37.2
        dynamicresources_test.go): from 1.37 PostFilter only logs "No new claims to deallocate" and
        answers a bare Unschedulable; 1.35 and 1.36 put it in the status."""
        fwk = build_frameworks(load_config(None, features=features_at(minor)))["spread-scheduler"]
        state = CycleState()
        pod = make_pod("p").build()
        assert fwk.plugins[names.DYNAMIC_RESOURCES].pre_filter(state, pod, [])[1] == not_run.SKIP  # type: ignore[attr-defined]
        status = fwk.run_post_filter_plugins(state, pod, {})[1]
        reasons = () if minor == "1.37" else ("no new claims to deallocate",)
        assert status == Status(Code.UNSCHEDULABLE, reasons, names.DYNAMIC_RESOURCES)

    def test_at_1_37_the_fit_error_ends_with_preemption(self) -> None:
        sim = Simulation(load_config(None, features=features_at("1.37")), seed=0)
        sim.add_objects([make_node("n1").taint("k", "v", "NoSchedule").dict(), make_pod("p").dict()])
        (result,) = sim.run()
        assert result.message == (
            "0/1 nodes are available: 1 node(s) had untolerated taint(s). "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )

    def test_a_pod_whose_claim_is_missing_has_none_to_deallocate(self) -> None:
        """Its PreFilter refused it before finding a claim: upstream's "no new claims to deallocate"."""
        status = self.post_filter(make_pod("p").resource_claim("gpu", claim="gpu-claim"))
        assert status == Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), names.DYNAMIC_RESOURCES)

    def test_without_its_prefilter_state_it_fails_and_stops_the_postfilters(self) -> None:
        """As upstream's: an Error ends the PostFilter run, so DefaultPreemption does not clear the
        pod's nomination (found by the differential test: a nominee whose claim was missing lost its
        nomination here and kept it upstream). Upstream's message then ends with its internal
        "not found"; ours adds nothing (docs/differences.md)."""
        status = self.post_filter(make_pod("p"), pre_filter_ran=False)
        assert status.code is Code.ERROR and status.message() == ""
        fwk = default_framework()
        nominated = make_pod("p").set("status.nominatedNodeName", "n1").build()
        nominating, _ = fwk.run_post_filter_plugins(CycleState(), nominated, {})
        assert nominating is None  # Noop: the nomination stays

    def test_a_missing_claim_keeps_the_nomination_in_the_cycle(self) -> None:
        sim = Simulation(load_config(None), seed=0)
        pod = make_pod("p").pvc("data", "gone").set("status.nominatedNodeName", "n1")
        sim.add_objects([make_node("n1").dict(), pod.dict()])
        (result,) = sim.run()
        assert result.message == '0/1 nodes are available: persistentvolumeclaim "gone" not found.'
        assert result.preemption is None

    def test_the_scheduling_cycle_appends_it_to_the_fit_error(self) -> None:
        """In the live cycle (where upstream runs PostFilter, after SchedulePod), not in the algorithm."""
        sim = Simulation(load_config(None), seed=0)
        sim.add_objects([make_node("n1").taint("k", "v", "NoSchedule").dict(), make_pod("p").dict()])
        (result,) = sim.run()
        assert result.message == (
            "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
        assert attempt(make_pod("p").node_selector({"x": "y"})).message.endswith("selector.")  # the algorithm alone

    def test_disabled_post_filter_adds_nothing(self) -> None:
        doc = disabling()
        doc["profiles"][0]["plugins"]["postFilter"] = {"disabled": [{"name": "*"}]}
        sim = Simulation(parse_config(doc), seed=0)
        sim.add_objects([make_node("n1").taint("k", "v", "NoSchedule").dict(), make_pod("p").dict()])
        (result,) = sim.run()
        assert result.message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
