"""KubeSchedulerConfiguration: the default profile, plugin-set merging, plugin args, and errors.

The merge rules are upstream's (``apis/config/v1/default_plugins.go`` ``mergePluginSet`` and
``framework/runtime/framework.go`` ``expandMultiPointPlugins`` / ``getScoreWeights``):

* a custom multiPoint entry for a default plugin replaces the default entry in place, weight
  included (no weight given means weight 0, which the framework turns into 1);
* per extension point the order is: plugins enabled at that point that are also multiPoint plugins
  (in the point's order), then the remaining multiPoint plugins, then the point's other plugins;
* a weight in ``score.enabled`` wins over the multiPoint weight (0 means 1 there too).

Every ConfigError message starts with the path of the offending field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.config import ConfigError, SchedulerConfig, load_config, parse_config, upstream_config
from scheduler.framework.runtime import Framework
from scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.profile import build_frameworks
from scheduler.simulate import Simulation
from scheduler.testing import make_node, make_pod

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
NAME = "spread-scheduler"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# Upstream's default multiPoint list (spec 1.6) restricted to the plugins we ship, in its order.
DEFAULT_ORDER = [
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
]
DEFAULT_FILTER = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
]
DEFAULT_PRE_FILTER = [
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
]
DEFAULT_SCORE = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
]
# ImageLocality has no PreScore; DynamicResources' upstream Score has none either.
DEFAULT_PRE_SCORE = [n for n in DEFAULT_SCORE if n not in ("ImageLocality", "DynamicResources")]
DEFAULT_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def without(names: list[str], *drop: str) -> list[str]:
    return [n for n in names if n not in drop]


def without_key(weights: dict[str, int], *drop: str) -> dict[str, int]:
    return {n: w for n, w in weights.items() if n not in drop}


def profile(plugins: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": NAME, **fields}
    if plugins is not None:
        prof["plugins"] = plugins
    return {**API, "profiles": [prof]}


def framework(doc: dict[str, Any], name: str = NAME) -> Framework:
    return build_frameworks(parse_config(doc))[name]


def config_error(doc: object) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    return str(info.value)


class TestDefaultProfile:
    """No file (or an empty one) gives one profile with upstream's plugin order and weights."""

    @pytest.mark.parametrize(
        "config",
        [
            pytest.param(load_config(None), id="no-file"),
            pytest.param(parse_config({}), id="empty-document"),
            pytest.param(parse_config({**API, "profiles": []}), id="empty-profile-list"),
            pytest.param(parse_config(upstream_config()), id="upstream-spelling-of-our-profile"),
        ],
    )
    def test_points_and_weights(self, config: SchedulerConfig) -> None:
        """Per extension point, the plugins implementing it in the default multiPoint order."""
        (fwk,) = build_frameworks(config).values()
        assert fwk.profile_name == NAME
        expected = {
            "queueSort": ["PrioritySort"],
            "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
            "preFilter": DEFAULT_PRE_FILTER,
            "filter": DEFAULT_FILTER,
            "postFilter": ["DynamicResources", "DefaultPreemption"],
            "preScore": DEFAULT_PRE_SCORE,
            "score": DEFAULT_SCORE,
            "reserve": ["VolumeBinding", "DynamicResources"],
            "permit": [],
            "preBind": ["VolumeBinding", "DynamicResources"],
            "bind": ["DefaultBinder"],
            "postBind": [],
        }
        assert fwk.points == expected
        assert fwk.weights == DEFAULT_WEIGHTS

    def test_every_point_follows_the_default_multipoint_order(self) -> None:
        """Each point's list is a subsequence of upstream's default order."""
        fwk = framework(profile())
        for point, names in fwk.points.items():
            assert names == [n for n in DEFAULT_ORDER if n in names], point

    def test_global_defaults(self) -> None:
        """Backoff 1s/10s, adaptive percentage, leader election 15s/10s/2s in the pod's namespace (resolved later)."""
        cfg = load_config(None)
        assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1.0, 10.0)
        assert cfg.percentage_of_nodes_to_score is None and cfg.profiles[0].percentage_of_nodes_to_score is None
        le = cfg.leader_election
        assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
        assert (le.resource_namespace, le.resource_name) == ("", NAME)

    def test_system_defaulting_for_pod_topology_spread(self) -> None:
        """PodTopologySpreadArgs default to System: soft hostname (3) and zone (5) constraints."""
        plugin = framework(profile()).plugins["PodTopologySpread"]
        assert isinstance(plugin, PodTopologySpread) and plugin.system_defaulted
        got = [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in plugin.default_constraints]
        assert got == [(HOSTNAME, 3, "ScheduleAnyway"), (ZONE, 5, "ScheduleAnyway")]


