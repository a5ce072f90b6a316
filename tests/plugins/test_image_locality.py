"""ImageLocality: image sizes scaled by spread, summed, clamped and mapped onto 0..100.

Ported from upstream v1.35.4 ``imagelocality/image_locality_test.go`` (TestImageLocalityPriority,
TestNormalizedImageName); ids are upstream's case names. Upstream builds its snapshot with
``NewSnapshot(nil, nodes)``; ``make_cache`` adds the same nodes to our cache, whose per-image node
counts are kept incrementally. TestImageSignature has no port: we do not sign ImageLocality (see
``test_not_signed_because_the_score_reads_other_nodes``).
"""

from __future__ import annotations

import hashlib

import pytest

from scheduler.api.objects import Pod
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, SignPlugin
from scheduler.plugins.imagelocality.image_locality import (
    ImageLocality,
    calculate_priority,
    normalized_image_name,
    scaled_image_score,
)
from scheduler.testing import NodeBuilder, make_node, make_pod
from tests.helpers import make_cache

MB = 1024 * 1024


def pod(*images: str, init: tuple[str, ...] = ()) -> Pod:
    b = make_pod("p").set("spec.containers", [{"name": f"c{i}", "image": image} for i, image in enumerate(images)])
    if init:
        b = b.set("spec.initContainers", [{"name": f"i{i}", "image": image} for i, image in enumerate(init)])
    built = b.build()
    assert not built.errors, built.error_message
    return built


def node(name: str, *images: tuple[int, tuple[str, ...]]) -> NodeBuilder:
    b = make_node(name)
    for size_mb, names in images:
        b = b.image(size_mb * MB, *names)
    return b


TEST_40_250 = pod("gcr.io/40", "gcr.io/250")
TEST_40_300 = pod("gcr.io/40", "gcr.io/300")
TEST_MIN_MAX = pod("gcr.io/10", "gcr.io/4000")
TEST_300_600_900 = pod("gcr.io/300", "gcr.io/600", "gcr.io/900")
TEST_30_40 = pod("gcr.io/30", "gcr.io/40")
TEST_30_INIT_300 = pod("gcr.io/30", init=("gcr.io/300",))

N403002000 = (
    (40, ("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1")),
    (300, ("gcr.io/300:latest", "gcr.io/300:v1")),
    (2000, ("gcr.io/2000:latest",)),
)
N25010 = ((250, ("gcr.io/250:latest",)), (10, ("gcr.io/10:latest", "gcr.io/10:v1")))
N60040900 = ((600, ("gcr.io/600:latest",)), (40, ("gcr.io/40:latest",)), (900, ("gcr.io/900:latest",)))
N300600900 = ((300, ("gcr.io/300:latest",)), (600, ("gcr.io/600:latest",)), (900, ("gcr.io/900:latest",)))
N400030 = ((4000, ("gcr.io/4000:latest",)), (30, ("gcr.io/30:latest",)))
N203040 = ((20, ("gcr.io/20:latest",)), (30, ("gcr.io/30:latest",)), (40, ("gcr.io/40:latest",)))


@pytest.mark.parametrize(
    ("incoming", "nodes", "want"),
    [
        pytest.param(
            TEST_40_250,
            [node("node1", *N403002000), node("node2", *N25010)],
            # node1: 40M·1/2 < 23M → 0; node2: 100·(250M·1/2 − 23M)/(1000M·2 − 23M) = 5
            [0, 5],
            id="two images spread on two nodes, prefer the larger image one",
        ),
        pytest.param(
            TEST_40_300,
            [node("node1", *N403002000), node("node2", *N25010)],
            # node1: 100·((40M + 300M)/2 − 23M)/(1000M·2 − 23M) = 7
            [7, 0],
            id="two images on one node, prefer this node",
        ),
        pytest.param(
            TEST_MIN_MAX,
            [node("node1", *N400030), node("node2", *N25010)],
            # node1: 4000M·1/2 ≥ 1000M·2 → 100
            [100, 0],
            id="if exceed limit, use limit",
        ),
        pytest.param(
            TEST_MIN_MAX,
            [node("node1", *N400030), node("node2", *N25010), node("node3")],
            # node1: 100·(4000M·1/3 − 23M)/(1000M·2 − 23M) = 66
            [66, 0, 0],
            id="if exceed limit, use limit (with node which has no images present)",
        ),
        pytest.param(
            TEST_300_600_900,
            [node("node1", *N60040900), node("node2", *N300600900), node("node3")],
            # node1: 100·(600M·2/3 + 900M·2/3 − 23M)/(1000M·3 − 23M) = 32; node2 adds 300M·1/3 → 36
            [32, 36, 0],
            id="pod with multiple large images, node2 is preferred",
        ),
        pytest.param(
            TEST_30_40,
            [node("node1", *N203040), node("node2", *N400030)],
            # node1: 100·(30M + 40M·1/2 − 23M)/(1000M·2 − 23M) = 1; node2: 30M·1/2 < 23M → 0
            [1, 0],
            id="pod with multiple small images",
        ),
        pytest.param(
            TEST_30_INIT_300,
            [node("node1", *N403002000), node("node2", *N203040)],
            # init containers count, and count as containers: 100·(300M·1/2 − 23M)/(1000M·2 − 23M) = 6
            [6, 0],
            id="include InitContainers: two images spread on two nodes, prefer the larger image one",
        ),
    ],
)
def test_image_locality_priority(incoming: Pod, nodes: list[NodeBuilder], want: list[int]) -> None:
    cache = make_cache(nodes)
    plugin = ImageLocality({}, Handle(cache))
    infos = [cache.get(n.obj["metadata"]["name"]) for n in nodes]
    assert all(i is not None for i in infos)
    state = CycleState()
    assert [plugin.score(state, incoming, i) for i in infos if i is not None] == want
    assert plugin.score_nodes(state, incoming, [i for i in infos if i is not None]) == want


