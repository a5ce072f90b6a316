"""The Dockerfile's install steps, run in a fresh venv (no Docker engine here to build the image)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pip_steps(dockerfile: str) -> list[list[str]]:
    """The build stage's ``RUN pip install ...`` commands, split at ``&&``, as argument lists."""
    run = re.search(r"^RUN (pip install (?:.*\\\n)*.*)$", dockerfile, re.M)
    assert run, "no RUN pip install in the Dockerfile"
    return [step.split() for step in run.group(1).replace("\\\n", " ").split("&&")]


def test_dockerfile_install_steps_work_in_a_fresh_venv(tmp_path: Path) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    steps = _pip_steps(dockerfile)
    # Everything from the locks, by hash; the package itself fetches nothing.
    assert [" ".join(step) for step in steps] == [
        "pip install --no-cache-dir --require-hashes --no-deps -r build-requirements.lock",
        "pip install --no-cache-dir --require-hashes --no-deps --prefix=/install -r requirements.lock",
        "pip install --no-cache-dir --no-deps --no-build-isolation --prefix=/install .",
    ]
    assert 'ENTRYPOINT ["spread-scheduler", "run"]' in dockerfile
    assert "USER 65532:65532" in dockerfile
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = str(venv / "bin" / "pip")
    for step in steps:  # the same steps, into the venv instead of /install
        args = [arg for arg in step[1:] if not arg.startswith("--prefix=")]
        subprocess.run([pip, *args, "-q"], cwd=ROOT, check=True, timeout=600)
    # The lock is the whole dependency set: nothing installed lacks a requirement.
    subprocess.run([pip, "check"], check=True, timeout=120)
    version = subprocess.run(
        [str(venv / "bin" / "spread-scheduler"), "version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert version.startswith("spread-scheduler 0.1.0")
    frozen = subprocess.run([pip, "freeze"], capture_output=True, text=True, check=True).stdout
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.lock").read_text(), re.M))
    installed = dict(line.split("==") for line in frozen.split() if "==" in line)
    for name in ("kopf", "kubernetes", "structlog", "tenacity", "PyYAML", "prometheus_client", "jsonpatch", "tzdata"):
        assert installed.get(name) == pins[name], name


def test_base_image_is_pinned_by_digest_and_the_context_holds_what_copy_needs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile, re.M)
    assert base and re.fullmatch(r"python:3\.11\.\d+-slim-(bookworm|trixie)@sha256:[0-9a-f]{64}", base.group(1))
    assert re.findall(r"^FROM (\S+)", dockerfile, re.M) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    # .dockerignore excludes everything, then lets back in exactly what the COPY lines read.
    ignore = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert ignore[0] == "*"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = {
        source.rstrip("/")
        for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.M)
        for source in line.split()[:-1]
    }
    assert copied == allowed, (copied, allowed)
