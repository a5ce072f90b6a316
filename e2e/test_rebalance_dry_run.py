"""``rebalance --dry-run`` against the real control plane: a zone that comes back after an outage.

A Deployment opted in to rebalancing is placed by the live scheduler while only zone-b and zone-c
have nodes (zone-a's are gone: an outage), 3/3 under a hard zone spread of maxSkew 1. Then zone-a's
nodes come back: 0/3/3, skew 3. ``spread-scheduler rebalance --dry-run`` on the live cluster must plan
the fewest moves (2), each from the crowded zones to zone-a, and ``kubectl spread rebalance
--dry-run`` (the plugin, found on PATH by the real kubectl) must print the same. Nothing is evicted:
the dry run only reads. The outputs are printed (``-s``) for docs/rebalance.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import deployment, is_ready, pods_in, wait_for, zone_spread, zoned_nodes

BIN = Path(sys.executable).parent


def _run(command: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout


def _ready(core: client.CoreV1Api, namespace: str, expected: int) -> list[Any]:
    pods = [p for p in pods_in(core, namespace) if p.spec.node_name and is_ready(p)]
    return pods if len(pods) == expected else []


def _kubectl_plugin(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH holds ``kubectl-spread`` (the console script pyproject.toml declares,
    written here as the installer would: this venv may predate it)."""
    plugin = tmp_path / "kubectl-spread"
    plugin.write_text(
        f"#!{sys.executable}\nimport sys\nfrom scheduler.cli import kubectl_main\nsys.exit(kubectl_main())\n"
    )
    plugin.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.slow
def test_a_zone_back_gets_a_plan_to_it_and_kubectl_spread_prints_the_same(
    nodes: Callable[..., str],
    namespace: str,
    kubeconfig: str,
    scheduler: SchedulerProcess,
    core: client.CoreV1Api,
    api: client.ApiClient,
    tmp_path: Path,
) -> None:
    zoned_nodes(nodes, {"zone-b": 2, "zone-c": 2})
    spec = {
        "schedulerName": "spread-scheduler",
        "containers": [{"name": "c", "image": "registry.invalid/pause:3.10"}],
        "topologySpreadConstraints": [zone_spread(1, {"app": "web"})],
    }
    # Not opted in: the suite's running scheduler (its controller on, default off) leaves it be while
    # the dry runs plan it as if it were (--rebalance-default).
    client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment("web", 6, spec))
    wait_for(lambda: _ready(core, namespace, 6), 90, "6 Ready replicas in zone-b and zone-c")

    # The zone comes back: 0/3/3.
    back = zoned_nodes(nodes, {"zone-a": 2})
    plan_all = ["--rebalance-default", "--kubeconfig", kubeconfig, "-n", namespace]
    dry_run = [str(BIN / "spread-scheduler"), "rebalance", "--dry-run", *plan_all]
    (plan,) = json.loads(_run([*dry_run, "-o", "json"]))["plans"]
    assert (plan["kind"], plan["name"], plan["reason"]) == ("Deployment", "web", "planned"), plan
    assert [c["skew"] for c in plan["constraints"]] == [3]
    moves = plan["moves"]
    assert len(moves) == 2, moves  # 0/3/3 -> 1/2/3 -> 2/2/2: no plan can do it in one
    assert {m["toDomain"] for m in moves} == {"zone-a"} and {m["toNode"] for m in moves} <= set(back)
    assert sorted(m["fromDomain"] for m in moves) == ["zone-b", "zone-c"]
    assert moves[-1]["skewsAfter"] == [0]

    table = _run(dry_run)
    plugin = _run(
        ["kubectl", "spread", "rebalance", "--dry-run", *plan_all],
        env=_kubectl_plugin(tmp_path),
    )
    assert plugin == table
    skew = _run([str(BIN / "spread-scheduler"), "skew", *plan_all])
    assert "Rebalancing (spread-scheduler rebalance --dry-run):" in skew
    print(f"\n$ spread-scheduler rebalance --dry-run --rebalance-default -n {namespace}\n{table}")
    print(f"$ spread-scheduler skew --rebalance-default -n {namespace}\n{skew}")

    # A dry run evicts nothing: the same six pods, where they were.
    assert len(_ready(core, namespace, 6)) == 6
