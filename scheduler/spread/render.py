"""Plans and deletion costs as text and JSON: ``rebalance --dry-run`` prints them, ``skew`` and
``explain`` add them to their own output (``scheduler/skew/render.py`` is the report's renderer)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod
from scheduler.spread.deletion_cost import cost_in_force
from scheduler.spread.dry_run import shown_as
from scheduler.spread.rebalance import REBALANCED_KINDS, Move, Plan
from scheduler.spread.workload import workload_of

__all__ = [
    "OURS_MARK",
    "cost_cell",
    "cost_to_json",
    "plan_lines",
    "plan_to_json",
    "plans_to_json",
    "pod_move",
    "pod_spread",
    "pod_spread_lines",
    "render_plans",
]

OURS_MARK = "*"  # after a deletion cost: we set it (spread-scheduler.io/deletion-cost equals it)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def _move_to_json(m: Move) -> dict[str, Any]:
    """The move's fields, camelCased as the API's JSON is (``from_node`` -> ``fromNode``)."""
    return {_camel(k): list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(m).items()}


def plan_to_json(plan: Plan, deployments: Mapping[tuple[str, str, str], str]) -> dict[str, Any]:
    namespace, kind, name = shown_as(plan.workload, deployments)
    return {
        "namespace": namespace,
        "kind": kind,
        "name": name,
        "owner": {"kind": plan.workload.kind, "name": plan.workload.name, "uid": plan.workload.uid},
        "reason": plan.reason,
        "message": plan.message,
        "constraints": [
            {
                "topologyKey": s.topology_key,
                "maxSkew": s.max_skew,
                "whenUnsatisfiable": "DoNotSchedule" if s.hard else "ScheduleAnyway",
                "skew": s.skew,
            }
            for s in plan.skews
        ],
        "moves": [_move_to_json(m) for m in plan.moves],
    }


def plans_to_json(plans: Sequence[Plan], deployments: Mapping[tuple[str, str, str], str]) -> str:
    return json.dumps({"plans": [plan_to_json(p, deployments) for p in plans]}, indent=2)


def _move_line(step: int, m: Move, plan: Plan) -> str:
    after = ", ".join(f"{s.topology_key} {v}" for s, v in zip(plan.skews, m.skews_after, strict=True))
    return (
        f"{step}. {m.pod.rpartition('/')[2]}: {m.from_domain} ({m.from_node}) -> {m.to_domain} ({m.to_node}), "
        f"{m.topology_key} skew {m.skew_before} -> {m.skew_after}"
        + (f" (skews after: {after})" if len(plan.skews) > 1 else "")
    )


def plan_lines(plan: Plan) -> list[str]:
    """The plan's verdict, then one line per move with the skew after it."""
    lines = [f"{plan.reason}: {plan.message}"]
    lines += [_move_line(step, m, plan) for step, m in enumerate(plan.moves, 1)]
    return lines


def render_plans(plans: Sequence[Plan], deployments: Mapping[tuple[str, str, str], str]) -> str:
    """``rebalance --dry-run``: per workload, its constraints' skews now, the verdict, the moves."""
    if not plans:
        return "No workload of ours with topology spread constraints or default spreading.\n"
    out: list[str] = []
    for plan in plans:
        namespace, kind, name = shown_as(plan.workload, deployments)
        owner = (
            ""
            if (kind, name) == (plan.workload.kind, plan.workload.name)
            else f" ({plan.workload.kind}/{plan.workload.name})"
        )
        skews = ", ".join(
            f"{s.topology_key} skew {s.skew}/{s.max_skew}{'' if s.hard else ' (ScheduleAnyway)'}" for s in plan.skews
        )
        out.append(f"{namespace}/{kind}/{name}{owner}" + (f": {skews}" if skews else ""))
        out += [f"  {line}" for line in plan_lines(plan)]
    return "\n".join(out) + "\n"


def cost_to_json(pod: Pod) -> dict[str, Any] | None:
    """The deletion cost in force on ``pod`` and whether it is ours; None without one."""
    value, ours = cost_in_force(pod)
    return None if value is None else {"pod": pod.key, "cost": value, "ours": ours}


def cost_cell(pod: Pod) -> str:
    value, ours = cost_in_force(pod)
    return "-" if value is None else f"{value}{OURS_MARK if ours else ''}"


def pod_move(pod: Pod, plans: Sequence[Plan]) -> str:
    """Whether its workload's plan moves ``pod``, in one line."""
    workload = workload_of(pod, REBALANCED_KINDS)
    plan = next((p for p in plans if p.workload == workload), None)
    if plan is None:
        return "no plan: not a ReplicaSet's, ReplicationController's or StatefulSet's pod of ours with spread"
    for step, m in enumerate(plan.moves, 1):
        if m.pod == pod.key:
            return f"move {step} of {len(plan.moves)}: {_move_line(step, m, plan).partition(': ')[2]}"
    return f"not moved ({plan.reason}: {plan.message})"


def pod_spread(pod: Pod, plans: Sequence[Plan]) -> dict[str, Any]:
    """``explain -o json``'s ``spread``: the pod's deletion cost in force and its rebalancing."""
    return {"deletionCost": cost_to_json(pod), "rebalance": pod_move(pod, plans)}


def pod_spread_lines(pod: Pod, plans: Sequence[Plan]) -> list[str]:
    """``explain``'s two lines after the table."""
    value, ours = cost_in_force(pod)
    cost = "none" if value is None else f"{value} ({'ours' if ours else 'set by someone else'})"
    return [f"Deletion cost of {pod.key}: {cost}", f"Rebalancing: {pod_move(pod, plans)}"]
