"""Strict decoding: unknown and duplicate fields stop the configuration, as kube-scheduler's codec does.

Ported cases keep upstream's names: ``cmd/kube-scheduler/app/options/options_test.go`` ("unknown
field", "duplicate fields") and ``pkg/scheduler/apis/config/scheme/scheme_test.go`` (the strict and
the accepted plugin-args cases); their expected messages are upstream's, word for word, except the
duplicate-key line numbers, which count from our file's first line as go-yaml's do.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import main
from scheduler.config import ConfigError, load_config, parse_config
from scheduler.config.scheme import PLUGIN_ARGS, load_yaml_strict, strict_errors
from scheduler.plugins.registry import REGISTRY
from tests.helpers import command_failed

SPREAD_CLI = str(Path(sys.executable).parent / "spread-scheduler")
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
EXAMPLE = str(Path(__file__).parents[2] / "examples" / "two-zones.yaml")


def load_text(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, text)
    return str(info.value)


# (name, YAML, the whole error message or None when it loads)
UPSTREAM_CASES = [
    pytest.param(
        HEAD
        + "clientConnection:\n  kubeconfig: '/tmp/config.kubeconfig'\nleaderElection:\n  leaderElect: true\nfoo: bar",
        'strict decoding error: unknown field "foo"',
        id="unknown field",
    ),
    pytest.param(
        "\n" + HEAD + "clientConnection:\n  kubeconfig: '/tmp/config.kubeconfig'\n"
        "leaderElection:\n  leaderElect: true\n  leaderElect: false",
        'strict decoding error: yaml: unmarshal errors:\n  line 8: key "leaderElect" already set in map',
        id="duplicate fields",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: InterPodAffinityArgs\n",
        "decoding .profiles[0].pluginConfig[0]: args for plugin DefaultPreemption were not of type "
        "DefaultPreemptionArgs.kubescheduler.config.k8s.io, got InterPodAffinityArgs.kubescheduler.config.k8s.io",
        id="plugin group and kind should match the type",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        requestedToCapacityRatio:\n          shape:\n          - Score: 2\n            Utilization: 1\n",
        "strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for "
        'plugin NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.requestedToCapacityRatio.'
        'shape[0].Score", unknown field "scoringStrategy.requestedToCapacityRatio.shape[0].Utilization"',
        id="v1 NodResourcesFitArgs shape encoding is strict",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        resources:\n        - Name: cpu\n          Weight: 1\n",
        "strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for "
        'plugin NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.resources[0].Name", '
        'unknown field "scoringStrategy.resources[0].Weight"',
        id="v1 NodeResourcesFitArgs resources encoding is strict",
    ),
    pytest.param(
        HEAD
        + """profiles:
- pluginConfig:
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: 50
      minCandidateNodesAbsolute: 500
  - name: DynamicResources
    args:
      filterTimeout: 10s
      bindingTimeout: 30s
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 5
  - name: NodeResourcesFit
    args:
      ignoredResources: ["foo"]
  - name: PodTopologySpread
    args:
      defaultConstraints:
      - maxSkew: 1
        topologyKey: zone
        whenUnsatisfiable: ScheduleAnyway
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 300
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: foo
              operator: In
              values: ["bar"]
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
        - name: cpu
        - name: memory
          weight: 0
        - name: scalar0
          weight: 1
