"""Which kube-scheduler minor a command against a live cluster decides as: ``--kube-version`` when
given, else the API server's own (``/version``), with ``--feature-gates`` checked at that minor.

The version skew policy lets kube-scheduler be one minor older than the API server, never newer: a
server one minor newer than the newest we have is served as the newest, with a warning; anything
else outside ``scheduler.features.SUPPORTED`` is refused naming the supported versions
(``features.minor_for_server``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubernetes.aio import client

from scheduler.features import NEWEST, RELEASES, Features, features_at, minor_for_server, supported_minor
from scheduler.kube.client.apiclient import KubeconfigError, api_client
from scheduler.kube.client.kubeconfig import NO_OVERRIDES, Overrides
from scheduler.kube.client.version import ServerVersion, VersionError, server_version

__all__ = ["Decided", "KubeVersion", "decide_as", "decide_live", "read_decided"]


@dataclass(frozen=True, slots=True)
class KubeVersion:
    """``--kube-version`` (None: the API server's) and ``--feature-gates`` (parsed, not yet checked)."""

    pinned: str | None = None
    gates: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decided:
    """The features decided with, the server's ``gitVersion`` when read, and a warning to log once."""

    features: Features
    server: str = ""
    warning: str | None = None


def decide_as(asked: KubeVersion, server: ServerVersion | None) -> Decided:
    """The minor to decide as; ``ValueError`` (a ``FeatureGateError`` for the gates) saying why not."""
    if asked.pinned is not None:
        minor = supported_minor(asked.pinned)
        return Decided(features_at(minor, asked.gates), server.git_version if server else "")
    if server is None:
        raise ValueError("the API server's version is unknown and --kube-version is not given")
    minor = minor_for_server(server.major, server.minor)
    warning = None
    if f"{server.major}.{''.join(ch for ch in server.minor if ch.isdigit())}" != minor:
        warning = (
            f"the API server is Kubernetes {server.git_version or server.major + '.' + server.minor}, newer than "
            f"spread-scheduler's newest; deciding as kube-scheduler {NEWEST} ({RELEASES[NEWEST]}), as the version "
            "skew policy allows (one minor older than the API server)"
        )
    return Decided(features_at(minor, asked.gates), server.git_version, warning)


async def read_decided(api: client.ApiClient, asked: KubeVersion) -> Decided:
    """``decide_as`` with the server's ``/version`` (not read when ``--kube-version`` pins the minor)."""
    server = None if asked.pinned is not None else await server_version(api)
    return decide_as(asked, server)


async def decide_live(kubeconfig: str | None, asked: KubeVersion, overrides: Overrides = NO_OVERRIDES) -> Decided:
    """``read_decided`` on a client of its own, for the read-only commands (``explain``, ``skew``,
    ``rebalance --dry-run``; ``overrides``: kubectl's --context, --cluster, --user); ``VersionError``
    for a kubeconfig or server that cannot answer."""
    if asked.pinned is not None:
        return decide_as(asked, None)
    try:
        api = await api_client(kubeconfig, overrides)
    except KubeconfigError as exc:
        raise VersionError(str(exc)) from exc
    try:
        return await read_decided(api, asked)
    finally:
        await api.close()  # type: ignore[no-untyped-call]
