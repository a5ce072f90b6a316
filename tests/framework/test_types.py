"""framework/types.py: Diagnosis bookkeeping, PreFilterResult merging and the FitError message."""

from __future__ import annotations

import pytest

from scheduler.api.objects import NodeName
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, PreFilterResult
from scheduler.testing import make_pod

# -- Diagnosis -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "unschedulable", "pending"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, ("r",), "A"), {"A"}, set(), id="unschedulable"),
        pytest.param(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("r",), "A"), {"A"}, set(), id="unresolvable"),
        pytest.param(Status(Code.PENDING, ("r",), "A"), {"A"}, {"A"}, id="pending"),
        pytest.param(Status(Code.ERROR, ("r",), "A"), set(), set(), id="error-not-a-rejector"),
        pytest.param(Status(Code.UNSCHEDULABLE, ("r",)), set(), set(), id="no-plugin-name"),
    ],
)
def test_diagnosis_add_plugin_status(status: Status, unschedulable: set[str], pending: set[str]) -> None:
    d = Diagnosis()
    d.add_plugin_status(status)
    assert d.unschedulable_plugins == unschedulable
    assert d.pending_plugins == pending


# -- PreFilterResult -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "merged"),
    [
        pytest.param(None, None, None, id="all-all"),
        pytest.param(None, {"a"}, {"a"}, id="all-some"),
        pytest.param({"a"}, None, {"a"}, id="some-all"),
        pytest.param({"a", "b"}, {"b", "c"}, {"b"}, id="intersection"),
        pytest.param({"a"}, {"b"}, set(), id="empty-intersection"),
    ],
)
def test_pre_filter_result_merge(left: set[str] | None, right: set[str] | None, merged: set[str] | None) -> None:
    lhs = PreFilterResult(None if left is None else frozenset(left))
    rhs = PreFilterResult(None if right is None else frozenset(right))
    got = lhs.merge(rhs)
    assert got.node_names == (None if merged is None else frozenset(merged))
    assert got.all_nodes() is (merged is None)
    assert lhs.merge(None) is lhs


# -- FitError ------------------------------------------------------------------------------------


def _fit(num: int, statuses: dict[str, Status], absent: Status | None = None, **kw: str) -> str:
    d = Diagnosis(node_to_status={NodeName(k): v for k, v in statuses.items()}, absent_nodes_status=absent, **kw)
    return str(FitError(make_pod("p").build(), num, d))


def test_fit_error_histogram_is_sorted_as_strings() -> None:
    statuses = {f"t{i}": Status.unschedulable("node(s) had untolerated taint(s)") for i in range(10)}
    statuses |= {"a": Status.unschedulable("b-reason"), "b": Status.unschedulable("b-reason")}
    assert _fit(12, statuses) == ("0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 b-reason.")


def test_fit_error_counts_every_reason_of_a_node() -> None:
    statuses = {"n1": Status.unschedulable("Insufficient cpu", "Insufficient memory"), "n2": Status.unschedulable("x")}
    assert _fit(2, statuses) == "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 x."


@pytest.mark.parametrize(
    ("node", "own", "shared", "message"),
    [
        pytest.param(
            "n1",
            Status.unschedulable("r"),
            "node(s) didn't satisfy plugin(s) [NodeAffinity]",
            "0/5 nodes are available: 1 r, 4 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="narrowed-by-node-affinity",
        ),
        pytest.param(
            "a",
            Status(Code.UNSCHEDULABLE, ("own",)),
            "shared",
            "0/5 nodes are available: 1 own, 4 shared.",
            id="own-and-shared",
        ),
    ],
)
def test_fit_error_absent_nodes_share_the_absent_status(node: str, own: Status, shared: str, message: str) -> None:
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (shared,))
    assert _fit(5, {node: own}, absent) == message


def test_fit_error_pre_filter_message_replaces_the_histogram() -> None:
    got = _fit(4, {"n1": Status.unschedulable("r")}, pre_filter_msg="pod affinity terms conflict")
    assert got == "0/4 nodes are available: pod affinity terms conflict."


def test_fit_error_post_filter_message_is_appended_without_period() -> None:
    got = _fit(1, {"n1": Status.unschedulable("r")}, post_filter_msg="preemption: not eligible")
    assert got == "0/1 nodes are available: 1 r. preemption: not eligible"


def test_fit_error_without_any_reason_ends_after_the_colon() -> None:
    # FitError.Error() only appends " <histogram>." when the histogram has an entry.
    assert _fit(3, {}) == "0/3 nodes are available:"
    assert _fit(2, {"n1": Status(Code.UNSCHEDULABLE)}) == "0/2 nodes are available:"
