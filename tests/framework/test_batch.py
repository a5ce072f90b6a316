"""Opportunistic batching's state (``scheduler/framework/batch.py``): upstream's ``TestBatchBasic``
(batch_test.go), then each engagement condition and each reason the stored results go unused.

The fake profile signs pods with whatever ``signature`` is set to, and its only Filter is upstream's
``BatchTestPlugin``: a node holds at most one pod whose uid starts with "b" (blocking pods).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from scheduler.api.objects import Node, NodeName, Pod, PodKey
from scheduler.framework import batch as batching
from scheduler.framework.batch import OpportunisticBatch
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, StatusError
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node, make_pod
from tests.fakes import FakeClock

BLOCKING = "b"
NON_BLOCKING = "n"


def pod(name: str, uid: str) -> Pod:
    return make_pod(name).set("metadata.uid", uid).build()


@dataclass
class FakeProfile:
    """Just what ``OpportunisticBatch`` asks of a profile: ``sign_pod`` and ``run_filter_plugins``."""

    signature: bytes | None = b"sig"
    filter_error: bool = False

    def sign_pod(self, pod: Pod) -> bytes | None:
        return self.signature

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if self.filter_error:
            return Status.as_error("boom")
        for other in node_info.pods.values():
            if pod.uid.startswith(BLOCKING) and other.uid.startswith(BLOCKING):
                return Status(Code.UNSCHEDULABLE, ("unsched",))
        return None


@dataclass
class FakeSnapshot:
    nodes: dict[str, NodeInfo] = field(default_factory=dict)

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)


def node_with(name: str, *pods: Pod) -> NodeInfo:
    info = NodeInfo(Node.from_dict(make_node(name).dict()))
    for p in pods:
        info.pods[PodKey(p.key)] = p
    return info


def hint_for(
    b: OpportunisticBatch, profile: FakeProfile, p: Pod, cycle: int, snapshot: Any
) -> tuple[NodeName | None, bytes | None]:
    return b.get_node_hint(cast(Framework, profile), CycleState(), p, cycle, snapshot)


# -- upstream's TestBatchBasic, case by case ---------------------------------------------------

BASIC = [
    # (name, first uid, first sig, first succeeded, first others, skip a cycle, second uid, second sig,
    #  second chosen, expected hint, expected state left)
    pytest.param(BLOCKING, "sig", True, ["n1"], False, BLOCKING, "sig", "n1", "n1", None,
                 id="a second pod with the same signature gets a hint"),
    pytest.param(NON_BLOCKING, "sig", True, ["n1"], False, NON_BLOCKING, "sig2", "n1", None, None,
                 id="a second pod with a different signature doesn't get a hint"),
    pytest.param(NON_BLOCKING, "sig", True, ["n1"], False, NON_BLOCKING, "sig", "n1", None, None,
                 id="a second pod doesn't get a hint if it's not 1-pod-per-node"),
    pytest.param(BLOCKING, "sig", False, ["n1"], False, BLOCKING, "sig", "n1", None, None,
                 id="pod doesn't get hint if previous pod didn't scheduled"),
    pytest.param(BLOCKING, "sig", True, [], False, BLOCKING, "sig", "n4", None, None, id="empty list"),
    pytest.param(BLOCKING, "sig", True, None, False, BLOCKING, "sig", "n4", None, None, id="nil list"),
    pytest.param(BLOCKING, "sig", True, ["n1"], True, BLOCKING, "sig", "n1", None, None,
                 id="pod doesn't get hint because the previous pod is to a different profile"),
    pytest.param(BLOCKING, "sig", True, ["n1", "n2"], False, BLOCKING, "sig", "n1", "n1", ["n2"],
                 id="pod uses batch from preceding pod and leaves remaining batch to next pod"),
]  # fmt: skip


@pytest.mark.parametrize(
    "first_uid,first_sig,first_ok,first_others,skip,second_uid,second_sig,chosen,hint,left",
    BASIC,
)
def test_batch_basic(
    first_uid: str,
    first_sig: str,
    first_ok: bool,
    first_others: list[str] | None,
    skip: bool,
    second_uid: str,
    second_sig: str,
    chosen: str,
    hint: str | None,
    left: list[str] | None,
) -> None:
    b = OpportunisticBatch(FakeClock(100.0))
    profile = FakeProfile(first_sig.encode())
    first = pod("pod", first_uid + "1")
    got, _ = hint_for(b, profile, first, 1, FakeSnapshot())
    assert got is None
    if first_ok:
        others = [NodeName(n) for n in first_others or []]
        b.store_schedule_results(first_sig.encode(), got, "n3", others, 1)
    cycle = 3 if skip else 2
    profile.signature = second_sig.encode()
    snapshot = FakeSnapshot({"n3": node_with("n3", first)})
    got, _ = hint_for(b, profile, pod("pod2", second_uid + "2"), cycle, snapshot)
    assert got == hint
    b.store_schedule_results(second_sig.encode(), got, chosen, [], cycle)
    if left is None:
        assert b.state is None or not b.state.sorted_nodes
    else:
        assert b.state is not None
        assert (b.state.signature, b.state.sorted_nodes.names()) == (second_sig.encode(), left)


# -- each condition, and each reason the state goes unused ---------------------------------------


class Batched:
    """A first blocking pod placed on n3 with n1, n2 left, then a second one in the next cycle."""

    def __init__(self) -> None:
        self.clock = FakeClock(100.0)
        self.batch = OpportunisticBatch(self.clock)
        self.profile = FakeProfile()
        self.first = pod("first", "b1")
        self.batch.store_schedule_results(b"sig", None, "n3", [NodeName("n1"), NodeName("n2")], 1)
        self.snapshot = FakeSnapshot({"n3": node_with("n3", self.first)})

    def second(self, cycle: int = 2, uid: str = "b2") -> NodeName | None:
        got, _ = hint_for(self.batch, self.profile, pod("second", uid), cycle, self.snapshot)
        return got


class TestConditions:
    def test_every_condition_met_pops_the_next_node(self) -> None:
        b = Batched()
        assert b.second() == "n1"
        assert b.batch.state is not None
        assert b.batch.state.sorted_nodes.names() == ["n2"]

    def test_a_gap_in_the_cycle_count(self) -> None:
        """Another profile's pod, or a pod that failed (failures store nothing), came between."""
        b = Batched()
        assert b.second(cycle=3) is None
        assert b.batch.last_flush_reason == batching.FLUSH_POD_SKIPPED

    def test_an_unsigned_pod(self) -> None:
        b = Batched()
        b.profile.signature = None
        assert b.second() is None
        assert b.batch.last_flush_reason == batching.FLUSH_POD_INCOMPATIBLE

    def test_another_signature(self) -> None:
        b = Batched()
        b.profile.signature = b"other"
        assert b.second() is None
        assert b.batch.last_flush_reason == batching.FLUSH_POD_INCOMPATIBLE

    def test_expires_after_500ms(self) -> None:
        b = Batched()
        b.clock.now += 0.5
        assert b.second() == "n1"  # exactly 500 ms: not after the limit yet
        b.batch.store_schedule_results(b"sig", NodeName("n1"), "n1", [], 2)
        b.snapshot.nodes["n1"] = node_with("n1", pod("second", "b2"))
        b.clock.now += 0.001
        b.batch.last_cycle = batching.SchedulingCycle(2, "n1", succeeded=True)
        assert b.second(cycle=3, uid="b3") is None
        assert b.batch.last_flush_reason == batching.FLUSH_EXPIRED

    def test_the_chosen_node_is_gone(self) -> None:
        b = Batched()
        b.snapshot.nodes.clear()
        assert b.second() is None
        assert b.batch.last_flush_reason == batching.FLUSH_NODE_MISSING

    def test_the_pod_still_fits_the_chosen_node(self) -> None:
        """Not one pod per node: the chosen node might still be the best, the ranking is unknown."""
        b = Batched()
        assert b.second(uid="n2") is None
        assert b.batch.last_flush_reason == batching.FLUSH_NODE_NOT_FULL

    def test_a_filter_error_on_the_chosen_node_is_no_rejection(self) -> None:
        b = Batched()
        b.profile.filter_error = True
        assert b.second() is None
        assert b.batch.last_flush_reason == batching.FLUSH_NODE_NOT_FULL

    def test_unusable_state_is_kept_until_the_cycle_stores(self) -> None:
        """Upstream's batchStateCompatible only says no; StoreScheduleResults replaces the state."""
        b = Batched()
        b.profile.signature = b"other"
        assert b.second() is None
        assert b.batch.state is not None
        assert b.batch.state.sorted_nodes.names() == ["n1", "n2"]


