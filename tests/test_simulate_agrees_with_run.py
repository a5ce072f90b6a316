"""``simulate`` decides as the live loop does: the same objects through both, the same outcome.

The live side is driven as ``scheduler.kube`` drives it: raw watch objects into ``on_object`` and
the ``run`` loop, with in-memory Binder and Recorder. The simulate side is ``Simulation`` as the
command line uses it. What would turn this red: a second copy of the cycle in ``simulate`` that
drifts (an assume without the node name, no Permit, another queue order, another tie-break), or
a live loop that stops counting a placement for the pods after it.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.backend.cache.cache import Cache
from scheduler.config import SchedulerConfig, load_config, parse_config
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.scheduler import Scheduler
from scheduler.simulate.dump import load_objects
from scheduler.simulate.simulation import Simulation
from scheduler.simulate.writers import MemoryClaimWriter, MemoryPreemption, MemoryVolumeBinder
from tests.differential import generator
from tests.fakes import FakeBinder, FakeClock, FakeRecorder

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE_CONFIGS = {"selector-spread.yaml": "selector-spread-config.yaml"}
# Manifests to apply to a cluster, not dumps to simulate: they hold no pod to schedule.
NOT_DUMPS = {"karpenter-nodepool.yaml", "gpu-inference.yaml"}  # manifests to apply, not cluster dumps


def _arrival_order(objects: list[Mapping[str, Any]], config: SchedulerConfig) -> list[Mapping[str, Any]]:
    """The watch delivers what exists first, then the pending pods of ours as they were created."""
    ours = {p.scheduler_name for p in config.profiles}

    def pending(obj: Mapping[str, Any]) -> bool:
        if obj.get("kind") != "Pod":
            return False
        pod = Pod.from_dict(obj)
        return not pod.assigned and pod.scheduler_name in ours

    waiting = sorted(
        ((i, o) for i, o in enumerate(objects) if pending(o)),
        key=lambda item: (Pod.from_dict(item[1]).created, item[0]),
    )
    return [o for o in objects if not pending(o)] + [o for _, o in waiting]


async def _live(
    objects: list[Mapping[str, Any]], config: SchedulerConfig, seed: int
) -> tuple[Scheduler, FakeBinder, FakeRecorder]:
    binder, recorder = FakeBinder(), FakeRecorder()
    sched = Scheduler(config, binder, recorder, clock=FakeClock(), rng=random.Random(seed))
    # DefaultPreemption decides as in run (whose sink is the API's), from the same random offset.
    sched.use_preemption(MemoryPreemption())
    # VolumeBinding's writes answered at once, as in run (whose volume binder is the API's).
    sched.use_volume_binder(MemoryVolumeBinder(sched.handlers))
    # DynamicResources' claim writes likewise (run's writer is the API's).
    sched.use_claim_writer(MemoryClaimWriter(sched.handlers))
    offsets = random.Random(seed)
    for fwk in sched.frameworks.values():
        plugin = fwk.plugins.get(DefaultPreemption.NAME)
        if isinstance(plugin, DefaultPreemption):
            plugin.offset_rand = offsets.randrange
    for obj in _arrival_order(objects, config):
        sched.on_object("ADDED", obj)
    stop = asyncio.Event()
    loop = asyncio.create_task(sched.run(stop))
    for _ in range(100_000):  # each turn lets the loop run one cycle; a frozen clock expires no backoff
        await asyncio.sleep(0)
        if not sched.queue.pending_counts()["active"]:
            break
    stop.set()
    await loop
    return sched, binder, recorder


def _placed(cache: Cache) -> dict[str, tuple[object, ...]]:
    """Per node: its pods, with node name, and the totals NodeResourcesFit and NodePorts read."""
    return {
        info.name: (
            sorted((key, pod.node_name) for key, pod in info.pods.items()),
            info.requested_milli_cpu,
            info.requested_memory,
            info.requested_ephemeral_storage,
            dict(info.requested_scalar),
            info.non0_cpu,
            info.non0_mem,
            frozenset(info.used_ports),
        )
        for info in cache.node_infos()
    }


def assert_agree(objects: list[Mapping[str, Any]], config: SchedulerConfig, seed: int) -> int:
    """Placements, messages, events and cache contents agree; returns how many pods were decided."""
    sim = Simulation(config, seed=seed)
    sim.add_objects(objects)
    attempts = sim.run()
    sched, binder, recorder = asyncio.run(_live(objects, config, seed))

    assert dict(binder.binds) == {a.pod.key: a.host for a in attempts if a.host}
    assert dict(binder.binds) == sim.binder.bindings
    live_conditions = {c.pod: (c.reason, c.message) for c in recorder.conditions}
    assert live_conditions == sim.recorder.conditions
    for attempt in attempts:
        if attempt.host is None and attempt.pod.key in live_conditions:
            assert live_conditions[attempt.pod.key][1] == attempt.message
    live_events = Counter((e.pod, e.type, e.reason, e.note) for e in recorder.events)
    assert live_events == Counter(sim.recorder.events)
    assert _placed(sched.cache) == _placed(sim.cache)
    assert {p.key for p in sched.cache.pods() if sched.cache.is_assumed(p.key)} == {
        p.key for p in sim.cache.pods() if sim.cache.is_assumed(p.key)
    }
    return len(attempts)


@pytest.mark.parametrize(
    "example",
    sorted(p.name for p in EXAMPLES.glob("*.yaml") if not p.name.endswith("-config.yaml") and p.name not in NOT_DUMPS),
)
def test_examples_agree(example: str) -> None:
    """Every shipped example but the manifests, with its config where it has one."""
    config_name = EXAMPLE_CONFIGS.get(example)
    config = load_config(EXAMPLES / config_name if config_name else None)
    assert assert_agree(load_objects(EXAMPLES / example), config, seed=1) > 0


@pytest.mark.parametrize("start", range(0, 300, 50))
def test_generated_clusters_agree(start: int) -> None:
    """300 generated clusters (the differential generator's, replicas included), 50 per case."""
    decided = 0
    for seed in range(5_100_000 + start, 5_100_000 + start + 50):
        objects, config = generator.replicated(seed) if seed % 2 else generator.scenario(seed)
        decided += assert_agree(objects, parse_config(config), seed)
    assert decided > 50
