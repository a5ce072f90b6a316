"""Status and its codes (framework/status.py): numbers, names, rejection, messages, no truth value."""

from __future__ import annotations

import pytest

from scheduler.framework.status import Code, Status, StatusError, is_rejected


@pytest.mark.parametrize(
    ("code", "number", "name", "rejected"),
    [
        pytest.param(Code.SUCCESS, 0, "Success", False, id="success"),
        pytest.param(Code.ERROR, 1, "Error", False, id="error"),
        pytest.param(Code.UNSCHEDULABLE, 2, "Unschedulable", True, id="unschedulable"),
        pytest.param(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 3, "UnschedulableAndUnresolvable", True, id="unresolvable"),
        pytest.param(Code.WAIT, 4, "Wait", False, id="wait"),
        pytest.param(Code.SKIP, 5, "Skip", False, id="skip"),
        pytest.param(Code.PENDING, 6, "Pending", True, id="pending"),
    ],
)
def test_status_codes(code: Code, number: int, name: str, rejected: bool) -> None:
    status = Status(code, ("r",))
    assert int(code) == number
    assert str(code) == name
    assert status.is_rejected() is rejected
    assert is_rejected(status) is rejected
    assert status.is_success() is (code is Code.SUCCESS)
    assert status.is_skip() is (code is Code.SKIP)


def test_none_is_success_and_not_rejected() -> None:
    assert is_rejected(None) is False


@pytest.mark.parametrize(
    "status",
    [
        pytest.param(Status(Code.SUCCESS), id="success"),
        pytest.param(Status(Code.UNSCHEDULABLE, ("x",)), id="unschedulable"),
        pytest.param(Status(Code.UNSCHEDULABLE, ("a", "b"), "P", "boom"), id="with-plugin-and-error"),
    ],
)
def test_status_has_no_truth_value(status: Status) -> None:
    with pytest.raises(TypeError, match="no truth value"):
        bool(status)
    with pytest.raises(TypeError):
        assert not status


@pytest.mark.parametrize(
    ("status", "message"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, ("a", "b")), "a, b", id="reasons-joined"),
        pytest.param(Status(Code.ERROR, ("a",), "", "boom"), "boom, a", id="error-first"),
        pytest.param(Status.as_error("boom"), "boom", id="as-error"),
        pytest.param(Status(Code.SUCCESS), "", id="empty"),
        pytest.param(Status(Code.UNSCHEDULABLE, ("a", "b"), "P", "boom"), "boom, a, b", id="error-then-reasons"),
    ],
)
def test_status_message(status: Status, message: str) -> None:
    assert status.message() == message


def test_rejection_does_not_need_reasons() -> None:
    assert Status(Code.PENDING).is_rejected()
    assert not Status(Code.ERROR).is_rejected()


def test_status_helpers() -> None:
    assert Status.unschedulable("r").code is Code.UNSCHEDULABLE
    assert Status.unschedulable("r", resolvable=False).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    base = Status(Code.UNSCHEDULABLE, ("r",))
    named = base.with_plugin("P")
    assert (named.plugin, named.reasons, named.code) == ("P", ("r",), Code.UNSCHEDULABLE)
    assert base.plugin == ""
    err = StatusError(Status.as_error("kaput"))
    assert str(err) == "kaput"
    assert err.status.code is Code.ERROR
