"""/healthz, /readyz and /metrics on one port (aiohttp, already in the tree through kopf)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler.kube.metrics import SchedulerMetrics

__all__ = ["HealthServer"]


class HealthServer:
    """``ready`` decides /readyz (cache synced); /healthz answers while the event loop does."""

    def __init__(self, metrics: SchedulerMetrics, ready: Callable[[], bool], before_scrape: Callable[[], None]) -> None:
        self._metrics = metrics
        self._ready = ready
        self._before_scrape = before_scrape
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="cache not synced")

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        self._before_scrape()
        body = generate_latest(self._metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, host: str, port: int) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics_handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = port
        for address in self._runner.addresses:  # the bound port, when asked for port 0
            if isinstance(address, tuple):
                self.port = int(address[1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
