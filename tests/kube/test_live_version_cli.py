"""The commands on a live cluster through their command line: ``skew`` decides as the API server's
/version (a warning for a server one minor newer than ours, a refusal naming the supported versions
for an older one), and ``run`` takes ``--kube-version`` and ``--feature-gates``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from scheduler import cli
from scheduler.kube import app
from tests.kube.client.test_dump import _serve


def _kubeconfig(tmp_path: Path, host: str) -> str:
    path = tmp_path / f"kubeconfig-{host.rpartition(':')[2]}"
    cluster = {"name": "c", "cluster": {"server": host}}
    context = {"name": "x", "context": {"cluster": "c", "user": "u"}}
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [{"name": "u", "user": {}}]}
    path.write_text(json.dumps({**config, "contexts": [context], "current-context": "x"}))
    return str(path)


def _skew(tmp_path: Path, git_version: str, *flags: str) -> tuple[int, str]:
    """``spread-scheduler skew`` on an empty cluster whose API server is ``git_version``: exit code, stderr."""
    major, minor = git_version.lstrip("v").split(".")[:2]
    info = {"major": major, "minor": minor, "gitVersion": git_version}
    err = io.StringIO()

    async def main() -> int:
        runner, host = await _serve({"/version": lambda _request: web.json_response(info)}, [])
        try:
            argv = ["skew", "--kubeconfig", _kubeconfig(tmp_path, host), "-o", "json", *flags]
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                # The command runs its own event loop: on a thread, while this one serves.
                return await asyncio.get_running_loop().run_in_executor(None, cli.main, argv)
        finally:
            await runner.cleanup()

    return asyncio.run(main()), err.getvalue()


def test_a_server_one_minor_newer_is_served_as_our_newest_with_a_warning(tmp_path: Path) -> None:
    code, err = _skew(tmp_path, "v1.38.0")
    assert code == 0
    assert "warning: the API server is Kubernetes v1.38.0" in err and "1.37 (v1.37.2)" in err
    assert _skew(tmp_path, "v1.36.3") == (0, "")
    assert _skew(tmp_path, "v1.38.0", "--kube-version", "1.37") == (0, "")  # pinned: /version is not read


def test_a_server_older_than_our_oldest_is_refused_naming_the_supported_versions(tmp_path: Path) -> None:
    code, err = _skew(tmp_path, "v1.33.1")
    assert code == 2
    assert "Kubernetes 1.33" in err and "1.35 (v1.35.4), 1.36 (v1.36.3), 1.37 (v1.37.2)" in err


def test_feature_gates_are_checked_at_the_servers_minor(tmp_path: Path) -> None:
    assert _skew(tmp_path, "v1.37.2", "--feature-gates", "StorageCapacityScoring=true") == (0, "")
    code, err = _skew(tmp_path, "v1.35.4", "--feature-gates", "StorageCapacityScoring=true")
    assert code == 2 and 'for "--feature-gates" flag' in err and "StorageCapacityScoring" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--kube-version=1.34"], "--kube-version: unsupported Kubernetes version '1.34'"),
        (["--feature-gates=NoSuchGate=true", "--kube-version=1.37"], "unrecognized feature gate: NoSuchGate"),
        (["--feature-gates=NoSuchGate"], "missing bool value for NoSuchGate"),
    ],
)
def test_run_refuses_bad_version_flags_before_connecting(
    flags: list[str], message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", *flags]) == 2
    err = capfd.readouterr().err
    assert '"command failed"' in err and message.replace('"', '\\"') in err


def test_run_hands_the_version_flags_to_the_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str | None, dict[str, bool]]] = []

    async def run_scheduler(config: Any, _kubeconfig: object, **kwargs: Any) -> int:
        asked = kwargs["kube_version"]
        seen.append((config.features.minor, asked.pinned, dict(asked.gates)))
        return 0

    monkeypatch.setattr(app, "run_scheduler", run_scheduler)
    assert cli.main(["run", "--kube-version", "1.36", "--feature-gates", "VolumeLimitScaling=true"]) == 0
    assert cli.main(["run"]) == 0
    assert seen == [
        ("1.36", "1.36", {"VolumeLimitScaling": True}),
        ("1.35", None, {}),  # the server's minor, read at start; 1.35 until then
    ]
