"""Properties on generated clusters (hypothesis).

Clusters: nodes with zone/hostname labels (some missing), taints of every effect, cordoned nodes;
existing pods with random labels in three namespaces, some terminating, finished, of another
scheduler or on a node that does not exist. Pending pods: nodeSelector, required/preferred affinity
with every operator (Gt/Lt and matchFields too), tolerations, 0-3 spread constraints with every
field, and invalid variants: junk values dropped into any field.

Properties:

* the pipeline never raises, every hint function never raises, normalized scores stay in 0..100;
* PodTopologySpread's hard verdict on every node it judged equals a brute-force recount written here
  from the rules of spec 4.4-4.6 (no plugin code), and every placement keeps the skew: the chosen
  domain ends at most ``maxSkew`` above the minimum, and a skew that was within ``maxSkew`` stays so;
* the cache's incremental per-selector counts equal a recount after random add / update / remove /
  assume / forget / node removal sequences, and a small ``PodCountIndex`` survives evictions;
* a pod is never both assumed and waiting in the queue (Simulation and the live loop).

A second, larger generator (up to 12 nodes, 25 existing and 10 pending pods) checks the pipeline
with a simpler skew recount, the incremental counts, and that hints never raise.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.api.labels import parse_label_selector
from scheduler.api.objects import Node, Pod
from scheduler.api.taints import find_untolerated
from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.pod_counts import PodCountIndex
from scheduler.backend.queue.queueing_hints import build_hint_map
from scheduler.config import load_config
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import EnqueueExtensions
from scheduler.schedule_one import Attempt
from scheduler.scheduler import Scheduler
from scheduler.simulate import Simulation
from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
KEYS = ("app", "tier")
VALUES = ("a", "b")
NAMESPACES = ("default", "ns1", "ns2")
MOSTLY_DEFAULT = st.sampled_from(("default", "default", "default", "ns1", "ns2"))  # so pods meet in one namespace
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
QUEUED = {"active", "backoff", "error", "unschedulable"}

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
junk_st: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(["", "x", "In", "Gt", "1", "zone"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["key", "operator", "values", "maxSkew", "topologyKey", "labelSelector", "matchLabels"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


# -- generators ------------------------------------------------------------------------------------


@st.composite
def node_objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        node = make_node(f"n{i}")
        if draw(st.integers(0, 3)):
            node.zone(draw(st.sampled_from(("z1", "z2", "z3"))))
        if draw(st.integers(0, 4)) == 0:
            node.unlabel(HOSTNAME)
        for key, value in draw(labels_st).items():
            node.label(key, value)
        if draw(st.booleans()):
            node.label("gen", draw(st.sampled_from(("1", "5", "05", "x", "-3"))))
        for _ in range(draw(st.integers(0, 2))):
            node.taint(
                draw(st.sampled_from(("k1", "k2"))), draw(st.sampled_from(("", "v"))), draw(st.sampled_from(EFFECTS))
            )
        if draw(st.integers(0, 5)) == 0:
            node.unschedulable()
        out.append(node.dict())
    return out


@st.composite
def selector_dicts(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return None
    if kind == 1:
        return {}
    if kind in (2, 3):
        return {
            "matchLabels": draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), min_size=1, max_size=2))
        }
    exprs = []
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
        expr: dict[str, Any] = {"key": draw(st.sampled_from(KEYS)), "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True))
        exprs.append(expr)
    return {"matchExpressions": exprs}


@st.composite
def constraint_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A valid constraint with every optional field sometimes set (invalid ones come from INVALID_TWEAKS)."""
    when = draw(st.sampled_from(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway")))
    c: dict[str, Any] = {
        "maxSkew": draw(st.sampled_from((1, 1, 2, 3))),
        "topologyKey": draw(st.sampled_from((ZONE, HOSTNAME, "app"))),
        "whenUnsatisfiable": when,
    }
    selector = draw(selector_dicts())
    if selector is not None:
        c["labelSelector"] = selector
        if draw(st.integers(0, 3)) == 0:
            c["matchLabelKeys"] = ["team"]  # never a key of the generated selectors
    if when == "DoNotSchedule" and draw(st.integers(0, 3)) == 0:
        c["minDomains"] = draw(st.integers(1, 4))
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if draw(st.booleans()):
            c[policy] = draw(st.sampled_from(("Honor", "Ignore")))
    return c


# One broken field per invalid pod: (section, field, value).
INVALID_TWEAKS: list[tuple[str, str, Any]] = [
    ("spec", "topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]),
    ("spec", "topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}]),
    ("spec", "topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Sometimes"}]),
    (
        "spec",
        "topologySpreadConstraints",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}],
    ),
    (
        "spec",
        "topologySpreadConstraints",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Maybe"}],
    ),
    (
        "spec",
        "topologySpreadConstraints",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]}],
    ),
    ("spec", "tolerations", [{"operator": "Equal", "value": "v"}]),
    ("spec", "tolerations", [{"key": "k1", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
    (
        "spec",
        "affinity",
        {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}},
    ),
    (
        "spec",
        "affinity",
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
    ),
]


@st.composite
def node_selector_terms(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {}
    exprs = []
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")))
        key = draw(st.sampled_from((ZONE, "app", "gen")))
        expr: dict[str, Any] = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = draw(st.lists(st.sampled_from(("z1", "z2", "a", "b")), min_size=1, max_size=2))
        elif op in ("Gt", "Lt"):
            expr["values"] = [draw(st.sampled_from(("2", "0", "abc", "1_0")))]
        exprs.append(expr)
    if exprs:
        term["matchExpressions"] = exprs
    if draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(("In", "NotIn")))
        term["matchFields"] = [{"key": "metadata.name", "operator": op, "values": [f"n{draw(st.integers(0, 5))}"]}]
    return term


@st.composite
def pending_pod(draw: st.DrawFn, index: int) -> dict[str, Any]:
    pod = make_pod(f"p{index}", draw(MOSTLY_DEFAULT)).labels(draw(labels_st))
    pod.created(f"2026-01-01T00:00:{index:02d}Z")
    if draw(st.integers(0, 3)) == 0:
        pod.node_selector({ZONE: draw(st.sampled_from(("z1", "z2")))})
    if draw(st.integers(0, 2)) == 0:
        pod.required_terms(*draw(st.lists(node_selector_terms(), min_size=1, max_size=2)))
    for _ in range(draw(st.integers(0, 2))):
        pod.preferred_term(draw(st.sampled_from((1, 50, 100))), draw(node_selector_terms()))
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            key = draw(st.sampled_from(("k1", "k2", "node.kubernetes.io/unschedulable", "")))
            pod.toleration(key, "Exists", effect=draw(st.sampled_from(("", *EFFECTS))))
        else:
            key = draw(st.sampled_from(("k1", "k2")))
            pod.toleration(
                key,
                draw(st.sampled_from(("Equal", ""))),
                draw(st.sampled_from(("", "v"))),
                draw(st.sampled_from(("", *EFFECTS))),
            )
    constraints = draw(
        st.lists(constraint_dicts(), max_size=3, unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"]))
    )
    if constraints:
        pod.set("spec.topologySpreadConstraints", constraints)
    if draw(st.integers(0, 2)) == 0:
        pod.label("team", draw(st.sampled_from(VALUES)))
    if draw(st.integers(0, 5)) == 0:
        pod.owner("ReplicaSet", "rs1")
    if draw(st.integers(0, 7)) == 0:
        pod.gate("wait")
    obj = pod.dict()
    broken = draw(st.integers(0, 9))
    if broken == 0:  # an invalid pod: one known-invalid field
        section, field, value = draw(st.sampled_from(INVALID_TWEAKS))
        obj[section][field] = value
    elif broken == 1:  # junk in one field (may happen to be valid)
        section, field = draw(
            st.sampled_from(
                [
                    ("spec", "tolerations"),
                    ("spec", "affinity"),
                    ("spec", "topologySpreadConstraints"),
                    ("spec", "nodeSelector"),
                    ("spec", "priority"),
                    ("metadata", "labels"),
                ]
            )
        )
        obj[section][field] = draw(junk_st)
    return obj


@st.composite
def scenarios(draw: st.DrawFn) -> list[dict[str, Any]]:
    nodes = draw(node_objects())
    names = [n["metadata"]["name"] for n in nodes]
    objects: list[dict[str, Any]] = list(nodes)
    for i in range(draw(st.integers(0, 10))):
        pod = make_pod(f"e{i}", draw(MOSTLY_DEFAULT)).labels(draw(labels_st))
        pod.node(draw(st.sampled_from([*names, "ghost"])))
        if draw(st.integers(0, 4)) == 0:
            pod.terminating()
        if draw(st.integers(0, 6)) == 0:
            pod.phase("Succeeded")
        if draw(st.integers(0, 4)) == 0:
            pod.scheduler("default-scheduler")
        objects.append(pod.dict())
    if draw(st.booleans()):
        objects.append(
            {"kind": "Service", "metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"app": "a"}}}
        )
    if draw(st.booleans()):
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "rs1", "namespace": draw(st.sampled_from(NAMESPACES))},
                "spec": {"selector": {"matchLabels": {"tier": "a"}}},
            }
        )
    for i in range(draw(st.integers(1, 3))):
        objects.append(draw(pending_pod(i)))
    return objects


