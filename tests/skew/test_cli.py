"""``spread-scheduler skew``: the shipped example through the CLI, both outputs, --plot, and bad input.

The example (examples/skew.yaml) says in its header what each workload shows; the values below
are the hand counts from there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import main
from scheduler.skew.plot import PLOT_EXTRA_MESSAGE

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "skew.yaml")
WEB_PODS = ["shop/web-7d9f-k2x9p", "shop/web-7d9f-q8m4t", "shop/web-7d9f-r5v7w", "shop/web-7d9f-z3n6c"]


def skew_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["skew", "-f", EXAMPLE, "-o", "json", *args]) == 0
    workloads: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["workloads"]
    return workloads


def test_json_schema_and_the_scale_down_violation(capsys: pytest.CaptureFixture[str]) -> None:
    workloads = skew_json(capsys)
    assert [(w["kind"], w["name"], w["violated"]) for w in workloads] == [
        ("Deployment", "frontend", False),
        ("Deployment", "web", True),
        ("StatefulSet", "db", False),
    ]
    web = workloads[1]
    assert web == {
        "namespace": "shop",
        "kind": "Deployment",
        "name": "web",
        "pods": WEB_PODS,
        "violated": True,
        "constraints": [
            {
                "topologyKey": "topology.kubernetes.io/zone",
                "maxSkew": 1,
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 1,
                "nodeAffinityPolicy": "Honor",
                "nodeTaintsPolicy": "Ignore",
                "selector": "app=web",
                "source": "pod",
                "domains": {"zone-a": 2, "zone-b": 2, "zone-c": 0},
                "globalMinimum": 0,
                "skew": 2,
                "violated": True,
                "pods": WEB_PODS,
                "violatingPods": WEB_PODS,
                "podsOutsideDomains": [],
            }
        ],
        # Its pods are kube-scheduler's (no schedulerName): no cost of ours, no plan.
        "deletionCosts": [],
        "rebalance": [],
    }
    host, zone = workloads[2]["constraints"]
    assert (host["source"], host["maxSkew"], host["skew"], host["violated"]) == ("system-default", 3, 2, None)
    assert (zone["source"], zone["maxSkew"], zone["domains"], zone["violated"]) == (
        "system-default",
        5,
        {"zone-a": 2, "zone-b": 1, "zone-c": 0},
        None,
    )


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skew", "-f", EXAMPLE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "NAMESPACE",
        "WORKLOAD",
        "PODS",
        "CONSTRAINT",
        "DOMAINS",
        "(pods)",
        "SKEW",
        "VIOLATING",
        "PODS",
    ]
    web = next(line for line in lines if "Deployment/web" in line)
    assert "topology.kubernetes.io/zone maxSkew=1 (DoNotSchedule)" in web
    assert "zone-a=2 zone-b=2 zone-c=0" in web
    assert "2/1 !" in web
    assert web.endswith("web-7d9f-k2x9p, web-7d9f-q8m4t, web-7d9f-r5v7w, web-7d9f-z3n6c")
    db = [line for line in lines if "StatefulSet/db" in line]
    assert len(db) == 2 and all("(ScheduleAnyway, system-default)" in line and line.endswith(" -") for line in db)
    assert "0/1    none" in next(line for line in lines if "Deployment/frontend" in line)


def test_namespace_filter_and_an_empty_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert skew_json(capsys, "-n", "other") == []
    assert main(["skew", "-f", EXAMPLE, "-n", "other"]) == 0
    assert capsys.readouterr().out == "No workload with topology spread constraints or default spreading.\n"


def test_plot_without_matplotlib_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "skew.png"
    assert main(["skew", "-f", EXAMPLE, "--plot", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"spread-scheduler: {PLOT_EXTRA_MESSAGE}\n"
    assert "spread-scheduler[plot]" in PLOT_EXTRA_MESSAGE
    assert "Deployment/web" in captured.out  # the report itself is still printed
    assert not out.exists()


def test_plot_writes_a_png(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional [plot] extra")
    out = tmp_path / "skew.png"
    assert main(["skew", "-f", EXAMPLE, "-o", "json", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.loads(capsys.readouterr().out)  # stdout stays pure JSON


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param(["-f", "/nonexistent.yaml"], 2, "spread-scheduler: cannot read /nonexistent.yaml:", id="no-file"),
        pytest.param(
            ["--kubeconfig", "/nonexistent"],
            1,
            "spread-scheduler: stat /nonexistent: no such file or directory",
            id="no-kubeconfig",
        ),
        pytest.param(
            ["-f", EXAMPLE, "--config", "/nonexistent.yaml"],
            2,
            "spread-scheduler: invalid configuration:",
            id="no-config",
        ),
    ],
)
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str) -> None:
    assert main(["skew", *args]) == code
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def test_unreachable_api_server_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    assert main(["skew", "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err  # the first request: which minor to decide as (its /version)
    assert err.startswith("spread-scheduler: GET /version: ") and err.count("\n") == 1, err
    assert main(["skew", "--kubeconfig", str(kubeconfig), "--kube-version", "1.37"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("spread-scheduler: cannot list the cluster:") and err.count("\n") == 1, err
