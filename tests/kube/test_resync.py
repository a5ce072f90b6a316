"""Reconciling the cache with a fresh LIST (after API trouble): client-go ``Replace``'s deletions.

Objects deleted during a watch gap leave the cache; objects newer than the list stay; additions and
updates are left to the watch (a list newer than a lagging watch changes nothing); a watch replaying
events older than what we hold cannot undo newer state.
"""

from __future__ import annotations

import random
from typing import Any

from scheduler.api.fields import FieldError
from scheduler.api.labels import Selector, parse_label_selector
from scheduler.config import load_config
from scheduler.scheduler import Scheduler
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod
from tests.fakes import FakeBinder, FakeClock, FakeRecorder


def listed(*objs: dict[str, Any]) -> dict[str, str]:
    """What a LIST hands to ``reconcile``: key -> resourceVersion."""
    out = {}
    for obj in objs:
        meta = obj["metadata"]
        key = meta["name"] if obj["kind"] == "Node" else f"{meta.get('namespace', 'default')}/{meta['name']}"
        out[key] = meta["resourceVersion"]
    return out


def versioned(builder: NodeBuilder | PodBuilder, version: int) -> dict[str, Any]:
    obj = builder.dict()
    obj["metadata"]["resourceVersion"] = str(version)
    return obj


def scheduler() -> Scheduler:
    return Scheduler(load_config(None), FakeBinder(), FakeRecorder(), clock=FakeClock(), rng=random.Random(0))


def web(name: str) -> PodBuilder:
    return make_pod(name).label("app", "web").spread("kubernetes.io/hostname", 1, match={"app": "web"})


def test_a_pod_deleted_in_a_watch_gap_stops_counting() -> None:
    sched = scheduler()
    n1, n2 = versioned(make_node("n1"), 1), versioned(make_node("n2"), 2)
    gone = versioned(web("gone").node("n1"), 10)
    kept = versioned(web("kept").node("n2"), 11)
    for obj in (n1, n2, gone, kept):
        sched.on_object("ADDED", obj)
    assert dict(sched.cache.count_matching("default", _web_selector(sched))) == {"n1": 1, "n2": 1}
    # "gone" was deleted while the watch was away: the list (at version 20) no longer has it.
    assert sched.reconcile("Pod", listed(kept), "20") == 1
    assert sched.cache.pod("default/gone") is None and sched.cache.pod("default/kept") is not None
    assert dict(sched.cache.count_matching("default", _web_selector(sched))) == {"n2": 1}


def _web_selector(sched: Scheduler) -> Selector:
    errors: list[FieldError] = []
    selector = parse_label_selector({"matchLabels": {"app": "web"}}, "selector", errors)
    assert not errors
    return selector


def test_a_node_deleted_in_a_watch_gap_is_never_chosen() -> None:
    sched = scheduler()
    for obj in (versioned(make_node("n1"), 1), versioned(make_node("gone"), 2)):
        sched.on_object("ADDED", obj)
    assert sched.reconcile("Node", listed(versioned(make_node("n1"), 1)), "30") == 1
    assert [info.name for info in sched.cache.node_infos()] == ["n1"]


def test_objects_newer_than_the_list_are_left_to_the_watch() -> None:
    """A pod created after the list was taken is not in it, and must not be dropped."""
    sched = scheduler()
    sched.on_object("ADDED", versioned(make_node("n1"), 1))
    sched.on_object("ADDED", versioned(make_pod("late").node("n1"), 40))
    sched.on_object("ADDED", versioned(make_pod("pending-late"), 41))
    assert sched.reconcile("Pod", {}, "30") == 0
    assert sched.cache.pod("default/late") is not None
    assert sched.queue.location("default/pending-late") is not None


def test_a_list_newer_than_a_lagging_watch_changes_nothing() -> None:
    """Updates and additions the list shows are the watch's to deliver (it lags, it does not lose them)."""
    sched = scheduler()
    sched.on_object("ADDED", versioned(make_node("n1"), 1))
    sched.on_object("ADDED", versioned(make_pod("p").node("n1"), 10))
    relabelled = versioned(make_pod("p").label("app", "web").node("n1"), 15)
    missed = versioned(make_pod("missed").node("n1"), 16)
    assert sched.reconcile("Pod", listed(relabelled, missed), "20") == 0
    pod = sched.cache.pod("default/p")
    assert pod is not None and dict(pod.labels) == {}
    assert sched.cache.pod("default/missed") is None


def test_a_replayed_older_event_cannot_undo_newer_state() -> None:
    """Holding the pod bound at version 18, a watch replaying its version 12 (still pending) is ignored."""
    sched = scheduler()
    sched.on_object("ADDED", versioned(make_node("n1"), 1))
    sched.on_object("ADDED", versioned(make_pod("p"), 10))
    sched.on_object("MODIFIED", versioned(make_pod("p").node("n1"), 18))
    assert sched.cache.pod("default/p") is not None
    sched.on_object("MODIFIED", versioned(make_pod("p"), 12))
    pod = sched.cache.pod("default/p")
    assert pod is not None and pod.node_name == "n1"
    assert not sched.schedule_one(), "nothing to schedule: the pod is bound"


def test_non_numeric_versions_never_count_as_older() -> None:
    """resourceVersions are opaque: without integers, every differing event is applied."""
    sched = scheduler()
    sched.on_object("ADDED", versioned(make_node("n1"), 1))
    pod = make_pod("p").node("n1").dict()
    pod["metadata"]["resourceVersion"] = "b"
    sched.on_object("ADDED", pod)
    pod = make_pod("p").label("x", "y").node("n1").dict()
    pod["metadata"]["resourceVersion"] = "a"
    sched.on_object("MODIFIED", pod)
    held = sched.cache.pod("default/p")
    assert held is not None and dict(held.labels) == {"x": "y"}
