"""The API client from the process's one credential stack (``scheduler.kube.client.credentials``).

Every way loading can fail (a missing or unparsable file, a context that is not there, no
configuration at all, a bad exec stanza) is a ``KubeconfigError`` whose message is the line to print.
The client's own kubeconfig loader is not used: it runs an exec plugin once and keeps its token, reads
a ``tokenFile`` once with its newline, and parses the file a second time for every consumer.
"""

from __future__ import annotations

import os

from kubernetes.aio import client

from scheduler.kube.client.credentials import KubeconfigError, load
from scheduler.kube.client.kubeconfig import NO_OVERRIDES, Overrides
from scheduler.kube.client.transport import PROXY_VARIABLES, WRITE_CONNECTIONS
from scheduler.kube.fence import FencedRequest

__all__ = ["KubeconfigError", "api_client"]


async def api_client(kubeconfig: str | None, overrides: Overrides = NO_OVERRIDES) -> client.ApiClient:
    """A client for the given kubeconfig, $KUBECONFIG, ~/.kube/config or the in-cluster service
    account; ``overrides``: kubectl's --context, --cluster and --user."""
    credentials = load(kubeconfig, overrides)
    configuration = type.__call__(client.Configuration)  # not a copy of the client's process-wide default
    credentials.configure(configuration)
    try:
        credentials.ssl_context()  # the CA and client certificate files, loaded here
        api = client.ApiClient(configuration)
    except (OSError, ValueError) as exc:
        raise KubeconfigError(f"unable to load TLS files of the kubeconfig: {exc}") from exc
    if not any(os.environ.get(name) for name in PROXY_VARIABLES):
        # aiohttp's trust_env reads ~/.netrc in a worker thread on every request: with no proxy to
        # honour, that is pure cost (docs/benchmarks.md, "Why the I/O layer is shaped as it is").
        api.configuration.client_session_kwargs = {"trust_env": False}
    # Writes go over our own connections (scheduler.kube.client.transport); behind a proxy, over the
    # client's session, with as many connections and the same fence on each.
    api.configuration.tcp_connector_limit_per_host = WRITE_CONNECTIONS
    # The session is made at the first request: every write it carries asks its fence once more when
    # it has a connection and right before its body (scheduler.kube.fence.FencedRequest).
    api.configuration.client_session_kwargs = {
        **(getattr(api.configuration, "client_session_kwargs", None) or {}),
        # Its connections present the stack's current client certificate, and so do those of every
        # client made from this configuration (the Lease's, on its own thread).
        "request_class": credentials.request_class(FencedRequest),
        # A 401 renews the credentials it was for, whichever request saw it (client-go's round trippers).
        "middlewares": (credentials.middleware,),
    }
    return api
