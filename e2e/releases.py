"""The ``every_release`` tests on other Kubernetes releases, all at once: ``python -m e2e.releases
1.36.3 1.37.2``; ``karpenter`` among them runs the tests marked ``karpenter`` (e2e/test_karpenter.py)
on the default release. ``--suite`` (``make e2e``) runs the whole suite but those in the foreground
first, the Karpenter run beside it from its start (it waits on Karpenter most of its 4 minutes: after
the suite it would add them to ``make test``), the releases beside it too once the Karpenter run has
ended (so no more than two control planes run beside the suite's; after it they added a minute).

Each run gets a pytest run of its own, with a control plane of its own (``SPREAD_E2E_DIR``:
its directory, ports picked free, its own scheduler logs), started side by side. Those runs spend
most of their time waiting on control planes and pods rather than on the CPU, so on a 2-core machine
two of them take little longer than one. Each run's output is printed whole once it ends, so the
two never interleave; the exit status is the first failing run's, else 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 900.0  # seconds for all of them; each run is well under a minute on an idle machine


KARPENTER = "karpenter"  # not a release: the Karpenter tests, on the default one


def _start(version: str) -> tuple[subprocess.Popen[bytes], Path]:
    directory = ROOT / ".cluster" / f"e2e-{version}"
    directory.mkdir(parents=True, exist_ok=True)
    output = directory.parent / f"e2e-{version}.out"
    env = {**os.environ, "SPREAD_E2E_DIR": str(directory)}
    if version != KARPENTER:
        env["SPREAD_E2E_KUBE_VERSION"] = version
    marker = KARPENTER if version == KARPENTER else "every_release"
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "e2e", "-m", marker],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a timeout can stop the run and the control plane it started
        )
    return proc, output


def main(argv: list[str]) -> int:
    suite = "--suite" in argv
    versions = [a for a in argv if a != "--suite"]
    if not versions:
        print("usage: python -m e2e.releases [--suite] VERSION|karpenter ...", file=sys.stderr)
        return 2
    status = 0
    runs: list[tuple[str, float, subprocess.Popen[bytes], Path]] = []
    waiting = [v for v in versions if not (suite and v == KARPENTER)]
    foreground: subprocess.Popen[bytes] | None = None
    try:
        if suite:
            runs += [(v, time.monotonic(), *_start(v)) for v in versions if v == KARPENTER]
            started = time.monotonic()
            foreground = subprocess.Popen(
                # The slowest tests printed, so a run's log says where its time went.
                [sys.executable, "-m", "pytest", "e2e", "-m", f"not {KARPENTER}", "--durations=30"],
                cwd=ROOT,
            )
            while foreground.poll() is None:
                if waiting and all(proc.poll() is not None for _, _, proc, _ in runs):
                    runs += [(v, time.monotonic(), *_start(v)) for v in waiting]
                    waiting = []
                time.sleep(1.0)
            status = foreground.returncode
            print(f"==== the suite (exit {status}, {time.monotonic() - started:.0f} s) ====", flush=True)
        runs += [(v, time.monotonic(), *_start(v)) for v in waiting]
        for version, started, proc, output in runs:
            try:
                code = proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGTERM)
                code = proc.wait()
                print(f"e2e on {version}: stopped after {TIMEOUT:.0f} s", file=sys.stderr)
            what = "karpenter tests" if version == KARPENTER else f"every_release on v{version.lstrip('v')}"
            print(f"==== {what} (exit {code}, ended by {time.monotonic() - started:.0f} s) ====", flush=True)
            sys.stdout.buffer.write(output.read_bytes())
            sys.stdout.flush()
            if code and not status:
                status = code
    finally:  # interrupted: stop the runs still going, and the control planes they started
        if foreground is not None and foreground.poll() is None:
            foreground.terminate()
            foreground.wait()
        for _, _, proc, _ in runs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