""",
        None,
        id="v1 all plugin args in default profile",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: DefaultPreemptionArgs\n"
        "      minCandidateNodesPercentage: 50\n",
        None,
        id="v1 plugins can include version and kind",
    ),
    pytest.param(
        # Upstream's case also lists OutOfTreePlugin; we ship no out-of-tree plugins, so naming one is
        # refused by validation ("plugin does not exist"), not by strictness.
        HEAD + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n  - name: DynamicResources\n"
        "    args:\n  - name: InterPodAffinity\n    args:\n  - name: NodeResourcesFit\n  - name: VolumeBinding\n"
        "    args:\n  - name: PodTopologySpread\n  - name: NodeAffinity\n  - name: NodeResourcesBalancedAllocation\n",
        None,
        id="empty and no plugin args",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
        "      ignorePreferredTermsOfExistingPods: true\n",
        None,
        id="ignorePreferredTermsOfExistingPods is enabled",
    ),
]


@pytest.mark.parametrize(("text", "message"), UPSTREAM_CASES)
def test_upstream_cases(text: str, message: str | None, tmp_path: Path) -> None:
    """Upstream's scheme tests decode without validating: an accepted case passes strict decoding only
    ("v1 all plugin args in default profile" is refused later by validation, there as here)."""
    if message is None:
        doc, duplicates = load_yaml_strict(text)
        assert (duplicates, strict_errors(doc)) == ([], [])
    else:
        assert error_of(tmp_path, text) == message


# Each typo at one level of the tree; the message names its full path.
TYPO_CASES = [
    pytest.param("percentageOfNodesToScor: 50\n", "percentageOfNodesToScor", id="top-level"),
    pytest.param(
        "profiles:\n- schedulerName: a\n  plugin:\n    score:\n      disabled: [{name: NodeAffinity}]\n",
        "profiles[0].plugin",
        id="plugins-misspelled",
    ),
    pytest.param("profiles:\n- SchedulerName: a\n", "profiles[0].SchedulerName", id="case-sensitive"),
    pytest.param("profiles:\n- plugins:\n    filters: {}\n", "profiles[0].plugins.filters", id="extension-point"),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enable: [{name: ImageLocality}]\n",
        "profiles[0].plugins.score.enable",
        id="plugin-set",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, wieght: 3}]\n",
        "profiles[0].plugins.score.enabled[0].wieght",
        id="plugin",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{nme: ImageLocality}]\n",
        "profiles[0].plugins.multiPoint.disabled[0].nme",
        id="multipoint-disabled",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    arg: {}\n",
        "profiles[0].pluginConfig[0].arg",
        id="plugin-config",
    ),
    pytest.param(
        "profiles:\n- {schedulerName: a}\n- {schedulerName: b, percentageOfNodes: 5}\n",
        "profiles[1].percentageOfNodes",
        id="second-profile",
    ),
    pytest.param("leaderElection:\n  leaderElec: false\n", "leaderElection.leaderElec", id="leader-election"),
    pytest.param("clientConnection:\n  qsp: 5\n", "clientConnection.qsp", id="client-connection"),
    pytest.param("extenders:\n- urlPrefix: http://a\n  filter: f\n", "extenders[0].filter", id="extender"),
    pytest.param(
        "extenders:\n- urlPrefix: https://a\n  tlsConfig: {cafile: /ca.pem}\n",
        "extenders[0].tlsConfig.cafile",
        id="extender-tls",
    ),
    pytest.param(
        "extenders:\n- urlPrefix: http://a\n  managedResources: [{name: example.com/gpu, ignored: true}]\n",
        "extenders[0].managedResources[0].ignored",
        id="extender-managed-resource",
    ),
]


@pytest.mark.parametrize(("text", "field"), TYPO_CASES)
def test_unknown_field_is_refused_with_its_path(text: str, field: str, tmp_path: Path) -> None:
    assert error_of(tmp_path, HEAD + text) == f'strict decoding error: unknown field "{field}"'


def args_error(name: str, fields: str) -> str:
    return (
        f"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: "
        f"decoding args for plugin {name}: strict decoding error: {fields}"
    )


ARGS_TYPO_CASES = [
    pytest.param(
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "z",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabel": {}},
                }
            ],
        },
        'unknown field "defaultConstraints[0].labelSelector.matchLabel"',
        id="spread-label-selector",
    ),
    pytest.param(
        "PodTopologySpread",
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "minDomain": 2}
            ]
        },
        'unknown field "defaultConstraints[0].minDomain"',
        id="spread-constraint",
    ),
    pytest.param(
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpression": []}]}
            }
        },
        'unknown field "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]'
        '.matchExpression"',
        id="node-affinity-term",
    ),
    pytest.param(
        "NodeAffinity",
        {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preferences": {}}]}},
        'unknown field "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preferences"',
        id="node-affinity-preferred",
    ),
    pytest.param(
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "wieght": 1}]},
        'unknown field "resources[0].wieght"',
        id="balanced-allocation",
    ),
    pytest.param(
        "InterPodAffinity",
        {"hardPodAffinityWeigth": 2},
        'unknown field "hardPodAffinityWeigth"',
        id="inter-pod-affinity",
    ),
    pytest.param(
        "NodeResourcesFit",
        {"scoringStrategy": {"typ": "MostAllocated"}, "ignoredResource": ["a"]},
        'unknown field "ignoredResource", unknown field "scoringStrategy.typ"',
        id="fit-two-fields",
    ),
    pytest.param("TaintToleration", {"foo": 1}, 'unknown field "foo"', id="plugin-without-args-type"),
]


@pytest.mark.parametrize(("name", "args", "fields"), ARGS_TYPO_CASES)
def test_plugin_args_are_strict(name: str, args: dict[str, Any], fields: str) -> None:
    doc = {"profiles": [{"pluginConfig": [{"name": name, "args": args}]}]}
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert str(info.value) == args_error(name, fields)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_plugins_args_are_strict(name: str) -> None:
    """A field no args type has is refused for every plugin we know, enabled in the profile or not."""
    doc = {"profiles": [{"pluginConfig": [{"name": name, "args": {"notAField": 1}}]}]}
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert str(info.value) == args_error(name, 'unknown field "notAField"')


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_plugin_accepts_type_meta(name: str) -> None:
    doc = {
        "profiles": [
            {
                "pluginConfig": [
                    {"name": name, "args": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": f"{name}Args"}}
                ]
            }
        ]
    }
    parse_config(doc)


def test_plugin_args_types_are_plugins_we_ship() -> None:
    """A typo in the table's keys would leave that plugin's real args refused as unknown."""
    assert set(PLUGIN_ARGS) <= set(REGISTRY)


def test_every_upstream_field_is_accepted(tmp_path: Path) -> None:
    """A configuration kube-scheduler reads is not refused for a field we merely ignore."""
    load_text(
        tmp_path,
        HEAD
        + """parallelism: 16