class TestStore:
    def test_a_used_hint_keeps_the_rest(self) -> None:
        b = Batched()
        hint = b.second()
        b.batch.store_schedule_results(b"sig", hint, "n1", [NodeName("x")], 2)
        assert b.batch.state is not None
        assert b.batch.state.sorted_nodes.names() == ["n2"]
        assert b.batch.batched_pods == 1
        assert b.batch.last_cycle == batching.SchedulingCycle(2, "n1", succeeded=True)

    def test_an_unused_hint_stores_the_new_ranking(self) -> None:
        b = Batched()
        hint = b.second()
        b.batch.clock = FakeClock(100.0)
        b.batch.store_schedule_results(b"sig", hint, "n2", [NodeName("n5")], 2)
        state = b.batch.state
        assert state is not None
        assert (state.signature, state.sorted_nodes.names(), state.creation_time) == (b"sig", ["n5"], 100.0)

    def test_an_unsigned_pod_clears(self) -> None:
        b = Batched()
        b.batch.store_schedule_results(None, None, "n1", [NodeName("n2")], 2)
        assert b.batch.state is None
        assert b.batch.last_flush_reason == batching.FLUSH_POD_NOT_BATCHABLE

    def test_one_feasible_node_clears(self) -> None:
        b = Batched()
        b.batch.store_schedule_results(b"sig", None, "n1", [], 2)
        assert b.batch.state is None
        assert b.batch.last_flush_reason == batching.FLUSH_EMPTY_LIST


