"""``spread-scheduler explain NAMESPACE/POD``: replay one pod's scheduling on the live cluster's state.

Reads nodes, pods, Namespaces (for namespaceSelector), the objects default spreading uses and, where
the caller may list them, PodDisruptionBudgets and PriorityClasses (for preemption), then
runs the same pipeline as the scheduler with that pod pending (a bound pod is re-decided as if it were
not bound yet), and prints every node's verdict and scores. Only that pod is decided: other pending
pods stay out of the replay, since placing them first would change the answer (they hold no room
until they are bound). A preemption is carried out in memory, as ``simulate`` does. Then, for a
bound pod, its deletion cost in force and whether its workload's rebalancing plan would move it,
on the cluster as listed. Read-only: it never writes to the cluster.
"""

from __future__ import annotations

import json

from scheduler.config import SchedulerConfig
from scheduler.kube.client.dump import REPLAY_KINDS, cluster_objects
from scheduler.kube.client.kubeconfig import NO_OVERRIDES, Overrides
from scheduler.kube.extender import simulate_with_extenders
from scheduler.simulate import render_table, replay_objects, to_json
from scheduler.spread.dry_run import dry_run
from scheduler.spread.render import pod_spread, pod_spread_lines

__all__ = ["explain", "replay_objects"]


async def explain(
    config: SchedulerConfig,
    target: str,
    kubeconfig: str | None,
    output: str,
    seed: int | None,
    *,
    default_rebalance: bool = False,
    overrides: Overrides = NO_OVERRIDES,
) -> str:
    namespace, _, name = target.rpartition("/")
    namespace = namespace or "default"
    objects = await cluster_objects(
        config, kubeconfig, preemption=True, namespace=namespace, wide=REPLAY_KINDS, overrides=overrides
    )
    replay = replay_objects(objects, namespace, name, config)
    attempts, sim = await simulate_with_extenders(config, replay, seed, apply_preemption=True)
    dry = dry_run(objects, config, default=default_rebalance, namespace=namespace)
    bound = dry.sim.cache.pod(f"{namespace}/{name}")
    if output == "json":
        document = json.loads(to_json(attempts, sim.cache, history=sim.history))
        if bound is not None:
            document["spread"] = pod_spread(bound, dry.plans)
        return json.dumps(document, indent=2) + "\n"
    table = render_table(attempts, sim.cache, history=sim.history)
    return table if bound is None else table + "\n".join(pod_spread_lines(bound, dry.plans)) + "\n"
