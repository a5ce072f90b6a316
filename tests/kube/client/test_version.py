"""``GET /version`` at start: a version.Info read within its bounds (size, time), and every other
answer one ``VersionError`` line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from kubernetes.aio import client

from scheduler.kube.client import version
from scheduler.kube.client.version import ServerVersion, VersionError, server_version

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

INFO = {"major": "1", "minor": "37", "gitVersion": "v1.37.2", "platform": "linux/amd64"}


def _read(handler: Handler, timeout: float = 5.0) -> ServerVersion:
    async def main() -> ServerVersion:
        server = web.Application()
        server.router.add_get("/version", handler)
        runner = web.AppRunner(server, shutdown_timeout=0.1)  # a handler still asleep is not waited for
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        api = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
        try:
            return await server_version(api, timeout)
        finally:
            await api.close()
            await runner.cleanup()

    return asyncio.run(main())


def test_the_servers_version_info() -> None:
    async def answer(_request: web.Request) -> web.Response:
        return web.json_response(INFO)

    assert _read(answer) == ServerVersion("1", "37", "v1.37.2")


def test_a_reply_larger_than_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(version, "MAX_VERSION_BYTES", 100)

    async def answer(_request: web.Request) -> web.Response:
        return web.json_response({**INFO, "pad": "x" * 1000})

    with pytest.raises(VersionError, match="response larger than 100 bytes"):
        _read(answer)


def test_a_server_that_does_not_answer_in_time_is_refused() -> None:
    async def answer(_request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response(INFO)

    with pytest.raises(VersionError, match=r"no answer within 0\.2s"):
        _read(answer, timeout=0.2)


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (403, {"kind": "Status", "message": "forbidden: /version"}, "HTTP 403: forbidden: /version"),
        (200, ["1", "37"], "not a JSON object"),
        (200, {"major": 1, "minor": "37", "gitVersion": "v1.37.2"}, "not all strings"),
        (200, "{", "not JSON"),
    ],
)
def test_anything_but_a_version_info_is_one_line(status: int, body: object, message: str) -> None:
    async def answer(_request: web.Request) -> web.Response:
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, content_type="application/json")

    with pytest.raises(VersionError, match=message):
        _read(answer)
