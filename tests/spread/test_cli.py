"""``spread-scheduler rebalance --dry-run``, the plans and costs ``skew`` adds, and ``kubectl-spread``,
on examples/rebalance.yaml (its header says what each workload shows)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import kubectl_main, main
from scheduler.kube.client.version import ServerVersion
from scheduler.kube.kube_version import Decided, KubeVersion, decide_as
from scheduler.simulate import load_objects

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "rebalance.yaml")


def _out(capsys: pytest.CaptureFixture[str], run: Any, *args: str) -> str:
    assert run(list(args)) == 0
    return str(capsys.readouterr().out)


def test_dry_run_table_names_each_move_and_the_skew_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, main, "rebalance", "--dry-run", "-f", EXAMPLE)
    assert out.splitlines() == [
        "shop/Deployment/api (ReplicaSet/api-5d8b)",
        '  not-opted-in: spread-scheduler.io/rebalance is not "true" on its pods',
        "shop/Deployment/cache (ReplicaSet/cache-6f4c)",
        "  in-flight: pod shop/cache-6f4c-w2k9d is pending: waiting for it to be placed and Ready",
        "shop/Deployment/web (ReplicaSet/web-7c9d): topology.kubernetes.io/zone skew 4/1",
        "  planned: 2 moves leave topology.kubernetes.io/zone skew 0 (maxSkew 1)",
        "  1. web-7c9d-t5r8s: zone-b (zone-b-2) -> zone-a (zone-a-1), topology.kubernetes.io/zone skew 4 -> 2",
        "  2. web-7c9d-p9t6v: zone-b (zone-b-1) -> zone-a (zone-a-2), topology.kubernetes.io/zone skew 2 -> 0",
    ]


def test_dry_run_json_and_the_default_for_unannotated_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    plans = json.loads(_out(capsys, main, "rebalance", "--dry-run", "-f", EXAMPLE, "-o", "json"))["plans"]
    web = plans[2]
    assert (web["kind"], web["name"], web["owner"], web["reason"]) == (
        "Deployment",
        "web",
        {"kind": "ReplicaSet", "name": "web-7c9d", "uid": "u-web-7c9d"},
        "planned",
    )
    assert web["constraints"] == [
        {"topologyKey": "topology.kubernetes.io/zone", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "skew": 4}
    ]
    assert [(m["pod"], m["fromDomain"], m["toDomain"], m["skewsAfter"]) for m in web["moves"]] == [
        ("shop/web-7c9d-t5r8s", "zone-b", "zone-a", [2]),
        ("shop/web-7c9d-p9t6v", "zone-b", "zone-a", [0]),
    ]
    everyone = json.loads(
        _out(capsys, main, "rebalance", "--dry-run", "-f", EXAMPLE, "-o", "json", "--rebalance-default")
    )["plans"]
    assert [(p["name"], p["reason"], len(p["moves"])) for p in everyone] == [
        ("api", "planned", 1),
        ("cache", "in-flight", 0),
        ("web", "planned", 2),
    ]


def test_rebalance_without_dry_run_refuses_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rebalance", "-f", EXAMPLE]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "--dry-run" in captured.err


def test_skew_shows_the_costs_in_force_and_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, main, "skew", "-f", EXAMPLE)
    assert "  shop/Deployment/api: api-5d8b-9kzq1=100\n" in out  # someone else's: no mark
    assert "web-7c9d-t5r8s=-4*" in out
    assert "    1. web-7c9d-t5r8s: zone-b (zone-b-2) -> zone-a (zone-a-1)" in out
    web = json.loads(_out(capsys, main, "skew", "-f", EXAMPLE, "-o", "json"))["workloads"][2]
    assert {"pod": "shop/web-7c9d-t5r8s", "cost": "-4", "ours": True} in web["deletionCosts"]
    assert [p["reason"] for p in web["rebalance"]] == ["planned"]


def test_kubectl_spread_prints_what_spread_scheduler_prints(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["rebalance", "--dry-run", "-f", EXAMPLE], ["skew", "-f", EXAMPLE, "-n", "shop", "-o", "json"]):
        assert _out(capsys, kubectl_main, *args) == _out(capsys, main, *args)


def test_kubectl_spread_has_only_the_read_only_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("run", "simulate"):
        with pytest.raises(SystemExit) as exc:
            kubectl_main([command])
        assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The live listing replaced by the example's objects; records the kubeconfig it was asked for."""
    asked: list[str] = []

    async def cluster_objects(_config: Any, kubeconfig: str | None, **_kw: Any) -> list[Mapping[str, Any]]:
        asked.append(str(kubeconfig))
        return load_objects(EXAMPLE)

    async def decide_live(_kubeconfig: str | None, asked: KubeVersion, *_overrides: object) -> Decided:
        return decide_as(asked, ServerVersion("1", "37", "v1.37.2"))  # the API server's /version

    monkeypatch.setattr("scheduler.kube.client.dump.cluster_objects", cluster_objects)
    monkeypatch.setattr("scheduler.kube.explain.cluster_objects", cluster_objects)
    monkeypatch.setattr("scheduler.kube.kube_version.decide_live", decide_live)
    return asked


def _kubeconfig(tmp_path: Path, namespace: str) -> str:
    path = tmp_path / f"kubeconfig-{namespace}"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        f"contexts: [{{name: c, context: {{cluster: c, user: u, namespace: {namespace}}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    return str(path)


def test_kubectl_spread_defaults_to_the_contexts_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, listed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    other = _kubeconfig(tmp_path, "other")
    assert "No workload" in _out(capsys, kubectl_main, "rebalance", "--dry-run", "--kubeconfig", other)
    assert "shop/Deployment/web" in _out(capsys, kubectl_main, "rebalance", "--dry-run", "--kubeconfig", other, "-A")
    assert "shop/Deployment/web" in _out(
        capsys, kubectl_main, "rebalance", "--dry-run", "--kubeconfig", other, "-n", "shop"
    )
    monkeypatch.setenv("KUBECONFIG", _kubeconfig(tmp_path, "shop"))
    assert "shop/Deployment/web" in _out(capsys, kubectl_main, "rebalance", "--dry-run")  # $KUBECONFIG's context
    assert listed == [other, other, other, "None"]  # no flag: the client reads $KUBECONFIG itself


def test_explain_adds_the_pods_cost_and_whether_a_plan_moves_it(
    capsys: pytest.CaptureFixture[str], listed: list[str]
) -> None:
    out = _out(capsys, main, "explain", "shop/web-7c9d-t5r8s")
    assert out.splitlines()[-2:] == [
        "Deletion cost of shop/web-7c9d-t5r8s: -4 (ours)",
        "Rebalancing: move 1 of 2: zone-b (zone-b-2) -> zone-a (zone-a-1), topology.kubernetes.io/zone skew 4 -> 2",
    ]
    other = _out(capsys, main, "explain", "-n", "shop", "api-5d8b-9kzq1")
    assert other.splitlines()[-2].endswith(": 100 (set by someone else)")
    assert other.splitlines()[-1].startswith("Rebalancing: not moved (not-opted-in:")
    document = json.loads(_out(capsys, kubectl_main, "explain", "-n", "shop", "web-7c9d-c2n5d", "-o", "json"))
    assert document["spread"] == {
        "deletionCost": {"pod": "shop/web-7c9d-c2n5d", "cost": "-1", "ours": True},
        "rebalance": "not moved (planned: 2 moves leave topology.kubernetes.io/zone skew 0 (maxSkew 1))",
    }