enableProfiling: true
enableContentionProfiling: true
delayCacheUntilActive: false
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                 resourceLock: leases, resourceName: s, resourceNamespace: ns}
clientConnection: {kubeconfig: /k, acceptContentTypes: "", contentType: application/vnd.kubernetes.protobuf,
                   qps: 50, burst: 100}
extenders:
- urlPrefix: https://e
  filterVerb: f
  preemptVerb: p
  prioritizeVerb: s
  weight: 1
  bindVerb: ""
  enableHTTPS: true
  tlsConfig: {insecure: true, serverName: e, certFile: "", keyFile: "", caFile: "",
              certData: "", keyData: "", caData: ""}
  httpTimeout: 5s
  nodeCacheCapable: false
  managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]
  ignorable: true
profiles:
- schedulerName: spread-scheduler
  percentageOfNodesToScore: 40
  plugins:
    preEnqueue: {enabled: [], disabled: []}
    queueSort: {}
    preFilter: {}
    filter: {}
    postFilter: {}
    preScore: {}
    score: {enabled: [{name: ImageLocality, weight: 2}]}
    reserve: {}
    permit: {}
    preBind: {}
    bind: {}
    postBind: {}
    multiPoint: {disabled: [{name: SelectorSpread}]}
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: cpu, weight: 1}]
        requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 1,
         nodeAffinityPolicy: Honor, nodeTaintsPolicy: Ignore, matchLabelKeys: []}
  - name: NodeAffinity
    args:
      addedAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference: {matchFields: [{key: metadata.name, operator: In, values: [n]}]}
