"""Is the version axis exercised? The same generated clusters decided by our side at 1.35 and at a newer
minor; pods whose node, outcome or message differ are counted (no oracle: the campaigns prove each side).

    .venv/bin/python -m tests.differential.axis --start 11000000 --count 500 --kube-version 1.37
"""

from __future__ import annotations

import argparse

from scheduler.features import OLDEST, features_at, supported_minor
from tests.differential import runner
from tests.differential.generator import scenario


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", type=int, default=11_000_000)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--kube-version", default="1.37", help="the newer minor; its clusters (what its API accepts)")
    args = parser.parse_args()
    newer = supported_minor(args.kube_version)
    old, new = features_at(OLDEST), features_at(newer)
    pods = differ = clusters = 0
    for seed in range(args.start, args.start + args.count):
        objects, config = scenario(seed, kube_version=newer)
        decided = [
            {
                r["pod"]: (r["node"], r["code"], r["message"])
                for r in runner.python_side(objects, runner.upstream_default_profile(config, f), seed, features=f)
            }
            for f in (old, new)
        ]
        n = sum(1 for pod, outcome in decided[1].items() if decided[0].get(pod) != outcome)
        pods, differ, clusters = pods + len(decided[1]), differ + n, clusters + (n > 0)
    print(
        f"seeds {args.start}..{args.start + args.count - 1}, {OLDEST} vs {newer} on {newer}'s clusters: {pods} pods, "
        f"{differ} decided otherwise (node, outcome or message), in {clusters} of {args.count} clusters"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
