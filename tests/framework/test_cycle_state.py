"""CycleState (framework/cycle_state.py): reads name the missing key, clones are independent."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from scheduler.framework.cycle_state import CycleState, StateKeyError


@dataclass
class _Counter:
    n: int = 0

    def clone(self) -> _Counter:
        return _Counter(self.n)


def test_cycle_state_read_names_the_missing_key() -> None:
    state = CycleState()
    with pytest.raises(StateKeyError, match="reading 'PreFilterX' from cycleState: not found"):
        state.read("PreFilterX", _Counter)
    state.write("k", "not a counter")
    with pytest.raises(StateKeyError, match="holds str, not _Counter"):
        state.read("k", _Counter)


def test_cycle_state_clone_copies_data_through_clone_and_skip_sets() -> None:
    state = CycleState()
    state.write("c", _Counter(1))
    state.skip_filter_plugins.add("A")
    copy = state.clone()
    copy.read("c", _Counter).n = 5
    copy.skip_filter_plugins.add("B")
    assert state.read("c", _Counter).n == 1
    assert state.skip_filter_plugins == {"A"}
    assert copy.skip_filter_plugins == {"A", "B"}
