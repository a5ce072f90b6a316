"""The spread report: per workload and constraint, pods per domain, skew, and the pods now in violation.

Pure: objects in (a ``kubectl get -o yaml`` dump or a LIST of the live cluster), a report out. The
counting is the scheduler's own: objects are loaded by ``Simulation.add_objects`` into the same
cache the scheduler reads, constraints come from PodTopologySpread's ``pod_constraints`` (explicit
ones, or the profile's default constraints with the selector of the pod's Services and controller),
and the hard constraints' counts are ``cal_pre_filter_state`` itself: eligible domains
(nodeAffinityPolicy/nodeTaintsPolicy, a node missing any key left out), minDomains' global minimum,
matchLabelKeys, terminating pods and other namespaces not counted.

A pod is *violating* a DoNotSchedule constraint when its domain's count minus the global minimum is
above maxSkew: the Filter would refuse a pod there now. It was fine when it was placed; nodes
relabelled, tainted or removed and pods deleted (a scale-down) since then move the counts.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.labels import Operator, Selector
from scheduler.api.objects import Pod
from scheduler.api.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, SpreadConstraint
from scheduler.backend.cache.cache import Cache
from scheduler.config import SchedulerConfig
from scheduler.framework.runtime import Framework
from scheduler.plugins import names
from scheduler.plugins.podtopologyspread.common import Constraint, pod_constraints
from scheduler.plugins.podtopologyspread.counting import domain_counts, eligibility_key
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.simulate import Simulation
from scheduler.spread.dry_run import DEPLOYMENT, REPLICA_SET, deployment_of, deployment_owners

__all__ = [
    "SOURCE_DEFAULT",
    "SOURCE_POD",
    "SOURCE_SYSTEM_DEFAULT",
    "ConstraintReport",
    "WorkloadReport",
    "selector_string",
    "skew_report",
]

SOURCE_POD = "pod"  # the pod's own topologySpreadConstraints
SOURCE_SYSTEM_DEFAULT = "system-default"  # defaultingType System: hostname maxSkew 3, zone maxSkew 5
SOURCE_DEFAULT = "default"  # defaultingType List: the configured defaultConstraints

# Kinds of controller owners the report names (DEPLOYMENT, REPLICA_SET); a ReplicaSet owned by a
# Deployment is reported as it.
PODS = "Pods"  # pods without a controller: named by their constraints' selector


@dataclass(slots=True)
class ConstraintReport:
    """One constraint as the workload's pods carry it, with the counts the scheduler would use now."""

    topology_key: str
    max_skew: int
    when_unsatisfiable: str
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    selector: str
    source: str
    domains: dict[str, int]  # every eligible domain, empty ones included (they make the minimum 0)
    global_minimum: int
    skew: int  # the largest domain count minus the global minimum
    violated: bool | None  # None for ScheduleAnyway: a preference is never violated
    pods: list[str] = field(default_factory=list)  # the workload's pods under this constraint
    violating_pods: list[str] = field(default_factory=list)
    # The workload's pods on a node that is in no eligible domain (the key removed, a Honor policy
    # that now excludes the node, the node deleted): they count nowhere.
    pods_outside_domains: list[str] = field(default_factory=list)


@dataclass(slots=True)
class WorkloadReport:
    namespace: str
    kind: str  # Deployment, ReplicaSet, StatefulSet, ReplicationController, ... or Pods (no controller)
    name: str
    pods: list[str] = field(default_factory=list)
    constraints: list[ConstraintReport] = field(default_factory=list)

    @property
    def violated(self) -> bool:
        return any(c.violated for c in self.constraints)


def selector_string(selector: Selector) -> str:
    """``labels.Selector.String()``'s spelling (a one-value In as ``key=value``); ``<none>`` selects nothing."""
    if selector.nothing:
        return "<none>"
    parts = []
    for req in selector.requirements:
        values = ",".join(sorted(req.values))
        if req.operator is Operator.IN:
            parts.append(f"{req.key}={values}" if len(req.values) == 1 else f"{req.key} in ({values})")
        elif req.operator is Operator.NOT_IN:
            parts.append(f"{req.key} notin ({values})")
        elif req.operator is Operator.EXISTS:
            parts.append(req.key)
        elif req.operator is Operator.DOES_NOT_EXIST:
            parts.append(f"!{req.key}")
        else:
            parts.append(f"{req.key}{'>' if req.operator is Operator.GT else '<'}{req.number}")
    return ",".join(parts)


def _workload(
    pod: Pod, deployments: Mapping[tuple[str, str, str], str], constraints: Sequence[Constraint]
) -> tuple[str, str]:
    owner = pod.controller
    if owner is None:
        selectors = dict.fromkeys(selector_string(c.selector) for c in constraints)
        return PODS, "; ".join(selectors)
    if owner.kind == REPLICA_SET:
        deployment = deployment_of(deployments, pod.namespace, owner.name, owner.uid)
        if deployment is not None:
            return DEPLOYMENT, deployment
    return owner.kind, owner.name