def run(objects: Sequence[dict[str, Any]]) -> tuple[Simulation, list[Attempt]]:
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects(objects)
    return sim, sim.run()


# -- pipeline --------------------------------------------------------------------------------------


@SETTINGS
@given(scenarios())
def test_pipeline_never_raises_and_normalized_scores_stay_in_range(objects: list[dict[str, Any]]) -> None:
    """Every pending pod gets one attempt; scores in range; decided pods assumed, the others not."""
    sim, attempts = run(objects)
    assert len(attempts) == len(sim.pending)
    for attempt in attempts:
        assert attempt.succeeded == (attempt.host is not None)
        assert "invalid score" not in attempt.message
        if attempt.pod.errors and not attempt.pod.scheduling_gates:  # PreEnqueue (gates) runs first
            assert attempt.host is None and attempt.message.startswith("invalid pod: ")
        if attempt.host is not None:
            assert attempt.host in attempt.feasible
        for plugin_scores in attempt.scores:
            assert len(plugin_scores.normalized) == len(attempt.scored_nodes)
            assert all(0 <= value <= 100 for value in plugin_scores.normalized), plugin_scores
        if attempt.totals:
            totals = {str(node): total for node, total in attempt.totals.items()}
            assert attempt.host is None or totals[attempt.host] == max(totals.values())
        # A pod is never both assumed and pending: decided pods are assumed on their node, others absent.
        key = attempt.pod.key
        if attempt.host is not None:
            assert sim.cache.is_assumed(key) and sim.cache.pod_node(key) == attempt.host
        else:
            assert not sim.cache.is_assumed(key) and sim.cache.pod(key) is None