class TestMultiPoint:
    """``plugins.multiPoint``: disable by name or ``*``, enable (append or replace in place)."""

    def test_disable_by_name_removes_it_everywhere(self) -> None:
        """A disabled default plugin leaves every point and the weights."""
        fwk = framework(profile({"multiPoint": {"disabled": [{"name": "TaintToleration"}]}}))
        assert fwk.points["filter"] == without(DEFAULT_FILTER, "TaintToleration")
        assert fwk.points["score"] == without(DEFAULT_SCORE, "TaintToleration")
        assert fwk.weights == without_key(DEFAULT_WEIGHTS, "TaintToleration")

    def test_disable_all_then_enable_keeps_the_enabled_order(self) -> None:
        """With ``*`` disabled only the enabled list is left, in its own order, weight 0 meaning 1."""
        fwk = framework(
            profile(
                {
                    "multiPoint": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": "DefaultBinder"},
                            {"name": "PodTopologySpread", "weight": 5},
                            {"name": "PrioritySort"},
                            {"name": "NodeAffinity"},
                        ],
                    }
                }
            )
        )
        assert fwk.points["filter"] == ["PodTopologySpread", "NodeAffinity"]
        assert fwk.points["score"] == ["PodTopologySpread", "NodeAffinity"]
        assert fwk.points["preEnqueue"] == [] and fwk.points["queueSort"] == ["PrioritySort"]
        assert fwk.weights == {"PodTopologySpread": 5, "NodeAffinity": 1}

    def test_disable_all_without_a_queue_sort_is_an_error(self) -> None:
        """Exactly one QueueSort plugin is required."""
        assert config_error(profile({"multiPoint": {"disabled": [{"name": "*"}]}})) == (
            "profiles[0].plugins.queueSort: Invalid value: exactly one queue sort plugin must be enabled, got []"
        )

    def test_disable_all_without_a_bind_plugin_is_an_error(self) -> None:
        """At least one Bind plugin is required."""
        doc = profile({"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}]}})
        assert config_error(doc) == "profiles[0].plugins.bind: Invalid value: at least one bind plugin is needed"

    def test_multipoint_disable_and_reweight(self) -> None:
        """Disabling one default and reweighting another in the same multiPoint."""
        fwk = framework(
            profile(
                {
                    "multiPoint": {
                        "disabled": [{"name": "TaintToleration"}],
                        "enabled": [{"name": "NodeAffinity", "weight": 7}],
                    }
                }
            )
        )
        assert "TaintToleration" not in fwk.points["filter"]
        assert fwk.weights["NodeAffinity"] == 7

    def test_enabling_a_default_plugin_with_a_weight_replaces_it_in_place(self) -> None:
        """The order stays upstream's; the weight is the new one."""
        fwk = framework(profile({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 7}]}}))
        assert fwk.points["filter"] == DEFAULT_FILTER and fwk.points["score"] == DEFAULT_SCORE
        assert fwk.weights == {**DEFAULT_WEIGHTS, "TaintToleration": 7}

    def test_enabling_a_default_plugin_without_a_weight_resets_it_to_1(self) -> None:
        """``mergePluginSet`` replaces the whole default entry: its weight 3 is gone, 0 means 1."""
        fwk = framework(profile({"multiPoint": {"enabled": [{"name": "TaintToleration"}]}}))
        assert fwk.weights == {**DEFAULT_WEIGHTS, "TaintToleration": 1}

    def test_disabled_and_enabled_again_moves_to_the_end(self) -> None:
        """A disabled default that is enabled again is appended after the defaults."""
        fwk = framework(
            profile({"multiPoint": {"disabled": [{"name": "NodeName"}], "enabled": [{"name": "NodeName"}]}})
        )
        assert fwk.points["filter"] == [*without(DEFAULT_FILTER, "NodeName"), "NodeName"]

    def test_enabling_the_same_plugin_twice_is_an_error(self) -> None:
        """Upstream refuses a double registration ("already registered")."""
        doc = profile({"multiPoint": {"enabled": [{"name": "PodTopologySpread"}, {"name": "PodTopologySpread"}]}})
        assert (
            config_error(doc) == 'profiles[0].plugins.multiPoint.enabled[1].name: Duplicate value: "PodTopologySpread"'
        )


