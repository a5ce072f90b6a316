"""plugins/helper: DefaultNormalizeScore's integer arithmetic and Go's half-away-from-zero rounding."""

from __future__ import annotations

import math

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.events import QueueingHint
from scheduler.plugins.helper.math import go_round
from scheduler.plugins.helper.normalize_score import default_normalize_score
from scheduler.plugins.helper.volumes import claim_hint
from scheduler.testing import make_pod


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        pytest.param([0, 0, 0], False, [0, 0, 0], id="all-zero-stays-zero"),
        pytest.param([0, 0, 0], True, [100, 100, 100], id="all-zero-reverse-is-max"),
        pytest.param([8, 5, 3, 0], False, [100, 62, 37, 0], id="truncating-division"),
        pytest.param([0, 1, 2], True, [100, 50, 0], id="reverse"),
        pytest.param([0, 0], False, [0, 0], id="two-zeros"),
        pytest.param([0, 0], True, [100, 100], id="two-zeros-reverse"),
        pytest.param([1, 3], True, [67, 0], id="reverse-of-truncated"),
        pytest.param([], False, [], id="empty"),
        pytest.param([7], False, [100], id="single"),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    default_normalize_score(scores, reverse=reverse)
    assert scores == expected


def test_default_normalize_score_other_max_priority() -> None:
    scores = [1, 3]
    default_normalize_score(scores, reverse=False, max_priority=10)
    assert scores == [3, 10]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2.5, 3, id="half-up-not-to-even"),
        pytest.param(0.5, 1, id="zero-point-five"),
        pytest.param(1.5, 2, id="one-point-five"),
        pytest.param(4.5, 5, id="four-point-five"),
        pytest.param(2.4999999, 2, id="below-half"),
        pytest.param(2.4999, 2, id="just-below-half"),
        pytest.param(3.5, 4, id="three-point-five"),
        pytest.param(10.56, 11, id="tv7-node1"),
        pytest.param(0.0, 0, id="zero"),
        pytest.param(-2.5, -3, id="negative-away-from-zero"),
    ],
)
def test_go_round(value: float, expected: int) -> None:
    assert go_round(value) == expected


def test_python_round_would_differ() -> None:
    assert round(2.5) == 2
    assert go_round(2.5) == 3
    assert math.floor(4.5 + 0.5) == go_round(4.5)


def test_claim_hint_queues_an_event_without_a_new_claim_unless_told_otherwise() -> None:
    """VolumeRestrictions', NodeVolumeLimits' and VolumeBinding's claim hints queue such an event (as
    before they shared this code); VolumeZone's skips it."""
    pod = Pod.from_dict(make_pod("p").dict())
    assert claim_hint(pod, None, None, ephemeral=True) is QueueingHint.QUEUE
    assert claim_hint(pod, None, None, ephemeral=False) is QueueingHint.QUEUE
    assert claim_hint(pod, None, None, ephemeral=False, no_claim=QueueingHint.QUEUE_SKIP) is QueueingHint.QUEUE_SKIP