JUNK_OBJECTS: tuple[object, ...] = (None, "not-an-object", 5, {}, {"kind": "Node"})


@SETTINGS
@given(scenarios(), st.randoms(use_true_random=False))
def test_every_hint_never_raises(objects: list[dict[str, Any]], rnd: random.Random) -> None:
    """Every registered hint answers Queue or QueueSkip for any (old, new) pair, junk included."""
    sim, _ = run(objects)  # sets every plugin's handle.snapshot to the cache, as a cycle does
    nodes = [info.node for info in sim.cache.node_infos()]
    pods: list[Pod] = [*sim.pending, *(Pod.from_dict(o) for o in objects if o.get("kind") == "Pod")]
    candidates: list[object] = [*nodes, *pods, *JUNK_OBJECTS]
    hint_map = build_hint_map(sim.frameworks)
    for profile, registrations in hint_map.items():
        assert all(isinstance(sim.frameworks[profile].plugins[p], EnqueueExtensions) for p, _ in registrations)
        for pending in sim.pending:
            for _, registration in registrations:
                for _ in range(6):
                    old, new = rnd.choice(candidates), rnd.choice(candidates)
                    assert registration.hint(pending, old, new) in (QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP)
                for node in nodes[:2]:
                    assert registration.hint(pending, None, node) in (QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP)
                    assert registration.hint(pending, node, node) in (QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP)


# -- PodTopologySpread against a brute-force recount -----------------------------------------------


def raw_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector of the generator's shapes, evaluated from its dict form."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != ("" if value is None else value):  # the API stores a null value as ""
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or ()
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[op]
        if not ok:
            return False
    return True


class HardConstraint:
    """One DoNotSchedule constraint of a valid pod, with the spec's defaults applied by hand."""

    def __init__(self, raw: Mapping[str, Any], pod: Pod) -> None:
        self.key: str = raw["topologyKey"]
        self.max_skew: int = raw["maxSkew"]
        self.min_domains: int = raw.get("minDomains") or 1
        self.honor_affinity = raw.get("nodeAffinityPolicy", "Honor") == "Honor"
        self.honor_taints = raw.get("nodeTaintsPolicy", "Ignore") == "Honor"
        self.selector: Mapping[str, Any] | None = raw.get("labelSelector")
        # matchLabelKeys: the pod's own values, ANDed (a nil selector stays "nothing").
        self.extra = {k: pod.labels[k] for k in raw.get("matchLabelKeys") or () if k in pod.labels}
        sel = self.selector or {}
        self.empty = self.selector is not None and not sel.get("matchLabels") and not sel.get("matchExpressions")
        self.empty = self.empty and not self.extra

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.selector is None:
            return False
        return raw_selector_matches(self.selector, labels) and all(labels.get(k) == v for k, v in self.extra.items())