# -- 1.37: the last chosen node rescored (upstream's TestBatchBasic additions, TestBatchRescore and
# TestBatchRescoreChain at v1.37.2, runtime/batch_test.go) ---------------------------------------

CONFIGURABLE = "configurableScore"
PRESCORE_SEEN = "PreScore/seen"


@dataclass
class ConfigurableScore:
    """Upstream's ``configurableScorePlugin``: a fixed score, each step able to fail, and a Normalize
    that fails for a node PreScore was not given."""

    score_value: int = 0
    pre_score_err: bool = False
    score_err: bool = False
    norm_err: bool = False
    NAME: str = CONFIGURABLE

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        if self.pre_score_err:
            return Status.as_error("injected prescore error")
        state.write(PRESCORE_SEEN, frozenset(n.name for n in nodes))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if self.score_err:
            raise StatusError(Status.as_error("injected score error"))
        return self.score_value

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int], nodes: Any) -> Status | None:
        if self.norm_err:
            return Status.as_error("injected normalize error")
        seen = state.get(PRESCORE_SEEN)
        assert isinstance(seen, frozenset)
        missing = [n.name for n in nodes if n.name not in seen]
        return Status.as_error(f"NormalizeScore called for {missing}") if missing else None


@dataclass
class ConfigurableFilter:
    filter_err: bool = False
    NAME: str = "configurableFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.as_error("injected filter error") if self.filter_err else None


class BatchTestPlugin:
    NAME = "batchTest"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return FakeProfile().run_filter_plugins(state, pod, node_info)


class SignedFramework(Framework):
    """A real profile whose every pod signs ``sig``."""

    def sign_pod(self, pod: Pod) -> bytes | None:
        return b"sig"


def rescoring_framework(score: ConfigurableScore | None, flt: ConfigurableFilter | None = None) -> Framework:
    plugins: dict[str, Any] = {"batchTest": BatchTestPlugin()}
    points: dict[str, list[str]] = {"filter": ["batchTest"]}
    if flt is not None:
        plugins[flt.NAME] = flt
        points["filter"].append(flt.NAME)
    if score is not None:
        plugins[CONFIGURABLE] = score
        points["preScore"] = points["score"] = [CONFIGURABLE]
    return SignedFramework("p", plugins, points, {CONFIGURABLE: 1}, Handle())


