"""The spread report as JSON (the documented schema, docs/skew.md) and as a terminal table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scheduler.skew.report import ConstraintReport, WorkloadReport

__all__ = ["TABLE_DOMAINS", "render_table", "to_json", "workload_to_json"]

# The table lists this many domains per constraint (the fullest first); JSON always lists them all.
TABLE_DOMAINS = 8
EMPTY_VALUE = '""'  # a domain whose label value is the empty string


def _constraint_to_json(c: ConstraintReport) -> dict[str, Any]:
    return {
        "topologyKey": c.topology_key,
        "maxSkew": c.max_skew,
        "whenUnsatisfiable": c.when_unsatisfiable,
        "minDomains": c.min_domains,
        "nodeAffinityPolicy": c.node_affinity_policy,
        "nodeTaintsPolicy": c.node_taints_policy,
        "selector": c.selector,
        "source": c.source,
        "domains": c.domains,
        "globalMinimum": c.global_minimum,
        "skew": c.skew,
        "violated": c.violated,
        "pods": c.pods,
        "violatingPods": c.violating_pods,
        "podsOutsideDomains": c.pods_outside_domains,
    }


def workload_to_json(w: WorkloadReport) -> dict[str, Any]:
    return {
        "namespace": w.namespace,
        "kind": w.kind,
        "name": w.name,
        "pods": w.pods,
        "violated": w.violated,
        "constraints": [_constraint_to_json(c) for c in w.constraints],
    }


def to_json(workloads: Sequence[WorkloadReport]) -> str:
    return json.dumps({"workloads": [workload_to_json(w) for w in workloads]}, indent=2)


def _domains_cell(c: ConstraintReport) -> str:
    fullest = sorted(c.domains.items(), key=lambda item: (-item[1], item[0]))
    cell = " ".join(f"{d or EMPTY_VALUE}={n}" for d, n in fullest[:TABLE_DOMAINS])
    if len(fullest) > TABLE_DOMAINS:
        cell += f" (+{len(fullest) - TABLE_DOMAINS} more)"
    return cell or "(no eligible domain)"


def _pods_cell(c: ConstraintReport) -> str:
    parts = []
    if c.violating_pods:
        parts.append(", ".join(p.rpartition("/")[2] for p in c.violating_pods))
    elif c.violated is None:
        parts.append("-")  # ScheduleAnyway: a preference, never violated
    else:
        parts.append("none")
    if c.pods_outside_domains:
        parts.append(f"(outside any domain: {', '.join(p.rpartition('/')[2] for p in c.pods_outside_domains)})")
    return " ".join(parts)


def render_table(workloads: Sequence[WorkloadReport]) -> str:
    """One row per workload and constraint: the constraint, the counts, skew/maxSkew, the violating pods."""
    header = ["NAMESPACE", "WORKLOAD", "PODS", "CONSTRAINT", "DOMAINS (pods)", "SKEW", "VIOLATING PODS"]
    rows = [header]
    for w in workloads:
        for c in w.constraints:
            when = c.when_unsatisfiable + ("" if c.source == "pod" else f", {c.source}")
            min_domains = f" minDomains={c.min_domains}" if c.min_domains > 1 else ""
            mark = " !" if c.violated else ""
            rows.append(
                [
                    w.namespace,
                    f"{w.kind}/{w.name}",
                    str(len(c.pods)),
                    f"{c.topology_key} maxSkew={c.max_skew}{min_domains} ({when})",
                    _domains_cell(c),
                    f"{c.skew}/{c.max_skew}{mark}",
                    _pods_cell(c),
                ]
            )
    if len(rows) == 1:
        return "No workload with topology spread constraints or default spreading.\n"
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"
