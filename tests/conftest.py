"""Unit-suite hooks: the fuzz seed is printed (header and summary, so ``-q`` runs show it too) so a
failure can be replayed with ``SPREAD_FUZZ_SEED``."""

from __future__ import annotations

import pytest

from tests.fuzz_seed import FUZZ_SEED

LINE = f"fuzz seed: {FUZZ_SEED} (replay with SPREAD_FUZZ_SEED={FUZZ_SEED})"


def pytest_report_header() -> str:
    return LINE


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(LINE)
