"""``spread-scheduler simulate``: schedule the pending pods of a file of objects, and explain each decision.

The live ``Scheduler`` itself, with an in-memory Binder and Recorder: the same handlers, queue,
cycles and algorithm, so ``simulate`` cannot decide differently from ``run``. Pure apart from
reading the file and the extenders the caller passes in. One module a job:

- ``dump``: reading a file of objects (through ``scheduler.boundedyaml``) and shaping it for a replay;
- ``writers``: the in-memory Binder, Recorder, volume binder and preemption sink;
- ``simulation``: the driver, ``Simulation``;
- ``json_output``: the documented JSON shape of the results;
- ``table``: the terminal table.
"""

from scheduler.simulate.dump import iter_objects, load_objects, parse_objects, rename_scheduler, replay_objects
from scheduler.simulate.json_output import attempt_to_json, latest_preemption, rank_nodes, to_json
from scheduler.simulate.simulation import History, Problem, Simulation
from scheduler.simulate.table import preemption_line, render_table
from scheduler.simulate.writers import MemoryBinder, MemoryPreemption, MemoryRecorder, MemoryVolumeBinder, Preemption

__all__ = [
    "History",
    "MemoryBinder",
    "MemoryPreemption",
    "MemoryRecorder",
    "MemoryVolumeBinder",
    "Preemption",
    "Problem",
    "Simulation",
    "attempt_to_json",
    "iter_objects",
    "latest_preemption",
    "load_objects",
    "parse_objects",
    "preemption_line",
    "rank_nodes",
    "rename_scheduler",
    "render_table",
    "replay_objects",
    "to_json",
]
