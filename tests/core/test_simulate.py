"""`spread-scheduler simulate` end to end on the shipped examples: JSON field by field, table, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPREAD = "node(s) didn't match pod topology spread constraints"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["simulate", *args, "--output", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_two_zones_json(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, str(EXAMPLES / "two-zones.yaml"), "--seed", "1")
    first, second = out["results"]
    # zoneA holds 2 foo=bar pods, zoneB 1: only zoneB nodes keep skew <= 1; PTS has nothing to score.
    # NodeResourcesFit breaks the zoneB tie: node3 already holds p3, node4 is empty.
    assert first["pod"] == "default/incoming" and first["node"] == "node4"
    assert first["nodes"]["node1"] == {
        "filter": {"plugin": "PodTopologySpread", "reason": SPREAD},
        "scores": {},
        "total": None,
    }
    assert first["nodes"]["node3"]["filter"] is None
    assert first["nodes"]["node3"]["scores"] == {
        "TaintToleration": {"raw": 0, "normalized": 100},
        "NodeResourcesFit": {"raw": 96, "normalized": 96},
    }
    assert first["nodes"]["node3"]["total"] == 300 + 96
    assert first["message"] == f"Successfully assigned default/incoming to {first['node']}"
    # The second pod sees the first one placed: one pod per node, two per zone, so every node ties.
    chosen = second["node"]
    assert len({v["total"] for v in second["nodes"].values()}) == 1
    totals = {n: v["total"] for n, v in second["nodes"].items()}
    assert totals[chosen] == max(totals.values())
    pts = {n: v["scores"]["PodTopologySpread"] for n, v in second["nodes"].items()}
    assert pts[chosen]["normalized"] == 100 and all(0 <= s["normalized"] <= 100 for s in pts.values())


def test_seed_makes_ties_repeatable(capsys: pytest.CaptureFixture[str]) -> None:
    runs = {run_json(capsys, str(EXAMPLES / "two-zones.yaml"), "--seed", "7")["results"][0]["node"] for _ in range(3)}
    assert len(runs) == 1


def test_min_domains_example_message(capsys: pytest.CaptureFixture[str]) -> None:
    (result,) = run_json(capsys, str(EXAMPLES / "min-domains.yaml"))["results"]
    assert result["node"] is None
    assert result["message"] == f"0/3 nodes are available: 3 {SPREAD}."


def test_node_affinity_skew_example(capsys: pytest.CaptureFixture[str]) -> None:
    honor, ignore = run_json(capsys, str(EXAMPLES / "node-affinity-skew.yaml"))["results"]
    assert honor["node"] == "kind-worker" and ignore["node"] == "kind-worker3"
    assert honor["nodes"]["kind-worker2"]["filter"]["plugin"] == "NodeAffinity"


def test_kubectl_style_input_multi_doc_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = yaml.safe_load((EXAMPLES / "min-domains.yaml").read_text())["items"]
    for item in items:  # what kubectl get -o yaml adds
        item["metadata"]["managedFields"] = [{"manager": "kubectl"}]
        if item["kind"] == "Pod":
            item["status"] = {"phase": "Running"} if "nodeName" in item["spec"] else {}
    (tmp_path / "list.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "PodList", "items": items}))
    (tmp_path / "multi.yaml").write_text(yaml.safe_dump_all(items))
    a = run_json(capsys, str(tmp_path / "list.yaml"))
    b = run_json(capsys, str(tmp_path / "multi.yaml"))
    assert a == b and a["results"][0]["node"] is None
    assert main(["simulate", str(tmp_path / "multi.yaml")]) == 0
    table = capsys.readouterr().out
    assert "UNSCHEDULABLE" in table and "n1" in table and "PodTopologySpread" in table


def test_errors_exit_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]")
    assert main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--config", str(bad)]) == 2
    assert "profiles[0].plugins.filter.enabled[0].name" in capsys.readouterr().err


def test_console_script_runs() -> None:
    exe = Path(sys.executable).parent / "spread-scheduler"
    out = subprocess.run(
        [str(exe), "simulate", str(EXAMPLES / "min-domains.yaml")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "0/3 nodes are available" in out.stdout