def node_counts(
    pod: Pod, node: Node, constraint: HardConstraint, keys: Iterable[str], placed: Mapping[str, list[Pod]]
) -> int | None:
    """Matching pods on ``node`` for ``constraint``, or None when the node is no domain member."""
    if not all(k in node.labels for k in keys):
        return None
    if constraint.honor_affinity:
        if pod.node_selector and any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return None
        if pod.required_affinity is not None and not pod.required_affinity.matches(node.name, node.labels):
            return None
    if constraint.honor_taints and find_untolerated(node.taints, pod.tolerations, HARD_EFFECTS) is not None:
        return None
    if constraint.empty:
        return 0  # labelSelector {}: counts 0 everywhere (spec 4.6 quirk)
    return sum(
        1
        for other in placed.get(node.name, ())
        if other.namespace == pod.namespace and not other.terminating and constraint.matches(other.labels)
    )


def domain_counts(
    pod: Pod, nodes: Sequence[Node], constraint: HardConstraint, keys: Sequence[str], placed: Mapping[str, list[Pod]]
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        n = node_counts(pod, node, constraint, keys, placed)
        if n is not None:
            value = node.labels[constraint.key]
            counts[value] = counts.get(value, 0) + n
    return counts


def placed_pods(objects: Sequence[dict[str, Any]]) -> dict[str, list[Pod]]:
    """Assigned, non-terminal pods by node, as the cache holds them before any attempt."""
    out: dict[str, list[Pod]] = {}
    for obj in objects:
        if obj.get("kind") == "Pod":
            pod = Pod.from_dict(obj)
            if pod.assigned and not pod.terminal:
                out.setdefault(pod.node_name, []).append(pod)
    return out


Check = tuple[HardConstraint, dict[str, int], int, int]  # constraint, counts per domain, minMatch, selfMatch


def verdict(node: Node, checks: Sequence[Check]) -> str:
    """Filter's rule per constraint in order: missing key, else matchNum + selfMatch - minMatch > maxSkew."""
    for c, counts, low, me in checks:
        if c.key not in node.labels:
            return "missing"
        if counts.get(node.labels[c.key], 0) + me - low > c.max_skew:
            return "skew"
    return "ok"


@SETTINGS
@given(scenarios())
def test_spread_verdicts_and_placements_match_a_brute_force_recount(objects: list[dict[str, Any]]) -> None:
    """Each PodTopologySpread verdict and each placement agrees with counts recomputed from scratch."""
    sim, attempts = run(objects)
    nodes = [Node.from_dict(o) for o in objects if o.get("kind") == "Node"]
    by_name: dict[str, Node] = {n.name: n for n in nodes}
    placed = placed_pods(objects)
    for attempt in attempts:
        pod = attempt.pod
        raw_constraints = [] if pod.errors else pod.raw["spec"].get("topologySpreadConstraints") or []
        hard_raw = [c for c in raw_constraints if c.get("whenUnsatisfiable") == "DoNotSchedule"]
        if hard_raw:
            hard = [HardConstraint(c, pod) for c in hard_raw]
            keys = [c.key for c in hard]
            counts = [domain_counts(pod, nodes, c, keys, placed) for c in hard]
            mins = [0 if len(cnt) < c.min_domains else min(cnt.values()) for c, cnt in zip(hard, counts, strict=True)]
            selfs = [int(c.matches(pod.labels)) for c in hard]  # {} matches the pod itself (spec 4.6)

            checks = list(zip(hard, counts, mins, selfs, strict=True))
            event("hard constraints checked")
            if any(s.plugin == "PodTopologySpread" for s in attempt.diagnosis.node_to_status.values()):
                event("PodTopologySpread rejected a node")
            for name in attempt.feasible:
                assert verdict(by_name[name], checks) == "ok", (name, pod.raw["spec"])
            for name, status in attempt.diagnosis.node_to_status.items():
                if status.plugin == "PodTopologySpread":
                    expected = "missing" if "missing required label" in status.message() else "skew"
                    assert verdict(by_name[name], checks) == expected, (name, status.message())
            if attempt.host is not None:
                event("placed under hard constraints")
                chosen = by_name[attempt.host]
                for c, cnt, low, me in checks:
                    domain = chosen.labels[c.key]
                    # The chosen domain ends at most maxSkew above the (minDomains-adjusted) minimum.
                    assert cnt.get(domain, 0) + me - low <= c.max_skew
                    if cnt:
                        after = dict(cnt)
                        if domain in after:
                            after[domain] += me
                        # A skew within maxSkew among counted domains stays within maxSkew.
                        if max(cnt.values()) - min(cnt.values()) <= c.max_skew:
                            assert max(after.values()) - min(after.values()) <= c.max_skew
        if attempt.host is not None:
            placed.setdefault(attempt.host, []).append(pod)
    # The final placement the recount assumed is the one the cache holds.
    assert {info.name: sorted(info.pods) for info in sim.cache.node_infos()} == {
        name: sorted(p.key for p in placed.get(name, ())) for name in by_name
    }


# -- the cache's incremental counts ----------------------------------------------------------------

SELECTORS: tuple[dict[str, Any] | None, ...] = (
    None,
    {},
    {"matchLabels": {"app": "a"}},
    {"matchLabels": {"app": "a", "tier": "b"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
)
PARSED = [parse_label_selector(raw, "s", []) for raw in SELECTORS]

ops_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(0, 4),
            st.sampled_from(NAMESPACES[:2]),
            labels_st,
            st.sampled_from(("n0", "n1", "n2", "")),
            st.booleans(),
            st.integers(0, 5),
        ),
        st.tuples(st.just("remove"), st.integers(0, 4), st.sampled_from(NAMESPACES[:2])),
        st.tuples(
            st.just("assume"),
            st.integers(0, 4),
            st.sampled_from(NAMESPACES[:2]),
            labels_st,
            st.sampled_from(("n0", "n1")),
        ),
        st.tuples(st.just("forget"), st.integers(0, 4), st.sampled_from(NAMESPACES[:2])),
        st.tuples(st.just("query"), st.integers(0, len(SELECTORS) - 1), st.sampled_from(NAMESPACES[:2])),
        st.tuples(st.just("remove_node"), st.sampled_from(("n0", "n1", "n2"))),
        st.tuples(st.just("add_node"), st.sampled_from(("n0", "n1", "n2"))),
    ),
    max_size=40,
)


