"""KubeSchedulerConfiguration: defaults, plugin set merging, args, and errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import ConfigError, load_config, parse_config
from scheduler.profile import build_frameworks

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def profile(**fields: Any) -> dict[str, Any]:
    return {**API, "profiles": [{"schedulerName": "spread-scheduler", **fields}]}


def test_default_profile_matches_upstream_order_and_weights() -> None:
    fwk = build_frameworks(load_config(None))["spread-scheduler"]
    assert fwk.points["filter"] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
    ]
    assert fwk.points["preFilter"] == ["NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread"]
    assert fwk.points["score"] == ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread"]
    assert fwk.weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2}
    assert fwk.points["queueSort"] == ["PrioritySort"] and fwk.points["bind"] == ["DefaultBinder"]
    assert fwk.points["preEnqueue"] == ["SchedulingGates"]


def test_multipoint_disable_and_reweight() -> None:
    cfg = parse_config(
        profile(
            plugins={
                "multiPoint": {
                    "disabled": [{"name": "TaintToleration"}],
                    "enabled": [{"name": "NodeAffinity", "weight": 7}],
                }
            }
        )
    )
    fwk = build_frameworks(cfg)["spread-scheduler"]
    assert "TaintToleration" not in fwk.points["filter"]
    assert fwk.weights["NodeAffinity"] == 7


def test_per_point_config_orders_overrides_then_multipoint_then_others() -> None:
    cfg = parse_config(
        profile(
            plugins={
                "score": {
                    "enabled": [{"name": "PodTopologySpread", "weight": 5}],
                    "disabled": [{"name": "NodeAffinity"}],
                }
            }
        )
    )
    fwk = build_frameworks(cfg)["spread-scheduler"]
    assert fwk.points["score"] == ["PodTopologySpread", "TaintToleration", "NodeResourcesFit"]
    assert fwk.weights["PodTopologySpread"] == 5
    assert "NodeAffinity" in fwk.points["filter"]  # disabled for score only


def test_disable_everything_keeps_nothing() -> None:
    with pytest.raises(ConfigError, match="queueSort"):
        parse_config(profile(plugins={"multiPoint": {"disabled": [{"name": "*"}]}}))


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        pytest.param(
            profile(plugins={"filter": {"enabled": [{"name": "Nope"}]}}),
            'profiles[0].plugins.filter.enabled[0].name: Invalid value: "Nope"',
            id="unknown-plugin",
        ),
        pytest.param(
            profile(plugins={"score": {"enabled": [{"name": "NodeName"}]}}), "does not extend score", id="wrong-point"
        ),
        pytest.param(profile(plugins={"sideways": {}}), "profiles[0].plugins.sideways", id="unknown-point"),
        pytest.param(
            profile(
                pluginConfig=[
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "System",
                            "defaultConstraints": [
                                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                            ],
                        },
                    }
                ]
            ),
            "defaultingType can only be List",
            id="system-with-list",
        ),
        pytest.param(
            profile(
                pluginConfig=[
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [
                                {
                                    "maxSkew": 1,
                                    "topologyKey": "zone",
                                    "whenUnsatisfiable": "DoNotSchedule",
                                    "labelSelector": {},
                                }
                            ],
                        },
                    }
                ]
            ),
            "constraint must not define a selector",
            id="default-with-selector",
        ),
        pytest.param(
            profile(
                pluginConfig=[
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [
                                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                            ],
                        },
                    }
                ]
            ),
            "defaultConstraints[0].maxSkew",
            id="default-max-skew",
        ),
        pytest.param(
            profile(
                pluginConfig=[
                    {
                        "name": "NodeAffinity",
                        "args": {
                            "addedAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}
                                    ]
                                }
                            }
                        },
                    }
                ]
            ),
            "profiles[0].pluginConfig[NodeAffinity].args",
            id="added-affinity-not-an-integer",
        ),
        pytest.param(
            profile(pluginConfig=[{"name": "Nope"}]),
            'pluginConfig[0].name: Invalid value: "Nope"',
            id="args-for-unknown-plugin",
        ),
        pytest.param(
            {**API, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
            'profiles[1].schedulerName: Duplicate value: "a"',
            id="duplicate-profile",
        ),
        pytest.param({**API, "apiVersion": "v2"}, "apiVersion: Unsupported value", id="api-version"),
        pytest.param({**API, "percentageOfNodesToScore": 101}, "percentageOfNodesToScore", id="percentage"),
        pytest.param(
            {**API, "podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
            "podMaxBackoffSeconds",
            id="backoff-order",
        ),
        pytest.param(
            {**API, "leaderElection": {"leaseDuration": "soon"}}, "leaderElection.leaseDuration", id="duration"
        ),
    ],
)
def test_bad_config_names_the_field(doc: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert fragment in str(info.value)


def test_durations_two_profiles_and_client_settings() -> None:
    cfg = parse_config(
        {
            **API,
            "leaderElection": {
                "leaseDuration": "1m30s",
                "renewDeadline": "10s",
                "retryPeriod": "500ms",
                "resourceNamespace": "sched",
            },
            "clientConnection": {"qps": 5000, "burst": 5000},
            "profiles": [{"schedulerName": "a"}, {"schedulerName": "b", "percentageOfNodesToScore": 100}],
        }
    )
    assert cfg.leader_election.lease_duration == 90 and cfg.leader_election.retry_period == 0.5
    assert cfg.leader_election.resource_name == "a" and cfg.leader_election.resource_namespace == "sched"
    assert cfg.qps == 5000 and cfg.burst == 5000
    frameworks = build_frameworks(cfg)
    assert set(frameworks) == {"a", "b"} and frameworks["b"].percentage_of_nodes_to_score == 100


def test_config_file_errors(tmp_path: Any) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("profiles: [")
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_config(path)
