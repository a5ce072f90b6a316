"""``spread-scheduler`` with its wall clock skewed, for the leader-election tests.

    python -m e2e.skewed_clock SECONDS /path/to/spread-scheduler run ...

The Lease's ``acquireTime`` and ``renewTime`` are the only wall-clock times the scheduler writes or
reads; they come from ``scheduler.kube.leader._now``, shifted here by SECONDS (a clock seam, as the
issue allows: libfaketime would also shift the TLS checks of the API server's fresh certificate).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

from scheduler import cli
from scheduler.kube import leader


def main() -> int:
    offset = timedelta(seconds=float(sys.argv[1]))

    def skewed() -> str:
        return (datetime.now(UTC) + offset).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    leader._now = skewed
    return cli.main(sys.argv[3:])  # argv[2] is the console script it stands in for


if __name__ == "__main__":
    sys.exit(main())
