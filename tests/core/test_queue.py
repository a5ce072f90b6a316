"""The scheduling queue on its own: order, backoff, hints, in-flight events, flushes (spec section 5)."""

from __future__ import annotations

import pytest

from scheduler.backend.queue.scheduling_queue import QueuedPodInfo, SchedulingQueue, build_hint_map
from scheduler.config import load_config
from scheduler.framework import events as ev
from scheduler.profile import build_frameworks
from scheduler.testing import make_node, make_pod

NOW = 1000.0


def queue() -> SchedulingQueue:
    return SchedulingQueue(build_frameworks(load_config(None)))


def fail(q: SchedulingQueue, qpi: QueuedPodInfo, now: float, *plugins: str) -> None:
    qpi.unschedulable_plugins = set(plugins)
    q.add_unschedulable_if_not_present(qpi, now, error=not plugins)


def test_active_queue_orders_by_priority_then_arrival() -> None:
    q = queue()
    q.add(make_pod("low").priority(1).build(), NOW)
    q.add(make_pod("high").priority(9).build(), NOW + 1)
    q.add(make_pod("low2").priority(1).build(), NOW + 2)
    popped = [q.pop(NOW + 3) for _ in range(3)]
    assert [p.pod.name for p in popped if p] == ["high", "low", "low2"]
    assert q.pop(NOW + 3) is None


def test_a_retried_pod_goes_behind_pods_that_waited_longer() -> None:
    q = queue()
    q.add(make_pod("a").build(), NOW)
    q.add(make_pod("b").build(), NOW + 1)
    a = q.pop(NOW + 2)
    assert a is not None and a.pod.name == "a"
    q.add_unschedulable_if_not_present(a, NOW + 3, error=True)  # no rejectors: back after backoff
    b = q.pop(NOW + 10)
    assert b is not None and b.pod.name == "b"


@pytest.mark.parametrize(("count", "seconds"), [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10)])
def test_backoff_doubles_to_ten_seconds(count: int, seconds: float) -> None:
    q = queue()
    qpi = QueuedPodInfo(make_pod("p").build(), NOW, unschedulable_count=count)
    assert q.backoff_duration(qpi) == seconds
    errored = QueuedPodInfo(make_pod("p").build(), NOW, unschedulable_count=1, consecutive_errors_count=count)
    assert q.backoff_duration(errored) == (seconds if count else 1)


def test_backoff_expiry_is_truncated_to_the_second_and_inclusive() -> None:
    q = queue()
    qpi = QueuedPodInfo(make_pod("p").build(), NOW + 0.7, unschedulable_count=1)
    assert q.backoff_expiry(qpi) == NOW + 1
    assert q.is_backing_off(qpi, NOW + 1.9)  # expiry window == current window: still backing off
    assert not q.is_backing_off(qpi, NOW + 2.0)


def test_error_backoff_pods_are_not_popped_early_but_rejected_ones_are() -> None:
    q = queue()
    q.add(make_pod("err").build(), NOW)
    q.add(make_pod("rej").build(), NOW)
    err, rej = q.pop(NOW), q.pop(NOW)
    assert err is not None and rej is not None
    q.add_unschedulable_if_not_present(err, NOW, error=True)
    assert q.location("default/err") == "error"
    rej.unschedulable_plugins = {"PodTopologySpread"}
    q.add_unschedulable_if_not_present(rej, NOW, error=False)
    assert q.location("default/rej") == "unschedulable"
    moved = q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n").build(), NOW)
    assert moved == 1 and q.location("default/rej") == "backoff"
    popped = q.pop(NOW)  # activeQ empty: the backing-off rejected pod is taken early, the errored one is not
    assert popped is not None and popped.pod.name == "rej"
    assert q.pop(NOW) is None
    again = q.pop(NOW + 2)
    assert again is not None and again.pod.name == "err"


def test_only_the_rejecting_plugins_hints_are_asked() -> None:
    q = queue()
    q.add(make_pod("p").labels({"foo": "bar"}).build(), NOW)
    qpi = q.pop(NOW)
    assert qpi is not None
    fail(q, qpi, NOW, "TaintToleration")
    # A pod add event only PodTopologySpread registers for: TaintToleration is not asked, nothing moves.
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, make_pod("x").node("n").build(), NOW)
    assert q.location("default/p") == "unschedulable"
    # An untainted node appearing: TaintToleration's hint says Queue.
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n").build(), NOW)
    assert q.location("default/p") in ("active", "backoff")


def test_node_affinity_also_answers_taint_updates_always_queue_109437() -> None:
    regs = build_hint_map(build_frameworks(load_config(None)))["spread-scheduler"]
    taint_regs = [
        r for plugin, r in regs if plugin == "NodeAffinity" and r.event.action & ev.ActionType.UPDATE_NODE_TAINT
    ]
    assert len(taint_regs) == 1
    assert taint_regs[0].hint(make_pod("p").build(), None, None) is ev.QueueingHint.QUEUE


def test_events_during_the_attempt_are_replayed_when_it_fails() -> None:
    q = queue()
    q.add(make_pod("p").build(), NOW)
    qpi = q.pop(NOW)
    assert qpi is not None
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("fresh").build(), NOW)  # while in flight
    fail(q, qpi, NOW, "TaintToleration")
    assert q.location("default/p") in ("active", "backoff")


def test_without_in_flight_events_the_pod_is_parked() -> None:
    q = queue()
    q.add(make_pod("p").build(), NOW)
    qpi = q.pop(NOW)
    assert qpi is not None
    fail(q, qpi, NOW, "TaintToleration")
    assert q.location("default/p") == "unschedulable"


def test_five_minute_flush_is_strictly_greater_and_skips_gated_pods() -> None:
    q = queue()
    q.add(make_pod("p").build(), NOW)
    q.add(make_pod("gated").gate("wait").build(), NOW)
    assert q.location("default/gated") == "unschedulable"
    qpi = q.pop(NOW)
    assert qpi is not None
    fail(q, qpi, NOW, "TaintToleration")
    assert q.flush_unschedulable_leftover(NOW + 300) == 0
    assert q.flush_unschedulable_leftover(NOW + 300.5) == 1
    assert q.location("default/gated") == "unschedulable"


def test_removing_the_last_gate_releases_the_pod() -> None:
    q = queue()
    gated = make_pod("p").gate("wait")
    old = gated.build()
    q.add(old, NOW)
    gated.spec.pop("schedulingGates")
    q.update(old, gated.build(), NOW)
    assert q.location("default/p") == "active"


def test_update_in_active_queue_replaces_and_delete_removes() -> None:
    q = queue()
    old = make_pod("p").priority(1).build()
    q.add(old, NOW)
    q.add(make_pod("q").priority(5).build(), NOW)
    q.update(old, make_pod("p").priority(10).build(), NOW)
    first = q.pop(NOW)
    assert first is not None and first.pod.name == "p" and first.pod.priority == 10
    q.delete("default/q")
    assert q.pop(NOW) is None and len(q) == 0


def test_pending_counts() -> None:
    q = queue()
    q.add(make_pod("a").build(), NOW)
    q.add(make_pod("g").gate("x").build(), NOW)
    q.add(make_pod("u").build(), NOW)
    u = q.pop(NOW)
    assert u is not None
    fail(q, u, NOW, "TaintToleration")
    assert q.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 1, "gated": 1}
