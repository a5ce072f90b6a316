"""``explain`` and ``skew``'s listing of the live cluster: page by page, each response bounded, and a
malformed answer (not JSON, nested past the parser, not a list of objects, too large) a one-line
``ListingError`` naming the kind instead of a traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes.aio import client

from scheduler.config import load_config
from scheduler.kube.client import dump
from scheduler.kube.client.dump import ListingError, cluster_objects, list_cluster_objects

Answer = Callable[[web.Request], web.Response]


def _empty(request: web.Request) -> web.Response:
    return web.json_response({"kind": "List", "metadata": {}, "items": []})


async def _serve(answers: dict[str, Answer], asked: list[tuple[str, dict[str, str]]]) -> tuple[web.AppRunner, str]:
    """A fake API server: the given answer per path, an empty list for every other GET."""

    async def handle(request: web.Request) -> web.Response:
        asked.append((request.path, dict(request.query)))
        return answers.get(request.path, _empty)(request)

    server = web.Application()
    server.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def _list(answers: dict[str, Answer], asked: list[tuple[str, dict[str, str]]] | None = None) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        runner, host = await _serve(answers, asked if asked is not None else [])
        api = client.ApiClient(client.Configuration(host=host))
        try:
            return await list_cluster_objects(api)
        finally:
            await api.close()
            await runner.cleanup()

    return asyncio.run(main())


def test_every_kind_is_listed_page_by_page() -> None:
    def nodes(request: web.Request) -> web.Response:
        page = int(request.query.get("continue") or 0)
        more = {"continue": str(page + 1)} if page < 2 else {}
        return web.json_response({"metadata": more, "items": [{"metadata": {"name": f"n{page}"}}]})

    asked: list[tuple[str, dict[str, str]]] = []
    objects = _list({"/api/v1/nodes": nodes}, asked)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Node"] == ["n0", "n1", "n2"]
    node_requests = [query for path, query in asked if path == "/api/v1/nodes"]
    assert [q.get("continue") for q in node_requests] == [None, "1", "2"]
    assert {q["limit"] for _, q in asked} == {str(dump.PAGE_SIZE)}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param("<html>502 Bad Gateway</html>", "the response is not JSON", id="html"),
        pytest.param("[" * 100_000 + "]" * 100_000, "the response is not JSON", id="nested-100000"),
        pytest.param("[]", "not a JSON object", id="a-list"),
        pytest.param('{"items": {"a": 1}}', "items is not a list of objects", id="items-a-map"),
        pytest.param('{"items": [1, "x"]}', "items is not a list of objects", id="items-not-objects"),
    ],
)
def test_a_malformed_response_is_a_one_line_error_naming_the_kind(body: str, words: str) -> None:
    with pytest.raises(RuntimeError) as caught:
        _list({"/api/v1/pods": lambda _r: web.Response(text=body, content_type="application/json")})
    message = str(caught.value)
    assert message.startswith("listing Pod: ")
    assert words in message
    assert "\n" not in message


def test_a_response_past_the_limit_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dump, "MAX_PAGE_BYTES", 1000)
    big = json.dumps({"items": [{"metadata": {"name": "x" * 2000}}]})
    with pytest.raises(RuntimeError, match=r"^listing Node: HTTP 200: response larger than 1000 bytes$"):
        _list({"/api/v1/nodes": lambda _r: web.Response(text=big, content_type="application/json")})


def test_an_optional_kind_refused_with_a_non_json_body_is_left_out() -> None:
    forbidden = web.Response(status=403, text="forbidden")
    objects = _list({"/apis/storage.k8s.io/v1/storageclasses": lambda _r: forbidden})
    assert not [o for o in objects if o["kind"] == "StorageClass"]


def test_cluster_objects_turns_a_malformed_answer_into_listing_error(tmp_path: Path) -> None:
    """What ``skew`` and ``explain`` print: one line, exit 1 (no traceback)."""

    async def main() -> None:
        runner, host = await _serve({"/api/v1/nodes": lambda _r: web.Response(text="not json")}, [])
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: '{host}'}}}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
        )
        try:
            await cluster_objects(load_config(None), str(kubeconfig))
        finally:
            await runner.cleanup()

    with pytest.raises(
        ListingError, match=r"^cannot list the cluster: listing Node: HTTP 200: the response is not JSON"
    ):
        asyncio.run(main())


def test_device_classes_are_listed_where_allowed() -> None:
    """``explain`` and ``skew`` replay what ``run`` decides: DeviceClasses say which extended
    resources DynamicResources takes over (DRAExtendedResource); one the caller may not list is left out."""
    gpu = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    path = "/apis/resource.k8s.io/v1/deviceclasses"
    objects = _list({path: lambda _r: web.json_response({"metadata": {}, "items": [gpu]})})
    assert [o for o in objects if o["kind"] == "DeviceClass"] == [{**gpu, "kind": "DeviceClass"}]
    forbidden = web.json_response({"kind": "Status", "code": 403}, status=403)
    assert not [o for o in _list({path: lambda _r: forbidden}) if o["kind"] == "DeviceClass"]
