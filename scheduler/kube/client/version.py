"""The API server's ``/version`` (client-go ``discovery.ServerVersion``): which Kubernetes minor to decide as.

Read once at start, bounded like every other read: ``MAX_VERSION_BYTES`` of body, ``VERSION_TIMEOUT``
seconds. Every way it can fail becomes one ``VersionError`` with a one-line message.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import aiohttp
from kubernetes.aio import client

from scheduler.kube.client.rest import BodyTooLargeError, read_body, send

__all__ = ["MAX_VERSION_BYTES", "VERSION_TIMEOUT", "ServerVersion", "VersionError", "server_version"]

# version.Info is a dozen short strings; a server answering more is refused, not buffered.
MAX_VERSION_BYTES = 64 * 1024
VERSION_TIMEOUT = 30.0


class VersionError(RuntimeError):
    """``/version`` could not be read or is not a version.Info; the message says why in one line."""


@dataclass(frozen=True, slots=True)
class ServerVersion:
    """The fields of apimachinery's ``version.Info`` we use."""

    major: str
    minor: str
    git_version: str


def parse_version(body: bytes, status: int) -> ServerVersion:
    """A ``/version`` reply as ``ServerVersion``; ``VersionError`` for anything else."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise VersionError(f"GET /version: HTTP {status}: the response is not JSON") from exc
    if status != 200:
        message = data.get("message") if isinstance(data, dict) else None
        raise VersionError(f"GET /version: HTTP {status}: {message or 'no message'}")
    if not isinstance(data, dict):
        raise VersionError("GET /version: the response is not a JSON object")
    fields = {key: data.get(key) for key in ("major", "minor", "gitVersion")}
    if not all(isinstance(value, str) for value in fields.values()) or not fields["major"]:
        raise VersionError(f"GET /version: major, minor and gitVersion are not all strings: {fields}")
    return ServerVersion(str(fields["major"]), str(fields["minor"]), str(fields["gitVersion"]))


async def server_version(api: client.ApiClient, timeout: float = VERSION_TIMEOUT) -> ServerVersion:
    """``GET /version`` through the client's session, within ``timeout`` seconds."""

    async def read() -> ServerVersion:
        response = await send(api, "GET", "/version", {})
        try:
            return parse_version(await read_body(response, MAX_VERSION_BYTES), response.status)
        except BodyTooLargeError as exc:
            raise VersionError(f"GET /version: {exc}") from None
        finally:
            response.release()

    try:
        return await asyncio.wait_for(read(), timeout)
    except TimeoutError as exc:
        raise VersionError(f"GET /version: no answer within {timeout:g}s") from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise VersionError(f"GET /version: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
