"""The reliability table is made from the tests' reports: a count in a report is the count in the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.reliability_report import BEGIN, END, table, write

KILLS = {
    "kills": 20,
    "pods": 1000,
    "lost": 0,
    "pods_bound_twice": 0,
    "binding_requests": 1003,
    "pods_bound": 1000,
    "pods_with_more_than_one_binding_request": 3,
    "binding_conflicts_409": 3,
    "rebinds_by_one_process": 0,
    "pod_deletions": 0,
    "lease_terms": 21,
    "writes_without_lease": 0,
    "writes_after_losing_lease": 0,
}


def test_the_counts_come_from_the_report(tmp_path: Path) -> None:
    (tmp_path / "kills.json").write_text(json.dumps(KILLS))
    text = table(tmp_path)
    (row,) = [line for line in text.splitlines() if line.startswith("| 20 SIGKILLs")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["1,003 / 1,000", "3 (3)", "0", "0"]


def test_a_report_missing_a_count_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "kills.json").write_text(json.dumps({k: v for k, v in KILLS.items() if k != "kills"}))
    with pytest.raises(SystemExit, match=r"kills\.json"):
        table(tmp_path)


def test_no_reports_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no reports"):
        table(tmp_path)


def test_write_replaces_only_the_marked_part(tmp_path: Path) -> None:
    page = tmp_path / "reliability.md"
    page.write_text(f"# R\n\nintro\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    write(page, "new table")
    assert page.read_text() == f"# R\n\nintro\n\n{BEGIN}\nnew table\n{END}\n\nafter\n"
