"""The Kubernetes minors we decide as, their feature gates, and ``--kube-version`` / ``--feature-gates``
(issue #47). Gate defaults are those of ``pkg/features/kube_features.go`` at v1.35.4, v1.36.3 and
v1.37.2; messages are component-base ``featuregate/feature_gate.go``'s (``unsafeSetFromMap``)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler import features as feature_table
from scheduler.cli import main
from scheduler.config import load_config, parse_config
from scheduler.config.default_plugins import DEFAULT_MULTI_POINT, default_multi_point
from scheduler.features import (
    DEFAULT_FEATURES,
    RELEASES,
    SUPPORTED,
    FeatureGateError,
    features_at,
    features_from_flags,
    minor_for_server,
    parse_feature_gates,
    supported_minor,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, node_scheduling_properties_change
from scheduler.profile import build_frameworks
from scheduler.testing import make_node, make_pod

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "two-zones.yaml"


@pytest.mark.parametrize(
    ("gate", "defaults"),
    [
        # kube_features.go: Alpha 1.35 (off), Beta 1.36 (on), GA 1.37 (on, locked).
        ("NodeDeclaredFeatures", (False, True, True)),
        ("DRAExtendedResource", (False, True, True)),
        ("StorageCapacityScoring", (False, False, True)),
        ("VolumeLimitScaling", (False, False, True)),
        ("InPlacePodLevelResourcesVerticalScaling", (False, True, True)),
        ("GenericWorkload", (False, False, False)),
        ("DynamicResourceAllocation", (True, True, True)),
    ],
)
def test_gate_defaults_per_minor(gate: str, defaults: tuple[bool, bool, bool]) -> None:
    assert tuple(features_at(minor).enabled(gate) for minor in ("1.35", "1.36", "1.37")) == defaults


def test_a_gate_a_minor_does_not_have_is_off() -> None:
    assert "SchedulerQueueingHints" not in features_at("1.37").gates  # removed in 1.37
    assert not features_at("1.35").enabled("TopologyAwareWorkloadScheduling")  # added in 1.36


@pytest.mark.parametrize(
    ("major", "minor", "want"),
    [("1", "35", "1.35"), ("1", "36", "1.36"), ("1", "37+", "1.37"), ("1", "38", "1.37")],
)
def test_minor_for_server_follows_the_skew_policy(major: str, minor: str, want: str) -> None:
    assert minor_for_server(major, minor) == want


@pytest.mark.parametrize(("major", "minor"), [("1", "34"), ("1", "39"), ("2", "0")])
def test_a_server_out_of_skew_is_refused(major: str, minor: str) -> None:
    with pytest.raises(ValueError, match="at most one minor older than the API server, never newer"):
        minor_for_server(major, minor)


def test_default_features_are_1_35() -> None:
    assert DEFAULT_FEATURES.release == "v1.35.4"
    assert load_config(None).features.minor == "1.35"


@pytest.mark.parametrize("text", ["1.37", "v1.37", "v1.37.2", "1.37.0"])
def test_supported_minor_spellings(text: str) -> None:
    assert supported_minor(text) == "1.37"


@pytest.mark.parametrize("text", ["1.38", "1.34", "2", "v1.x", ""])
def test_unsupported_version_names_the_supported(text: str) -> None:
    with pytest.raises(ValueError, match=r"1\.35 \(v1\.35\.4\), 1\.36 \(v1\.36\.3\), 1\.37 \(v1\.37\.2\)"):
        supported_minor(text)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NodeDeclaredFeatures", "missing bool value for NodeDeclaredFeatures"),
        (
            "NodeDeclaredFeatures=yes",
            'invalid value of NodeDeclaredFeatures=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
        ),
    ],
)
def test_parse_errors_are_component_base_s(value: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates(value)
    assert str(err.value) == message


def test_parse_accepts_go_bools_and_blank_items() -> None:
    assert parse_feature_gates(" A = T ,,B=0") == {"A": True, "B": False}


def test_unknown_gate() -> None:
    with pytest.raises(FeatureGateError) as err:
        features_from_flags("1.37", "NoSuchGate=true")
    assert str(err.value) == "unrecognized feature gate: NoSuchGate"


def test_gate_removed_at_a_minor_is_unknown_there() -> None:
    features_at("1.36", {"GangScheduling": False})
    with pytest.raises(FeatureGateError, match=r"^unrecognized feature gate: GangScheduling$"):
        features_at("1.37", {"GangScheduling": False})


def test_locked_gate() -> None:
    with pytest.raises(FeatureGateError) as err:
        features_from_flags("1.37", "NodeDeclaredFeatures=false")
    assert str(err.value) == "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"


def test_setting_a_gate_to_its_default_is_accepted() -> None:
    assert features_from_flags("1.37", "NodeDeclaredFeatures=true,GenericWorkload=false").enable_node_declared_features


def test_dependencies_left_off() -> None:
    """1.36: four gates on by default depend on NodeDeclaredFeatures (the aggregate lists them all)."""
    with pytest.raises(FeatureGateError) as err:
        features_from_flags("1.36", "NodeDeclaredFeatures=false")
    assert str(err.value) == (
        "[ExtendWebSocketsToKubelet is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
        "[NodeDeclaredFeatures], InPlacePodVerticalScalingInitContainers is enabled, but depends on features that "
        "are disabled: [NodeDeclaredFeatures], RestartAllContainersOnContainerExits is enabled, but depends on "
        "features that are disabled: [NodeDeclaredFeatures]]"
    )


@pytest.mark.parametrize(
    ("minor", "gate", "value"),
    [
        ("1.37", "GenericWorkload", True),
        ("1.36", "TaintTolerationComparisonOperators", True),
        ("1.35", "NodeDeclaredFeatures", True),
        ("1.37", "InterPodAffinityHostnameFastPath", True),
        ("1.37", "OpportunisticBatching", False),
    ],
)
def test_a_scheduler_gate_we_do_not_implement_is_refused(minor: str, gate: str, value: bool) -> None:
    shown = str(value).lower()
    with pytest.raises(FeatureGateError) as err:
        features_at(minor, {gate: value})
    assert str(err.value).startswith(f"feature gate {gate}={shown}: kube-scheduler v{minor}.")
    assert f"spread-scheduler decides only with its default ({str(not value).lower()})" in str(err.value)


def test_dependencies_are_checked_before_our_refusal() -> None:
    with pytest.raises(FeatureGateError, match=r"^TopologyAwareWorkloadScheduling is enabled, but depends on"):
        features_at("1.37", {"TopologyAwareWorkloadScheduling": True})


@pytest.mark.parametrize(
    ("minor", "gate", "value"),
    [
        ("1.36", "VolumeLimitScaling", True),
        ("1.37", "VolumeLimitScaling", False),
        ("1.37", "StorageCapacityScoring", False),
    ],
)
def test_a_scheduler_gate_implemented_both_ways_may_be_set(minor: str, gate: str, value: bool) -> None:
    assert features_at(minor, {gate: value}).enabled(gate) is value


def test_a_gate_the_scheduler_does_not_read_may_be_set() -> None:
    assert features_at("1.37", {"UserNamespacesHostNetworkSupport": True}).enabled("UserNamespacesHostNetworkSupport")


def test_1_35_default_profile_is_unchanged() -> None:
    assert default_multi_point(DEFAULT_FEATURES) == DEFAULT_MULTI_POINT
    assert DEFAULT_MULTI_POINT[2:4] == (("NodeUnschedulable", 0), ("NodeName", 0))


def test_the_config_carries_the_features_to_the_plugins() -> None:
    features = features_at("1.37")
    config = parse_config({}, features=features)
    assert config.features is features
    fwk = build_frameworks(config)["spread-scheduler"]
    assert all(getattr(p, "features", features) is features for p in fwk.plugins.values())


class TestFlags:
    def run(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
        code = main(["simulate", str(EXAMPLE), "-o", "json", *args])
        return code, capsys.readouterr().err

    def test_unknown_version_is_refused_naming_the_supported(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, err = self.run(capsys, "--kube-version", "1.38")
        assert code == 2
        assert err == (
            "spread-scheduler: --kube-version: unsupported Kubernetes version '1.38': spread-scheduler decides "
            "as kube-scheduler 1.35 (v1.35.4), 1.36 (v1.36.3), 1.37 (v1.37.2)\n"
        )

    def test_unknown_gate_reads_as_kube_scheduler_s_flag_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, err = self.run(capsys, "--feature-gates", "Nope=true")
        assert (code, err) == (
            2,
            'spread-scheduler: invalid argument "Nope=true" for "--feature-gates" flag: '
            "unrecognized feature gate: Nope\n",
        )

    def test_unimplemented_gate_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, err = self.run(capsys, "--kube-version", "1.36", "--feature-gates", "GenericWorkload=true")
        assert code == 2
        assert "feature gate GenericWorkload=true: kube-scheduler v1.36.3 reads it" in err

    @pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
    def test_each_version_decides(self, capsys: pytest.CaptureFixture[str], version: str) -> None:
        assert self.run(capsys, "--kube-version", version) == (0, "")

    @pytest.mark.parametrize("command", ["skew", "rebalance"])
    def test_the_other_offline_commands_take_the_flags(self, capsys: pytest.CaptureFixture[str], command: str) -> None:
        extra = ["--dry-run"] if command == "rebalance" else []
        assert main([command, *extra, "-f", str(EXAMPLE), "--kube-version", "1.34"]) == 2
        assert "--kube-version: unsupported Kubernetes version '1.34'" in capsys.readouterr().err


class TestDecisions:
    """The same dump decided as two minors: where a change of decision shows end to end."""

    def decide(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any], *args: str) -> Any:
        path = tmp_path / "in.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        assert main(["simulate", str(path), "-o", "json", *args]) == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)["results"]

    def test_balanced_allocation_scores_the_change_from_1_36(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """a: 10 cpu / 10Gi, empty; b: 20 cpu / 10Gi with 1 cpu / 4Gi used. The pod asks 9 cpu / 6Gi.
        LeastAllocated gives both 25. 1.35, the balance with the pod: a 85, b 75, so a. 1.36, the
        change: a 100 -> 85 scores 67, b 82 -> 75 scores 71, so b, whose balance the pod hurts less."""
        objects = [
            make_node("a").capacity(cpu="10", memory="10Gi", pods="110").dict(),
            make_node("b").capacity(cpu="20", memory="10Gi", pods="110").dict(),
            make_pod("used").node("b").requests(cpu="1", memory="4Gi").dict(),
            make_pod("p").requests(cpu="9", memory="6Gi").dict(),
        ]
        picks = {}
        for version in ("1.35", "1.36", "1.37"):
            (result,) = self.decide(tmp_path, capsys, objects, "--kube-version", version)
            picks[version] = result["node"]
        assert picks == {"1.35": "a", "1.36": "b", "1.37": "b"}

    def test_node_declared_features_from_1_36(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A host-network pod without a user namespace needs UserNamespacesHostNetworkSupport from 1.36."""
        objects = [
            make_node("plain").capacity(cpu="1", memory="1Gi", pods="10").dict(),
            make_pod("p").set("spec.hostNetwork", True).set("spec.hostUsers", False).dict(),
        ]
        (old,) = self.decide(tmp_path, capsys, objects, "--kube-version", "1.35")
        assert old["node"] == "plain"
        for version in ("1.36", "1.37"):
            (new,) = self.decide(tmp_path, capsys, objects, "--kube-version", version)
            assert new["node"] is None
            assert new["nodes"]["plain"]["filter"]["reason"] == "node(s) didn't match Pod's required features"
        declaring = make_node("declaring").capacity(cpu="1", memory="1Gi", pods="10")
        objects.append(declaring.declared_features("UserNamespacesHostNetworkSupport").dict())
        (placed,) = self.decide(tmp_path, capsys, objects, "--kube-version", "1.36")
        assert placed["node"] == "declaring"


