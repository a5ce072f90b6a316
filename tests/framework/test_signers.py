"""Batching signatures (``Framework.sign_pod`` over each plugin's ``sign_fragments``, upstream's
``SignPod`` and ``signers.go``): which profiles and pods can be signed, and which differences count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler.config import parse_config, upstream_config
from scheduler.framework.runtime import Framework
from scheduler.simulate import Simulation
from scheduler.testing import PodBuilder, make_pod, spread_constraint

LIST_DEFAULTING = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]


def profile(plugin_config: list[dict[str, Any]] | None = None, **fields: Any) -> Framework:
    config = upstream_config(LIST_DEFAULTING if plugin_config is None else plugin_config, **fields)
    (fwk,) = Simulation(parse_config(config)).frameworks.values()
    return fwk


def sign(builder: PodBuilder, fwk: Framework | None = None) -> bytes | None:
    return (fwk or profile()).sign_pod(builder.build())


def replica() -> PodBuilder:
    return make_pod("r").label("app", "web").requests(cpu="100m").host_port(80).toleration("k", "Exists")


class TestWhoSigns:
    def test_the_default_profile_with_list_defaulting_signs(self) -> None:
        signature = sign(replica())
        assert signature is not None
        decoded = json.loads(signature)
        assert decoded["v1.Pod.Spec.SchedulerName"] == "spread-scheduler"
        assert decoded["v1.Pod.Spec.HostPorts()"] == [80]
        assert decoded["v1.Pod.Labels"] == {"app": "web"}

    def test_system_defaulting_signs_nothing(self) -> None:
        """PodTopologySpread refuses every pod while default constraints apply."""
        assert sign(replica(), profile([])) is None

    def test_list_defaulting_with_constraints_signs_nothing(self) -> None:
        args = {"defaultingType": "List", "defaultConstraints": [spread_constraint({}, topologyKey="zone")]}
        args["defaultConstraints"][0].pop("labelSelector", None)
        assert sign(replica(), profile([{"name": "PodTopologySpread", "args": args}])) is None

    @pytest.mark.parametrize(
        "builder",
        [
            pytest.param(replica().spread(spread_constraint({"app": "web"})), id="topology spread constraints"),
            pytest.param(replica().set("spec.affinity.podAffinity", {}), id="pod affinity, even empty"),
            pytest.param(replica().set("spec.affinity.podAntiAffinity", {}), id="pod anti-affinity"),
            pytest.param(replica().resource_claim("c", claim="claim"), id="dra resource claims"),
        ],
    )
    def test_pods_a_plugin_refuses(self, builder: PodBuilder) -> None:
        assert sign(builder) is None

    def test_a_plugin_without_sign_fragments_disables_the_profile(self) -> None:
        """SelectorSpread (ours only) cannot sign, so nothing is signed (computeBatchablePlugins)."""
        config = upstream_config(LIST_DEFAULTING)
        config["profiles"][0]["plugins"]["multiPoint"]["enabled"].append({"name": "SelectorSpread"})
        (fwk,) = Simulation(parse_config(config)).frameworks.values()
        assert not fwk.enable_signatures
        assert fwk.sign_pod(replica().build()) is None

    def test_ignore_preferred_terms_leaves_labels_out(self) -> None:
        args = {"ignorePreferredTermsOfExistingPods": True}
        fwk = profile([*LIST_DEFAULTING, {"name": "InterPodAffinity", "args": args}])
        assert sign(replica().label("x", "1"), fwk) == sign(replica().label("x", "2"), fwk)


class TestWhatCounts:
    @pytest.mark.parametrize(
        "other",
        [
            pytest.param(replica().label("app", "api"), id="labels"),
            pytest.param(replica().requests(cpu="200m"), id="requests"),
            pytest.param(replica().node_selector({"a": "b"}), id="node selector"),
            pytest.param(replica().preferred_term(1, {"matchExpressions": []}), id="node affinity"),
            pytest.param(replica().toleration("k2", "Exists"), id="tolerations"),
            pytest.param(replica().host_port(81), id="host ports"),
            pytest.param(replica().image("nginx:2"), id="images"),
            pytest.param(replica().volume("v", emptyDir={}), id="an emptyDir volume"),
            pytest.param(replica().node("n1"), id="node name"),
        ],
    )
    def test_a_difference_that_matters(self, other: PodBuilder) -> None:
        assert sign(other) != sign(replica())

    @pytest.mark.parametrize(
        "other",
        [
            pytest.param(replica().set("metadata.name", "other"), id="the pod's name"),
            pytest.param(replica().host_port(80, protocol="UDP", container=0), id="a port's protocol"),
            pytest.param(replica().volume("cm", configMap={"name": "c"}), id="a configMap volume"),
            pytest.param(replica().volume("s", secret={"secretName": "s"}), id="a secret volume"),
            pytest.param(replica().image("pause:latest"), id="an image named as normalized"),
        ],
    )  # fmt: skip
    def test_a_difference_that_does_not(self, other: PodBuilder) -> None:
        assert sign(other) == sign(replica())

    def test_node_affinity_values_and_requirements_are_sorted(self) -> None:
        x12 = {"key": "x", "operator": "In", "values": ["1", "2"]}
        x21 = {"key": "x", "operator": "In", "values": ["2", "1"]}
        y = {"key": "y", "operator": "Exists"}
        a, b = {"matchExpressions": [x12, y]}, {"matchExpressions": [y, x21]}
        assert sign(replica().required_terms(a)) == sign(replica().required_terms(b))

    def test_tolerations_are_sorted_by_key_and_value(self) -> None:
        one = make_pod("p").toleration("a", "Equal", "1").toleration("b", "Exists")
        two = make_pod("p").toleration("b", "Exists").toleration("a", "Equal", "1")
        assert sign(one) == sign(two)
