"""Requests through the official client's configured session, without its generated API classes."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.aio import client

__all__ = ["expand", "request_headers", "send"]


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

    Not the generated API classes: their methods validate every argument with pydantic, and building
    those validators when ``CoreV1Api`` is instantiated costs a large share of the process's memory
    for the two LISTs the cache's sync and resync make. Nor the client's ``param_serialize``: a
    generic walk of the body and headers for every write (figures in docs/benchmarks.md). What
    matters is here: the URL, the headers and the bearer token (asked of the configuration per
    request, so a refreshed token is used, as the client does).
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
    the bearer token asked of the configuration now (an exec plugin's or a file's token may have been
    refreshed)."""
    headers = {**api.default_headers, "Content-Type": content_type, "Accept": accept}
    bearer = (await api.configuration.auth_settings()).get("BearerToken")
    if bearer is not None and bearer.get("value"):
        headers[bearer["key"]] = bearer["value"]
    return headers
