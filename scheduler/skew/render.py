"""The spread report as JSON (the documented schema, docs/skew.md) and as a terminal table; with a
dry run (``scheduler.spread.dry_run``), the deletion costs in force and the rebalancing plans too."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scheduler.skew.report import ConstraintReport, WorkloadReport
from scheduler.spread.deletion_cost import COST_ANNOTATION
from scheduler.spread.dry_run import DryRun, shown_as
from scheduler.spread.rebalance import Plan
from scheduler.spread.render import OURS_MARK, cost_cell, cost_to_json, plan_lines, plan_to_json

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


def workload_to_json(w: WorkloadReport, dry: DryRun | None = None) -> dict[str, Any]:
    out = {
        "namespace": w.namespace,
        "kind": w.kind,
        "name": w.name,
        "pods": w.pods,
        "violated": w.violated,
        "constraints": [_constraint_to_json(c) for c in w.constraints],
    }
    if dry is not None:
        costs = (cost_to_json(pod) for key in w.pods if (pod := dry.sim.cache.pod(key)) is not None)
        out["deletionCosts"] = [c for c in costs if c is not None]
        plans = _plans(w, dry)
        out["rebalance"] = [plan_to_json(p, dry.deployments) for p in plans]
    return out


def to_json(workloads: Sequence[WorkloadReport], dry: DryRun | None = None) -> str:
    return json.dumps({"workloads": [workload_to_json(w, dry) for w in workloads]}, indent=2)


def _plans(w: WorkloadReport, dry: DryRun) -> list[Plan]:
    """The plans of the report's workload (a Deployment's: one per ReplicaSet)."""
    return [p for p in dry.plans if shown_as(p.workload, dry.deployments) == (w.namespace, w.kind, w.name)]


def _sections(workloads: Sequence[WorkloadReport], dry: DryRun) -> list[str]:
    costs: list[str] = []
    plans: list[str] = []
    for w in workloads:
        name = f"{w.namespace}/{w.kind}/{w.name}"
        pods = [pod for key in w.pods if (pod := dry.sim.cache.pod(key)) is not None]
        cells = [f"{pod.name}={cell}" for pod in pods if (cell := cost_cell(pod)) != "-"]
        if cells:
            costs.append(f"  {name}: {' '.join(cells)}")
        for plan in _plans(w, dry):
            owner = "" if w.kind == plan.workload.kind else f" ({plan.workload.kind}/{plan.workload.name})"
            lines = plan_lines(plan)
            plans.append(f"  {name}{owner}: {lines[0]}")
            plans += [f"    {line}" for line in lines[1:]]
    out = []
    if costs:
        out += [f"\nDeletion costs in force ({COST_ANNOTATION}; {OURS_MARK} ours):", *costs]
    if plans:
        out += ["\nRebalancing (spread-scheduler rebalance --dry-run):", *plans]
    return out


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


def render_table(workloads: Sequence[WorkloadReport], dry: DryRun | None = None) -> str:
    """One row per workload and constraint: the constraint, the counts, skew/maxSkew, the violating pods;
    with ``dry``, the deletion costs in force and the plans after the table."""
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
    if dry is not None:
        lines += _sections(workloads, dry)
    return "\n".join(lines) + "\n"
