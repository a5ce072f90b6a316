"""CycleState: per-attempt scratch space shared by the plugins of one scheduling cycle."""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["CycleState", "StateData", "StateKeyError"]


class StateData(Protocol):
    """What plugins store; ``clone`` returns ``self`` for read-only data (nominated-pod copies)."""

    def clone(self) -> StateData: ...


T = TypeVar("T")


class StateKeyError(KeyError):
    """A plugin read a key that its PreFilter/PreScore did not write (upstream's ``ErrNotFound``)."""


class CycleState:
    """Keyed plugin data plus the sets of plugins that said Skip at PreFilter and PreScore."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, object] = {}
        self.record_plugin_metrics = False  # set for a sample of cycles (upstream: 10 %)
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def read(self, key: str, kind: type[T]) -> T:
        """The value under ``key``, checked to be a ``kind``; the error names the key."""
        try:
            value = self._data[key]
        except KeyError:
            raise StateKeyError(f"reading {key!r} from cycleState: not found") from None
        if not isinstance(value, kind):
            raise StateKeyError(f"{key!r} holds {type(value).__name__}, not {kind.__name__}")
        return value

    def get(self, key: str) -> object | None:
        return self._data.get(key)

    def clone(self) -> CycleState:
        copy = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            copy._data[key] = clone() if callable(clone) else value
        copy.record_plugin_metrics = self.record_plugin_metrics
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        return copy