def test_a_node_s_declared_features_changing_is_an_event_with_the_gate_only() -> None:
    old = make_node("n").build()
    new = make_node("n").declared_features("X").build()
    assert node_scheduling_properties_change(new, old) == []
    (event,) = node_scheduling_properties_change(new, old, declared_features=True)
    assert (event.action, str(event)) == (ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeUpdateNodeDeclaredFeature")


class TestNodeNameFirst:
    """1.37 (default_plugins.go; nodename PreFilter): NodeName before NodeUnschedulable, with a PreFilter."""

    @pytest.mark.parametrize(
        ("minor", "first", "pre_filter"),
        [("1.35", "NodeUnschedulable", False), ("1.36", "NodeUnschedulable", False), ("1.37", "NodeName", True)],
    )
    def test_order_and_pre_filter(self, minor: str, first: str, pre_filter: bool) -> None:
        points = parse_config({}, features=features_at(minor)).profiles[0].points
        assert next(n for n in points["filter"] if n in ("NodeName", "NodeUnschedulable")) == first
        assert ("NodeName" in points["preFilter"]) is pre_filter

    @pytest.mark.parametrize(
        ("node_name", "want"),
        [
            pytest.param(
                "foo", frozenset({"foo"}), id="assigned pod with nodeName set, prefilter restricts to assigned node"
            ),
            pytest.param("", None, id="unassigned pod without nodeName set, prefilter returns nil"),
        ],
    )
    def test_pre_filter(self, node_name: str, want: frozenset[str] | None) -> None:
        fwk = build_frameworks(parse_config({}, features=features_at("1.37")))["spread-scheduler"]
        plugin = fwk.plugins["NodeName"]
        pod = make_pod("p").node(node_name).build() if node_name else make_pod("p").build()
        result, status = plugin.pre_filter(CycleState(), pod, [])  # type: ignore[attr-defined]
        assert status is None
        assert (None if result is None else result.node_names) == want


def test_victims_in_pre_bind_are_requeued_from_1_36_and_wake_the_preemptor_from_1_37() -> None:
    assert [features_at(m).pre_bind_victims_requeued for m in ("1.35", "1.36", "1.37")] == [False, True, True]
    assert [features_at(m).in_memory_victim_activates for m in ("1.35", "1.36", "1.37")] == [False, False, True]


# resource/v1/types.go of k8s.io/api at each minor's release: DeviceAttribute's ``ints``/``bools``/
# ``strings``/``versions`` (v0.36 on), ``ResourceSliceMaxAttributeValuesPerDevice`` (v0.36 on),
# ``ResourceSliceMaxDevicesWithTaintsOrConsumesCounters`` (v0.35.4) and
# ``ResourceSliceMaxDevicesWithAdvancedFeatures`` (v0.36.3, v0.37.2).
UPSTREAM_DRA_API: dict[str, dict[str, object]] = {
    "1.35": {
        "list_attributes": False,
        "max_attribute_values_per_device": None,
        "max_devices_with_advanced_features": 64,
    },
    "1.36": {"list_attributes": True, "max_attribute_values_per_device": 48, "max_devices_with_advanced_features": 64},
    "1.37": {"list_attributes": True, "max_attribute_values_per_device": 48, "max_devices_with_advanced_features": 64},
}


def _dra_api(minor: str) -> dict[str, object]:
    return dataclasses.asdict(features_at(minor).dra_api)


@pytest.mark.parametrize("minor", SUPPORTED)
def test_each_minor_s_dra_parser_facts_are_its_k8s_io_api_s(minor: str) -> None:
    assert _dra_api(minor) == UPSTREAM_DRA_API[minor]
    assert feature_table.dra_api(minor) is features_at(minor).dra_api


def test_dra_parser_facts_of_an_unsupported_minor_are_a_bug() -> None:
    assert set(feature_table.DRA_API) == set(SUPPORTED)
    with pytest.raises(ValueError, match=r"unsupported minor '1\.34'"):
        feature_table.dra_api("1.34")


def _go_mod_cache() -> Path | None:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = shutil.which("go")
    if go is None:
        return None
    out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30, check=False)
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _facts_in_source(text: str) -> dict[str, object]:
    """The facts as ``types.go`` states them (a constant's absence is the minor's lack of the bound)."""
    values = re.search(r"const ResourceSliceMaxAttributeValuesPerDevice = (\d+)", text)
    advanced = re.search(
        r"const ResourceSliceMaxDevicesWith(?:TaintsOrConsumesCounters|AdvancedFeatures) = (\d+)", text
    )
    assert advanced is not None
    return {
        "list_attributes": 'json:"ints,omitempty"' in text,
        "max_attribute_values_per_device": int(values.group(1)) if values else None,
        "max_devices_with_advanced_features": int(advanced.group(1)),
    }


@pytest.mark.parametrize("minor", SUPPORTED)
def test_dra_parser_facts_match_the_k8s_io_api_source_when_it_is_here(minor: str) -> None:
    """The facts against the source itself (the module cache the oracle builds fill)."""
    cache = _go_mod_cache()
    api = f"v0.{RELEASES[minor].removeprefix('v1.')}"
    types = cache / "k8s.io" / f"api@{api}" / "resource" / "v1" / "types.go" if cache else None
    if types is None or not types.is_file():
        pytest.skip(f"k8s.io/api@{api} is not in the Go module cache")
    assert _facts_in_source(types.read_text()) == _dra_api(minor)
