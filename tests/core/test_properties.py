"""Properties on generated clusters (hypothesis): never raises, scores in range, skew bound holds,
the incremental matching-pod counts equal a brute-force recount."""

from __future__ import annotations

import collections
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.labels import parse_label_selector
from scheduler.api.objects import Node, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config
from scheduler.framework.events import QueueingHint
from scheduler.simulate import Simulation
from scheduler.testing import make_node, make_pod
from tests.core.harness import HOSTNAME, ZONE

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ("app", "tier", "team")
VALUES = ("a", "b", "c")
labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
namespaces = st.sampled_from(("default", "ns1", "ns2"))


@st.composite
def nodes_st(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 12))):
        b = make_node(f"n{i}")
        if draw(st.booleans()) or i == 0:
            b.zone(draw(st.sampled_from(("z1", "z2", "z3"))))
        if draw(st.integers(0, 5)) == 0:
            b.unlabel(HOSTNAME)
        for _ in range(draw(st.integers(0, 2))):
            b.taint(
                draw(st.sampled_from(("k1", "k2"))),
                draw(st.sampled_from(("", "v"))),
                draw(st.sampled_from(("NoSchedule", "NoExecute", "PreferNoSchedule"))),
            )
        if draw(st.integers(0, 6)) == 0:
            b.unschedulable()
        for key, value in draw(labels_st).items():
            b.label(key, value)
        out.append(b.dict())
    return out


def selector_st() -> st.SearchStrategy[dict[str, Any] | None]:
    expr = st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
            "values": st.lists(st.sampled_from(VALUES), max_size=2),
        }
    )
    simple = st.just({"matchLabels": {"app": "a"}})  # often matches: makes the skew bound bite
    return st.one_of(
        simple,
        simple,
        st.none(),
        st.just({}),
        st.builds(lambda m, e: {"matchLabels": m, "matchExpressions": e}, labels_st, st.lists(expr, max_size=2)),
    )


@st.composite
def pending_st(draw: st.DrawFn, i: int) -> dict[str, Any]:
    """Mostly valid pods (so the skew bound gets exercised), sometimes invalid ones (never raise)."""
    invalid = draw(st.integers(0, 9)) == 0
    labels = draw(labels_st) | ({"app": "a"} if draw(st.booleans()) else {})
    b = make_pod(f"p{i}", draw(st.sampled_from(("default", "default", "ns1")))).labels(labels)
    b.created(f"2026-01-01T00:00:{i:02d}Z")
    keys = draw(st.lists(st.sampled_from((ZONE, HOSTNAME, "app")), max_size=3, unique=True))
    for key in keys:
        when = draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway")))
        extra = {"minDomains": draw(st.integers(1, 4))} if when == "DoNotSchedule" and draw(st.booleans()) else {}
        b.spread(key, draw(st.integers(1, 3)), when, selector=draw(selector_st()), **extra)
    if invalid:
        b.spread(
            ZONE,
            draw(st.integers(-1, 0)),
            draw(st.sampled_from(("Sometimes", "DoNotSchedule"))),
            match={"app": "a"},
            minDomains=draw(st.integers(-1, 2)),
        )
    if draw(st.booleans()):
        op = draw(st.sampled_from(("Exists", "Equal", "Bad") if invalid else ("Exists", "Equal")))
        key = draw(st.sampled_from(("k1", "k2")))
        b.toleration(
            key,
            op,
            "v" if op == "Equal" else "",
            effect=draw(
                st.sampled_from(
                    ("", "NoSchedule", "NoExecute", "Weird") if invalid else ("", "NoSchedule", "NoExecute")
                )
            ),
        )
    if draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")))
        values = {"In": ["a"], "NotIn": ["b"], "Gt": [draw(st.sampled_from(("3", "x1")))], "Lt": ["3"]}.get(op, [])
        b.required_terms({"matchExpressions": [{"key": draw(st.sampled_from(KEYS)), "operator": op, "values": values}]})
    if draw(st.booleans()):
        b.preferred_term(
            draw(st.integers(0, 101) if invalid else st.integers(1, 100)),
            {"matchExpressions": [{"key": draw(st.sampled_from((*KEYS, ZONE))), "operator": "Exists"}]},
        )
    return b.dict()


