"""``SliceIndex``: the slices a node may take, found without a walk over every slice, gather the same
pools in the same order as the walk (every variant), node-local, all-nodes, selector and
per-device slices and shared counters mixed, some nodes with no slice at all."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.objects import Node
from scheduler.api.resourceslice import ResourceSlice
from scheduler.plugins.dynamicresources.structured.features import Features
from scheduler.plugins.dynamicresources.structured.pools import SliceIndex, gather_pools
from scheduler.testing import make_node


def _slice(rng: random.Random, i: int, nodes: list[str]) -> dict[str, Any]:
    pool = f"pool-{rng.randrange(6)}"
    spec: dict[str, Any] = {
        "driver": rng.choice(["a.example.com", "b.example.com"]),
        "pool": {"name": pool, "generation": rng.randrange(1, 3), "resourceSliceCount": rng.randrange(1, 3)},
    }
    where = rng.randrange(4)
    if where == 0:
        spec["allNodes"] = True
    elif where == 1:
        terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [rng.choice(nodes)]}]}]
        spec["nodeSelector"] = {"nodeSelectorTerms": terms}
    else:
        spec["nodeName"] = rng.choice(nodes)
    if rng.random() < 0.2:
        spec["sharedCounters"] = [{"name": f"set-{i}", "counters": {"mem": {"value": "8Gi"}}}]
    else:
        spec["devices"] = [{"name": f"d{i}-{d}"} for d in range(2)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"s{i}"}, "spec": spec}


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(
    ("incubating", "ordered", "counters_by_node"), [(False, False, False), (True, False, False), (True, True, True)]
)
def test_the_index_gathers_what_the_walk_gathers(
    seed: int, incubating: bool, ordered: bool, counters_by_node: bool
) -> None:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(5)]
    slices = [ResourceSlice.from_dict(_slice(rng, i, nodes)) for i in range(25)]
    features = Features(partitionable_devices=True)
    index = SliceIndex(slices)
    for name in [*nodes, "no-slices"]:
        node = Node.from_dict(make_node(name).dict())
        kwargs = {"incubating": incubating, "ordered": ordered, "counters_by_node": counters_by_node}
        walked = gather_pools(slices, node, features, **kwargs)
        indexed = gather_pools(slices, node, features, candidates=index.for_node(node), **kwargs)
        assert indexed == walked
    assert index.for_node(None) == [s for s in slices if not s.node_name or s.shared_counters]
