"""Node indexes kept per node change equal the same indexes built from scratch.

The cache keeps TaintToleration's, NodeAffinity's and PodTopologySpread's node indexes current one
node at a time (issue #22: a node update must cost the same at 5,000 nodes as at 500). Bugs this
catches: a node whose labels or taints changed keeping its old verdict or domain, a domain left at 0
after its last member left, a removed node still counted, an index built after the changes differing
from one kept through them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import Node, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.types import NodeInfo
from scheduler.plugins.nodeaffinity.node_affinity import AffinityIndex, RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, domain_index, pod_constraints
from scheduler.plugins.tainttoleration.taint_toleration import UntoleratedIndex
from scheduler.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
NAMES = [f"n{i}" for i in range(6)]

node_st = st.fixed_dictionaries(
    {
        "name": st.sampled_from(NAMES),
        "zone": st.sampled_from(["a", "b", "c", None]),
        "rack": st.sampled_from(["r1", "r2", None]),
        "pool": st.sampled_from(["general", "gpu"]),
        "taint": st.sampled_from([None, ("dedicated", "infra", "NoSchedule"), ("spot", "", "PreferNoSchedule")]),
    }
)
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("put"), node_st),
        st.tuples(st.just("status"), st.sampled_from(NAMES)),
        st.tuples(st.just("remove"), st.sampled_from(NAMES)),
    ),
    max_size=40,
)


def build_node(spec: dict[str, Any], version: int) -> Node:
    b = make_node(spec["name"]).label("pool", spec["pool"])
    if spec["zone"] is not None:
        b.zone(spec["zone"])
    if spec["rack"] is not None:
        b.label("rack", spec["rack"])
    if spec["taint"] is not None:
        b.taint(*spec["taint"])
    node = b.build()
    return Node(**{**{f: getattr(node, f) for f in node.__dataclass_fields__}, "resource_version": str(version)})


def pods() -> list[Pod]:
    """Pods whose indexes differ: Honor policies, tolerations, affinity, several keys."""
    match = {"app": "x"}
    return [
        make_pod("p0").labels(match).spread(ZONE, 1, "DoNotSchedule", match=match).build(),
        make_pod("p1")
        .labels(match)
        .spread(ZONE, 1, "DoNotSchedule", match=match, nodeTaintsPolicy="Honor")
        .spread("rack", 1, "DoNotSchedule", match=match)
        .spread(HOSTNAME, 1, "DoNotSchedule", match=match)
        .build(),
        make_pod("p2")
        .labels(match)
        .spread(ZONE, 1, "DoNotSchedule", match=match)
        .node_selector({"pool": "general"})
        .toleration("dedicated", "Equal", "infra", "NoSchedule")
        .build(),
        make_pod("p3")
        .labels(match)
        .spread("rack", 2, "DoNotSchedule", match=match, nodeAffinityPolicy="Ignore")
        .required_terms({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]})
        .build(),
    ]


def views(cache: Cache) -> list[object]:
    """Every index the plugins would ask for, as plain data (order inside a dict does not count)."""
    out: list[object] = []
    for pod in pods():
        constraints = pod_constraints(pod, DO_NOT_SCHEDULE, (), cache)
        for require_all in (True, False):
            for skip_hostname in (False, True):
                index = domain_index(pod, constraints, cache, require_all_keys=require_all, skip_hostname=skip_hostname)
                out.append((index.domain_of, index.zeros))
        out.append(
            cache.node_index(
                ("TaintToleration", pod.tolerations), lambda p=pod: UntoleratedIndex(p.tolerations)
            ).verdicts
        )
        affinity = RequiredNodeAffinity.of(pod)
        out.append(cache.node_index(("NodeAffinity", affinity.key), lambda a=affinity: AffinityIndex(a)).matches)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_st, max_size=6), ops_st)
def test_indexes_kept_per_node_equal_indexes_built_afresh(start: list[dict[str, Any]], ops: list[Any]) -> None:
    cache = Cache()
    current: dict[str, Node] = {}
    version = 0
    for spec in start:
        version += 1
        node = build_node(spec, version)
        cache.add_node(node)
        current[node.name] = node
    views(cache)  # the indexes exist before the changes, so the cache has to keep them
    for op in ops:
        version += 1
        if op[0] == "put":
            node = build_node(op[1], version)
            old = current.get(node.name)
            if old is None:
                cache.add_node(node)
            else:
                cache.update_node(old, node)
            current[node.name] = node
        elif op[0] == "status" and op[1] in current:
            old = current[op[1]]
            node = Node(**{**{f: getattr(old, f) for f in old.__dataclass_fields__}, "resource_version": str(version)})
            cache.update_node(old, node)
            current[node.name] = node
        elif op[0] == "remove":
            cache.remove_node(op[1])
            current.pop(op[1], None)
        fresh = Cache()
        for info in cache.node_infos():
            fresh.add_node(info.node)
        assert views(cache) == views(fresh)


class CountingIndex:
    """Counts the cache's calls, to show one node update visits each index once."""

    def __init__(self) -> None:
        self.puts = 0
        self.drops = 0

    def put(self, info: NodeInfo) -> None:
        self.puts += 1

    def drop(self, name: str) -> None:
        self.drops += 1


def test_one_node_update_touches_each_index_once_whatever_the_node_count() -> None:
    """Per-node-update work is O(1) in the cluster size: one put per index, and the node order is
    only rebuilt when a zone changed (the list of NodeInfos is kept)."""
    for size in (10, 2000):
        cache = Cache()
        nodes = [make_node(f"n{i}").zone("abc"[i % 3]).build() for i in range(size)]
        for node in nodes:
            cache.add_node(node)
        index = cache.node_index("count", CountingIndex)
        assert index.puts == size
        infos = cache.node_infos()
        relabelled = make_node("n1").zone("b").label("team", "x").build()
        cache.update_node(nodes[1], relabelled)
        assert index.puts == size + 1
        assert cache.node_infos() is infos, "a label change in the same zone must not rebuild the node order"
        moved = make_node("n1").zone("c").build()
        cache.update_node(relabelled, moved)
        assert index.puts == size + 2
        assert cache.node_infos() is not infos
        cache.remove_node("n1")
        assert (index.puts, index.drops) == (size + 2, 1)