class TestPerExtensionPoint:
    """Point-specific enabled/disabled lists on top of multiPoint."""

    def test_overrides_come_first_in_the_points_order(self) -> None:
        """Upstream "Reorder MultiPoint plugins (specified extension takes precedence)"."""
        fwk = framework(profile({"filter": {"enabled": [{"name": "PodTopologySpread"}, {"name": "TaintToleration"}]}}))
        assert fwk.points["filter"] == [
            "PodTopologySpread",
            "TaintToleration",
            *without(DEFAULT_FILTER, "PodTopologySpread", "TaintToleration"),
        ]
        assert fwk.points["score"] == DEFAULT_SCORE  # other points keep the multiPoint order

    def test_plugins_outside_multipoint_come_last(self) -> None:
        """Upstream "... only takes precedence when it exists in MultiPoint": others are appended."""
        fwk = framework(
            profile(
                {
                    "multiPoint": {"disabled": [{"name": "NodeAffinity"}]},
                    "filter": {"enabled": [{"name": "NodeAffinity"}, {"name": "TaintToleration"}]},
                }
            )
        )
        assert fwk.points["filter"] == [
            "TaintToleration",
            *without(DEFAULT_FILTER, "TaintToleration", "NodeAffinity"),
            "NodeAffinity",
        ]
        # NodeAffinity only where enabled
        assert fwk.points["preFilter"] == without(DEFAULT_PRE_FILTER, "NodeAffinity")
        assert "NodeAffinity" not in fwk.weights

    def test_per_point_config_orders_overrides_then_multipoint_then_others(self) -> None:
        """A weighted score override comes first; a plugin disabled for Score still filters."""
        fwk = framework(
            profile(
                {
                    "score": {
                        "enabled": [{"name": "PodTopologySpread", "weight": 5}],
                        "disabled": [{"name": "NodeAffinity"}],
                    }
                }
            )
        )
        assert fwk.points["score"] == [
            "PodTopologySpread",
            *without(DEFAULT_SCORE, "PodTopologySpread", "NodeAffinity"),
        ]
        assert fwk.weights["PodTopologySpread"] == 5
        assert "NodeAffinity" in fwk.points["filter"]  # disabled for score only

    def test_disabled_at_one_point_only(self) -> None:
        """A multiPoint plugin disabled at Score still filters."""
        fwk = framework(profile({"score": {"disabled": [{"name": "TaintToleration"}]}}))
        assert fwk.points["score"] == without(DEFAULT_SCORE, "TaintToleration")
        assert fwk.points["preScore"] == DEFAULT_PRE_SCORE
        assert "TaintToleration" in fwk.points["filter"]
        assert fwk.weights == without_key(DEFAULT_WEIGHTS, "TaintToleration")

    def test_disable_all_at_one_point_keeps_only_that_points_enabled(self) -> None:
        """``*`` disabled at Filter skips the multiPoint expansion there."""
        fwk = framework(profile({"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity"}]}}))
        assert fwk.points["filter"] == ["NodeAffinity"]
        assert fwk.points["preFilter"] == DEFAULT_PRE_FILTER

    @pytest.mark.parametrize(
        ("point", "name"),
        [
            pytest.param("filter", "PrioritySort", id="queue-sort-at-filter"),
            pytest.param("score", "NodeName", id="wrong-point"),
        ],
    )
    def test_enabled_at_a_point_the_plugin_does_not_implement(self, point: str, name: str) -> None:
        """PrioritySort has no Filter, NodeName no Score."""
        doc = profile({point: {"enabled": [{"name": name}]}})
        assert config_error(doc) == (
            f'profiles[0].plugins.{point}.enabled[0].name: Invalid value: "{name}": plugin does not extend {point}'
        )

    def test_listed_twice_at_one_point(self) -> None:
        """A plugin cannot run twice at one point."""
        doc = profile({"filter": {"enabled": [{"name": "NodeAffinity"}, {"name": "NodeAffinity"}]}})
        assert config_error(doc) == "profiles[0].plugins.filter.enabled: Duplicate value: a plugin is listed twice"

    @pytest.mark.parametrize(
        "point", [pytest.param("filters", id="filters"), pytest.param("sideways", id="unknown-point")]
    )
    def test_unknown_extension_point(self, point: str) -> None:
        """Misspelled point names are refused, not ignored: strict decoding names the field."""
        message = f'strict decoding error: unknown field "profiles[0].plugins.{point}"'
        assert config_error(profile({point: {}})) == message


