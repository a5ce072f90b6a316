"""The fuzz tests' seed for this run: new each run, printed in pytest's header, replayable.

``SPREAD_FUZZ_SEED=N`` replays a run (the header of a failed CI run names N); without it a random
seed is drawn once per run, so every run tries examples no earlier run tried.
"""

from __future__ import annotations

import os
import random

__all__ = ["FUZZ_SEED"]

FUZZ_SEED = int(os.environ.get("SPREAD_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
# pytest-xdist's workers (make unit: -n 2) are child processes: they inherit this run's seed, so the
# one printed replays them all.
os.environ["SPREAD_FUZZ_SEED"] = str(FUZZ_SEED)
