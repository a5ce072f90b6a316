"""The Dockerfile's install steps, run in a fresh venv (no Docker engine here to build the image)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_dockerfile_install_steps_work_in_a_fresh_venv(tmp_path: Path) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^RUN pip install .*--constraint constraints.txt \.$", dockerfile, re.M)
    assert 'ENTRYPOINT ["spread-scheduler", "run"]' in dockerfile
    assert "USER 65532:65532" in dockerfile
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--constraint", "constraints.txt", "."],
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    version = subprocess.run(
        [str(venv / "bin" / "spread-scheduler"), "version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert version.startswith("spread-scheduler 0.1.0")
    frozen = subprocess.run([str(venv / "bin" / "pip"), "freeze"], capture_output=True, text=True, check=True).stdout
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().split() if "==" in line)
    installed = dict(line.split("==") for line in frozen.split() if "==" in line)
    for name in ("kopf", "kubernetes", "structlog", "tenacity", "PyYAML", "prometheus_client"):
        assert installed.get(name) == pins[name], name