""",
    )


def test_label_selector_fields_are_known() -> None:
    """Validation forbids a selector in defaultConstraints; decoding still knows its fields, as upstream."""
    selector = {"matchLabels": {"anyKey": "v"}, "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
    constraint = {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
    args = {"defaultingType": "List", "defaultConstraints": [constraint]}
    assert strict_errors({"profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": args}]}]}) == []


class TestDuplicateKeys:
    def test_every_level_and_in_line_order(self, tmp_path: Path) -> None:
        text = (
            HEAD  # lines 1-2
            + "profiles:\n"  # 3
            + "- schedulerName: a\n"  # 4
            + "  pluginConfig:\n"  # 5
            + "  - name: PodTopologySpread\n"  # 6
            + "    args:\n"  # 7
            + "      defaultingType: List\n"  # 8
            + "      defaultingType: System\n"  # 9
            + "  schedulerName: b\n"  # 10
            + "kind: KubeSchedulerConfiguration\n"  # 11
        )
        assert error_of(tmp_path, text) == (
            "strict decoding error: yaml: unmarshal errors:\n"
            '  line 9: key "defaultingType" already set in map\n'
            '  line 10: key "schedulerName" already set in map\n'
            '  line 11: key "kind" already set in map'
        )

    def test_reported_with_unknown_fields_in_one_error(self, tmp_path: Path) -> None:
        text = HEAD + "leaderElection:\n  leaderElect: true\n  leaderElect: true\nfoo: 1\n"
        assert error_of(tmp_path, text) == (
            "strict decoding error: yaml: unmarshal errors:\n"
            '  line 5: key "leaderElect" already set in map, unknown field "foo"'
        )

    def test_merge_keys_are_not_duplicates(self) -> None:
        doc, duplicates = load_yaml_strict("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")
        assert duplicates == []
        assert doc == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}

    def test_last_value_wins_in_the_document(self) -> None:
        doc, duplicates = load_yaml_strict("a: 1\na: 2\n")
        assert doc == {"a": 2}
        assert duplicates == ['yaml: unmarshal errors:\n  line 2: key "a" already set in map']


TYPO = (
    HEAD
    + "profiles:\n- schedulerName: spread-scheduler\n  plugin:\n    score:\n      disabled: [{name: NodeAffinity}]\n"
)
TYPO_MESSAGE = 'strict decoding error: unknown field "profiles[0].plugin"'
# TEST-NET-1 (RFC 5737): nothing answers there, so any connection attempt would hang, not fail fast.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


class TestCommandLine:
    def test_run_exits_2_before_connecting(self, tmp_path: Path) -> None:
        """The server in the kubeconfig never answers: only refusing before any connection is fast."""
        (tmp_path / "config.yaml").write_text(TYPO)
        (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
        started = time.monotonic()
        out = subprocess.run(
            [
                SPREAD_CLI,
                "run",
                "--config",
                str(tmp_path / "config.yaml"),
                "--kubeconfig",
                str(tmp_path / "kubeconfig"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        elapsed = time.monotonic() - started
        assert out.returncode == 2, out.stderr
        assert command_failed(out.stderr) == TYPO_MESSAGE
        assert "Traceback" not in out.stderr
        assert out.stdout == ""
        assert elapsed < 30, elapsed  # Python start-up and imports only; a connection attempt would hang

    def test_simulate_exits_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        (tmp_path / "config.yaml").write_text(TYPO)
        assert main(["simulate", EXAMPLE, "--config", str(tmp_path / "config.yaml")]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"spread-scheduler: invalid configuration: {TYPO_MESSAGE}\n"
        assert captured.out == ""

    def test_explain_exits_2_before_connecting(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        (tmp_path / "config.yaml").write_text(TYPO)
        (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
        args = ["explain", "default/p", "--config", str(tmp_path / "config.yaml")]
        assert main([*args, "--kubeconfig", str(tmp_path / "kubeconfig")]) == 2
        assert capsys.readouterr().err == f"spread-scheduler: invalid configuration: {TYPO_MESSAGE}\n"