def recount(
    model: Mapping[str, tuple[str, Mapping[str, str], str, bool]],
    namespace: str,
    index: int,
    *,
    terminating_too: bool = False,
) -> Counter[str]:
    raw = SELECTORS[index]
    out: Counter[str] = Counter()
    if raw is None:
        return out
    for ns, labels, node, terminating in model.values():
        if ns == namespace and (terminating_too or not terminating) and raw_selector_matches(raw, labels):
            out[node] += 1
    return out


def positive(counts: Mapping[Any, int]) -> dict[str, int]:
    assert all(v >= 0 for v in counts.values()), counts
    return {str(k): v for k, v in counts.items() if v}


@SETTINGS
@given(ops_st)
def test_cache_counts_equal_a_recount(ops: list[tuple[Any, ...]]) -> None:
    """``count_matching`` (and ``count_all_matching``, terminating pods counted, InterPodAffinity's)
    equal a recount after every kind of pod and node change, queried at any time."""
    cache = Cache()
    for name in ("n0", "n1", "n2"):
        cache.add_node(make_node(name).build())
    model: dict[str, tuple[str, Mapping[str, str], str, bool]] = {}
    assumed: set[str] = set()

    def check(namespace: str, index: int) -> None:
        assert positive(cache.count_matching(namespace, PARSED[index])) == positive(recount(model, namespace, index))
        everyone = recount(model, namespace, index, terminating_too=True)
        assert positive(cache.count_all_matching(namespace, PARSED[index])) == positive(everyone)

    for op in ops:
        kind = op[0]
        if kind == "add":
            _, i, ns, labels, node, terminating, phase = op
            builder = make_pod(f"p{i}", ns).labels(labels)
            if node:
                builder.node(node)
            if terminating:
                builder.terminating()
            if phase == 0:
                builder.phase("Succeeded")
            pod = builder.build()
            cache.add_pod(pod)  # add and update are one operation in the cache
            if not pod.assigned or pod.terminal:
                model.pop(pod.key, None)
            else:
                model[pod.key] = (ns, pod.labels, pod.node_name, pod.terminating)
            assumed.discard(pod.key)
        elif kind == "remove":
            pod = make_pod(f"p{op[1]}", op[2]).build()
            cache.remove_pod(pod)
            model.pop(pod.key, None)
            assumed.discard(pod.key)
        elif kind == "assume":
            _, i, ns, labels, node = op
            pod = make_pod(f"p{i}", ns).labels(labels).build()
            cache.assume_pod(pod, node)
            model[pod.key] = (ns, pod.labels, node, False)
            assumed.add(pod.key)
        elif kind == "forget":
            pod = make_pod(f"p{op[1]}", op[2]).build()
            cache.forget_pod(pod)
            if pod.key in assumed:
                assumed.discard(pod.key)
                model.pop(pod.key, None)
        elif kind == "query":
            check(op[2], op[1])
        elif kind == "remove_node":
            cache.remove_node(op[1])  # its pods stay counted under its name until they are deleted
        else:
            cache.add_node(make_node(op[1]).build())
        for key in {*model, *assumed}:
            assert cache.is_assumed(key) == (key in assumed)
            assert cache.pod_node(key) == (model[key][2] if key in model else None)
    for namespace in NAMESPACES:
        for index in range(len(SELECTORS)):
            check(namespace, index)
    assert cache.pod_count == len(model)


