"""The cache's per-image node counts (upstream's ``imageStates``/``ImageStateSummary.NumNodes``) stay
equal to a recount over the nodes after any sequence of node adds, updates and removals."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import Node
from scheduler.backend.cache.cache import Cache
from scheduler.testing import make_node, make_pod

NAMES = [f"img{i}:latest" for i in range(6)]
NODES = [f"n{i}" for i in range(4)]


def node(name: str, images: list[list[str]], version: int) -> Node:
    b = make_node(name)
    for i, names in enumerate(images):
        b = b.image(i * 1000, *names)
    obj = b.dict()
    obj["metadata"]["resourceVersion"] = str(version)
    return Node.from_dict(obj)


def recount(cache: Cache) -> dict[str, int]:
    """Brute force: every node in the cache, each distinct name once per node."""
    counts: Counter[str] = Counter()
    for info in cache.node_infos():
        counts.update(set(info.node.images))
    return dict(counts)


images_strategy = st.lists(st.lists(st.sampled_from(NAMES), max_size=3), max_size=4)
operation = st.tuples(
    st.sampled_from(("add", "update", "update-as-add", "remove")), st.sampled_from(NODES), images_strategy
)


@settings(max_examples=200, deadline=None)
@given(st.lists(operation, max_size=40))
def test_image_counts_equal_a_recount(operations: list[tuple[str, str, list[list[str]]]]) -> None:
    cache = Cache()
    for version, (op, name, images) in enumerate(operations):
        new = node(name, images, version)
        if op == "add":
            cache.add_node(new)  # adding a known node is an update
        elif op == "update":
            info = cache.get(name)
            if info is not None:
                cache.update_node(info.node, new)
        elif op == "update-as-add":
            cache.update_node(new, new)  # an update for a node the cache missed adds it
        else:
            cache.remove_node(name)
        assert cache.image_counts() == recount(cache)
        for image in NAMES:
            assert cache.image_num_nodes(image) == recount(cache).get(image, 0)


def test_stale_old_object_does_not_corrupt_counts() -> None:
    """``update_node`` uncounts the node as the cache holds it, not the caller's ``old``."""
    cache = Cache()
    cache.add_node(node("n1", [["a:1"]], 1))
    cache.update_node(node("n1", [["zzz:1"]], 0), node("n1", [["b:1"]], 2))
    assert cache.image_counts() == {"b:1": 1}


def test_removed_node_with_pods_no_longer_counts() -> None:
    """A deleted node whose pods are still cached (a ghost, upstream) holds no images any more."""
    cache = Cache()
    cache.add_node(node("n1", [["a:1"]], 1))
    cache.add_node(node("n2", [["a:1"]], 1))
    cache.add_pod(make_pod("p").node("n1").build())
    cache.remove_node("n1")
    assert cache.image_counts() == {"a:1": 1}
    cache.add_node(node("n1", [["a:1", "b:1"]], 2))
    assert cache.image_counts() == {"a:1": 2, "b:1": 1}
