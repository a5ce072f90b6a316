"""Decision parity with upstream: random clusters through spread-scheduler and through kube-scheduler's
own framework (the Go oracle in e2e/controlplane/cmd/oracle), compared field by field.

SPREAD_DIFF_COUNT sets how many clusters (default 400); SPREAD_DIFF_KUBE_VERSION which minor both sides
decide as (default 1.35; the oracle of that release is built); long campaigns: python -m tests.differential.runner.
"""

from __future__ import annotations

import functools
import os

from tests.differential.generator import crowded, replicated
from tests.differential.runner import kube_features, oracle_binary, run_batch

COUNT = int(os.environ.get("SPREAD_DIFF_COUNT", "400"))
START = int(os.environ.get("SPREAD_DIFF_START", "1000000"))  # away from the seeds used while developing
FEATURES = kube_features()


def test_random_clusters_decide_exactly_like_upstream() -> None:
    mismatches = run_batch(range(START, START + COUNT), oracle_binary(FEATURES), features=FEATURES)
    report = "\n".join(f"seed {seed}: " + "; ".join(problems[:3]) for seed, problems in sorted(mismatches.items())[:10])
    assert not mismatches, f"{len(mismatches)}/{COUNT} clusters differ from upstream:\n{report}"


def test_replicas_of_one_pod_decide_exactly_like_upstream() -> None:
    """Pods sharing a signature reuse per-node results (scheduler.framework.node_results): the
    decisions must still be upstream's, replica after replica."""
    count = max(COUNT // 4, 1)
    mismatches = run_batch(
        range(START, START + count),
        oracle_binary(FEATURES),
        features=FEATURES,
        make=functools.partial(replicated, kube_version=FEATURES.minor),
    )
    report = "\n".join(f"seed {seed}: " + "; ".join(problems[:3]) for seed, problems in sorted(mismatches.items())[:10])
    assert not mismatches, f"{len(mismatches)}/{count} clusters differ from upstream:\n{report}"


def test_crowded_clusters_preempt_exactly_like_upstream() -> None:
    """Nodes filled by lower-priority pods, then higher-priority pods (issue #19): the nominated node
    among upstream's best-ranked candidates, the same victims, the full ``preemption: ...`` message."""
    count = max(COUNT // 4, 1)
    mismatches = run_batch(
        range(START, START + count),
        oracle_binary(FEATURES),
        features=FEATURES,
        make=functools.partial(crowded, kube_version=FEATURES.minor),
    )
    report = "\n".join(f"seed {seed}: " + "; ".join(problems[:3]) for seed, problems in sorted(mismatches.items())[:10])
    assert not mismatches, f"{len(mismatches)}/{count} clusters differ from upstream:\n{report}"