@SETTINGS
@given(ops_st)
def test_small_pod_count_index_survives_evictions(ops: list[tuple[Any, ...]]) -> None:
    """With room for two entries, evicted selectors are rebuilt from the pods and stay exact."""
    index = PodCountIndex(max_entries=2)
    model: dict[str, tuple[str, Mapping[str, str], str, bool]] = {}
    pods: dict[str, Pod] = {}
    for op in ops:
        kind = op[0]
        if kind in ("add", "assume"):
            ns, labels, node = op[2], op[3], op[4] or "n0"
            pod = make_pod(f"p{op[1]}", ns).labels(labels).build()
            if pod.key in pods:
                index.remove(pods.pop(pod.key))
            index.add(pod, node)  # type: ignore[arg-type]
            pods[pod.key] = pod
            model[pod.key] = (ns, pod.labels, node, False)
        elif kind in ("remove", "forget"):
            key = f"{op[2]}/p{op[1]}"
            if key in pods:
                index.remove(pods.pop(key))
                model.pop(key)
        elif kind == "query":
            assert positive(index.counts(op[2], PARSED[op[1]])) == positive(recount(model, op[2], op[1]))
    for namespace in NAMESPACES:
        for i in range(len(SELECTORS)):
            assert positive(index.counts(namespace, PARSED[i])) == positive(recount(model, namespace, i))


# -- assumed pods never wait in the queue (the live loop) ------------------------------------------


class Binder:
    """Binds (or fails, for pods named in ``fail``) after yielding once to the event loop."""

    def __init__(self, fail: set[str]) -> None:
        self.fail = fail
        self.bound: list[tuple[Pod, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        await asyncio.sleep(0)
        if pod.name in self.fail:
            raise RuntimeError("the API server said no")
        self.bound.append((pod, node_name))


class Recorder:
    async def set_unschedulable(
        self, pod: Pod, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        return None

    async def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        return None

    async def event(
        self, pod: Pod, event_type: str, reason: str, action: str, note: str, related: Pod | None = None
    ) -> None:
        return None


loop_ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("pod"), st.integers(0, 3), labels_st, st.booleans()),
        st.tuples(st.just("node"), st.integers(0, 2), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 3)),
        st.tuples(st.just("cycle")),
        st.tuples(st.just("cycle")),
        st.tuples(st.just("yield")),
        st.tuples(st.just("confirm")),
        st.tuples(st.just("tick"), st.sampled_from((0.5, 2.0, 31.0))),
    ),
    max_size=40,
)


@SETTINGS
@given(loop_ops_st, st.sets(st.sampled_from(("q0", "q1", "q2", "q3"))))
def test_assumed_pods_never_wait_in_the_queue(ops: list[tuple[Any, ...]], fail: set[str]) -> None:
    """Random watch events, cycles and (failing) bindings: an assumed pod is never also queued."""
    asyncio.run(_drive(ops, fail))


async def _drive(ops: list[tuple[Any, ...]], fail: set[str]) -> None:
    now = [1000.0]
    binder = Binder(fail)
    sched = Scheduler(load_config(None), binder, Recorder(), clock=lambda: now[0], rng=random.Random(0))
    keys = [f"default/q{i}" for i in range(4)]
    sched.on_object("ADDED", make_node("m0").dict())  # somewhere to go from the start
    for i in range(2):
        sched.on_object("ADDED", make_pod(f"q{i}").dict())

    def invariant() -> None:
        for key in keys:
            if sched.cache.is_assumed(key):
                event("a pod was assumed")
                assert sched.queue.location(key) not in QUEUED, (key, sched.queue.location(key))

    for op in ops:
        kind = op[0]
        if kind == "pod":
            builder = make_pod(f"q{op[1]}").labels(op[2])
            if op[3]:
                builder.spread(HOSTNAME, 1, match={"app": "a"})
            sched.on_object("ADDED", builder.dict())
        elif kind == "node":
            node = make_node(f"m{op[1]}")
            if op[2]:
                node.taint("k", "v")
            sched.on_object("ADDED", node.dict())
        elif kind == "delete":
            sched.on_object("DELETED", make_pod(f"q{op[1]}").dict())
        elif kind == "cycle":
            sched.schedule_one()
        elif kind == "yield":
            await asyncio.sleep(0)
        elif kind == "confirm":  # the watch reports the bindings that landed
            for bound, host in binder.bound:
                sched.on_object("MODIFIED", make_pod(bound.name).labels(dict(bound.labels)).node(host).dict())
            binder.bound.clear()
        else:
            now[0] += op[1]
        invariant()
    await sched.drain()
    invariant()