def test_1_37_a_pod_with_a_nominated_node_gets_no_hint() -> None:
    b = OpportunisticBatch(FakeClock(100.0), rescore=True)
    b.store_schedule_results(b"sig", None, "n3", [NodeName("n1")], 1)
    second = make_pod("pod2").set("metadata.uid", "b2").set("status.nominatedNodeName", "n1").build()
    snapshot = FakeSnapshot({"n3": node_with("n3", pod("pod", "b1"))})
    assert hint_for(b, FakeProfile(), second, 2, snapshot)[0] is None
    assert b.last_flush_reason == batching.FLUSH_POD_NOMINATED


def test_1_35_a_pod_with_a_nominated_node_still_pops_the_hint() -> None:
    b = OpportunisticBatch(FakeClock(100.0))
    b.store_schedule_results(b"sig", None, "n3", [NodeName("n1")], 1)
    second = make_pod("pod2").set("metadata.uid", "b2").set("status.nominatedNodeName", "n1").build()
    snapshot = FakeSnapshot({"n3": node_with("n3", pod("pod", "b1"))})
    assert hint_for(b, FakeProfile(), second, 2, snapshot)[0] == "n1"


N1_CACHED_SCORE = 50

RESCORE = [
    # (id, fresh score of n2, filter error, prescore error, score error, normalize error, chosen node
    #  missing, cached node missing, expected hint, expected nodes left)
    pytest.param(100, False, False, False, False, False, False, "n2", ["n1"], id="rescored node wins"),
    pytest.param(10, False, False, False, False, False, False, "n1", ["n2"], id="rescored node loses"),
    pytest.param(100, True, False, False, False, False, False, None, ["n1"], id="filter error gives no hint"),
    pytest.param(0, False, True, False, False, False, False, None, ["n1"], id="prescore error gives no hint"),
    pytest.param(0, False, False, True, False, False, False, None, ["n1"], id="score error gives no hint"),
    pytest.param(0, False, False, False, True, False, False, None, ["n1"], id="normalize error gives no hint"),
    pytest.param(0, False, False, False, False, True, False, None, ["n1"],
                 id="chosen node missing from lister gives no hint"),
    pytest.param(100, False, False, False, False, False, True, None, ["n1"],
                 id="cached node missing from lister gives no hint"),
]  # fmt: skip


@pytest.mark.parametrize(
    "score,filter_err,pre_score_err,score_err,norm_err,chosen_missing,cached_missing,hint,left", RESCORE
)
def test_batch_rescore(
    score: int,
    filter_err: bool,
    pre_score_err: bool,
    score_err: bool,
    norm_err: bool,
    chosen_missing: bool,
    cached_missing: bool,
    hint: str | None,
    left: list[str],
) -> None:
    """The first pod (non-blocking) went to n2 with n1 left at a cached raw score of 50; the second
    still fits n2, which is scored afresh and competes with n1."""
    fwk = rescoring_framework(
        ConfigurableScore(score, pre_score_err, score_err, norm_err), ConfigurableFilter(filter_err)
    )
    b = OpportunisticBatch(FakeClock(100.0), rescore=True)
    first = pod("pod1", "a-1")
    b.store_schedule_results(
        b"sig", None, "n2", [NodeName("n1")], 1, lambda: {NodeName("n1"): {CONFIGURABLE: N1_CACHED_SCORE}}
    )
    snapshot = FakeSnapshot()
    if not chosen_missing:
        snapshot.nodes["n2"] = node_with("n2", first)
        if not cached_missing:
            snapshot.nodes["n1"] = node_with("n1")
    got, _ = b.get_node_hint(fwk, CycleState(), pod("pod2", "a-2"), 2, snapshot)
    assert got == hint
    assert b.state is not None
    assert b.state.sorted_nodes.names() == left


