"""The ``every_release`` tests on other Kubernetes releases, all at once: ``python -m e2e.releases
1.36.3 1.37.2``.

Each release gets a pytest run of its own, with a control plane of its own (``SPREAD_E2E_DIR``:
its directory, ports picked free, its own scheduler logs), started side by side. Those runs spend
most of their time waiting on control planes and pods rather than on the CPU, so on a 2-core machine
two of them take little longer than one. Each run's output is printed whole once it ends, so the
two never interleave; the exit status is the first failing run's, else 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 900.0  # seconds for all of them; each run is well under a minute on an idle machine


def _start(version: str) -> tuple[subprocess.Popen[bytes], Path]:
    directory = ROOT / ".cluster" / f"e2e-{version}"
    directory.mkdir(parents=True, exist_ok=True)
    output = directory.parent / f"e2e-{version}.out"
    env = {**os.environ, "SPREAD_E2E_KUBE_VERSION": version, "SPREAD_E2E_DIR": str(directory)}
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "e2e", "-m", "every_release"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a timeout can stop the run and the control plane it started
        )
    return proc, output


def main(versions: list[str]) -> int:
    if not versions:
        print("usage: python -m e2e.releases VERSION [VERSION ...]", file=sys.stderr)
        return 2
    started = time.monotonic()
    runs = [(version, *_start(version)) for version in versions]
    status = 0
    for version, proc, output in runs:
        try:
            code = proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            code = proc.wait()
            print(f"e2e on {version}: stopped after {TIMEOUT:.0f} s", file=sys.stderr)
        print(f"==== every_release on v{version.lstrip('v')} (exit {code}) ====", flush=True)
        sys.stdout.buffer.write(output.read_bytes())
        sys.stdout.flush()
        if code and not status:
            status = code
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
