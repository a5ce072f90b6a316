"""One ``Allocator`` asked for the same claims node after node (the plugin's Filter) answers each
node as a fresh one would: the claims' checks are made once, the constraints start empty on every
node, a claim asking for "All" devices is prepared per node, and a check's error is the same on each."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.deviceclass import DeviceClass
from scheduler.api.objects import Node
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.resourceslice import ResourceSlice
from scheduler.plugins.dynamicresources import cel
from scheduler.plugins.dynamicresources.structured import AllocationError, Allocator
from scheduler.plugins.dynamicresources.structured.features import RELEASES, V0_35, Features
from scheduler.testing import make_node

DRIVER = "gpu.example.com"
NODES = ["n0", "n1", "n2"]


def _slice(node: str, models: list[str]) -> ResourceSlice:
    devices = [{"name": f"{node}-d{i}", "attributes": {"model": {"string": model}}} for i, model in enumerate(models)]
    spec = {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "resourceSliceCount": 1}, "devices": devices}
    return ResourceSlice.from_dict({"metadata": {"name": node}, "spec": spec})


def _claim(name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None) -> ResourceClaim:
    spec = {"devices": {"requests": requests, "constraints": constraints or []}}
    return ResourceClaim.from_dict({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec})


def _exactly(name: str, count: int = 1, mode: str = "ExactCount", klass: str = "gpu") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": klass, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


CLASSES = {
    "gpu": DeviceClass.from_dict(
        {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    )
}
SLICES = [_slice("n0", ["a", "b", "c"]), _slice("n1", ["b", "b"]), _slice("n2", ["a", "c", "c", "c"])]
CLAIMS = {
    # Node n0 has no two devices alike, the others do: the constraint must forget n1's devices.
    "match": [_claim("m", [_exactly("r0"), _exactly("r1")], [{"requests": [], "matchAttribute": f"{DRIVER}/model"}])],
    "all": [_claim("a", [_exactly("r0", mode="All")])],
    "two-claims": [_claim("t0", [_exactly("r0", count=2)]), _claim("t1", [_exactly("r0")])],
    "no-class": [_claim("x", [_exactly("r0", klass="missing")])],
}


def _allocator(release: str, implementation: str) -> Allocator:
    cache = cel.Cache(10, cel.compiler_for(37))
    return Allocator(Features(), (), CLASSES, SLICES, cache, release=release, implementation=implementation)


def _answers(allocator: Allocator | None, variant: tuple[str, str], claims: list[ResourceClaim]) -> list[Any]:
    out: list[Any] = []
    for name in NODES:
        node = Node.from_dict(make_node(name).dict())
        use = allocator or _allocator(*variant)
        try:
            out.append(use.allocate(node, claims))
        except AllocationError as err:
            out.append((type(err), str(err)))
    return out


@pytest.mark.parametrize("variant", [(V0_35, "stable")] + [(release, "incubating") for release in RELEASES])
@pytest.mark.parametrize("case", sorted(CLAIMS))
def test_one_allocator_for_every_node_answers_as_fresh_ones(variant: tuple[str, str], case: str) -> None:
    claims = CLAIMS[case]
    shared = _allocator(*variant)
    fresh = _answers(None, variant, claims)
    assert _answers(shared, variant, claims) == fresh
    assert _answers(shared, variant, claims) == fresh  # and again, the claims prepared already
    if case == "match":
        assert [a is not None for a in fresh] == [False, True, True]


def test_allocators_sharing_node_pools_gather_a_node_once_while_slices_and_node_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scheduler makes an allocator per pod; a node's pools are made of the slices and the node
    alone, so the next pod's allocator reuses them, and gathers again once either changes."""
    from scheduler.plugins.dynamicresources.structured import pools  # noqa: PLC0415 - patched here

    gathered: list[str] = []
    original = pools.gather_pools

    def counting(slices: Any, node: Node | None, *args: Any, **kwargs: Any) -> list[pools.Pool]:
        gathered.append(node.name if node is not None else "")
        return original(slices, node, *args, **kwargs)

    monkeypatch.setattr(pools, "gather_pools", counting)
    shared = pools.NodePools()
    cache = cel.Cache(10, cel.compiler_for(37))
    claims = CLAIMS["two-claims"]
    n0 = Node.from_dict(make_node("n0").dict())

    def allocate(slices: list[ResourceSlice], node: Node) -> Any:
        allocator = Allocator(Features(), (), CLASSES, slices, cache, release=V0_35, node_pools=shared)
        return allocator.allocate(node, claims)

    first = allocate(SLICES, n0)
    assert allocate(SLICES, n0) == first
    assert gathered == ["n0"]
    relabelled = Node.from_dict(make_node("n0").label("zone", "a").dict())
    assert allocate(SLICES, relabelled) == first
    assert gathered == ["n0", "n0"]
    fewer = [_slice("n0", ["a"]), *SLICES[1:]]
    assert allocate(fewer, relabelled) is None  # a new list of slices: n0 has one device left
    assert gathered == ["n0", "n0", "n0"]


def test_a_changed_class_is_asked_again_by_the_next_allocator() -> None:
    """The class's answers kept across allocators belong to the class object: an updated class (a
    new object under the same name) selects anew."""
    from scheduler.plugins.dynamicresources.structured.pools import NodePools  # noqa: PLC0415

    shared = NodePools()
    cache = cel.Cache(10, cel.compiler_for(37))
    n1 = Node.from_dict(make_node("n1").dict())

    def model(selected: str) -> Any:
        expression = f'device.attributes["{DRIVER}"].model == "{selected}"'
        spec = {"selectors": [{"cel": {"expression": expression}}]}
        classes = {"gpu": DeviceClass.from_dict({"metadata": {"name": "gpu"}, "spec": spec})}
        allocator = Allocator(Features(), (), classes, SLICES, cache, release=V0_35, node_pools=shared)
        (result,) = allocator.allocate(n1, [_claim("c", [_exactly("r0")])]) or [None]
        return None if result is None else [r.device for r in result.results]

    assert model("b") == ["n1-d0"]
    assert model("c") is None
