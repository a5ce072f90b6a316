"""Loading a kubeconfig: every failure is one ``KubeconfigError`` line, worded as kube-scheduler's where it has one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scheduler.kube.client.apiclient import KubeconfigError, api_client

CONTEXTLESS = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\ncurrent-context: nope\n"
GOOD = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
)


def _error(kubeconfig: str | None) -> str:
    with pytest.raises(KubeconfigError) as raised:
        asyncio.run(api_client(kubeconfig))
    text = str(raised.value)
    assert "\n" not in text
    return text


@pytest.fixture(autouse=True)
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No $KUBECONFIG, an empty home and no pod environment: only what a test gives is there."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_a_missing_file_is_named_as_kube_scheduler_names_it(tmp_path: Path) -> None:
    # The Python client alone says "Expected key current-context" of a file that is not there.
    assert _error(str(tmp_path / "absent")) == f"stat {tmp_path / 'absent'}: no such file or directory"


def test_an_unparsable_file(tmp_path: Path) -> None:
    path = tmp_path / "broken"
    path.write_text("foo: [\n")
    message = _error(str(path))  # read within scheduler.boundedyaml's bounds, where the problem is named
    assert (
        message.startswith(f'error loading config file "{path}": line 2, column 1: ')
        and "while parsing a flow node" in message
    )


def test_a_context_that_is_not_there(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(CONTEXTLESS)
    assert _error(str(path)).startswith(f'invalid configuration in "{path}": ') and "nope" in _error(str(path))


def test_nothing_at_all() -> None:
    assert _error(None).startswith("invalid configuration: no configuration has been provided")


def test_kubeconfig_from_the_environment_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / ".kube" / "config"
    home.parent.mkdir()
    home.write_text(GOOD)

    async def host() -> str:
        api = await api_client(None)
        await api.close()  # type: ignore[no-untyped-call]
        return str(api.configuration.host)

    assert asyncio.run(host()) == "https://127.0.0.1:1"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "elsewhere"))  # $KUBECONFIG wins over ~/.kube/config
    (tmp_path / "elsewhere").write_text(CONTEXTLESS)
    assert "nope" in _error(None)
