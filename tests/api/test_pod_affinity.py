"""Parsing ``spec.affinity.podAffinity``/``podAntiAffinity``: typed terms, and every bad input a
``FieldError`` naming its field in the API server's words (``validatePodAffinityTerm``)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from scheduler.api.labels import EVERYTHING, NOTHING
from scheduler.api.objects import Namespace, Pod
from scheduler.testing import make_pod

REQ = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ANTI_REQ = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREF = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def parse(affinity: Any, labels: dict[str, str] | None = None, namespace: str = "default") -> Pod:
    builder = make_pod("p", namespace).labels(labels or {})
    return Pod.from_dict(builder.set("spec.affinity", affinity).dict())


def errors(affinity: Any, labels: dict[str, str] | None = None) -> list[str]:
    return [str(e) for e in parse(affinity, labels).errors]


def required(**term: Any) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_terms_are_parsed_once_with_namespaces_resolved() -> None:
    """No namespaces and no namespaceSelector mean the pod's own namespace; ``{}`` selects all."""
    pod = parse(
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 7, "podAffinityTerm": {"topologyKey": "zone", "namespaceSelector": {}}}
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {}, "topologyKey": "host", "namespaces": ["a", "b"]}
                ]
            },
        },
        namespace="team",
    )
    assert pod.errors == ()
    aff = pod.pod_affinity
    assert aff.declared and aff.has_required_anti_affinity
    (req,) = aff.required_affinity_terms
    assert req.namespaces == frozenset({"team"}) and req.namespace_selector is NOTHING
    assert req.matches("team", {"app": "db"}, None) and not req.matches("other", {"app": "db"}, None)
    (pref,) = aff.preferred_affinity_terms
    assert pref.weight == 7 and pref.term.namespaces == frozenset() and pref.term.namespace_selector == EVERYTHING
    assert pref.term.selector is NOTHING  # a nil labelSelector matches no pod
    (anti,) = aff.required_anti_affinity_terms
    assert anti.namespaces == frozenset({"a", "b"}) and anti.selector == EVERYTHING


def test_no_pod_affinity_is_not_declared() -> None:
    assert not make_pod("p").build().pod_affinity.declared
    assert parse({"podAntiAffinity": {}}).pod_affinity.declared  # upstream's podWithAffinity: set at all


@pytest.mark.parametrize(
    ("affinity", "labels", "want"),
    [
        pytest.param(
            required(labelSelector={}, topologyKey=""),
            None,
            [
                f"{REQ}[0].topologyKey: Required value: can not be empty",
                f'{REQ}[0].topologyKey: Invalid value: "": name part must be non-empty',
            ],
            id="empty-topology-key",
        ),
        pytest.param(
            required(
                labelSelector={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, topologyKey="z"
            ),
            None,
            [
                f'{REQ}[0].labelSelector.matchExpressions[0].operator: Unsupported value: "Gt": supported values: '
                '"DoesNotExist", "Exists", "In", "NotIn"'
            ],
            id="selector-operator",
        ),
        pytest.param(
            required(
                labelSelector={},
                namespaceSelector={"matchExpressions": [{"key": "t", "operator": "In"}]},
                topologyKey="z",
            ),
            None,
            [
                f"{REQ}[0].namespaceSelector.matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"  # noqa: E501
            ],
            id="namespace-selector",
        ),
        pytest.param(
            required(labelSelector={}, namespaceSelector=[1], topologyKey="z"),
            None,
            [f"{REQ}[0].namespaceSelector: must be an object, got list"],
            id="namespace-selector-not-an-object",
        ),
        pytest.param(
            required(labelSelector={}, namespaces=["Bad_NS"], topologyKey="z"),
            None,
            [
                f'{REQ}[0].namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case '
                "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
                "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ],
            id="namespace-name",
        ),
        pytest.param(
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": {"topologyKey": "z"}}
                    ]
                }
            },
            None,
            [f"{PREF}[0].weight: Invalid value: 101: must be in the range 1-100"],
            id="weight-too-big",
        ),
        pytest.param(
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": {"topologyKey": "z"}}]
                }
            },
            None,
            [f"{PREF}[0].weight: Invalid value: 0: must be in the range 1-100"],
            id="weight-missing",
        ),
        pytest.param(
            required(topologyKey="z", matchLabelKeys=["app"]),
            {"app": "x"},
            [f"{REQ}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"],
            id="match-label-keys-without-selector",
        ),
        pytest.param(
            required(labelSelector={"matchLabels": {"app": "x"}}, topologyKey="z", matchLabelKeys=["app"]),
            {"app": "x"},
            [f'{REQ}[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector'],
            id="match-label-keys-in-selector",
        ),
        pytest.param(
            required(labelSelector={}, topologyKey="z", matchLabelKeys=["app"], mismatchLabelKeys=["app"]),
            {"app": "x"},
            [
                # the merged "app NotIn [x]" follows the merged "app In [x]", as on the API server
                f'{REQ}[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
                f'{REQ}[0].matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys and mismatchLabelKeys',  # noqa: E501
            ],
            id="match-and-mismatch",
        ),
        pytest.param(
            required(labelSelector={}, topologyKey="z", mismatchLabelKeys=["-bad"]),
            None,
            [
                f'{REQ}[0].mismatchLabelKeys[0]: Invalid value: "-bad": name part must consist of alphanumeric '
                "characters, '-', '_' or '.', and must start and end with an alphanumeric character"
            ],
            id="mismatch-label-key-syntax",
        ),
        pytest.param(
            {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}},
            None,
            [f"{ANTI_REQ}: must be a list, got str"],
            id="terms-not-a-list",
        ),
        pytest.param(
            {"podAffinity": 3}, None, ["spec.affinity.podAffinity: must be an object, got int"], id="not-an-object"
        ),
    ],
)
def test_bad_input_names_the_field(affinity: Any, labels: dict[str, str] | None, want: list[str]) -> None:
    assert errors(affinity, labels) == want


def test_selector_the_api_server_merged_is_valid() -> None:
    """A stored pod carries ``app In [x]`` already merged from matchLabelKeys: no false clash."""
    merged = required(
        labelSelector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
        topologyKey="z",
        matchLabelKeys=["app"],
    )
    pod = parse(merged, {"app": "x"})
    assert pod.errors == ()
    (term,) = pod.pod_affinity.required_affinity_terms
    assert term.match_label_keys == ("app",)


def test_thousands_of_terms_parse_fast_and_never_raise() -> None:
    """5,000 terms (half of them broken) parse in well under a second, every error recorded."""
    terms = [
        {"labelSelector": {"matchLabels": {"app": str(i)}}, "topologyKey": "" if i % 2 else "zone"} for i in range(5000)
    ]
    started = time.perf_counter()
    pod = parse({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}})
    assert time.perf_counter() - started < 2.0
    assert len(pod.pod_affinity.required_anti_affinity_terms) == 5000
    assert len(pod.errors) == 2 * 2500


@pytest.mark.parametrize("garbage", [None, 1, "x", [], {"metadata": []}, {"metadata": {"name": 3}}])
def test_namespace_from_garbage_never_raises(garbage: Any) -> None:
    ns = Namespace.from_dict(garbage)
    assert ns.name == "" and ns.errors


def test_namespace() -> None:
    ns = Namespace.from_dict({"kind": "Namespace", "metadata": {"name": "team", "labels": {"tier": "db"}}})
    assert (ns.name, dict(ns.labels), ns.errors) == ("team", {"tier": "db"}, ())