def _defaults(framework: Framework | None) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """The profile's default constraints and whether they are System's (none when it runs no PodTopologySpread)."""
    plugin = framework.plugins.get(names.POD_TOPOLOGY_SPREAD) if framework is not None else None
    if not isinstance(plugin, PodTopologySpread):
        return (), False
    return plugin.default_constraints, plugin.system_defaulted


@dataclass(slots=True)
class _Group:
    """Pods of one workload under the same constraints, counted once (their counts are the same)."""

    namespace: str
    kind: str
    name: str
    action: str
    constraints: tuple[Constraint, ...]
    source: str
    require_all_keys: bool
    pods: list[Pod] = field(default_factory=list)


def _counts(group: _Group, cache: Cache) -> tuple[list[dict[str, int]], list[int], list[dict[str, str]]]:
    """Per constraint: counts per domain, the global minimum, and node -> domain for the eligible nodes."""
    return domain_counts(group.pods[0], group.action, group.constraints, cache, require_all_keys=group.require_all_keys)


def _report_group(group: _Group, cache: Cache) -> list[ConstraintReport]:
    counts, minima, domain_of = _counts(group, cache)
    out = []
    for i, c in enumerate(group.constraints):
        bucket, minimum = counts[i], minima[i]
        hard = group.action == DO_NOT_SCHEDULE
        report = ConstraintReport(
            topology_key=c.topology_key,
            max_skew=c.max_skew,
            when_unsatisfiable=group.action,
            min_domains=c.min_domains,
            node_affinity_policy=c.node_affinity_policy,
            node_taints_policy=c.node_taints_policy,
            selector=selector_string(c.selector),
            source=group.source,
            domains=dict(sorted(bucket.items())),
            global_minimum=minimum,
            skew=max(bucket.values()) - minimum if bucket else 0,
            violated=False if hard else None,
        )
        for pod in sorted(group.pods, key=lambda p: p.key):
            report.pods.append(pod.key)
            domain = domain_of[i].get(cache.pod_node(pod.key) or "")
            if domain is None:
                report.pods_outside_domains.append(pod.key)
            elif hard and bucket.get(domain, 0) - minimum > c.max_skew:
                report.violating_pods.append(pod.key)
        report.violated = bool(report.violating_pods) if hard else None
        out.append(report)
    return out


def skew_report(
    objects: Iterable[Mapping[str, Any]],
    config: SchedulerConfig,
    namespace: str | None = None,
    sim: Simulation | None = None,
) -> list[WorkloadReport]:
    """Every workload with spread constraints (its own or the profile's defaults), sorted by namespace,
    kind and name; ``namespace`` keeps one namespace's workloads only.

    A pod's defaults are those of the profile named by its schedulerName, or of the first profile for
    pods another scheduler placed (the built-in profile's are kube-scheduler's: System defaulting).
    ``sim``: the same objects already loaded (``skew`` plans on it too).
    """
    objects = list(objects)
    if sim is None:
        sim = Simulation(config)
        sim.add_objects(objects)
    cache = sim.cache
    deployments = deployment_owners(objects)
    first = next(iter(sim.frameworks.values()), None)
    groups: dict[Hashable, _Group] = {}
    for pod in cache.pods():
        if pod.terminating or (namespace is not None and pod.namespace != namespace):
            continue
        defaults, system = _defaults(sim.frameworks.get(pod.scheduler_name, first))
        source = SOURCE_POD if pod.spread_constraints else SOURCE_SYSTEM_DEFAULT if system else SOURCE_DEFAULT
        # Only the built-in System defaults let a node lack some of the keys (Score's rule).
        require_all = bool(pod.spread_constraints) or not system
        by_action = {a: tuple(pod_constraints(pod, a, defaults, cache)) for a in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}
        if not any(by_action.values()):
            continue
        kind, name = _workload(pod, deployments, [c for cs in by_action.values() for c in cs])
        for action, constraints in by_action.items():
            if not constraints:
                continue
            group_key = (pod.namespace, kind, name, action, constraints, source, eligibility_key(pod, constraints))
            group = groups.get(group_key)
            if group is None:
                group = groups[group_key] = _Group(pod.namespace, kind, name, action, constraints, source, require_all)
            group.pods.append(pod)
    workloads: dict[tuple[str, str, str], WorkloadReport] = {}
    for group in groups.values():
        workload = workloads.setdefault(
            (group.namespace, group.kind, group.name), WorkloadReport(group.namespace, group.kind, group.name)
        )
        workload.constraints.extend(_report_group(group, cache))
        workload.pods.extend(p.key for p in group.pods)
    out = []
    for key in sorted(workloads):
        workload = workloads[key]
        workload.pods = sorted(set(workload.pods))
        # Hard constraints first, then by key: the order a reader looks for trouble in.
        workload.constraints.sort(key=lambda c: (c.when_unsatisfiable != DO_NOT_SCHEDULE, c.topology_key, c.selector))
        out.append(workload)
    return out


__all__ += ["DEPLOYMENT", "PODS", "REPLICA_SET"]
