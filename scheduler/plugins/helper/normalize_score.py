"""``helper.DefaultNormalizeScore``: scale to 0..max_priority by the highest score, integer division."""

from __future__ import annotations

from scheduler.framework.types import MAX_NODE_SCORE


def default_normalize_score(scores: list[int], *, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """In place: ``max*s//highest`` (``max - that`` when ``reverse``); all-zero stays 0 (or max if reverse)."""
    highest = max(scores, default=0)
    if highest == 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    for i, score in enumerate(scores):
        value = max_priority * score // highest
        scores[i] = max_priority - value if reverse else value
