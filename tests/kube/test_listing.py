"""The start-up list: metadata only, terminal pods left out by the server, page by page; and the
cache sync's re-list, taken only when the watch has stopped bringing what it waits for."""

from __future__ import annotations

import asyncio
import json
import types
from typing import Any

import pytest
from aiohttp import web
from kubernetes.aio import client

from scheduler.kube import app
from scheduler.kube.listing import METADATA_ONLY, NOT_TERMINAL, Listing, list_objects, list_uids


async def _serve(pages: list[list[str]], asked: list[dict[str, Any]]) -> tuple[web.AppRunner, str]:
    async def pods(request: web.Request) -> web.Response:
        asked.append({"accept": request.headers.get("Accept"), **request.query})
        index = int(request.query.get("continue") or 0)
        more = {"continue": str(index + 1)} if index + 1 < len(pages) else {}
        items = [
            {"metadata": {"name": uid, "namespace": "ns", "uid": uid, "resourceVersion": f"rv-{uid}"}}
            for uid in pages[index]
        ]
        meta = more | ({"resourceVersion": "list-1"} if index == 0 else {"resourceVersion": "list-2"})
        return web.Response(text=json.dumps({"kind": "PartialObjectMetadataList", "metadata": meta, "items": items}))

    server = web.Application()
    server.router.add_get("/api/v1/pods", pods)
    runner = web.AppRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def test_the_start_up_list_asks_for_metadata_of_pods_not_terminal_page_by_page() -> None:
    asked: list[dict[str, Any]] = []

    async def main() -> set[str]:
        runner, host = await _serve([["a", "b"], ["c"]], asked)
        api = client.ApiClient(client.Configuration(host=host))
        try:
            return await list_uids(api, "Pod", page_size=2)
        finally:
            await api.close()
            await runner.cleanup()

    assert asyncio.run(main()) == {"a", "b", "c"}
    assert [a.get("continue") for a in asked] == [None, "1"]
    for request in asked:
        assert request["accept"] == METADATA_ONLY
        assert request["fieldSelector"] == NOT_TERMINAL and request["limit"] == "2"


def test_the_resync_list_asks_for_metadata_of_every_pod_and_keeps_key_and_version() -> None:
    """Terminal pods stay in the resync's list (the cache may hold them); the list's own version is
    the first page's (a paginated list is one snapshot)."""
    asked: list[dict[str, Any]] = []

    async def main() -> Listing:
        runner, host = await _serve([["a", "b"], ["c"]], asked)
        api = client.ApiClient(client.Configuration(host=host))
        try:
            return await list_objects(api, "Pod", page_size=2)
        finally:
            await api.close()
            await runner.cleanup()

    listing = asyncio.run(main())
    assert listing == Listing({"ns/a": "rv-a", "ns/b": "rv-b", "ns/c": "rv-c"}, "list-1")
    assert all(request["accept"] == METADATA_ONLY and "fieldSelector" not in request for request in asked)


def test_the_sync_lists_again_only_when_the_watch_brings_nothing_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """While objects keep arriving, a re-list would only take the loop from the watch's own list: on
    a cluster of 5,000 nodes and 10,000 pods each one cost seconds, every RELIST_EVERY."""
    wanted = {f"pod-{i}" for i in range(40)}
    lists = 0

    async def list_again(_api: object) -> set[str]:
        nonlocal lists
        lists += 1
        return set(wanted)

    monkeypatch.setattr(app, "_list_uids", list_again)
    monkeypatch.setattr(app, "RELIST_EVERY", 0.2)
    sched = types.SimpleNamespace(seen_uids=set())

    async def main() -> bool:
        async def watch() -> None:
            for uid in sorted(wanted):  # one object every 25 ms: 1 s of steady progress
                await asyncio.sleep(0.025)
                sched.seen_uids.add(uid)

        feeder = asyncio.ensure_future(watch())
        operator = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(
                app._wait_for_sync(object(), sched, operator, asyncio.Event(), set(wanted)),  # type: ignore[arg-type]
                5,
            )
        finally:
            operator.cancel()
            feeder.cancel()

    assert asyncio.run(main()) is True
    assert lists == 0
