"""``run`` (and the live read-only commands) decide as the API server's minor: its own when we have it,
our newest with a warning when it is one minor newer, a refusal naming the supported versions
otherwise; ``--kube-version`` pins the minor and ``--feature-gates`` is checked at the chosen one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog
from aiohttp import web
from kubernetes.aio import client

from scheduler.config import ConfigError, load_config
from scheduler.features import FeatureGateError, Features
from scheduler.kube import app
from scheduler.kube.client.version import ServerVersion
from scheduler.kube.kube_version import KubeVersion, decide_as
from tests.kube.client.test_dump import _serve as serve


def _server(minor: str, git: str | None = None) -> ServerVersion:
    return ServerVersion("1", minor, git or f"v1.{minor}.0")


@pytest.mark.parametrize("minor", ["35", "36", "37"])
def test_a_supported_server_is_decided_as_its_own_minor(minor: str) -> None:
    decided = decide_as(KubeVersion(), _server(minor))
    assert decided.features.minor == f"1.{minor}"
    assert decided.warning is None
    assert decided.server == f"v1.{minor}.0"


def test_a_server_one_minor_newer_is_decided_as_our_newest_with_a_warning() -> None:
    decided = decide_as(KubeVersion(), _server("38+", "v1.38.1-gke.100"))
    assert decided.features.minor == "1.37"
    assert decided.warning is not None
    assert "v1.38.1-gke.100" in decided.warning and "1.37 (v1.37.2)" in decided.warning


@pytest.mark.parametrize("minor", ["34", "39", "20"])
def test_a_server_we_cannot_follow_is_refused_naming_the_supported_versions(minor: str) -> None:
    with pytest.raises(ValueError, match=r"1\.35 \(v1\.35\.4\), 1\.36 \(v1\.36\.3\), 1\.37 \(v1\.37\.2\)"):
        decide_as(KubeVersion(), _server(minor))


def test_kube_version_pins_the_minor_whatever_the_server() -> None:
    assert decide_as(KubeVersion("1.36"), _server("37")).features.minor == "1.36"
    assert decide_as(KubeVersion("v1.35.4"), None).features.minor == "1.35"


def test_feature_gates_are_checked_at_the_servers_minor() -> None:
    gates = {"StorageCapacityScoring": True}
    assert decide_as(KubeVersion(None, gates), _server("37")).features.enabled("StorageCapacityScoring")
    with pytest.raises(FeatureGateError, match="StorageCapacityScoring"):
        decide_as(KubeVersion(None, gates), _server("35"))


async def _version_server(info: dict[str, str]) -> tuple[web.AppRunner, str]:
    return await serve({"/version": lambda _request: web.json_response(info)}, [])


def _run(monkeypatch: pytest.MonkeyPatch, info: dict[str, str], composed: list[str]) -> int:
    """run_scheduler against a server that answers only /version; ``compose`` records the minor
    and stops the run (a ConfigError), so nothing is watched."""

    def compose(features: Features) -> Any:
        composed.append(features.minor)
        raise ConfigError("stop here")

    async def main() -> int:
        runner, host = await _version_server(info)

        async def fake_client(_kubeconfig: str | None) -> client.ApiClient:
            return client.ApiClient(client.Configuration(host=host))

        monkeypatch.setattr(app, "api_client", fake_client)
        try:
            return await app.run_scheduler(load_config(None), kube_version=KubeVersion(), compose=compose)
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def test_run_reads_the_servers_version_and_composes_at_its_minor(monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[str] = []
    assert _run(monkeypatch, {"major": "1", "minor": "36", "gitVersion": "v1.36.3"}, composed) == 2
    assert composed == ["1.36"]


def test_run_refuses_a_server_older_than_our_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[str] = []
    with structlog.testing.capture_logs() as logs:
        assert _run(monkeypatch, {"major": "1", "minor": "34", "gitVersion": "v1.34.9"}, composed) == 2
    assert composed == []
    failed = [entry for entry in logs if entry["event"] == "command failed"]
    assert failed and "1.35 (v1.35.4)" in failed[0]["err"] and "1.34" in failed[0]["err"]
