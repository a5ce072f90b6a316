"""client-go's exec credential plugins (client.authentication.k8s.io v1 and v1beta1), run within bounds.

The rules are client-go's (plugin/pkg/client/auth/exec/exec.go, tools/clientcmd/validation.go and
api/v1/defaults.go): the ``ExecCredential`` handed over in ``KUBERNETES_EXEC_INFO``, the
interactive modes, the answer's checks and their words. The ``kubernetes`` client's own
``ExecProvider`` is not used: it has no time bound, reads all the plugin writes, ignores
``interactiveMode`` and ``provideClusterInfo``, and its loader keeps a certificate it never renews.
Unlike client-go, the plugin runs with a deadline and a cap on what it may write: a scheduler has no
one at a terminal to notice a plugin that hangs or floods, and every request waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.kube.client.kubeconfig import KubeconfigError

__all__ = ["API_VERSIONS", "MAX_OUTPUT", "PLUGIN_TIMEOUT", "ExecConfig", "ExecCredential", "run"]

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
# A plugin that fetches a token over the network answers well within this; one that waits longer is
# hung (or waits for a person), and every request of the scheduler would wait with it.
PLUGIN_TIMEOUT = 60.0
# An ExecCredential is a token or a certificate and key: a few KiB. More is not an answer.
MAX_OUTPUT = 1024 * 1024
_STDERR_KEPT = 4096  # of what the plugin says on stderr, the start goes into the error message
_MODES = ("Never", "IfAvailable", "Always")


@dataclass(frozen=True)
class ExecConfig:
    """A user's ``exec`` stanza, checked as clientcmd checks it."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str
    interactive_mode: str
    provide_cluster_info: bool
    install_hint: str

    @classmethod
    def parse(cls, raw: Any) -> ExecConfig:
        if not isinstance(raw, dict):
            raise KubeconfigError("invalid configuration: user.exec is not a mapping")
        command, api_version = raw.get("command"), raw.get("apiVersion")
        if not isinstance(command, str) or not command:
            raise KubeconfigError("invalid configuration: command must be specified to use exec authentication plugin")
        if not isinstance(api_version, str) or not api_version:
            raise KubeconfigError(
                "invalid configuration: apiVersion must be specified to use exec authentication plugin"
            )
        if api_version not in API_VERSIONS:
            raise KubeconfigError(f'exec plugin: invalid apiVersion "{api_version}"')
        mode = raw.get("interactiveMode") or ""
        if not mode and api_version.endswith("/v1beta1"):
            mode = "IfAvailable"  # SetDefaults_ExecConfig: v1beta1 keeps its old behaviour
        if not mode:
            raise KubeconfigError(
                "invalid configuration: interactiveMode must be specified to use exec authentication plugin"
            )
        if mode not in _MODES:
            raise KubeconfigError(f'invalid configuration: invalid interactiveMode: "{mode}"')
        args = raw.get("args") or []
        env = raw.get("env") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise KubeconfigError("invalid configuration: exec args must be a list of strings")
        if not isinstance(env, list):
            raise KubeconfigError("invalid configuration: exec env must be a list")
        pairs = []
        for item in env:
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or not name:
                raise KubeconfigError(
                    "invalid configuration: env variable name must be specified to use exec authentication plugin"
                )
            pairs.append((name, str(item.get("value") or "")))
        hint = raw.get("installHint")
        return cls(
            command=command,
            args=tuple(args),
            env=tuple(pairs),
            api_version=api_version,
            interactive_mode=mode,
            provide_cluster_info=raw.get("provideClusterInfo") is True,
            install_hint=" ".join(hint.split()) if isinstance(hint, str) else "",
        )


@dataclass(frozen=True)
class ExecCredential:
    """What the plugin answered: a token, or a certificate and key (PEM); ``expires`` in POSIX seconds."""

    token: str
    certificate: str
    key: str
    expires: float | None


