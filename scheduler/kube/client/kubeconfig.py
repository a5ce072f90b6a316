"""A kubeconfig read as clientcmd reads it: files merged, the current context's cluster and user.

Only what a client needs to connect is kept: the cluster (server, CA, TLS flags, proxy) and the user
(token, token file, client certificate, basic auth, exec plugin). Each file is read within the
bounds of ``scheduler.boundedyaml``; every problem is a ``KubeconfigError`` of one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from scheduler import boundedyaml

__all__ = ["DEFAULT_KUBECONFIG", "NO_OVERRIDES", "KubeconfigError", "Overrides", "Selected", "read", "source"]

DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(Exception):
    """No client can be made; the message says why in one line."""


@dataclass(frozen=True)
class Selected:
    """The current context's cluster and user, relative paths already made absolute."""

    where: str  # the file (or files) read, for messages
    cluster: dict[str, Any]
    user: dict[str, Any]
    namespace: str | None = None
    cluster_extensions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Overrides:
    """kubectl's ``--context``, ``--cluster`` and ``--user`` (clientcmd's ConfigOverrides): the context
    to use instead of ``current-context``, and a cluster or user to use instead of the context's."""

    context: str | None = None
    cluster: str | None = None
    user: str | None = None


NO_OVERRIDES = Overrides()


def source(kubeconfig: str | None) -> str | None:
    """What to read, as client-go picks it: the flag, then $KUBECONFIG (a list merged in order),
    then ~/.kube/config; None: the in-cluster service account."""
    if kubeconfig:
        if not os.path.exists(kubeconfig):
            raise KubeconfigError(f"stat {kubeconfig}: no such file or directory")  # kube-scheduler's words
        return kubeconfig
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    return default if os.path.exists(default) else None


def _load(path: str) -> dict[str, Any]:
    try:
        document, _ = boundedyaml.load_single(boundedyaml.read_text(path), boundedyaml.BoundedLoader)
    except boundedyaml.ReadError as exc:
        raise KubeconfigError(f'error loading config file "{path}": {exc}') from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise KubeconfigError(f'error loading config file "{path}": not a mapping')
    return document


def _named(path: str, document: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``name``/``<kind>`` pairs of one list (``clusters``, ``users``, ``contexts``)."""
    entries = document.get(key) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f'invalid configuration in "{path}": {key} is not a list')
    inner = key[:-1]  # clusters -> cluster, users -> user, contexts -> context
    named = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise KubeconfigError(f'invalid configuration in "{path}": an entry of {key} has no name')
        body = entry.get(inner) or {}
        if not isinstance(body, dict):
            raise KubeconfigError(f'invalid configuration in "{path}": {key}[{entry["name"]}].{inner} is not a mapping')
        named.append((entry["name"], body))
    return named


# Fields holding a path, made absolute against the file that set them (clientcmd's ResolvePaths).
_CLUSTER_PATHS = ("certificate-authority",)
_USER_PATHS = ("client-certificate", "client-key", "tokenFile")


def _resolved(body: dict[str, Any], keys: tuple[str, ...], base: str) -> dict[str, Any]:
    body = dict(body)
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            body[key] = os.path.join(base, os.path.expanduser(value))
    exec_config = body.get("exec")
    if isinstance(exec_config, dict):
        command = exec_config.get("command")
        # Only a command with a path separator is relative to the file; a bare name is looked up on PATH.
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            body["exec"] = {**exec_config, "command": os.path.join(base, command)}
    return body


def read(where: str, overrides: Overrides = NO_OVERRIDES) -> Selected:
    """The current context of the kubeconfig file(s) at ``where`` (an $KUBECONFIG-style list), or
    the one ``overrides`` names, with its cluster and user replaced by those ``overrides`` names.

    Merged as clientcmd merges: the first file to set a name (cluster, user, context) wins, and the
    first file to set ``current-context`` wins. A context, cluster or user named by an override
    must exist (clientcmd's ``ConfirmUsable``: ``context "x" does not exist``).
    """
    paths = [os.path.expanduser(p) for p in where.split(os.pathsep) if p]
    clusters: dict[str, tuple[dict[str, Any], str]] = {}
    users: dict[str, tuple[dict[str, Any], str]] = {}
    contexts: dict[str, dict[str, Any]] = {}
    current: str | None = None
    read_any = False
    for path in paths:
        if not os.path.exists(path) and len(paths) > 1:
            continue  # clientcmd skips missing files of a list
        document = _load(path)
        read_any = True
        base = os.path.dirname(os.path.abspath(path))
        if current is None and isinstance(document.get("current-context"), str) and document["current-context"]:
            current = document["current-context"]
        for name, body in _named(path, document, "clusters"):
            clusters.setdefault(name, (body, base))
        for name, body in _named(path, document, "users"):
            users.setdefault(name, (body, base))
        for name, body in _named(path, document, "contexts"):
            contexts.setdefault(name, body)
    if not read_any:
        raise KubeconfigError(f"stat {where}: no such file or directory")
    prefix = f'invalid configuration in "{where}": '
    for flag, wanted, known in (
        ("context", overrides.context, set(contexts)),
        ("cluster", overrides.cluster, set(clusters)),
        ("auth info", overrides.user, set(users)),
    ):
        if wanted and wanted not in known:
            raise KubeconfigError(prefix + f'{flag} "{wanted}" does not exist')
    current = overrides.context or current
    if not current and not overrides.cluster:
        raise KubeconfigError(prefix + "no current-context is set")
    context = contexts.get(current) if current else {}
    if context is None:
        raise KubeconfigError(prefix + f"context was not found for specified context: {current}")
    cluster_name = overrides.cluster or context.get("cluster")
    user_name = overrides.user or context.get("user")
    if cluster_name not in clusters:
        raise KubeconfigError(prefix + f'cluster "{cluster_name}" of context "{current}" not found')
    cluster, cluster_base = clusters[cluster_name]
    user, user_base = users.get(user_name, ({}, "")) if user_name else ({}, "")
    if not isinstance(cluster.get("server"), str) or not cluster["server"]:
        raise KubeconfigError(f'invalid configuration in "{where}": cluster "{cluster_name}" has no server')
    extensions = {
        entry["name"]: entry.get("extension")
        for entry in cluster.get("extensions") or []
        if isinstance(entry, dict) and isinstance(entry.get("name"), str)
    }
    namespace = context.get("namespace")
    return Selected(
        where=where,
        cluster=_resolved(cluster, _CLUSTER_PATHS, cluster_base),
        user=_resolved(user, _USER_PATHS, user_base),
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        cluster_extensions=extensions,
    )