# -- larger clusters: up to 12 nodes, 25 existing pods, 10 pending pods, a brute-force skew check ---------
# (a second generator: more nodes and pods per example, one label key and value more, invalid pods made by
# adding a broken constraint or toleration rather than by replacing a field)

WIDE_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WIDE_KEYS = ("app", "tier", "team")
WIDE_VALUES = ("a", "b", "c")
wide_labels_st = st.dictionaries(st.sampled_from(WIDE_KEYS), st.sampled_from(WIDE_VALUES), max_size=3)
wide_namespaces = st.sampled_from(("default", "ns1", "ns2"))


@st.composite
def wide_nodes_st(draw: st.DrawFn) -> list[dict[str, Any]]:
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
        for key, value in draw(wide_labels_st).items():
            b.label(key, value)
        out.append(b.dict())
    return out


def wide_selector_st() -> st.SearchStrategy[dict[str, Any] | None]:
    expr = st.fixed_dictionaries(
        {
            "key": st.sampled_from(WIDE_KEYS),
            "operator": st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
            "values": st.lists(st.sampled_from(WIDE_VALUES), max_size=2),
        }
    )
    simple = st.just({"matchLabels": {"app": "a"}})  # often matches: makes the skew bound bite
    return st.one_of(
        simple,
        simple,
        st.none(),
        st.just({}),
        st.builds(lambda m, e: {"matchLabels": m, "matchExpressions": e}, wide_labels_st, st.lists(expr, max_size=2)),
    )


@st.composite
def wide_pending_st(draw: st.DrawFn, i: int) -> dict[str, Any]:
    """Mostly valid pods (so the skew bound gets exercised), sometimes invalid ones (never raise)."""
    invalid = draw(st.integers(0, 9)) == 0
    labels = draw(wide_labels_st) | ({"app": "a"} if draw(st.booleans()) else {})
    b = make_pod(f"p{i}", draw(st.sampled_from(("default", "default", "ns1")))).labels(labels)
    b.created(f"2026-01-01T00:00:{i:02d}Z")
    keys = draw(st.lists(st.sampled_from((ZONE, HOSTNAME, "app")), max_size=3, unique=True))
    for key in keys:
        when = draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway")))
        extra = {"minDomains": draw(st.integers(1, 4))} if when == "DoNotSchedule" and draw(st.booleans()) else {}
        b.spread(key, draw(st.integers(1, 3)), when, selector=draw(wide_selector_st()), **extra)
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
        b.required_terms(
            {"matchExpressions": [{"key": draw(st.sampled_from(WIDE_KEYS)), "operator": op, "values": values}]}
        )
    if draw(st.booleans()):
        b.preferred_term(
            draw(st.integers(0, 101) if invalid else st.integers(1, 100)),
            {"matchExpressions": [{"key": draw(st.sampled_from((*WIDE_KEYS, ZONE))), "operator": "Exists"}]},
        )
    return b.dict()


@st.composite
def wide_cluster_st(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = draw(wide_nodes_st())
    names = [n["metadata"]["name"] for n in nodes]
    existing = []
    for i in range(draw(st.integers(0, 25))):
        labels = draw(wide_labels_st) | ({"app": "a"} if draw(st.booleans()) else {})
        b = make_pod(f"e{i}", draw(wide_namespaces)).labels(labels).node(draw(st.sampled_from(names)))
        if draw(st.integers(0, 5)) == 0:
            b.terminating()
        existing.append(b.dict())
    pending = [draw(wide_pending_st(i)) for i in range(draw(st.integers(1, 10)))]
    return nodes, existing, pending


def brute_force_counts(cache_pods: list[Pod], namespace: str, selector: Any) -> Counter[str]:
    counts: Counter[str] = Counter()
    for pod in cache_pods:
        if pod.namespace == namespace and not pod.terminating and selector.matches(pod.labels):
            counts[pod.node_name] += 1
    return counts


@WIDE_SETTINGS
@given(wide_cluster_st(), st.integers(0, 3))
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
            per_domain: Counter[str] = Counter(dict.fromkeys(domain_of.values(), 0))
            for node, count in counts.items():
                if node in domain_of:
                    per_domain[domain_of[node]] += count
            minimum = 0 if len(per_domain) < (c.min_domains or 1) else min(per_domain.values(), default=0)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            assert per_domain[domain_of[attempt.host]] + self_match - minimum <= c.max_skew
        placed.append(Pod.from_dict({**raw, "spec": {**raw["spec"], "nodeName": attempt.host}}))


@WIDE_SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("add", "remove", "assume", "forget", "relabel", "terminate")),
            st.integers(0, 9),
            wide_namespaces,
            wide_labels_st,
            st.integers(0, 3),
        ),
        max_size=60,
    ),
    st.lists(wide_selector_st(), min_size=1, max_size=4),
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


