"""``simulate`` admits a file's pods with its PriorityClasses, and names what the API server would
refuse without losing any other pod (issue #19)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.testing import make_node, make_pod


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: dict[str, Any]) -> tuple[Any, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    assert main(["simulate", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    return {r["pod"]: r for r in json.loads(out)["results"]}, err


def priority_class(name: str, value: Any, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def full_node(**low_spec: Any) -> list[dict[str, Any]]:
    """n1 (1 cpu) holds ``low`` (1 cpu)."""
    low = make_pod("low").node("n1").requests(cpu="1")
    for key, value in low_spec.items():
        low.set(f"spec.{key}", value)
    return [make_node("n1").allocatable(cpu="1", memory="4Gi", pods="110").dict(), low.dict()]


def test_a_class_named_by_the_pod_gives_its_priority_and_it_preempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``web`` names gold (listed after it: classes come first) and has no spec.priority; ``low``
    gets the global default bronze's -5 (negative is valid), so web preempts it."""
    results, err = simulate(
        tmp_path,
        capsys,
        make_pod("web").requests(cpu="1").set("spec.priorityClassName", "gold").dict(),
        *full_node(priorityClassName="bronze"),
        priority_class("gold", 1000),
        priority_class("bronze", -5, globalDefault=True),
    )
    assert (results["default/web"]["node"], results["default/web"]["victims"]) == ("n1", ["default/low"])
    assert err == ""


def test_a_missing_class_refuses_that_pod_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pending pod gets admission's message as its result; a bound one is left out with a warning."""
    results, err = simulate(
        tmp_path,
        capsys,
        make_node("n1").dict(),
        make_pod("typo").set("spec.priorityClassName", "golld").created("2026-01-01T00:00:00Z").dict(),
        make_pod("good").created("2026-01-01T00:00:01Z").dict(),
        make_pod("bound").node("n1").set("spec.priorityClassName", "silver").dict(),
        priority_class("gold", 1000),
    )
    assert err == (
        "warning: skipped Pod default/bound: spec.priorityClassName: no PriorityClass with name silver was found\n"
    )
    typo = results["default/typo"]
    assert (typo["code"], typo["message"]) == (
        "UnschedulableAndUnresolvable",
        "invalid pod: spec.priorityClassName: no PriorityClass with name golld was found",
    )
    assert results["default/good"]["node"] == "n1"


def test_classes_the_api_server_refuses_are_named_and_do_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, err = simulate(
        tmp_path,
        capsys,
        make_node("n1").dict(),
        make_pod("p").set("spec.priorityClassName", "huge").dict(),
        priority_class("huge", 2_000_000_000),
        priority_class("typed", "high", globalDefault="yes"),
    )
    assert (
        results["default/p"]["message"]
        == "invalid pod: spec.priorityClassName: no PriorityClass with name huge was found"
    )
    assert err.splitlines() == [
        "warning: skipped PriorityClass huge: value: Forbidden: maximum allowed value of a user defined priority "
        "is 1000000000",
        "warning: skipped PriorityClass typed: value: must be an integer, got 'high'; globalDefault: must be a "
        "boolean, got str",
    ]


def test_priorities_beyond_int32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pending pod's result names the field; a bound one is left out with a warning (the API server
    never held it), and the other pods are decided."""
    go = "into Go struct field PodSpec.spec.priority of type int32"
    results, err = simulate(
        tmp_path,
        capsys,
        make_node("n1").allocatable(cpu="1", memory="4Gi", pods="110").dict(),
        make_pod("ghost").node("n1").priority(-(2**31) - 1).requests(cpu="1").dict(),
        make_pod("huge").priority(2**31).dict(),
        make_pod("fits").requests(cpu="1").dict(),
    )
    assert results["default/huge"]["message"] == f"invalid pod: spec.priority: cannot unmarshal number {2**31} {go}"
    assert results["default/fits"]["node"] == "n1"  # the bound ghost took no room
    assert err == f"warning: skipped Pod default/ghost: spec.priority: cannot unmarshal number {-(2**31) - 1} {go}\n"


def test_a_pdb_with_a_malformed_selector_covers_no_pod_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As kube-controller-manager's NoPods event; preemption takes the pod it would have covered."""
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard", "namespace": "default"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Sometimes"}]}},
        "status": {"disruptionsAllowed": 0},
    }
    results, err = simulate(
        tmp_path, capsys, *full_node(priority=0), make_pod("web").priority(10).requests(cpu="1").dict(), pdb
    )
    assert results["default/web"]["victims"] == ["default/low"]
    assert err.startswith("warning: PodDisruptionBudget default/guard: Failed to get pods: spec.selector")
    assert err.endswith("(it covers no pod)\n")
