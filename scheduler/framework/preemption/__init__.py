"""Preemption shared by preemption plugins (upstream ``pkg/scheduler/framework/preemption``). Pure."""

from scheduler.framework.preemption.preemption import (
    ERR_NOT_HELPFUL,
    PREEMPTION_OUTCOME_KEY,
    Candidate,
    Evaluator,
    Interface,
    PreemptionOutcome,
    Victims,
    get_earliest_pod_start_time,
    more_important_order,
    pick_one_node_for_preemption,
)

__all__ = [
    "ERR_NOT_HELPFUL",
    "PREEMPTION_OUTCOME_KEY",
    "Candidate",
    "Evaluator",
    "Interface",
    "PreemptionOutcome",
    "Victims",
    "get_earliest_pod_start_time",
    "more_important_order",
    "pick_one_node_for_preemption",
]
