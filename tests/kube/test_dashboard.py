"""docs/grafana-dashboard.json queries only series the scheduler exports (a renamed metric leaves a panel empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import generate_latest

from scheduler.kube.metrics import SchedulerMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
_FUNCTIONS = {"sum", "by", "rate", "histogram_quantile", "le", "label_values", "job", "instance"}


def _exported() -> set[str]:
    metrics = SchedulerMetrics()
    metrics.observe_attempt("scheduled", "spread-scheduler", 0.01)
    metrics.observe_bound(1, 0.02)
    metrics.sync_incoming({("active", "PodAdd"): 1})
    metrics.publish_queue({"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}, {})
    metrics.leader.labels("spread-scheduler").set(1)
    metrics.api_requests.labels("ok").inc()
    metrics.plugin_duration.observe("NodeAffinity", "Filter", "Success", 0.001)
    text = generate_latest(metrics.registry).decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_every_series_the_dashboard_queries_is_exported() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    queried = {
        name
        for expr in exprs
        for name in re.findall(r"\b([a-z_][a-z0-9_]*)\s*\{", re.sub(r"\{\{[^}]*\}\}", "", expr))
        if name not in _FUNCTIONS
    }
    assert queried, exprs
    missing = queried - _exported()
    assert not missing, f"the dashboard queries series nobody exports: {sorted(missing)}"
