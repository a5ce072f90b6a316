"""API-server validation as the parser applies it: every refusal names its field; nothing raises."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Node, Pod
from scheduler.config import load_config
from scheduler.simulate import Simulation
from scheduler.testing import make_node, make_pod
from tests.core.harness import FOO, ZONE

C0 = "spec.topologySpreadConstraints[0]"


def spread(**fields: Any) -> dict[str, Any]:
    base = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": FOO},
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    ("constraints", "path", "text"),
    [
        pytest.param([spread(maxSkew=0)], f"{C0}.maxSkew", "must be greater than zero", id="max-skew-zero"),
        pytest.param([spread(maxSkew=-3)], f"{C0}.maxSkew", "must be greater than zero", id="max-skew-negative"),
        pytest.param([spread(maxSkew="1")], f"{C0}.maxSkew", "must be an integer", id="max-skew-string"),
        pytest.param([spread(topologyKey="")], f"{C0}.topologyKey", "can not be empty", id="empty-key"),
        pytest.param(
            [spread(whenUnsatisfiable="Sometimes")],
            f"{C0}.whenUnsatisfiable",
            'Unsupported value: "Sometimes"',
            id="bad-when",
        ),
        pytest.param(
            [spread(), spread()],
            "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}",
            "Duplicate value",
            id="duplicate",
        ),
        pytest.param([spread(minDomains=0)], f"{C0}.minDomains", "must be greater than zero", id="min-domains-zero"),
        pytest.param(
            [spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway")],
            f"{C0}.minDomains",
            "can only use minDomains if whenUnsatisfiable=DoNotSchedule",
            id="min-domains-soft",
        ),
        pytest.param(
            [spread(nodeAffinityPolicy="Sometimes")],
            f"{C0}.nodeAffinityPolicy",
            "Unsupported value",
            id="bad-affinity-policy",
        ),
        pytest.param(
            [spread(nodeTaintsPolicy="honor")], f"{C0}.nodeTaintsPolicy", "Unsupported value", id="bad-taints-policy"
        ),
        pytest.param(
            [spread(labelSelector={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})],
            f"{C0}.labelSelector.matchExpressions[0].operator",
            "Unsupported value",
            id="selector-gt",
        ),
        pytest.param(
            [spread(labelSelector={"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})],
            f"{C0}.labelSelector.matchExpressions[0].values",
            "must be specified",
            id="in-without-values",
        ),
        pytest.param(
            [spread(labelSelector={"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})],
            f"{C0}.labelSelector.matchExpressions[0].values",
            "may not be specified",
            id="exists-with-values",
        ),
        pytest.param(
            [spread(labelSelector={"matchLabels": {"a": "x" * 64}})],
            f"{C0}.labelSelector.matchLabels",
            "no more than 63 characters",
            id="value-64-chars",
        ),
        pytest.param(
            [spread(labelSelector=None, matchLabelKeys=["app"])],
            f"{C0}.matchLabelKeys[0]",
            "must not be specified when labelSelector is not set",
            id="match-label-keys-nil-selector",
        ),
        pytest.param(
            [spread(matchLabelKeys=["foo"])],
            f"{C0}.matchLabelKeys[0]",
            "exists in both matchLabelKeys and labelSelector",
            id="match-label-keys-duplicate",
        ),
        pytest.param({"not": "a list"}, "spec.topologySpreadConstraints", "must be a list", id="not-a-list"),
    ],
)
def test_spread_constraint_validation(constraints: Any, path: str, text: str) -> None:
    pod = make_pod("p").labels(FOO).set("spec.topologySpreadConstraints", constraints).build()
    matching = [e for e in pod.errors if e.path == path]
    assert matching, [str(e) for e in pod.errors]
    assert text in matching[0].message


@pytest.mark.parametrize(
    ("toleration", "path", "text"),
    [
        pytest.param(
            {"key": "k", "effect": "Sometimes"}, "spec.tolerations[0].effect", "Unsupported value", id="effect"
        ),
        pytest.param(
            {"key": "k", "operator": "Like"}, "spec.tolerations[0].operator", "Unsupported value", id="operator"
        ),
        pytest.param(
            {"operator": "Equal", "value": "v"},
            "spec.tolerations[0].operator",
            "must be Exists",
            id="empty-key-needs-exists",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "value": "v"},
            "spec.tolerations[0].operator",
            "value must be empty",
            id="exists-with-value",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 3},
            "spec.tolerations[0].effect",
            "must be 'NoExecute'",
            id="seconds-without-noexecute",
        ),
    ],
)
def test_toleration_validation(toleration: dict[str, Any], path: str, text: str) -> None:
    pod = make_pod("p").set("spec.tolerations", [toleration]).build()
    assert any(e.path == path and text in e.message for e in pod.errors), [str(e) for e in pod.errors]


def test_node_affinity_validation() -> None:
    na = "spec.affinity.nodeAffinity"
    pod = (
        make_pod("p")
        .node_selector({"bad key!": "v"})
        .required_terms({"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]})
        .preferred_term(0, {"matchExpressions": [{"key": "a", "operator": "Exists"}]})
        .preferred_term(101, {"matchExpressions": [{"key": "a", "operator": "Exists"}]})
    ).build()
    paths = {e.path for e in pod.errors}
    assert "spec.nodeSelector" in paths
    assert f"{na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key" in paths
    assert f"{na}.preferredDuringSchedulingIgnoredDuringExecution[0].weight" in paths
    assert f"{na}.preferredDuringSchedulingIgnoredDuringExecution[1].weight" in paths


@pytest.mark.parametrize(
    "junk",
    [
        None,
        5,
        "pod",
        [],
        {"metadata": "x"},
        {"spec": {"containers": "x", "affinity": 3}},
        {"metadata": {"name": 7, "labels": {"a": 5}}},
        {"spec": {"topologySpreadConstraints": [None, 3, "x"]}},
        {"spec": {"tolerations": [None]}, "metadata": {"name": "p"}},
    ],
)
def test_junk_never_raises(junk: Any) -> None:
    pod = Pod.from_dict(junk)
    node = Node.from_dict(junk)
    assert pod.errors or pod.name  # something was said about it
    assert isinstance(node.errors, tuple)


def test_nulls_where_the_api_allows_them_are_fine() -> None:
    pod = (
        make_pod("p")
        .set("spec.tolerations", None)
        .set("spec.nodeSelector", None)
        .set("spec.affinity", None)
        .set("metadata.labels", None)
        .build()
    )
    assert pod.errors == ()


def test_huge_but_valid_objects_are_handled() -> None:
    exprs = [{"key": f"k{i}", "operator": "In", "values": [f"v{i}"]} for i in range(1000)]
    big = make_pod("big").spread(ZONE, 1, selector={"matchExpressions": exprs})
    many = make_pod("many")
    for i in range(100):
        many.spread(f"key-{i}", 1, match=FOO)
    node = make_node("n1").zone("a")
    for i in range(500):
        node.label(f"l{i}", "v").taint(f"t{i}", "v", "PreferNoSchedule")
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects([node.dict(), big.dict(), many.dict()])
    attempts = {a.pod.name: a for a in sim.run()}
    assert attempts["big"].host == "n1"  # the selector matches nothing: skew 0
    assert attempts["many"].host is None  # n1 lacks key-0..key-99
    assert "missing required label" in attempts["many"].message


def test_an_invalid_pod_does_not_stop_the_others_in_a_simulation() -> None:
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(
        [make_node("n1").zone("a").dict(), make_pod("bad").spread(ZONE, 0, match=FOO).dict(), make_pod("good").dict()]
    )
    result = {a.pod.name: a for a in sim.run()}
    assert result["good"].host == "n1"
    assert result["bad"].message == f"invalid pod: {C0}.maxSkew: must be greater than zero"
