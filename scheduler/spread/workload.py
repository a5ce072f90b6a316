"""A workload, as spread after placement sees one: the ReplicaSet or ReplicationController that
controls a pod, the spread constraints its pods count with, and their counts per domain. The
vocabulary the deletion costs (``scheduler.spread.deletion_cost``), the rebalancing plans
(``scheduler.spread.rebalance``, ``moves``, ``search``), the dry run and the controllers that write
them (``scheduler.kube.controllers``) share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.api.labels import Selector
from scheduler.api.objects import Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, SpreadConstraint
from scheduler.backend.cache.cache import Cache
from scheduler.framework.runtime import Framework
from scheduler.plugins import names
from scheduler.plugins.podtopologyspread.common import Constraint, pod_constraints
from scheduler.plugins.podtopologyspread.counting import domain_counts
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = [
    "RANKED_KINDS",
    "Workload",
    "constraint_selectors",
    "counts_of",
    "spread_constraints_of",
    "workload_of",
]

# Controllers whose scale-down reads the cost (the ReplicationController manager is the ReplicaSet
# controller's code). StatefulSets delete by ordinal and cannot be steered.
RANKED_KINDS = ("ReplicaSet", "ReplicationController")


@dataclass(frozen=True, slots=True, order=True)
class Workload:
    """One controller's pods. The controller is its ownerReference's UID, as the controllers
    themselves resolve a controllerRef (``resolveControllerRef``: the object of that kind and name,
    then only if its UID is the reference's): a pod naming ``web-rs`` with another UID (left by a
    deleted ``web-rs`` of the same name, or written by hand) is another workload, never a member of
    the live one. Namespace, kind and name are kept for display and must agree too; workloads are
    served and shown in field order."""

    namespace: str
    kind: str
    name: str
    uid: str


def workload_of(pod: Pod, kinds: Sequence[str] = RANKED_KINDS) -> Workload | None:
    """The controller of one of ``kinds`` (ReplicaSet, ReplicationController) that controls ``pod``,
    by its ownerReference's UID; None for anything else."""
    owner = pod.controller
    if owner is None or owner.kind not in kinds:
        return None
    return Workload(pod.namespace, owner.kind, owner.name, owner.uid)


def _defaults(framework: Framework) -> tuple[tuple[SpreadConstraint, ...], bool]:
    plugin = framework.plugins.get(names.POD_TOPOLOGY_SPREAD)
    if not isinstance(plugin, PodTopologySpread):
        return (), False
    return plugin.default_constraints, plugin.system_defaulted


def spread_constraints_of(
    pod: Pod, framework: Framework, cache: Cache
) -> tuple[tuple[Constraint, ...], tuple[Constraint, ...], bool]:
    """The pod's hard and soft constraints (its own, or its profile's defaults) and whether every
    node must carry all their keys (all but the built-in System defaults)."""
    defaults, system = _defaults(framework)
    hard = tuple(pod_constraints(pod, DO_NOT_SCHEDULE, defaults, cache))
    soft = tuple(pod_constraints(pod, SCHEDULE_ANYWAY, defaults, cache))
    return hard, soft, bool(pod.spread_constraints) or not system


def constraint_selectors(pod: Pod, frameworks: Mapping[str, Framework], cache: Cache) -> tuple[Selector, ...]:
    """The selectors ``pod``'s constraints count with: whose pods move its workload's ranks."""
    framework = frameworks.get(pod.scheduler_name)
    if framework is None:
        return ()
    hard, soft, _ = spread_constraints_of(pod, framework, cache)
    return tuple(dict.fromkeys(c.selector for c in hard + soft))


def counts_of(
    rep: Pod, hard: Sequence[Constraint], soft: Sequence[Constraint], cache: Cache, *, require_all_keys: bool
) -> tuple[list[dict[str, int]], list[int], list[dict[str, str]]]:
    """``domain_counts`` for the hard constraints, then the soft ones, in one list each (the order
    the ranks and the rebalancing skews combine them in)."""
    counts: list[dict[str, int]] = []
    minima: list[int] = []
    domain_of: list[dict[str, str]] = []
    for action, cs in ((DO_NOT_SCHEDULE, hard), (SCHEDULE_ANYWAY, soft)):
        if cs:
            c_counts, c_minima, c_domains = domain_counts(rep, action, cs, cache, require_all_keys=require_all_keys)
            counts += c_counts
            minima += c_minima
            domain_of += c_domains
    return counts, minima, domain_of