# Image volumes: upstream v1.36.3's and v1.37.2's tables ("pod with ImageVolume"; 1.37 adds "same
# images as ImageVolume pod but as regular container images"). Pod: gcr.io/30, image volume gcr.io/300.
TEST_IMAGE_VOLUME = (
    make_pod("p")
    .set("spec.containers", [{"name": "c", "image": "gcr.io/30"}])
    .set("spec.volumes", [{"name": "imageVolume", "image": {"reference": "gcr.io/300"}}])
    .build()
)


@pytest.mark.parametrize(
    ("minor", "incoming", "want"),
    [
        # node1: the volume's 300M is not looked at; 30M·1/2 < 23M on node2 → 0 for both
        pytest.param("1.35", TEST_IMAGE_VOLUME, [0, 0], id="1.35: image volumes are not read"),
        # node1: 100·(300M·1/2 − 23M)/(1000M − 23M) = 12 (one container)
        pytest.param("1.36", TEST_IMAGE_VOLUME, [12, 0], id="1.36: pod with ImageVolume"),
        # node1: 100·(300M·1/2 − 23M)/(1000M·2 − 23M) = 6 (the volume counts as an image)
        pytest.param("1.37", TEST_IMAGE_VOLUME, [6, 0], id="1.37: pod with ImageVolume"),
        pytest.param(
            "1.37",
            pod("gcr.io/30", "gcr.io/300"),
            [6, 0],
            id="1.37: same images as ImageVolume pod but as regular container images",
        ),
    ],
)
def test_image_volumes(minor: str, incoming: Pod, want: list[int]) -> None:
    nodes = [node("node1", *N300600900), node("node2", *N400030)]
    cache = make_cache(nodes)
    plugin = ImageLocality({}, Handle(cache), features_at(minor))
    infos = [i for i in (cache.get(n.obj["metadata"]["name"]) for n in nodes) if i is not None]
    assert [plugin.score(CycleState(), incoming, i) for i in infos] == want
    assert plugin.score_nodes(CycleState(), incoming, infos) == want


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("root", "root:latest", id="add :latest postfix 1"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
        pytest.param("root:tag", "root:tag", id="keep it as is 1"),
        pytest.param("root@" + fake_digest("root"), "root@" + fake_digest("root"), id="keep it as is 2"),
        pytest.param("gcr.io:5000/root@" + fake_digest("x"), "gcr.io:5000/root@" + fake_digest("x"), id="digest"),
        pytest.param("", ":latest", id="empty name gets a tag, as upstream"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image_name(name) == want


# -- beyond upstream's tables ---------------------------------------------------------------------


def test_digest_reference_matches_the_node_name_as_listed() -> None:
    digest = "gcr.io/app@" + fake_digest("app")
    cache = make_cache([node("node1", (500, (digest, "gcr.io/app:v1")))])
    info = cache.get("node1")
    assert info is not None
    # one node of one: 500M, one container: 100·(500M − 23M)/(1000M − 23M) = 48
    assert ImageLocality({}, Handle(cache)).score(CycleState(), pod(digest), info) == 48


def test_formula_pieces() -> None:
    assert scaled_image_score(300 * MB, 1, 3) == 104857600
    assert scaled_image_score(10, 1, 0) == 0  # no division by zero
    assert calculate_priority(0, 0) == 0  # no containers
    assert calculate_priority(22 * MB, 1) == 0
    assert calculate_priority(2000 * MB, 1) == 100
    assert calculate_priority(2000 * MB, 3) == 100 * (2000 * MB - 23 * MB) // (3000 * MB - 23 * MB)


def test_same_image_in_two_containers_counts_twice() -> None:
    """Upstream sums per container, so a repeated image adds its score again (and raises the cap)."""
    cache = make_cache([node("node1", (600, ("a:latest",)))])
    info = cache.get("node1")
    assert info is not None
    plugin = ImageLocality({}, Handle(cache))
    assert plugin.score(CycleState(), pod("a"), info) == 100 * (600 * MB - 23 * MB) // (1000 * MB - 23 * MB)
    assert plugin.score(CycleState(), pod("a", "a"), info) == 100 * (1200 * MB - 23 * MB) // (2000 * MB - 23 * MB)


def test_not_signed_because_the_score_reads_other_nodes() -> None:
    """node1 is unchanged, yet its score drops when node2 gains the image: not a function of node1
    alone, so it must not be memoized per node generation (our SignPlugin promise)."""
    cache = make_cache([node("node1", (1000, ("big:latest",))), node("node2")])
    plugin = ImageLocality({}, Handle(cache))
    assert not isinstance(plugin, SignPlugin)
    info = cache.get("node1")
    assert info is not None
    generation = info.generation
    before = plugin.score(CycleState(), pod("big"), info)
    old = cache.get("node2")
    assert old is not None
    cache.update_node(old.node, node("node2", (1000, ("big:latest",))).build())
    assert info.generation == generation
    after = plugin.score(CycleState(), pod("big"), info)
    # 1000M·1/2 − 23M over 977M → 48; then 1000M·2/2 → 100
    assert (before, after) == (48, 100)


def test_no_pre_score_normalize_or_events() -> None:
    plugin = ImageLocality({}, Handle())
    for method in ("pre_score", "normalize_score", "events_to_register", "sign_pod"):
        assert not hasattr(plugin, method), method
