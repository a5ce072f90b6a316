"""``spread-scheduler explain NAMESPACE/POD``: replay one pod's scheduling on the live cluster's state.

Reads nodes, pods, Namespaces (for namespaceSelector), the objects default spreading uses and, where
the caller may list them, PodDisruptionBudgets and PriorityClasses (for preemption), then
runs the same pipeline as the scheduler with that pod pending (a bound pod is re-decided as if it were
not bound yet), and prints every node's verdict and scores. Only that pod is decided: other pending
pods stay out of the replay, since placing them first would change the answer (they hold no room
until they are bound). A preemption is carried out in memory, as ``simulate`` does. Read-only: it
never writes to the cluster.
"""

from __future__ import annotations

from scheduler.config import SchedulerConfig
from scheduler.kube.dump import cluster_objects
from scheduler.kube.extender import simulate_with_extenders
from scheduler.simulate import render_table, replay_objects, to_json

__all__ = ["explain", "replay_objects"]


async def explain(config: SchedulerConfig, target: str, kubeconfig: str | None, output: str, seed: int | None) -> str:
    namespace, _, name = target.rpartition("/")
    namespace = namespace or "default"
    objects = await cluster_objects(config, kubeconfig, preemption=True)
    replay = replay_objects(objects, namespace, name, config)
    attempts, sim = await simulate_with_extenders(config, replay, seed, apply_preemption=True)
    if output == "json":
        return to_json(attempts, sim.cache, history=sim.history)
    return render_table(attempts, sim.cache, history=sim.history)
