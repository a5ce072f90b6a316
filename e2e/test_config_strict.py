"""Strict configuration, side by side with the real kube-scheduler v1.35.4 (built from Go modules).

Each bad configuration is given to ``kube-scheduler --config`` and to ``spread-scheduler run --config``;
both must refuse it, and our message must be upstream's ``err`` word for word (unknown fields with
their paths, in upstream's order; duplicate YAML keys with their lines; plugin args). No API server
is needed: both refuse the file before connecting. The one deliberate difference (fields in the args
of a plugin that has no args type) is checked apart.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.build import ensure_built
from tests.helpers import command_failed

SPREAD_CLI = str(Path(sys.executable).parent / "spread-scheduler")
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

CASES = [
    pytest.param(HEAD + "percentageOfNodesToScor: 50\n", id="top-level-typo"),
    pytest.param(
        HEAD + "profiles:\n- schedulerName: s\n  plugin:\n    score:\n      disabled: [{name: ImageLocality}]\n",
        id="plugin-for-plugins",
    ),
    pytest.param(HEAD + "leaderElection:\n  leaderElect: true\n  leaderElect: false\n", id="duplicate-key"),
    pytest.param(
        HEAD
        + """zeta: 1
alpha: 2
profiles:
- schedulerName: a
  zz: 1
  plugins:
    score: {enabled: [{name: ImageLocality, wieght: 1}]}
    multiPoint: {disabled: [{nme: x}]}
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabel: {}}}
  - name: InterPodAffinity
    args: {b: 1, a: 2}
- schedulerName: b
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpression: []}]
  - name: NodeResourcesFit
    args: {scoringStrategy: {requestedToCapacityRatio: {shape: [{Score: 1, utilization: 2}]}}}
extenders:
- urlPrefix: http://x
  tlsConfig: {cafile: x}
  managedResources: [{name: example.com/a, ignored: true}]
leaderElection: {leaderElec: true}
clientConnection: {qsp: 1}
""",
        id="every-level-sorted",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: InterPodAffinityArgs\n",
        id="args-kind-mismatch",
    ),
    pytest.param(
        HEAD + "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n"
        "      resources: [{name: cpu, wieght: 1}]\n  - name: DynamicResources\n    args: {filterTimeOut: 1s}\n"
        "  - name: VolumeBinding\n    args: {bindTimeout: 1}\n",
        id="stand-in-args",
    ),
]


def _upstream_error(config: Path) -> str:
    """kube-scheduler's ``err`` (its klog line holds it quoted on one line, or in a ``err=<`` block)."""
    binary = ensure_built() / "kube-scheduler"
    out = subprocess.run(
        [str(binary), f"--config={config}", "--secure-port=0"], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 1, out.stderr
    return command_failed(out.stderr)


def _our_error(config: Path, tmp_path: Path) -> str:
    out = subprocess.run(
        [SPREAD_CLI, "run", "--config", str(config), "--kubeconfig", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert len(re.findall(r"^[IWE]\d{4} ", out.stderr, re.M)) == 1, out.stderr  # one line (or one err=< block)
    return command_failed(out.stderr)


@pytest.mark.parametrize("text", CASES)
def test_same_refusal_as_kube_scheduler(text: str, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    assert _our_error(config, tmp_path) == _upstream_error(config)


def test_args_of_a_plugin_without_args_type_deliberate_difference(tmp_path: Path) -> None:
    """kube-scheduler skips decoding them and starts; we refuse the field (docs/configuration.md)."""
    config = tmp_path / "config.yaml"
    config.write_text(HEAD + "profiles:\n- pluginConfig:\n  - name: TaintToleration\n    args: {foo: 1}\n")
    binary = ensure_built() / "kube-scheduler"
    upstream = subprocess.run(
        [str(binary), f"--config={config}", "--secure-port=0"], capture_output=True, text=True, timeout=60, check=False
    )
    assert "strict decoding error" not in upstream.stderr  # it gets as far as looking for a kubeconfig
    assert _our_error(config, tmp_path) == (
        "strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: "
        'decoding args for plugin TaintToleration: strict decoding error: unknown field "foo"'
    )