@st.composite
def cluster_st(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = draw(nodes_st())
    names = [n["metadata"]["name"] for n in nodes]
    existing = []
    for i in range(draw(st.integers(0, 25))):
        labels = draw(labels_st) | ({"app": "a"} if draw(st.booleans()) else {})
        b = make_pod(f"e{i}", draw(namespaces)).labels(labels).node(draw(st.sampled_from(names)))
        if draw(st.integers(0, 5)) == 0:
            b.terminating()
        existing.append(b.dict())
    pending = [draw(pending_st(i)) for i in range(draw(st.integers(1, 10)))]
    return nodes, existing, pending


def brute_force_counts(cache_pods: list[Pod], namespace: str, selector: Any) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for pod in cache_pods:
        if pod.namespace == namespace and not pod.terminating and selector.matches(pod.labels):
            counts[pod.node_name] += 1
    return counts


@SETTINGS
@given(cluster_st(), st.integers(0, 3))
def test_pipeline_never_raises_scores_stay_in_range_and_hard_skew_holds(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]], seed: int
) -> None:
    nodes, existing, pending = cluster
    sim = Simulation(load_config(None), seed=seed)
    sim.add_objects(nodes + existing)
    placed: list[Pod] = [Pod.from_dict(p) for p in existing]
    node_objs = {n.name: n for n in (Node.from_dict(n) for n in nodes)}
    for raw in pending:
        sim.pending = [Pod.from_dict(raw)]
        (attempt,) = sim.run()
        for scores in attempt.scores:
            assert all(0 <= v <= 100 for v in scores.normalized), scores
        pod = attempt.pod
        if attempt.host is None:
            continue
        assert not pod.errors
        for c in pod.spread_constraints:
            if c.when_unsatisfiable != "DoNotSchedule" or c.selector.empty:
                continue
            keys = [k.topology_key for k in pod.spread_constraints if k.when_unsatisfiable == "DoNotSchedule"]
            domain_of = {
                n: o.labels[c.topology_key]
                for n, o in node_objs.items()
                if all(k in o.labels for k in keys) and (not pod.node_selector and pod.required_affinity is None)
            }
            if pod.required_affinity is not None:
                continue  # the brute force here models the default policies without node affinity
            counts = brute_force_counts([p for p in placed if not p.terminating], pod.namespace, c.selector)
            per_domain: collections.Counter[str] = collections.Counter(dict.fromkeys(domain_of.values(), 0))
            for node, count in counts.items():
                if node in domain_of:
                    per_domain[domain_of[node]] += count
            minimum = 0 if len(per_domain) < (c.min_domains or 1) else min(per_domain.values(), default=0)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            assert per_domain[domain_of[attempt.host]] + self_match - minimum <= c.max_skew
        placed.append(Pod.from_dict({**raw, "spec": {**raw["spec"], "nodeName": attempt.host}}))


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("add", "remove", "assume", "forget", "relabel", "terminate")),
            st.integers(0, 9),
            namespaces,
            labels_st,
            st.integers(0, 3),
        ),
        max_size=60,
    ),
    st.lists(selector_st(), min_size=1, max_size=4),
)
def test_incremental_counts_equal_a_brute_force_recount(ops: list[Any], selectors: list[Any]) -> None:
    cache = Cache()
    for i in range(4):
        cache.add_node(make_node(f"n{i}").build())
    parsed = [parse_label_selector(s, "s", []) for s in selectors]
    for sel in parsed:  # register some selectors early so they are maintained incrementally
        cache.count_matching("default", sel)
    live: dict[str, Pod] = {}
    for op, idx, ns, labels, node in ops:
        name = f"p{idx}"
        key = f"{ns}/{name}"
        builder = make_pod(name, ns).labels(labels).node(f"n{node}")
        if op in {"add", "relabel"}:
            pod = builder.build()
            cache.add_pod(pod)
            live[key] = pod
        elif op == "terminate" and key in live:
            pod = builder.terminating().build()
            cache.update_pod(pod)
            live[key] = pod
        elif op == "remove" and key in live:
            cache.remove_pod(live.pop(key))
        elif op == "assume":
            pod = make_pod(name, ns).labels(labels).build()
            cache.assume_pod(pod, f"n{node}")
            live[key] = Pod.from_dict({**pod.raw, "spec": {**pod.raw["spec"], "nodeName": f"n{node}"}})
        elif op == "forget" and key in live and cache.is_assumed(key):
            cache.forget_pod(live.pop(key))
    for ns in ("default", "ns1", "ns2"):
        for sel in parsed:
            expected = brute_force_counts(list(live.values()), ns, sel)
            assert dict(cache.count_matching(ns, sel)) == {k: v for k, v in expected.items() if v}


@SETTINGS
@given(cluster_st())
def test_hints_never_raise_on_any_pair_of_objects(cluster: Any) -> None:
    nodes, existing, pending = cluster
    sim = Simulation(load_config(None))
    sim.add_objects(nodes + existing)
    fwk = sim.frameworks["spread-scheduler"]
    fwk.handle.snapshot = sim.cache
    objects: list[object] = [Node.from_dict(n) for n in nodes] + [Pod.from_dict(p) for p in existing] + [None]
    rng = random.Random(0)
    for raw in pending:
        pod = Pod.from_dict(raw)
        for events in fwk.enqueue_extensions().values():
            for reg in events:
                for _ in range(5):
                    hint = reg.hint(pod, rng.choice(objects), rng.choice(objects))
                    assert hint in (QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP)