def test_batch_rescore_chain() -> None:
    """Three pods: n2 rescores to 100 each time and beats n1's 50; n1 stays for a fourth."""
    fwk = rescoring_framework(ConfigurableScore(100))
    b = OpportunisticBatch(FakeClock(100.0), rescore=True)
    first = pod("pod1", "a-1")
    b.store_schedule_results(
        b"sig", None, "n2", [NodeName("n1")], 1, lambda: {NodeName("n1"): {CONFIGURABLE: N1_CACHED_SCORE}}
    )
    snapshot = FakeSnapshot({"n1": node_with("n1"), "n2": node_with("n2", first)})
    hint2, _ = b.get_node_hint(fwk, CycleState(), pod("pod2", "a-2"), 2, snapshot)
    assert hint2 == "n2"
    b.store_schedule_results(b"sig", hint2, "n2", [], 2)
    hint3, _ = b.get_node_hint(fwk, CycleState(), pod("pod3", "a-3"), 3, snapshot)
    assert hint3 == "n2"
    assert b.state is not None
    assert b.state.sorted_nodes.names() == ["n1"]


def test_1_37_one_pod_per_node_keeps_the_ranking() -> None:
    """A blocking pod that no longer fits the chosen node pops the next node, without rescoring."""
    fwk = rescoring_framework(ConfigurableScore(100, score_err=True))
    b = OpportunisticBatch(FakeClock(100.0), rescore=True)
    b.store_schedule_results(b"sig", None, "n3", [NodeName("n1"), NodeName("n2")], 1)
    snapshot = FakeSnapshot({"n3": node_with("n3", pod("pod1", "b-1"))})
    assert b.get_node_hint(fwk, CycleState(), pod("pod2", "b-2"), 2, snapshot)[0] == "n1"


@dataclass
class ByName:
    """Fresh scores per node name, and a Normalize that keeps only the tens from its second call on
    (so a renormalization makes two nodes tie that did not tie before)."""

    fresh: dict[str, int]
    calls: int = 0
    NAME: str = CONFIGURABLE

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self.fresh[node_info.name]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int], nodes: Any) -> Status | None:
        self.calls += 1
        if self.calls > 1:
            scores[:] = [s // 10 * 10 for s in scores]
        return None


def test_1_37_a_node_rescored_earlier_loses_a_new_tie() -> None:
    """Upstream scores the rescored node into a fresh entry (Randomizer 0), which its heap pops after
    every stored node of the same total. n2, rescored for pod2 at 45, sat ahead of n4 (40); the
    rescore for pod3 floors both to 40: n4, stored from pod1's full scoring, comes first."""
    plugin = ByName({"n2": 45, "n1": 10})
    fwk = SignedFramework("p", {"batchTest": BatchTestPlugin(), CONFIGURABLE: plugin},
                          {"filter": ["batchTest"], "preScore": [CONFIGURABLE], "score": [CONFIGURABLE]},
                          {CONFIGURABLE: 1}, Handle())  # fmt: skip
    b = OpportunisticBatch(FakeClock(100.0), rescore=True)
    cached = {NodeName("n1"): {CONFIGURABLE: 50}, NodeName("n4"): {CONFIGURABLE: 40}}
    b.store_schedule_results(b"sig", None, "n2", [NodeName("n1"), NodeName("n4")], 1, lambda: cached)
    snapshot = FakeSnapshot({"n1": node_with("n1"), "n2": node_with("n2", pod("pod1", "c-1")), "n4": node_with("n4")})
    hint2, _ = b.get_node_hint(fwk, CycleState(), pod("pod2", "c-2"), 2, snapshot)
    assert hint2 == "n1"
    assert b.state is not None and b.state.sorted_nodes.names() == ["n2", "n4"]
    b.store_schedule_results(b"sig", hint2, "n1", [], 2)
    snapshot.nodes["n1"] = node_with("n1", pod("pod2", "c-2"))
    hint3, _ = b.get_node_hint(fwk, CycleState(), pod("pod3", "c-3"), 3, snapshot)
    assert hint3 == "n4"
    assert b.state.sorted_nodes.names() == ["n2", "n1"]
