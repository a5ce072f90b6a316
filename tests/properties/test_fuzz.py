"""Fuzz (hypothesis): thousands of random objects through the pipeline and the cache, which never raise.

Objects are realistic Pods, Nodes, Services, ReplicaSets, StatefulSets, ReplicationControllers,
PriorityClasses and PodDisruptionBudgets (every field the scheduler reads is present in a template)
with random mutations: any value anywhere replaced by junk of another type (None, bools, huge ints,
floats, NaN, strings that look like quantities, operators or label values, lists, nested dicts with
non-string keys), deleted or nulled; plus objects that are junk from the top. ``simulate`` must
decide every pending pod of a known profile (an invalid one as ``invalid pod: ...``), preempting
with DefaultPreemption and carrying the preemption out (a node-filling pod of priority 0 is there to
be evicted), and the cache must keep each node's totals equal to a recount of the pods it holds,
whatever sequence of add/update/remove/assume/forget it sees.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from scheduler.api.objects import Node, Pod, parse_selecting_object
from scheduler.backend.cache.cache import Cache
from scheduler.config import load_config
from scheduler.simulate import Simulation, iter_objects
from scheduler.testing import make_node, make_pod
from tests.fuzz_seed import FUZZ_SEED

# Thousands of examples in all (2 x 1000), new ones in every run: the run's seed is printed in the
# pytest header ("fuzz seed: N") and SPREAD_FUZZ_SEED=N replays that run's examples exactly;
# SPREAD_FUZZ_EXAMPLES=N draws N per test.
EXAMPLES = int(os.environ.get("SPREAD_FUZZ_EXAMPLES", "1000"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=False,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
ZONE = "topology.kubernetes.io/zone"
INTERESTING = (
    "",
    "-1",
    "0",
    "1.5.5",
    "abc",
    "1Gi",
    "100m",
    "1e400",
    "9" * 30,
    "NoSchedule",
    "NoExecute",
    "Exists",
    "In",
    "Gt",
    "DoNotSchedule",
    "ScheduleAnyway",
    "Honor",
    "Always",
    "TCP",
    ZONE,
    "v" * 64,
    "spread-scheduler",
    "metadata.name",
    "n1",
    "2024-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
)
FIELD_NAMES = (
    "metadata",
    "spec",
    "status",
    "name",
    "labels",
    "namespace",
    "key",
    "operator",
    "values",
    "value",
    "effect",
    "selector",
    "matchLabels",
    "matchExpressions",
    "requests",
    "hostPort",
    "kind",
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10)
    | st.sampled_from(INTERESTING)
)
junk = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(FIELD_NAMES) | st.text(max_size=6) | st.integers() | st.none(), children, max_size=4
        )
    ),
    max_leaves=8,
)


def _pod_template(name: str, node: str = "") -> dict[str, Any]:
    builder = (
        make_pod(name)
        .labels({"app": "web", "tier": "a"})
        .priority(5)
        .created("2024-01-01T00:00:00Z")
        .node_selector({ZONE: "a"})
        .required_terms({"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]})
        .preferred_term(10, {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["2"]}]})
        .toleration("k", "Equal", "v", "NoSchedule")
        .toleration("t", "Exists", effect="NoExecute", tolerationSeconds=5)
        .spread(ZONE, 1, match={"app": "web"})
        .owner("ReplicaSet", "rs")
        .requests(cpu="100m", memory="64Mi")
        .init_container("sidecar", restart_always=True, cpu="10m")
        .overhead(cpu="1m")
        .host_port(8080)
        .gate("g")
        .set("status.nominatedNodeName", "")
        .set("status.containerStatuses", [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}])
        .set("spec.resources", {"requests": {"memory": "128Mi"}})
    )
    builder.spec["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 2,
            "nodeAffinityPolicy": "Honor",
            "nodeTaintsPolicy": "Ignore",
            "matchLabelKeys": ["tier"],
        }
    ]
    builder.spec.pop("schedulingGates")
    if node:
        builder.node(node)
    return builder.dict()


def _class_pod_template(name: str) -> dict[str, Any]:
    """A pending pod whose priority comes from a PriorityClass (admission)."""
    pod = _pod_template(name)
    del pod["spec"]["priority"]
    pod["spec"]["priorityClassName"] = "gold"
    return pod


def _node_template(name: str, zone: str) -> dict[str, Any]:
    return make_node(name).zone(zone).label("cores", "4").taint("k", "v", "NoSchedule").dict()


TEMPLATES: tuple[dict[str, Any], ...] = (
    _pod_template("p0"),
    _pod_template("p1", node="n1"),
    _node_template("n1", "a"),
    _node_template("n2", "b"),
    {"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}},
    {
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "default"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}},
    },
    {"kind": "StatefulSet", "metadata": {"name": "ss"}, "spec": {"selector": {"matchLabels": {"app": "web"}}}},
    {"kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {"selector": {"tier": "a"}}},
    _class_pod_template("p2"),
    make_pod("big", "default").node("n1").priority(0).requests(cpu="8").label("app", "web").dict(),
    {
        "kind": "PriorityClass",
        "metadata": {"name": "gold"},
        "value": 1000,
        "globalDefault": True,
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"maxUnavailable": 0, "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
        "status": {"disruptionsAllowed": 0, "disruptedPods": {"p1": "2024-01-01T00:00:00Z"}},
    },
)


def _slots(obj: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key-or-index) in ``obj``, depth first: where a mutation can land."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield obj, key
            yield from _slots(value)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield obj, i
            yield from _slots(value)


@st.composite
def mutated(draw: st.DrawFn, templates: tuple[dict[str, Any], ...] = TEMPLATES, most: int = 5) -> dict[str, Any]:
    """A template with 0-``most`` fields replaced by junk, deleted or nulled (``kind`` may change too)."""
    obj = copy.deepcopy(draw(st.sampled_from(templates)))
    for _ in range(draw(st.integers(0, most))):
        slots = list(_slots(obj))
        if not slots:
            break
        parent, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(("junk", "junk", "null", "delete")))
        if action == "delete":
            del parent[key]
        else:
            parent[key] = None if action == "null" else draw(junk)
    return obj


top_level_junk = st.builds(
    lambda kind, body: {"kind": kind, **body} if isinstance(body, dict) else {"kind": kind, "spec": body},
    st.sampled_from(
        (
            "Pod",
            "Node",
            "Service",
            "ReplicaSet",
            "StatefulSet",
            "ReplicationController",
            "PriorityClass",
            "PodDisruptionBudget",
            None,
            5,
        )
    ),
    junk,
)
objects_st = st.lists(mutated() | top_level_junk, min_size=1, max_size=8)
# Half of simulate's examples start from a full n1, the class-priority pod that preempts there and its
# class (each with at most one mutation), so that preemption runs and is carried out often.
PREEMPTION_SCENE = tuple(t for t in TEMPLATES if t["metadata"]["name"] in ("n1", "big", "gold", "p2"))
scene_st = st.tuples(*(mutated((t,), most=1) for t in PREEMPTION_SCENE)).map(list)
simulate_objects_st = objects_st | st.tuples(scene_st, objects_st).map(lambda both: both[0] + both[1])


def _recount(cache: Cache) -> None:
    """Each node's totals equal a recount of the pods it holds (no drift, no negative count); its used
    ports are some of its pods' (a set, as upstream's: a removed pod frees a port another still holds)."""
    for info in cache.node_infos():
        pods = list(info.pods.values())
        assert info.requested_milli_cpu == sum(p.resources.usage.milli_cpu for p in pods)
        assert info.requested_memory == sum(p.resources.usage.memory for p in pods)
        assert info.non0_cpu == sum(p.resources.non0_cpu for p in pods)
        assert info.used_ports <= {port for p in pods for port in p.resources.host_ports}


@seed(FUZZ_SEED)
@SETTINGS
@given(simulate_objects_st)
def test_simulate_never_raises_on_random_objects(objects: list[dict[str, Any]]) -> None:
    """Every pending pod of a known profile gets a result; an invalid one is said to be."""
    sim = Simulation(load_config(None), seed=0, apply_preemption=True)
    sim.add_objects(iter_objects(objects))
    attempts = sim.run()
    assert len(attempts) == len(sim.pending)
    for attempt in attempts:
        assert isinstance(attempt.message, str)
        if attempt.pod.errors and not attempt.pod.scheduling_gates:
            assert attempt.host is None and attempt.message.startswith("invalid pod: ")
        if attempt.host is not None and attempt.pod.key not in sim.history.preempted_by:
            assert sim.cache.pod_node(attempt.pod.key) == attempt.host
            assert all(math.isfinite(total) for total in attempt.totals.values())
    _recount(sim.cache)


OPS = ("add_node", "update_node", "remove_node", "add_pod", "update_pod", "remove_pod", "assume", "forget", "select")


@seed(FUZZ_SEED)
@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(OPS), mutated() | top_level_junk), min_size=1, max_size=12))
def test_cache_never_raises_and_its_totals_never_drift(ops: list[tuple[str, dict[str, Any]]]) -> None:
    """Any sequence of cache calls on random objects; removing every pod seen empties the cache."""
    cache = Cache()
    pods: list[Pod] = []
    for op, obj in ops:
        if op in ("add_node", "update_node", "remove_node"):
            node = Node.from_dict(obj)
            if op == "add_node":
                cache.add_node(node)
            elif op == "update_node":
                old = cache.get(node.name)
                cache.update_node(old.node if old is not None else node, node)
            else:
                cache.remove_node(node.name)
        elif op == "select":
            selecting = parse_selecting_object(obj)
            if selecting is not None:
                cache.upsert_selecting_object(selecting)
                cache.count_matching(selecting.namespace, selecting.selector)  # index it: pods then update it
        else:
            pod = Pod.from_dict(obj)
            pods.append(pod)
            if op in ("add_pod", "update_pod"):
                getattr(cache, op)(pod)
            elif op == "remove_pod":
                cache.remove_pod(pod)
            elif op == "assume":
                cache.assume_pod(pod, pod.node_name or "n1")
            else:
                cache.forget_pod(pod)
        _recount(cache)
    for pod in pods:
        cache.remove_pod(pod)
    assert cache.pod_count == 0
    _recount(cache)


POD_TEMPLATES = tuple(t for t in TEMPLATES if t.get("kind") == "Pod")
_FIELDS = [name for name in Pod.__dataclass_fields__ if name != "raw"]


@seed(FUZZ_SEED)
@SETTINGS
@given(mutated(POD_TEMPLATES), st.sampled_from(("", "n1")), st.booleans())
def test_a_pod_parsed_from_a_remembered_spec_is_the_pod_parsed_afresh(
    obj: dict[str, Any], node: str, parse_first: bool
) -> None:
    """Pods with the spec of one parsed before reuse that parse (``_SPEC_PARSES``): each field, its
    errors in their order and the kept raw view equal a parse from scratch, for any mutation of
    metadata, spec or status of a template parsed unmutated first (and the same object parsed
    twice, once bound to a node: the key leaves nodeName out). Red if the key missed a field the
    parse reads (with the labels or the container statuses left out of it, for example)."""
    if node and isinstance(obj.get("spec"), dict):
        obj["spec"]["nodeName"] = node
    if parse_first:
        for template in POD_TEMPLATES:
            Pod.from_dict(copy.deepcopy(template))
    for _ in range(2):
        remembered, fresh = Pod.from_dict(copy.deepcopy(obj)), Pod._parse(copy.deepcopy(obj))
        for name in _FIELDS:
            assert getattr(remembered, name) == getattr(fresh, name), name
        assert remembered.raw == fresh.raw
