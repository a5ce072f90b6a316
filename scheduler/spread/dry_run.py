"""Plans on a file of objects or a listing of the live cluster: what ``rebalance --dry-run``, ``skew``
and ``explain`` show. Pure: objects in (loaded into the scheduler's own cache by ``Simulation``, as
``skew`` and ``simulate`` load them), plans out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config import SchedulerConfig
from scheduler.simulate import Simulation
from scheduler.spread.rebalance import Plan, plan_rebalance
from scheduler.spread.workload import Workload

__all__ = ["DEPLOYMENT", "REPLICA_SET", "DryRun", "deployment_of", "deployment_owners", "dry_run", "shown_as"]

DEPLOYMENT = "Deployment"
REPLICA_SET = "ReplicaSet"


def deployment_owners(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], str]:
    """(namespace, ReplicaSet name, its UID) -> the Deployment that controls it: a pod's controllerRef
    names its ReplicaSet only with the UID (``Workload``)."""
    out: dict[tuple[str, str, str], str] = {}
    for obj in objects:
        if obj.get("kind") != REPLICA_SET:
            continue
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        refs = meta.get("ownerReferences")
        for ref in refs if isinstance(refs, list) else ():
            if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") == DEPLOYMENT:
                key = (str(meta.get("namespace") or "default"), str(meta.get("name")), str(meta.get("uid") or ""))
                out[key] = str(ref.get("name"))
    return out


def deployment_of(deployments: Mapping[tuple[str, str, str], str], namespace: str, name: str, uid: str) -> str | None:
    """The Deployment of the ReplicaSet ``name`` with ``uid``; a ReplicaSet written without a UID (a
    hand-made file) stands for any."""
    return deployments.get((namespace, name, uid)) or deployments.get((namespace, name, ""))


def shown_as(workload: Workload, deployments: Mapping[tuple[str, str, str], str]) -> tuple[str, str, str]:
    """(namespace, kind, name) as ``skew`` names the workload: a Deployment's ReplicaSet as the Deployment."""
    if workload.kind == REPLICA_SET:
        deployment = deployment_of(deployments, workload.namespace, workload.name, workload.uid)
        if deployment is not None:
            return workload.namespace, DEPLOYMENT, deployment
    return workload.namespace, workload.kind, workload.name


@dataclass(slots=True)
class DryRun:
    plans: list[Plan]
    deployments: dict[tuple[str, str, str], str]
    sim: Simulation


def dry_run(
    objects: Iterable[Mapping[str, Any]],
    config: SchedulerConfig,
    *,
    default: bool,
    namespace: str | None = None,
    sim: Simulation | None = None,
) -> DryRun:
    """Every workload's plan on ``objects`` (``sim``: the same objects already loaded)."""
    objects = list(objects)
    if sim is None:
        sim = Simulation(config)
        sim.add_objects(objects)
    plans = plan_rebalance(sim.cache, sim.frameworks, default=default, namespace=namespace, pending=sim.pending)
    return DryRun(plans, deployment_owners(objects), sim)
