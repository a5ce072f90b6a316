"""ImageLocality: favour nodes that already hold the pod's container images, weighted by how far
each image has spread (so that one node holding an image does not draw every pod to it).

Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go``. From 1.36 the images
of image volumes are summed too (#130231), and from 1.37 they count with the containers in the upper
threshold (#138951): ``Features.image_volumes_scored`` and ``image_volumes_counted``. Score only: no
PreScore, no NormalizeScore, no EnqueueExtensions. It signs pods for batching as upstream does
(``sign_fragments``) but is not a ``SignPlugin`` for per-node reuse (the comment in ``ImageLocality``
says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.status import Status
from scheduler.framework.types import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins import names

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "ImageLocality",
    "calculate_priority",
    "normalized_image_name",
    "scaled_image_score",
]

NAME = names.IMAGE_LOCALITY

# Bounds of the summed image score: a reasonable size range for compressed images in registries
# (90th percentile of Docker Hub). The upper bound is per container.
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ``:latest`` when the last ``:`` is not after the last ``/``.

    So ``gcr.io:5000/root`` gets a tag (its ``:`` is a port) and ``root@sha256:<hex>`` keeps its
    digest unchanged; ``""`` becomes ``":latest"``. No registry or ``library/`` prefix is added.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """``scaledImageScore``: the image's size times the share of nodes holding it, truncated
    (upstream's float64 arithmetic). An empty snapshot cannot hold the node being scored; it scores 0
    rather than dividing by zero."""
    if total_num_nodes == 0:
        return 0
    spread = float(num_nodes) / float(total_num_nodes)
    return int(float(size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: the sum clamped to [23 MB, 1000 MB × containers] and mapped onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # The numerator is >= 0 after clamping; without containers the denominator is negative and the
    # numerator 0, so floor and Go's truncation agree.
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    """Score (and BatchScore, the same per node with the pod's work done once)."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        self.handle = handle
        self.volumes_scored = features.image_volumes_scored
        self.volumes_counted = features.image_volumes_counted

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        return [(signers.IMAGE_NAMES_SIGNER_NAME, signers.image_names_signer(pod, normalized_image_name))], None

    # Not a SignPlugin (per-node result reuse): that promise is that Score depends on the signature
    # and the one NodeInfo only, and this score also reads how many nodes hold each image and how
    # many nodes there are, which change when *other* nodes change. Batching's signature
    # (``sign_fragments``) is upstream's, and is a different promise.

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self._scorer(pod)(node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        score = self._scorer(pod)
        if not any(score.spread.values()):
            # No node holds any of the pod's images (a new image, a rollout): every node's sum is 0,
            # so every score is the same; computed once instead of once per node.
            return [calculate_priority(0, score.num_containers)] * len(nodes)
        return [score(info) for info in nodes]

    def _scorer(self, pod: Pod) -> _NodeScorer:
        """The per-pod half of ``Score``: each container's normalized image with its spread-scaled
        score factors; init containers count, as upstream's ``sumImageScores`` does."""
        snapshot = self.handle.current()
        total = len(snapshot.node_infos())
        written = list(pod.images)
        count = len(written)
        if self.volumes_scored:
            volume_images = [v.image for v in pod.volumes if v.image is not None]
            written += volume_images
            if self.volumes_counted:
                count += len(volume_images)
        images = [normalized_image_name(image) for image in written]
        spread = {name: snapshot.image_num_nodes(name) for name in set(images)}
        return _NodeScorer(images, spread, total, count)


class _NodeScorer:
    __slots__ = ("images", "num_containers", "spread", "total")

    def __init__(self, images: list[str], spread: dict[str, int], total: int, num_containers: int) -> None:
        self.images = images
        self.spread = spread
        self.total = total
        self.num_containers = num_containers

    def __call__(self, info: NodeInfo) -> int:
        held = info.node.images
        total = 0
        for image in self.images:
            size = held.get(image)
            if size is not None:
                total += scaled_image_score(size, self.spread[image], self.total)
        return calculate_priority(total, self.num_containers)
