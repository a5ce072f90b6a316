"""Requests through the official client's configured session, without its generated API classes."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.aio import client

from scheduler.kube.client.credentials import credentials_of

__all__ = ["expand", "note_reply", "request_headers", "send"]


async def send(
    api: client.ApiClient,
    method: str,
    path: str,
    params: dict[str, str],
    *,
    query: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> Any:
    """One request through the client's configured session (TLS, auth); the aiohttp response.

    Not the generated API classes: building their pydantic validators costs memory for every API
    class instantiated, for the few calls made here. Nor the client's ``param_serialize``: a generic
    walk of the body and headers, on every write (docs/benchmarks.md, "Why the I/O layer is shaped
    as it is"). What matters is here: the URL, the headers and the Authorization (asked of the
    credential stack per request, so a renewed token is used).
    """
    url = api.configuration.host + expand(path, params)
    if query:
        url += "?" + urlencode(query)
    headers = await request_headers(api, content_type, accept)
    reply = await api.rest_client.request(method, url, headers=headers, body=body)  # type: ignore[no-untyped-call]
    return reply.response


def expand(path: str, params: dict[str, str]) -> str:
    """``path`` with its ``{name}`` fields filled in, each quoted as one path segment."""
    return path.format_map({k: quote(v, safe="") for k, v in params.items()})


async def request_headers(api: client.ApiClient, content_type: str, accept: str = "application/json") -> dict[str, str]:
    """The client's default headers (its User-Agent), the content type, what to send back (JSON), and
    the Authorization asked of the configuration now: its hook asks the credential stack
    (``scheduler.kube.client.credentials``), which renews an exec plugin's or a token file's when due."""
    headers = {**api.default_headers, "Content-Type": content_type, "Accept": accept}
    bearer = (await api.configuration.auth_settings()).get("BearerToken")
    if bearer is not None and bearer.get("value"):
        headers[bearer["key"]] = bearer["value"]
    return headers


def note_reply(api: client.ApiClient, headers: dict[str, str], status: int) -> None:
    """A reply to a request sent on connections of our own (not the client's session, whose
    middleware does this): a 401 renews the credentials that request carried."""
    if status == 401 and (stack := credentials_of(api)) is not None:
        stack.unauthorized(headers.get("authorization") or headers.get("Authorization"))