@WIDE_SETTINGS
@given(wide_cluster_st())
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


# -- the cache's inter-pod affinity lists ------------------------------------------------------------

AFFINITY_KINDS = ("none", "preferred", "required-anti", "both", "empty")


def with_affinity(builder: Any, kind: str) -> Any:
    """A pod with no affinity, preferred affinity only, required anti-affinity, both, or ``podAffinity: {}``."""
    if kind in ("preferred", "both"):
        builder.pod_affinity(HOSTNAME, {"matchLabels": {"app": "a"}}, weight=1)
    if kind in ("required-anti", "both"):
        builder.pod_affinity(HOSTNAME, {"matchLabels": {"app": "b"}}, anti=True)
    if kind == "empty":
        builder.set("spec.affinity", {"podAffinity": {}})
    return builder


affinity_ops_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(0, 5),
            st.sampled_from(AFFINITY_KINDS),
            st.sampled_from(("n0", "n1", "n2", "")),
            st.booleans(),
            st.integers(0, 5),
        ),
        st.tuples(st.just("remove"), st.integers(0, 5)),
        st.tuples(st.just("assume"), st.integers(0, 5), st.sampled_from(AFFINITY_KINDS), st.sampled_from(("n0", "n1"))),
        st.tuples(st.just("forget"), st.integers(0, 5)),
        st.tuples(st.just("remove_node"), st.sampled_from(("n0", "n1", "n2"))),
        st.tuples(st.just("add_node"), st.sampled_from(("n0", "n1", "n2", "n3"))),
    ),
    max_size=40,
)


@SETTINGS
@given(affinity_ops_st)
def test_affinity_lists_equal_a_recount(ops: list[tuple[Any, ...]]) -> None:
    """Per node, the pods with (required anti-)affinity, and the nodes having any, equal a recount of a
    model after every pod and node change (orphaned pods rejoin when their node comes back)."""
    cache = Cache()
    nodes = {"n0", "n1", "n2"}
    for name in sorted(nodes):
        cache.add_node(make_node(name).build())
    model: dict[str, tuple[str, str]] = {}  # pod key -> (node, affinity kind)
    assumed: set[str] = set()

    def pod_of(i: int, kind: str = "none") -> Pod:
        return with_affinity(make_pod(f"p{i}"), kind).build()  # type: ignore[no-any-return]

    for op in ops:
        if op[0] == "add":
            _, i, kind, node, terminating, phase = op
            builder = with_affinity(make_pod(f"p{i}"), kind)
            if node:
                builder.node(node)
            if terminating:
                builder.terminating()  # terminating pods still sit on their node, as upstream
            if phase == 0:
                builder.phase("Failed")
            pod = builder.build()
            cache.add_pod(pod)
            if pod.assigned and not pod.terminal:
                model[pod.key] = (node, kind)
            else:
                model.pop(pod.key, None)
            assumed.discard(pod.key)
        elif op[0] == "remove":
            pod = pod_of(op[1])
            cache.remove_pod(pod)
            model.pop(pod.key, None)
            assumed.discard(pod.key)
        elif op[0] == "assume":
            _, i, kind, node = op
            pod = pod_of(i, kind)
            cache.assume_pod(pod, node)
            model[pod.key] = (node, kind)
            assumed.add(pod.key)
        elif op[0] == "forget":
            pod = pod_of(op[1])
            if pod.key in assumed:
                model.pop(pod.key, None)
                assumed.discard(pod.key)
            cache.forget_pod(pod)
        elif op[0] == "remove_node":
            cache.remove_node(op[1])
            nodes.discard(op[1])
        else:
            cache.add_node(make_node(op[1]).build())
            nodes.add(op[1])
        with_affinity_by_node: dict[str, set[str]] = {n: set() for n in nodes}
        with_anti_by_node: dict[str, set[str]] = {n: set() for n in nodes}
        for key, (node, kind) in model.items():
            if node in nodes:
                if kind != "none":
                    with_affinity_by_node[node].add(key)
                if kind in ("required-anti", "both"):
                    with_anti_by_node[node].add(key)
        for name in nodes:
            info = cache.get(name)
            assert info is not None
            assert set(info.pods_with_affinity) == with_affinity_by_node[name]
            assert set(info.pods_with_required_anti_affinity) == with_anti_by_node[name]
        have = {i.name for i in cache.have_pods_with_affinity_node_infos()}
        have_anti = {i.name for i in cache.have_pods_with_required_anti_affinity_node_infos()}
        assert have == {n for n, keys in with_affinity_by_node.items() if keys}
        assert have_anti == {n for n, keys in with_anti_by_node.items() if keys}
        assert all(cache.get(i.name) is i for i in cache.have_pods_with_affinity_node_infos())
