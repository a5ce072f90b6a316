"""Container images as the parsers read them: ``Node.images`` (every name in ``status.images`` -> its
``sizeBytes``) and ``Pod.images`` (init containers' then app containers' images, as written).

Bad input never raises: each wrong type is a ``FieldError`` naming the field, and the spoiled entry
or name is left out; the cache takes such a node (add, update, remove) like any other.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Node, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.testing import make_node, make_pod

MB = 1024 * 1024


def _node(images: object) -> Node:
    obj = make_node("n1").dict()
    obj["status"]["images"] = images
    return Node.from_dict(obj)


def test_every_name_maps_to_its_image_size() -> None:
    node = (
        make_node("n1")
        .image(40 * MB, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1")
        .image(300 * MB, "gcr.io/300:latest")
    )
    parsed = node.build()
    assert parsed.errors == ()
    assert parsed.images == {"gcr.io/40:latest": 40 * MB, "gcr.io/40:v1": 40 * MB, "gcr.io/300:latest": 300 * MB}


def test_no_images() -> None:
    assert make_node("n1").build().images == {}
    assert _node(None).images == {}
    assert _node([]).images == {}


def test_a_name_in_two_entries_keeps_the_later_size() -> None:
    """As upstream's ``getNodeImageStates``: the map entry is overwritten entry by entry."""
    parsed = make_node("n1").image(10, "a:1", "b:1").image(20, "b:1").build()
    assert parsed.images == {"a:1": 10, "b:1": 20}


def test_missing_size_and_missing_names() -> None:
    parsed = _node([{"names": ["a:1"]}, {"sizeBytes": 5}, {}])
    assert parsed.errors == ()
    assert parsed.images == {"a:1": 0}


@pytest.mark.parametrize(
    ("images", "want_images", "want_errors"),
    [
        pytest.param({"a": 1}, {}, ["status.images: must be a list, got dict"], id="images-an-object"),
        pytest.param("a:1", {}, ["status.images: must be a list, got str"], id="images-a-string"),
        pytest.param(["a:1"], {}, ["status.images[0]: must be an object, got str"], id="entry-a-string"),
        pytest.param(
            [{"names": "a:1", "sizeBytes": 1}, {"names": ["b:1"], "sizeBytes": 2}],
            {"b:1": 2},
            ["status.images[0].names: must be a list, got str"],
            id="names-a-string",
        ),
        pytest.param(
            [{"names": ["a:1", 7, None, "b:1"], "sizeBytes": 3}],
            {"a:1": 3, "b:1": 3},
            [
                "status.images[0].names[1]: must be a string, got int",
                "status.images[0].names[2]: must be a string, got NoneType",
            ],
            id="name-not-a-string",
        ),
        pytest.param(
            [{"names": ["a:1"], "sizeBytes": "10Mi"}],
            {"a:1": 0},
            ["status.images[0].sizeBytes: must be an integer, got '10Mi'"],
            id="size-a-string",
        ),
        pytest.param(
            [{"names": ["a:1"], "sizeBytes": True}],
            {"a:1": 0},
            ["status.images[0].sizeBytes: must be an integer, got bool"],
            id="size-a-bool",
        ),
        pytest.param(
            [{"names": ["a:1"], "sizeBytes": 1.5}],
            {"a:1": 0},
            ["status.images[0].sizeBytes: must be an integer, got 1.5"],
            id="size-a-fraction",
        ),
        pytest.param(
            [{"names": ["a:1"], "sizeBytes": 2**63}],
            {"a:1": 0},
            [f"status.images[0].sizeBytes: Invalid value: {2**63}: out of the int64 range"],
            id="size-beyond-int64",
        ),
        pytest.param([{"names": ["a:1"], "sizeBytes": -5}], {"a:1": -5}, [], id="negative-size-kept-as-upstream"),
    ],
)
def test_bad_node_images_are_named_and_left_out(
    images: object, want_images: dict[str, int], want_errors: list[str]
) -> None:
    parsed = _node(images)
    assert dict(parsed.images) == want_images
    assert [str(e) for e in parsed.errors] == want_errors
    cache = Cache()
    cache.add_node(parsed)
    cache.update_node(parsed, _node(images))
    assert cache.image_counts() == dict.fromkeys(want_images, 1)
    cache.remove_node("n1")
    assert cache.image_counts() == {}


def test_pod_images_init_containers_first() -> None:
    pod = (
        make_pod("p")
        .image("app:1")
        .container("second")
        .image("app:2", container=1)
        .init_container("init")
        .init_container("sidecar", restart_always=True)
        .build()
    )
    assert pod.errors == ()
    assert pod.images == ("pause", "pause", "app:1", "app:2")


def test_pod_without_containers_or_images() -> None:
    assert make_pod("p").set("spec.containers", []).build().images == ()
    assert make_pod("p").set("spec.containers", [{"name": "c"}]).build().images == ("",)


@pytest.mark.parametrize(
    ("containers", "want_images", "want_errors"),
    [
        pytest.param(
            [{"name": "c", "image": 5}],
            ("",),
            ["spec.containers[0].image: must be a string, got int"],
            id="image-an-int",
        ),
        pytest.param(
            [{"name": "c", "image": ["a"]}],
            ("",),
            ["spec.containers[0].image: must be a string, got list"],
            id="image-a-list",
        ),
    ],
)
def test_bad_pod_images_are_named(containers: Any, want_images: tuple[str, ...], want_errors: list[str]) -> None:
    pod = Pod.from_dict(make_pod("p").set("spec.containers", containers).dict())
    assert pod.images == want_images
    assert [str(e) for e in pod.errors] == want_errors


@pytest.mark.parametrize(
    "containers",
    [pytest.param("c", id="containers-a-string"), pytest.param(["c"], id="container-a-string")],
)
def test_malformed_containers_are_reported_by_the_other_parsers_only(containers: Any) -> None:
    """The image parser skips what is not a list of objects: the resource parser has named it already."""
    pod = Pod.from_dict(make_pod("p").set("spec.containers", containers).dict())
    assert pod.images == ()
    assert pod.errors
    assert not any("image" in str(e) for e in pod.errors)
