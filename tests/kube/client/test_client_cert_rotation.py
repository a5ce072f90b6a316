"""A client certificate from an exec plugin, rotated: every client of the process presents the new one.

Issue #46, finding 2: after a rotation the scheduling loop's reads and writes presented the new
certificate while the Lease's client (made by ``app.py`` from the same configuration, on the renewal
thread) kept the first, and connections kept alive from before the rotation presented the first on
every request after it. When that certificate expired the leader lost its Lease. Here a local TLS
server, trusting a throwaway CA, records the certificate each request arrived with.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime
import json
import ssl
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography.x509.oid import ExtendedKeyUsageOID
from kopf._cogs.clients.auth import APIContext
from kubernetes.aio import client

from scheduler.kube.binder import ApiBinder
from scheduler.kube.client.apiclient import api_client
from scheduler.kube.client.rest import send
from scheduler.kube.client.watch import watch_session
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.leader import run_with_leader_election
from scheduler.kube.writes import ApiWriter, ApiWrites
from scheduler.testing import make_pod
from tests.kube.client.test_credentials import (  # noqa: F401 (nowhere: an autouse fixture)
    Clock,
    ThrowawayCA,
    _kubeconfig,
    _pem,
    _plugin_user,
    nowhere,
)
from tests.kube.test_leader import SETTINGS

# The plugin answers with the pair named by the file ``current`` and the expiry written beside it.
ROTATING_PLUGIN = """
import json, os, pathlib
where = pathlib.Path(os.environ["PAIRS"])
name = (where / "current").read_text().strip()
status = {
    "clientCertificateData": (where / f"{name}.crt").read_text(),
    "clientKeyData": (where / f"{name}.key").read_text(),
    "expirationTimestamp": (where / f"{name}.expiry").read_text().strip(),
}
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
"""

LEASES = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
# Generous timings: a plugin run (a Python start-up) on a busy machine must not cost the Lease.
SLOW = dataclasses.replace(SETTINGS, lease_duration=8.0, renew_deadline=6.0, retry_period=0.1)


class RecordingServer:
    """An API server that records, per request, the common name of the client certificate its
    connection presented; it keeps connections alive, as the API server does, and holds one Lease."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []  # (method, path, common name)
        self.lease: dict[str, Any] | None = None
        self.version = 0

    @staticmethod
    def _presented(request: web.Request) -> str | None:
        assert request.transport is not None
        peer = request.transport.get_extra_info("peercert")
        if not peer:
            return None
        return next(value for rdn in peer["subject"] for key, value in rdn if key == "commonName")

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path, self._presented(request)))
        if request.path.startswith(LEASES):
            return await self._lease(request)
        return web.json_response({}, status=201 if request.method == "POST" else 200)

    async def _lease(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            if self.lease is None:
                return web.json_response({"kind": "Status", "code": 404}, status=404)
            return web.json_response(self.lease)
        self.version += 1
        self.lease = json.loads(await request.read())
        self.lease.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return web.json_response(self.lease, status=201 if request.method == "POST" else 200)

    def by_client(self, since: int = 0) -> dict[str, set[str | None]]:
        """The certificates each client presented, for the requests from ``since`` on."""
        found: dict[str, set[str | None]] = defaultdict(set)
        for _method, path, name in self.seen[since:]:
            found["lease" if path.startswith(LEASES) else path.rsplit("/", 1)[-1]].add(name)
        return dict(found)


@contextlib.asynccontextmanager
async def _serving(server: RecordingServer, ca: ThrowawayCA, tmp_path: Path) -> AsyncIterator[str]:
    cert, key = ca.issue("apiserver", ExtendedKeyUsageOID.SERVER_AUTH, ip="127.0.0.1")
    (tmp_path / "server.crt").write_bytes(cert)
    (tmp_path / "server.key").write_bytes(key)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    tls.load_verify_locations(cadata=_pem(ca.cert).decode())
    tls.verify_mode = ssl.CERT_OPTIONAL  # asks for a client certificate and records what came
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _write_pair(pairs: Path, name: str, ca: ThrowawayCA, expires: float) -> None:
    cert, key = ca.issue(name, ExtendedKeyUsageOID.CLIENT_AUTH)
    (pairs / f"{name}.crt").write_bytes(cert)
    (pairs / f"{name}.key").write_bytes(key)
    stamp = datetime.datetime.fromtimestamp(expires, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    (pairs / f"{name}.expiry").write_text(stamp)


async def _until(condition: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_every_client_presents_the_rotated_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Certificate A, then B at A's expiry: every request after the rotation presents B, whichever
    client of the process sends it (the scheduling loop's reads, the writes' own connections, the
    watches, the secure port's delegated-auth client, the Lease's client on its thread), including
    on connections that were kept alive from before the rotation.

    Old code: the Lease's requests kept presenting A (its TLS context was not tracked), and so did
    every request the other clients sent on a connection opened before the rotation."""
    clock = Clock(monkeypatch)
    ca = ThrowawayCA()
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    _write_pair(pairs, "client-a", ca, time.time() + 3600)
    (pairs / "current").write_text("client-a")
    server = RecordingServer()
    user = _plugin_user(tmp_path / "plugin.py", ROTATING_PLUGIN, env=[{"name": "PAIRS", "value": str(pairs)}])
    pod = make_pod("p", "ns").build()

    async def every_client(api: Any, delegated: Any, watches: APIContext, binder: ApiBinder) -> None:
        """One request from each client the loop holds; the Lease's client renews on its own."""
        for who in (api, delegated):
            name = "main" if who is api else "delegated"
            (await send(who, "GET", "/api/v1/namespaces/{name}", {"name": name})).release()
        async with watches.session.get(watches.server + "/api/v1/namespaces/watch") as response:
            await response.read()
        await binder.bind(pod, "node-1")

    async def main() -> tuple[dict[str, set[str | None]], dict[str, set[str | None]]]:
        async with _serving(server, ca, tmp_path) as url:
            kubeconfig = _kubeconfig(
                tmp_path, url, user, {"certificate-authority-data": base64.b64encode(_pem(ca.cert)).decode()}
            )
            api = await api_client(str(kubeconfig))
            delegated = await api_client(str(kubeconfig))  # the secure port's, as app.py makes it
            watches = APIContext(await watch_session(api, lambda: None)())
            writes = ApiWrites(api)
            binder = ApiBinder(ApiWriter(writes, RateLimiter(0, 1)))
            stop = asyncio.Event()
            leading = asyncio.Event()

            async def lead(inner_stop: asyncio.Event) -> None:
                leading.set()
                await inner_stop.wait()

            election = asyncio.ensure_future(
                run_with_leader_election(
                    api,
                    SLOW,
                    "a",
                    lead,
                    stop,
                    renew_api=lambda: client.ApiClient(api.configuration),  # as app.py makes the Lease's
                )
            )
            try:
                await _until(leading.is_set, "leadership")
                await every_client(api, delegated, watches, binder)
                await _until(lambda: server.version >= 5, "renewals with certificate A")
                before = server.by_client()
                # A expires; B is what the plugin answers now, valid for an hour of the stack's clock.
                _write_pair(pairs, "client-b", ca, time.time() + 7200)
                (pairs / "current").write_text("client-b")
                clock.advance(3601)
                await every_client(api, delegated, watches, binder)  # the first request renews
                await asyncio.sleep(0.3)  # a renewal sent before the rotation has its answer
                since, version = len(server.seen), server.version
                await every_client(api, delegated, watches, binder)
                await _until(lambda: server.version >= version + 5, "renewals after the rotation")
                return before, server.by_client(since)
            finally:
                stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(election, 10)
                await watches.close()
                await writes.close()
                await delegated.close()
                await api.close()

    before, after = asyncio.run(main())
    clients = {"main", "delegated", "watch", "binding", "lease"}
    assert before == {name: {"client-a"} for name in clients}
    assert after == {name: {"client-b"} for name in clients}
