"""PriorityClasses as the API server validates them, and the Priority admission plugin's defaulting
(upstream ``pkg/apis/scheduling/validation``, ``plugin/pkg/admission/priority``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.priorityclass import PriorityClass, PriorityClasses, admit_pod
from scheduler.testing import make_pod


def pc(name: str = "gold", value: Any = 1000) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def with_fields(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**obj, **fields}


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        pytest.param(
            pc(value=1_000_000_001),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            id="user-class-above-one-billion",
        ),
        pytest.param(
            pc(value=2**31),
            "value: cannot unmarshal number 2147483648 into Go struct field PriorityClass.value of type int32",
            id="value-beyond-int32",
        ),
        pytest.param(pc(value="high"), "value: must be an integer, got 'high'", id="value-a-string"),
        pytest.param(pc(value=None), "value: Required value", id="value-missing"),
        pytest.param(pc(value=True), "value: must be an integer, got bool", id="value-a-bool"),
        pytest.param(
            with_fields(pc(), globalDefault="yes"), "globalDefault: must be a boolean, got str", id="default-a-string"
        ),
        pytest.param(
            with_fields(pc(), preemptionPolicy="Sometimes"),
            'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
            id="unknown-policy",
        ),
        pytest.param(
            pc("system-node-critical", 5),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
            "only. error: value of system-node-critical PriorityClass must be 2000001000",
            id="system-class-wrong-value",
        ),
        pytest.param(
            pc("system-mine", 5),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
            "only. error: system-mine is not a known system priority class",
            id="unknown-system-class",
        ),
        pytest.param(
            {"kind": "PriorityClass", "metadata": [], "value": 1},
            "metadata: must be an object, got list",
            id="metadata-a-list",
        ),
        pytest.param("gold", "priorityClass: must be an object, got str", id="not-an-object"),
    ],
)
def test_what_the_api_server_refuses_is_named(obj: Any, error: str) -> None:
    assert error in [str(e) for e in PriorityClass.from_dict(obj).errors]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(pc(value=1_000_000_000), id="one-billion"),
        pytest.param(pc(value=-(2**31)), id="int32-minimum"),
        pytest.param(pc("system-cluster-critical", 2_000_000_000), id="system-cluster-critical"),
    ],
)
def test_valid_classes(obj: dict[str, Any]) -> None:
    assert PriorityClass.from_dict(obj).errors == ()


def admitted(pod: dict[str, Any], *classes: dict[str, Any]) -> tuple[Pod, str | None]:
    obj, error = admit_pod(pod, PriorityClasses(PriorityClass.from_dict(c) for c in classes))
    return Pod.from_dict(obj), None if error is None else str(error)


def test_the_class_gives_the_value_and_policy() -> None:
    pod, error = admitted(
        make_pod("p").set("spec.priorityClassName", "gold").dict(), with_fields(pc(), preemptionPolicy="Never")
    )
    assert (pod.priority, pod.preemption_policy, error) == (1000, "Never", None)


@pytest.mark.parametrize(
    ("name", "value"), [("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)]
)
def test_system_classes_are_built_in(name: str, value: int) -> None:
    pod, error = admitted(make_pod("p").set("spec.priorityClassName", name).dict())
    assert (pod.priority, error) == (value, None)


def test_a_missing_class_is_refused_with_admissions_message() -> None:
    _, error = admitted(make_pod("p").set("spec.priorityClassName", "gold").dict())
    assert error == "spec.priorityClassName: no PriorityClass with name gold was found"


def test_an_invalid_class_does_not_exist() -> None:
    _, error = admitted(make_pod("p").set("spec.priorityClassName", "gold").dict(), pc(value=2_000_000_000))
    assert error == "spec.priorityClassName: no PriorityClass with name gold was found"


def test_the_lowest_global_default_for_a_pod_naming_none() -> None:
    pod, error = admitted(
        make_pod("p").dict(),
        with_fields(pc("a", 50), globalDefault=True),
        with_fields(pc("b", 20), globalDefault=True),
        pc("c", 5),
    )
    assert (pod.priority, pod.raw["spec"]["priorityClassName"], error) == (20, "b", None)


def test_no_default_means_zero() -> None:
    pod, error = admitted(make_pod("p").dict())
    assert (pod.priority, error) == (0, None)


def test_a_priority_that_contradicts_its_class_is_refused() -> None:
    _, error = admitted(make_pod("p").priority(5).set("spec.priorityClassName", "gold").dict(), pc())
    assert error == (
        "spec.priority: the integer value of priority (5) must not be provided in pod spec; "
        "priority admission controller computed 1000 from the given PriorityClass name"
    )


def test_a_policy_that_contradicts_its_class_is_refused() -> None:
    pod = make_pod("p").set("spec.priorityClassName", "gold").preemption_policy("PreemptLowerPriority").dict()
    _, error = admitted(pod, with_fields(pc(), preemptionPolicy="Never"))
    assert error is not None and error.startswith("spec.preemptionPolicy: the string value of PreemptionPolicy")


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(make_pod("p").priority(7).dict(), id="value-alone"),
        pytest.param(make_pod("p").priority(7).set("spec.priorityClassName", "absent").dict(), id="dumped-pod"),
    ],
)
def test_a_written_priority_is_kept(pod: dict[str, Any]) -> None:
    """A dump's pods were admitted already, and the class list may be missing from it."""
    admitted_pod, error = admitted(pod, with_fields(pc("d", 50), globalDefault=True))
    assert (admitted_pod.priority, error) == (7, None)


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1])
def test_a_pod_priority_beyond_int32_is_named(value: int) -> None:
    """The API's decoder refuses it with this text."""
    pod = Pod.from_dict(make_pod("p").priority(value).dict())
    go = "into Go struct field PodSpec.spec.priority of type int32"
    assert [str(e) for e in pod.errors] == [f"spec.priority: cannot unmarshal number {value} {go}"]


def test_a_negative_int32_priority_is_valid() -> None:
    pod = Pod.from_dict(make_pod("p").priority(-5).dict())
    assert (pod.priority, pod.errors) == (-5, ())
