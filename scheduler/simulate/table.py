"""A simulation's results as a terminal table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.backend.cache.cache import Cache
from scheduler.schedule_one import Attempt
from scheduler.simulate.json_output import attempt_to_json
from scheduler.simulate.simulation import History


def preemption_line(node: str | None, victims: Sequence[str]) -> str:
    """The table's line for DefaultPreemption's decision."""
    if node is None:
        return "preemption: no node (preemption would not help)"
    return f"preemption: nominated to {node}, evicting {', '.join(victims)}"


def claim_line(served: Mapping[str, Any]) -> str:
    """The table's line for one device a claim of the pod got (``claim_allocations``)."""
    where = f"slice {served['slice']}, " if served["slice"] else ""
    return (
        f"claim {served['claim']}: request {served['request']} -> device {served['device']} "
        f"({where}pool {served['pool']}, driver {served['driver']})"
    )


def _outcome(data: Mapping[str, Any]) -> str:
    return f"-> {data['node']}" if data["node"] else f"UNSCHEDULABLE: {data['message']}"


def render_table(attempts: list[Attempt], cache: Cache, top: int | None = None, history: History | None = None) -> str:
    """A terminal view: the decision per pod, then one row per node with its verdict and scores
    (with ``top``, the best ``top`` nodes, best first, and a line counting the others). With applied
    preemption, a line per earlier cycle (its outcome and decision) and a line for an evicted pod."""
    lines: list[str] = []
    for attempt in attempts:
        data = attempt_to_json(attempt, cache, top, history)
        lines.append(f"pod {data['pod']}: {_outcome(data)}")
        earlier = data.get("earlierCycles", [])
        for i, cycle in enumerate(earlier, start=1):
            lines.append(f"  cycle {i}: {_outcome(cycle)}")
            if "nominatedNode" in cycle:
                lines.append("    " + preemption_line(cycle["nominatedNode"], cycle["victims"]))
        if earlier:
            lines.append(f"  cycle {len(earlier) + 1}: {_outcome(data)}")
        if attempt.preemption is not None:
            lines.append("  " + preemption_line(attempt.preemption.nominated_node, data["victims"]))
        for served in data.get("claims", []):
            lines.append("  " + claim_line(served))
        if "preemptedBy" in data:
            lines.append(f"  preempted by {data['preemptedBy']}: deleted from {data['node']}")
        plugins = [s.plugin for s in attempt.scores]
        header = ["NODE", "FILTER"] + [f"{p} (x{s.weight})" for p, s in zip(plugins, attempt.scores, strict=True)]
        header.append("TOTAL")
        rows = [header]
        for name, entry in data["nodes"].items():
            filt = entry["filter"]
            verdict = (
                "not evaluated"
                if entry.get("evaluated") is False
                else ("ok" if filt is None else f"{filt['plugin']}: {filt['reason']}")
            )
            row = [name + (" *" if name == attempt.host else ""), verdict]
            for p in plugins:
                score = entry["scores"].get(p)
                row.append("" if score is None else f"{score['normalized']} (raw {score['raw']})")
            total = entry["total"]
            row.append("" if total is None else str(total))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if data.get("omittedNodes"):
            lines.append(f"  ... {data['omittedNodes']} more node(s) not shown (--top {top})")
        lines.append("")
    return "\n".join(lines)
