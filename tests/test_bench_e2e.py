"""bench/e2e.py: the median row (every figure its own median, not the one run with the median time)
and ``--own-core``'s CPU sets."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from bench.e2e import _affinity, median_row, own_core_layout


def _run(run: int, seconds: float, cpu: float, rss: float, apiserver: float) -> dict[str, Any]:
    return {
        "scheduler": "spread-scheduler",
        "nodes": 500,
        "seconds": seconds,
        "pods_per_s": round(1000 / seconds, 1),
        "cpu_ms_per_pod": cpu,
        "peak_rss_mb": rss,
        "plane_cpu_ms_per_pod": {"kube-apiserver": apiserver, "etcd": 1.0},
        "run": run,
    }


def test_each_figure_is_its_own_median() -> None:
    # The median-time run (5.0 s) has the highest CPU and RSS of the three: it must not decide them.
    rows = [_run(0, 4.0, 3.0, 110.0, 4.0), _run(1, 5.0, 3.5, 125.0, 5.0), _run(2, 6.0, 3.2, 115.0, 4.5)]
    row = median_row(rows)
    assert (row["seconds"], row["pods_per_s"]) == (5.0, 200.0)
    assert (row["cpu_ms_per_pod"], row["peak_rss_mb"]) == (3.2, 115.0)
    assert row["plane_cpu_ms_per_pod"] == {"kube-apiserver": 4.5, "etcd": 1.0}
    assert (row["scheduler"], row["nodes"], row["runs"]) == ("spread-scheduler", 500, 3) and "run" not in row


def test_an_even_count_takes_the_worse_of_the_middle_two() -> None:
    rows = [
        _run(i, s, c, m, 4.0)
        for i, (s, c, m) in enumerate([(4.0, 3.0, 110.0), (5.0, 3.1, 111.0), (6.0, 3.2, 112.0), (7.0, 3.3, 113.0)])
    ]
    row = median_row(rows)
    assert (row["seconds"], row["pods_per_s"], row["cpu_ms_per_pod"], row["peak_rss_mb"]) == (6.0, 166.7, 3.2, 112.0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--own-core needs two CPUs")
def test_own_core_starts_the_contestant_on_the_other_cpus_and_keeps_the_callers_set() -> None:
    """Red if the child inherits the driver's set (the contestant would share the control plane's
    CPU), or if the driver stays on the contestant's CPUs after the start."""
    before = os.sched_getaffinity(0)
    plane, contestant = own_core_layout()
    assert plane and contestant and not plane & contestant and plane | contestant == before
    show = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with _affinity(contestant):
        child = subprocess.run(show, capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(sorted(contestant))
    assert os.sched_getaffinity(0) == before
    with _affinity(None):
        child = subprocess.run(show, capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(sorted(before))
