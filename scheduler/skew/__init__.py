"""``spread-scheduler skew``: how the workloads are spread now, against their constraints (no I/O here)."""

from scheduler.skew.render import render_table, to_json
from scheduler.skew.report import ConstraintReport, WorkloadReport, skew_report

__all__ = ["ConstraintReport", "WorkloadReport", "render_table", "skew_report", "to_json"]
