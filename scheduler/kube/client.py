"""The API client from a kubeconfig or the pod's service account, with one-line errors as kube-scheduler's.

Every way loading can fail (a missing or unparsable file, a context that is not there, no
configuration at all) is a ``KubeconfigError`` whose message is the line to print; the Python
client's own errors would otherwise end the process in a traceback, and a missing file reads as
"Expected key current-context".
"""

from __future__ import annotations

import os

import yaml
from kubernetes.aio import client
from kubernetes.aio import config as kube_config
from kubernetes.aio.config.config_exception import ConfigException

from scheduler.kube.transport import PROXY_VARIABLES, WRITE_CONNECTIONS
from scheduler.kube.writes import FencedRequest

__all__ = ["KubeconfigError", "api_client"]

DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(Exception):
    """No client can be made; the message says why in one line."""


def _kubeconfig_source(kubeconfig: str | None) -> str | None:
    """What to read, as client-go picks it: the flag, then $KUBECONFIG (a list the client merges),
    then ~/.kube/config; None: the in-cluster service account."""
    if kubeconfig:
        if not os.path.exists(kubeconfig):
            raise KubeconfigError(f"stat {kubeconfig}: no such file or directory")  # kube-scheduler's words
        return kubeconfig
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    return default if os.path.exists(default) else None


async def api_client(kubeconfig: str | None) -> client.ApiClient:
    """A client for the given kubeconfig, $KUBECONFIG, ~/.kube/config or the in-cluster service account."""
    path = _kubeconfig_source(kubeconfig)
    try:
        if path is not None:
            # Always named: the client's own default is $KUBECONFIG as it was when it was imported.
            api: client.ApiClient = await kube_config.new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
        else:
            kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
            api = client.ApiClient()
    except yaml.YAMLError as exc:
        raise KubeconfigError(f'error loading config file "{path}": {" ".join(str(exc).split())}') from exc
    except ConfigException as exc:
        if path is None:
            raise KubeconfigError(
                "invalid configuration: no configuration has been provided (no --kubeconfig, no $KUBECONFIG, "
                f"no {DEFAULT_KUBECONFIG}) and not in a cluster: {exc}"
            ) from exc
        raise KubeconfigError(f'invalid configuration in "{path}": {" ".join(str(exc).split())}') from exc
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise KubeconfigError(f'error loading config file "{path}": {type(exc).__name__}: {exc}') from exc
    if not any(os.environ.get(name) for name in PROXY_VARIABLES):
        # aiohttp's trust_env reads ~/.netrc in a worker thread on every request: with no proxy to
        # honour, that is pure cost (it showed in the profile of a 1,000-pod burst).
        api.configuration.client_session_kwargs = {"trust_env": False}
    # Writes go over our own connections (scheduler.kube.transport); behind a proxy, over the
    # client's session, with as many connections and the same fence on each.
    api.configuration.tcp_connector_limit_per_host = WRITE_CONNECTIONS
    # The session is made at the first request: every write it carries asks its fence once more when
    # it has a connection and right before its body (scheduler.kube.writes.FencedRequest).
    api.configuration.client_session_kwargs = {
        **(getattr(api.configuration, "client_session_kwargs", None) or {}),
        "request_class": FencedRequest,
    }
    return api