class TestWeights:
    """Score weights: multiPoint, then score.enabled which wins."""

    @pytest.mark.parametrize(
        ("plugins", "weights", "order"),
        [
            pytest.param(
                {"score": {"enabled": [{"name": "NodeAffinity", "weight": 9}]}},
                {**DEFAULT_WEIGHTS, "NodeAffinity": 9},
                ["NodeAffinity", *without(DEFAULT_SCORE, "NodeAffinity")],
                id="score-weight-wins",
            ),
            pytest.param(
                {"score": {"enabled": [{"name": "TaintToleration"}]}},
                {**DEFAULT_WEIGHTS, "TaintToleration": 1},
                DEFAULT_SCORE,
                id="score-entry-without-weight-means-1",
            ),
            pytest.param(
                {"multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 4}]}},
                {**DEFAULT_WEIGHTS, "PodTopologySpread": 4},
                DEFAULT_SCORE,
                id="multipoint-weight",
            ),
            pytest.param(
                {
                    "multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 4}]},
                    "score": {"enabled": [{"name": "PodTopologySpread", "weight": 6}]},
                },
                {**DEFAULT_WEIGHTS, "PodTopologySpread": 6},
                ["PodTopologySpread", *without(DEFAULT_SCORE, "PodTopologySpread")],
                id="score-beats-multipoint",
            ),
        ],
    )
    def test_weights(self, plugins: dict[str, Any], weights: dict[str, int], order: list[str]) -> None:
        """The framework's weights and the score order."""
        fwk = framework(profile(plugins))
        assert fwk.weights == weights
        assert fwk.points["score"] == order

    def test_weights_change_the_decision(self) -> None:
        """With PodTopologySpread weighted 100, soft spreading beats three PreferNoSchedule taints' worth."""
        objects = [
            make_node("tainted").taint("a", "1", "PreferNoSchedule").dict(),
            make_node("crowded").dict(),
            make_pod("e1").label("app", "web").node("crowded").dict(),
        ]
        pod = make_pod("p").label("app", "web").spread(HOSTNAME, 1, "ScheduleAnyway", match={"app": "web"}).dict()
        hosts = {}
        for weight in (1, 100):
            sim = Simulation(
                parse_config(profile({"score": {"enabled": [{"name": "PodTopologySpread", "weight": weight}]}})), seed=0
            )
            sim.add_objects([*objects, pod])
            (attempt,) = sim.run()
            hosts[weight] = attempt.host
        # TaintToleration: tainted 0, crowded 100 (x3). PodTopologySpread: tainted 100, crowded 0.
        assert hosts == {1: "crowded", 100: "tainted"}

    @pytest.mark.parametrize("weight", [-1, "3", 1.5, True])
    def test_bad_weight(self, weight: object) -> None:
        """Weights are non-negative integers."""
        doc = profile({"score": {"enabled": [{"name": "NodeAffinity", "weight": weight}]}})
        assert config_error(doc).startswith(f"profiles[0].plugins.score.enabled[0].weight: Invalid value: {weight!r}")


class TestPluginArgs:
    """``pluginConfig``: PodTopologySpreadArgs and NodeAffinityArgs are validated at start-up."""

    @staticmethod
    def with_args(name: str, args: object) -> dict[str, Any]:
        return profile(pluginConfig=[{"name": name, "args": args}])

    @pytest.mark.parametrize("name", [[{"a": 1}], {"a": 1}, 3, None])
    def test_a_plugin_name_that_is_not_a_string_is_refused_naming_the_field(self, name: object) -> None:
        """Found by the hostile-input fuzz: an ``!!omap`` as a name was a TypeError traceback."""
        error = config_error(profile(pluginConfig=[{"name": name, "args": {}}]))
        assert error.startswith("profiles[0].pluginConfig[0].name: Invalid value: "), error

    def test_list_defaulting_with_default_constraints(self) -> None:
        """List defaulting keeps the configured constraints, hard ones included."""
        args = {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        }
        plugin = framework(self.with_args("PodTopologySpread", args)).plugins["PodTopologySpread"]
        assert isinstance(plugin, PodTopologySpread) and not plugin.system_defaulted
        got = [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in plugin.default_constraints]
        assert got == [(ZONE, 1, "DoNotSchedule"), (HOSTNAME, 2, "ScheduleAnyway")]

    def test_list_defaulting_with_no_constraints_means_none(self) -> None:
        """An empty list means no default spreading at all."""
        plugin = framework(self.with_args("PodTopologySpread", {"defaultingType": "List"})).plugins["PodTopologySpread"]
        assert isinstance(plugin, PodTopologySpread) and plugin.default_constraints == ()

    def test_hard_default_constraint_filters_pods_of_a_service(self) -> None:
        """A List default applies to a pod without constraints whose Service selects it."""
        args = {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule"}],
        }
        sim = Simulation(parse_config(self.with_args("PodTopologySpread", args)), seed=0)
        sim.add_objects(
            [
                make_node("n1").dict(),
                make_node("n2").dict(),
                {
                    "kind": "Service",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"selector": {"app": "web"}},
                },
                make_pod("e1").label("app", "web").node("n1").dict(),
                make_pod("p").label("app", "web").dict(),
            ]
        )
        (attempt,) = sim.run()
        # hostname counts n1=1, n2=0, min 0: n1 1+1-0=2 > 1, n2 0+1-0=1.
        assert attempt.feasible == ["n2"]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            pytest.param(
                {
                    "defaultingType": "System",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
                },
                'defaultingType: Invalid value: "System": when .defaultConstraints are not empty, '
                "defaultingType can only be List",
                id="system-with-a-list",
            ),
            pytest.param(
                {
                    "defaultingType": "System",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
                },
                'defaultingType: Invalid value: "System": when .defaultConstraints are not empty, '
                "defaultingType can only be List",
                id="system-with-list",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
                    ],
                },
                "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod",
                id="default-with-selector",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": ZONE,
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "web"}},
                        }
                    ],
                },
                "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod",
                id="selector-in-a-default",
            ),
            pytest.param(
                {"defaultingType": "Sometimes"},
                'defaultingType: Unsupported value: "Sometimes": supported values: "List", "System"',
                id="unknown-defaulting-type",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
                },
                "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range [1, 2147483647]",
                id="max-skew-0",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
                },
                "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range [1, 2147483647]",
                id="default-max-skew",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    ],
                },
                f'defaultConstraints[1]: Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
                id="duplicate-default",
            ),
            pytest.param(
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": "bad key", "whenUnsatisfiable": "DoNotSchedule"}
                    ],
                },
                'defaultConstraints[0].topologyKey: Invalid value: "bad key": name part must consist of',
                id="topology-key-not-a-label-name",
            ),
        ],
    )
    def test_bad_pod_topology_spread_args(self, args: dict[str, Any], message: str) -> None:
        """The error names the profile, the plugin's args and the field inside them."""
        error = config_error(self.with_args("PodTopologySpread", args))
        assert error.startswith(f"profiles[0].pluginConfig[PodTopologySpread].args: {message}")

    def test_added_affinity(self) -> None:
        """NodeAffinityArgs.addedAffinity applies to every pod of the profile, before its own affinity."""
        args = {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch"]}]}
                    ]
                }
            }
        }
        cfg = parse_config(self.with_args("NodeAffinity", args))
        plugin = build_frameworks(cfg)[NAME].plugins["NodeAffinity"]
        assert isinstance(plugin, NodeAffinity) and plugin.added_required is not None
        sim = Simulation(cfg, seed=0)
        sim.add_objects(
            [
                make_node("web").label("pool", "web").dict(),
                make_node("batch").label("pool", "batch").dict(),
                make_pod("p").dict(),
            ]
        )
        (attempt,) = sim.run()
        assert attempt.host == "batch"
        assert attempt.diagnosis.node_to_status["web"].message() == (  # type: ignore[index]
            "node(s) didn't match scheduler-enforced node affinity"
        )

    @pytest.mark.parametrize(
        ("expression", "prefix"),
        [
            pytest.param(
                {"key": "pool", "operator": "Like", "values": ["x"]},
                "profiles[0].pluginConfig[NodeAffinity].args: "
                "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                '.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Like"',
                id="unknown-operator",
            ),
            pytest.param(
                {"key": "a", "operator": "Gt", "values": ["x"]},
                "profiles[0].pluginConfig[NodeAffinity].args",
                id="added-affinity-not-an-integer",
            ),
        ],
    )
    def test_bad_added_affinity(self, expression: dict[str, Any], prefix: str) -> None:
        """A broken addedAffinity stops the start-up with the field's path."""
        args = {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
        assert config_error(self.with_args("NodeAffinity", args)).startswith(prefix)

    @pytest.mark.parametrize(
        "entry",
        [pytest.param({"name": "Nope", "args": {}}, id="with-args"), pytest.param({"name": "Nope"}, id="without-args")],
    )
    def test_unknown_plugin_in_plugin_config(self, entry: dict[str, Any]) -> None:
        """Args for a plugin that does not exist are refused."""
        assert config_error(profile(pluginConfig=[entry])) == (
            'profiles[0].pluginConfig[0].name: Invalid value: "Nope": plugin does not exist'
        )

    def test_plugin_config_twice(self) -> None:
        """One args entry per plugin."""
        doc = profile(pluginConfig=[{"name": "NodeAffinity", "args": {}}, {"name": "NodeAffinity", "args": {}}])
        assert config_error(doc) == 'profiles[0].pluginConfig[1].name: Duplicate value: "NodeAffinity"'

    def test_args_must_be_an_object(self) -> None:
        """``args: [..]`` is refused."""
        assert (
            config_error(self.with_args("NodeAffinity", ["x"])) == "profiles[0].pluginConfig[0].args: must be an object"
        )


class TestErrors:
    """Each refusal names the field."""

    @pytest.mark.parametrize(
        ("plugins", "path", "name"),
        [
            pytest.param({"filter": {"enabled": [{"name": "Nope"}]}}, "filter.enabled[0]", "Nope", id="filter-enabled"),
            pytest.param(
                {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}},  # upstream's, alpha-gated
                "multiPoint.enabled[0]",
                "GangScheduling",
                id="multipoint-enabled-upstream-plugin-we-do-not-ship",
            ),
            pytest.param({"filter": {"enabled": [{"name": "*"}]}}, "filter.enabled[0]", "*", id="star-enabled"),
            pytest.param(
                {"multiPoint": {"enabled": [{"name": "*"}]}}, "multiPoint.enabled[0]", "*", id="star-multipoint"
            ),
        ],
    )
    def test_unknown_plugin(self, plugins: dict[str, Any], path: str, name: str) -> None:
        """The message names the path, the plugin, and the plugins we know."""
        assert config_error(profile(plugins)) == (
            f'profiles[0].plugins.{path}.name: Invalid value: "{name}": plugin does not exist (known: DefaultBinder, '
            "DefaultPreemption, DynamicResources, ImageLocality, InterPodAffinity, NodeAffinity, NodeDeclaredFeatures, "
            "NodeName, NodePorts, "
            "NodeResourcesBalancedAllocation, NodeResourcesFit, NodeUnschedulable, NodeVolumeLimits, "
            "PodTopologySpread, PrioritySort, SchedulingGates, SelectorSpread, "
            "TaintToleration, VolumeBinding, VolumeRestrictions, VolumeZone)"
        )

    def test_disabling_plugins_we_do_not_ship_is_fine(self) -> None:
        """Upstream never looks disabled names up: a kube-scheduler config disabling its extras loads."""
        fwk = framework(
            profile(
                {
                    "multiPoint": {"disabled": [{"name": "VolumeBinding"}]},
                    "score": {"disabled": [{"name": "NodeVolumeLimits"}, {"name": "NoSuchPlugin"}]},
                }
            )
        )
        assert fwk.points["score"] == DEFAULT_SCORE

    def test_plugin_without_a_name(self) -> None:
        """A plugin entry needs a name."""
        assert config_error(profile({"score": {"enabled": [{"weight": 3}]}})) == (
            "profiles[0].plugins.score.enabled[0].name: Required value"
        )

    @pytest.mark.parametrize(
        ("names", "index"),
        [
            pytest.param(["a", "b", "a"], 2, id="third-repeats-first"),
            pytest.param(["a", "a"], 1, id="duplicate-profile"),
        ],
    )
    def test_duplicate_scheduler_name(self, names: list[str], index: int) -> None:
        """Profiles are told apart by schedulerName."""
        doc = {**API, "profiles": [{"schedulerName": n} for n in names]}
        assert config_error(doc) == f'profiles[{index}].schedulerName: Duplicate value: "a"'

    @pytest.mark.parametrize(
        ("doc", "message"),
        [
            pytest.param(
                {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"},
                'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
                'supported values: "kubescheduler.config.k8s.io/v1"',
                id="api-version",
            ),
            pytest.param(
                {**API, "apiVersion": "v2"},
                'apiVersion: Unsupported value: "v2": supported values: "kubescheduler.config.k8s.io/v1"',
                id="api-version-v2",
            ),
            pytest.param(
                {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "Scheduler"},
                'kind: Unsupported value: "Scheduler": supported values: "KubeSchedulerConfiguration"',
                id="kind",
            ),
            pytest.param(["not", "a", "map"], "config: must be an object", id="not-a-mapping"),
            pytest.param({**API, "profiles": {"a": 1}}, "profiles: must be a list", id="profiles-not-a-list"),
            pytest.param({**API, "profiles": ["x"]}, "profiles[0]: must be an object", id="profile-not-a-mapping"),
            pytest.param(
                {**API, "profiles": [{"schedulerName": ""}]},
                "profiles[0].schedulerName: Required value",
                id="empty-name",
            ),
            pytest.param(
                {**API, "percentageOfNodesToScore": 101},
                "percentageOfNodesToScore: Invalid value: 101: must be an integer in [0, 100]",
                id="percentage-101",
            ),
            pytest.param(
                {**API, "percentageOfNodesToScore": -1},
                "percentageOfNodesToScore: Invalid value: -1: must be an integer in [0, 100]",
                id="percentage-negative",
            ),
            pytest.param(
                {**API, "percentageOfNodesToScore": "50%"},
                "percentageOfNodesToScore: Invalid value: '50%': must be an integer in [0, 100]",
                id="percentage-string",
            ),
            pytest.param(
                profile(percentageOfNodesToScore=150),
                "profiles[0].percentageOfNodesToScore: Invalid value: 150: must be an integer in [0, 100]",
                id="profile-percentage-150",
            ),
            pytest.param(
                {**API, "podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
                "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
                id="max-backoff-below-initial",
            ),
            pytest.param(
                {**API, "podInitialBackoffSeconds": 0},
                "podInitialBackoffSeconds: Invalid value: 0: must be an integer in [1, 2147483647]",
                id="initial-backoff-0",
            ),
            pytest.param(
                {**API, "clientConnection": {"qps": "fast"}},
                "clientConnection.qps: Invalid value: 'fast': must be a number",
                id="qps-not-a-number",
            ),
            pytest.param(
                {**API, "clientConnection": {"burst": -1}},
                "clientConnection.burst: Invalid value: -1: must be an integer in [0, 2147483647]",
                id="burst-negative",
            ),
            pytest.param(
                {**API, "leaderElection": {"leaseDuration": "soon"}},
                'leaderElection.leaseDuration: Invalid value: "soon": must be a duration such as 15s',
                id="duration",
            ),
        ],
    )
    def test_refused(self, doc: object, message: str) -> None:
        """The ConfigError is exactly the path and the reason."""
        assert config_error(doc) == message

    @pytest.mark.parametrize("pct", [0, 1, 50, 100])
    def test_percentage_in_range(self, pct: int) -> None:
        """0 (adaptive) .. 100 are fine, globally and per profile; the profile's wins."""
        cfg = parse_config({**profile(percentageOfNodesToScore=pct), "percentageOfNodesToScore": 7})
        assert cfg.percentage_of_nodes_to_score == 7
        assert build_frameworks(cfg)[NAME].percentage_of_nodes_to_score == pct


class TestLeaderElection:
    """Durations are Go durations; the lease must outlast the renew deadline."""

    @pytest.mark.parametrize(
        ("text", "seconds"),
        [
            pytest.param("15s", 15.0, id="15s"),
            pytest.param("1m30s", 90.0, id="1m30s"),
            pytest.param("1h", 3600.0, id="1h"),
            pytest.param("2m", 120.0, id="2m"),
            pytest.param("1.5h", 5400.0, id="fraction"),
            pytest.param("90s", 90.0, id="90s"),
        ],
    )
    def test_lease_duration(self, text: str, seconds: float) -> None:
        """The lease duration in seconds."""
        cfg = parse_config({**API, "leaderElection": {"leaseDuration": text, "renewDeadline": "10s"}})
        assert cfg.leader_election.lease_duration == seconds

    @pytest.mark.parametrize(("text", "seconds"), [(".5s", 0.5), ("+2s", 2.0), ("1500us", 0.0015), ("0h0m1.5s", 1.5)])
    def test_retry_period_reads_as_go_parses_it(self, text: str, seconds: float) -> None:
        """``time.ParseDuration``'s forms, as metav1.Duration decodes them."""
        cfg = parse_config({**API, "leaderElection": {"retryPeriod": text, "renewDeadline": "10s"}})
        assert cfg.leader_election.retry_period == seconds

    def test_a_zero_duration_reads_and_then_must_be_greater_than_zero(self) -> None:
        """``0`` is a duration to Go; ``ValidateLeaderElectionConfiguration`` refuses it."""
        assert config_error({**API, "leaderElection": {"retryPeriod": "0"}}) == (
            "leaderElection.retryPeriod: Invalid value: 0.0s: must be greater than zero"
        )

    def test_sub_second_retry_period(self) -> None:
        """``500ms`` is half a second."""
        cfg = parse_config({**API, "leaderElection": {"retryPeriod": "500ms"}})
        assert cfg.leader_election.retry_period == 0.5

    @pytest.mark.parametrize("text", ["soon", "15", "15 s", "1m30", "s", "-5s", ""])
    def test_not_a_duration(self, text: str) -> None:
        """Anything else is refused with the field's path."""
        assert config_error({**API, "leaderElection": {"renewDeadline": text}}) == (
            f'leaderElection.renewDeadline: Invalid value: "{text}": must be a duration such as 15s'
        )

    def test_lease_must_outlast_renew_deadline(self) -> None:
        """``ValidateLeaderElectionConfiguration``: leaseDuration > renewDeadline."""
        doc = {**API, "leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}}
        assert (
            config_error(doc)
            == "leaderElection.leaseDuration: Invalid value: 10.0s: must be greater than `RenewDeadline`"
        )

    def test_zero_retry_period(self) -> None:
        """Every duration must be positive."""
        doc = {**API, "leaderElection": {"retryPeriod": "0s"}}
        assert config_error(doc) == "leaderElection.retryPeriod: Invalid value: 0.0s: must be greater than zero"

    def test_not_validated_without_leader_election(self) -> None:
        """With leaderElect false the durations are not checked against each other."""
        cfg = parse_config(
            {**API, "leaderElection": {"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s"}}
        )
        assert cfg.leader_election.leader_elect is False

    def test_durations_two_profiles_and_client_settings(self) -> None:
        """Durations, the lock's namespace, client QPS/burst and a second profile's percentage together."""
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

    def test_lock_names(self) -> None:
        """resourceName defaults to the first profile's name; both may be set."""
        cfg = parse_config({**API, "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]})
        assert cfg.leader_election.resource_name == "a"
        cfg = parse_config({**API, "leaderElection": {"resourceNamespace": "ops", "resourceName": "lock"}})
        assert (cfg.leader_election.resource_namespace, cfg.leader_election.resource_name) == ("ops", "lock")


TWO_PROFILES: dict[str, Any] = {
    **API,
    "profiles": [
        {"schedulerName": "strict"},
        {
            "schedulerName": "lenient",
            "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}},
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        },
    ],
}


class TestTwoProfiles:
    """Two profiles are two frameworks; pods pick theirs by schedulerName."""

    def test_frameworks(self) -> None:
        """Each profile gets its own points and plugin args."""
        fwks = build_frameworks(parse_config(TWO_PROFILES))
        assert list(fwks) == ["strict", "lenient"]
        assert "TaintToleration" in fwks["strict"].points["filter"]
        assert "TaintToleration" not in fwks["lenient"].points["filter"]
        strict, lenient = fwks["strict"].plugins["PodTopologySpread"], fwks["lenient"].plugins["PodTopologySpread"]
        assert isinstance(strict, PodTopologySpread) and isinstance(lenient, PodTopologySpread)
        assert strict.system_defaulted and not lenient.system_defaulted
        assert fwks["strict"].handle is not fwks["lenient"].handle

    def test_pods_are_scheduled_by_their_profile(self) -> None:
        """Only the lenient profile ignores the taint; pods of unknown schedulers are not ours."""
        sim = Simulation(parse_config(TWO_PROFILES), seed=0)
        sim.add_objects(
            [
                make_node("tainted").taint("k", "v").dict(),
                make_pod("s").scheduler("strict").dict(),
                make_pod("l").scheduler("lenient").dict(),
                make_pod("x").scheduler("default-scheduler").dict(),
            ]
        )
        result = {a.pod.name: a.host for a in sim.run()}
        assert result == {"s": None, "l": "tainted"}


class TestLoadConfig:
    """Reading the file: unreadable, unparsable and undecodable files are ConfigErrors naming it."""

    def test_missing_file(self, tmp_path: Path) -> None:
        """The message names the path."""
        path = tmp_path / "nope.yaml"
        with pytest.raises(ConfigError, match=rf"^{path}: cannot read configuration"):
            load_config(path)

    @pytest.mark.parametrize(
        "text",
        [pytest.param("profiles: [\n", id="newline-terminated"), pytest.param("profiles: [", id="config-file-errors")],
    )
    def test_bad_yaml(self, tmp_path: Path, text: str) -> None:
        """A YAML syntax error is a ConfigError too."""
        path = tmp_path / "bad.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=rf"^{path}: cannot read configuration"):
            load_config(path)

    def test_binary_file(self, tmp_path: Path) -> None:
        """Bytes that are no UTF-8 are reported, not raised as UnicodeDecodeError."""
        path = tmp_path / "bin.yaml"
        path.write_bytes(b"\xff\xfe\x00\x81")
        with pytest.raises(ConfigError, match=rf"^{path}: cannot read configuration"):
            load_config(path)

    def test_file_errors_name_the_file_as_root(self, tmp_path: Path) -> None:
        """A document that is no mapping is reported under the file's name."""
        path = tmp_path / "list.yaml"
        path.write_text("- a\n- b\n")
        with pytest.raises(ConfigError, match=rf"^{path}: must be an object$"):
            load_config(path)

    def test_a_valid_file(self, tmp_path: Path) -> None:
        """YAML on disk parses like the dict."""
        path = tmp_path / "ok.yaml"
        path.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "profiles:\n- schedulerName: mine\n  plugins:\n    multiPoint:\n      enabled:\n"
            "      - {name: NodeAffinity, weight: 5}\n"
        )
        fwk = build_frameworks(load_config(path))["mine"]
        assert fwk.weights["NodeAffinity"] == 5
