"""A small scheduler extender of our own (aiohttp web on 127.0.0.1), for the client's tests and e2e.

Speaks ``k8s.io/kube-scheduler/extender/v1`` as kube-scheduler sends it: ``POST /<verb>`` with
``ExtenderArgs`` (``Pod``, ``Nodes`` or ``NodeNames``), answering ``ExtenderFilterResult``,
``HostPriorityList`` or ``ExtenderBindingResult``. Behaviour is set on the instance; ``delay``
makes every answer late (the timeout cases). Runs in the test's event loop, or in a thread of its
own (``start_in_thread``) next to a scheduler subprocess.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["ExtenderServer"]


@dataclass
class ExtenderServer:
    reject: dict[str, str] = field(default_factory=dict)  # node -> FailedNodes message
    scores: dict[str, int] = field(default_factory=dict)  # node -> 0..10
    delay: float = 0.0
    status: int = 200
    error: str = ""  # the Error field of filter/bind answers
    answer_names: bool = False  # answer NodeNames even when sent Nodes (a nodeCacheCapable extender)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    port: int = 0
    ssl_context: ssl.SSLContext | None = None  # serve https
    padding: int = 0  # bytes of filler in filter answers (the client's size limit is under test)
    stream: bool = False  # send filter answers chunked, without a Content-Length
    _runner: web.AppRunner | None = None
    _release: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        body = await request.json()
        self.requests.append((verb, body))
        if self.delay:
            await asyncio.sleep(self.delay)  # the server is slow on purpose: the client's timeout is under test
        if self.status != 200:
            return web.Response(status=self.status, text="nope")
        if verb == "filter":
            answer = self._filter(body) | ({"Padding": "x" * self.padding} if self.padding else {})
            if not self.stream:
                return web.json_response(answer)
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            data = json.dumps(answer).encode()
            for start in range(0, len(data), 4096):
                await response.write(data[start : start + 4096])
            await response.write_eof()
            return response
        if verb == "prioritize":
            return web.json_response([{"Host": n, "Score": self.scores.get(n, 0)} for n in _names(body)])
        if verb == "bind":
            return web.json_response({"Error": self.error})
        return web.Response(status=404)

    def _filter(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.error:
            return {"Error": self.error}
        names = _names(body)
        passed = [n for n in names if n not in self.reject]
        failed = {n: msg for n, msg in self.reject.items() if n in names}
        if body.get("NodeNames") is not None or self.answer_names:
            return {"NodeNames": passed, "FailedNodes": failed, "Error": ""}
        items = [item for item in body["Nodes"]["items"] if item["metadata"]["name"] in passed]
        return {"Nodes": {"items": items}, "FailedNodes": failed, "Error": ""}

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/{verb}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)  # a slow answer under test is not waited out
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ssl_context)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
        self.port = sockets[0].getsockname()[1]
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start_in_thread(self) -> threading.Thread:
        """Serve from a daemon thread with its own loop until ``stop_thread``; returns once listening."""
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._release = asyncio.Event()
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_until_complete(self._release.wait())
            loop.run_until_complete(self.stop())
            loop.close()

        thread = threading.Thread(target=serve, daemon=True, name="extender-server")
        thread.start()
        if not ready.wait(timeout=10):
            raise RuntimeError("extender server did not start")
        return thread

    def stop_thread(self, thread: threading.Thread) -> None:
        if self._release is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._release.set)
        thread.join(timeout=10)


def _names(body: dict[str, Any]) -> list[str]:
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [item["metadata"]["name"] for item in body["Nodes"]["items"]]