def _interactive(mode: str) -> bool:
    """isInteractive: stdin a terminal decides for IfAvailable; Always needs one."""
    terminal = sys.stdin is not None and sys.stdin.isatty()
    if mode == "Always" and not terminal:
        raise KubeconfigError("exec plugin cannot support interactive mode: standard input is not a terminal")
    return mode != "Never" and terminal


async def _read(stream: asyncio.StreamReader, cap: int, *, fail: bool) -> bytes:
    """Up to ``cap`` bytes of ``stream``, read to its end; more is an error if ``fail``, else dropped."""
    data = bytearray()
    while chunk := await stream.read(64 * 1024):
        if len(data) + len(chunk) > cap:
            if fail:
                raise OverflowError
            chunk = chunk[: max(0, cap - len(data))]
        data += chunk
    return bytes(data)


async def run(config: ExecConfig, cluster: dict[str, Any] | None) -> ExecCredential:
    """Run the plugin once and check its answer; ``KubeconfigError`` naming the plugin otherwise."""
    name = config.command

    def error(message: str) -> KubeconfigError:
        message = " ".join(message.split())
        return KubeconfigError(message if name in message else f"exec plugin {name}: {message}")

    interactive = _interactive(config.interactive_mode)
    spec: dict[str, Any] = {"interactive": interactive}
    if config.provide_cluster_info and cluster is not None:
        spec["cluster"] = cluster
    info = {"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec}
    env = {**os.environ, **dict(config.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        process = await asyncio.create_subprocess_exec(
            config.command,
            *config.args,
            env=env,
            stdin=None if interactive else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise error(
            f"exec: executable {name} not found" + (f" ({config.install_hint})" if config.install_hint else "")
        ) from None
    except OSError as exc:
        raise error(f"exec: {exc.strerror or exc}") from exc
    assert process.stdout is not None and process.stderr is not None
    try:
        async with asyncio.timeout(PLUGIN_TIMEOUT):
            stdout, stderr, code = await asyncio.gather(
                _read(process.stdout, MAX_OUTPUT, fail=True),
                _read(process.stderr, _STDERR_KEPT, fail=False),
                process.wait(),
            )
    except TimeoutError:
        raise error(f"exec: executable {name} did not finish within {PLUGIN_TIMEOUT:g} s") from None
    except OverflowError:
        raise error(f"exec: executable {name} wrote more than {MAX_OUTPUT} bytes to stdout") from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if code != 0:
        said = stderr.decode(errors="replace").strip()
        raise error(f"exec: executable {name} failed with exit code {code}" + (f": {said}" if said else ""))
    return _answer(config, stdout, error)


def _answer(config: ExecConfig, stdout: bytes, error: Any) -> ExecCredential:
    try:
        answer = json.loads(stdout)
    except ValueError as exc:
        raise error(f"decoding stdout: {exc}") from None
    if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
        raise error("decoding stdout: not an ExecCredential")
    if answer.get("apiVersion") != config.api_version:
        raise error(
            f"exec plugin is configured to use API version {config.api_version}, "
            f"plugin returned version {answer.get('apiVersion')}"
        )
    status = answer.get("status")
    if not isinstance(status, dict):
        raise error("exec plugin didn't return a status field")
    token, certificate, key = (status.get(k) or "" for k in ("token", "clientCertificateData", "clientKeyData"))
    if not all(isinstance(v, str) for v in (token, certificate, key)):
        raise error("status.token, clientCertificateData and clientKeyData must be strings")
    if not token and not certificate and not key:
        raise error("exec plugin didn't return a token or cert/key pair")
    if bool(certificate) != bool(key):
        raise error("exec plugin returned only certificate or key, not both")
    expires: float | None = None
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            expires = datetime.fromisoformat(str(stamp)).timestamp()
        except ValueError:
            raise error(f"status.expirationTimestamp {str(stamp)[:40]!r} is not an RFC 3339 time") from None
    return ExecCredential(token=token, certificate=certificate, key=key, expires=expires)
