"""The HTTP extender client against our own extender server on 127.0.0.1 (no sleeps as synchronisation)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.extenders import ExtenderConfig, ExtenderTLSConfig, ManagedResource
from scheduler.framework.extender import ExtenderError, HostPriority
from scheduler.framework.status import Code
from scheduler.kube.extender import HTTPExtender, close_extenders, http_extenders, pod_resource_names
from scheduler.testing import make_node, make_pod
from tests.extender_server import ExtenderServer
from tests.helpers import make_cache

NODES = [make_node(f"node{i}") for i in (1, 2, 3)]


def with_server(server: ExtenderServer, body: Callable[[str, list[Any]], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        url = await server.start()
        try:
            await body(url, list(make_cache(NODES).node_infos()))
        finally:
            await server.stop()

    asyncio.run(main())


def client(url: str, **kw: Any) -> HTTPExtender:
    return HTTPExtender(
        ExtenderConfig(url_prefix=url, filter_verb="filter", prioritize_verb="prioritize", weight=1, **kw)
    )


POD = make_pod("web").labels({"app": "web"}).build()


@pytest.mark.parametrize("cache_capable", [pytest.param(False, id="whole-nodes"), pytest.param(True, id="node-names")])
def test_filter_round_trip(cache_capable: bool) -> None:
    """Nodes go out whole (or as names when nodeCacheCapable); passed names and failures come back."""
    server = ExtenderServer(reject={"node1": "node1 is full"})

    async def body(url: str, nodes: list[Any]) -> None:
        ext = client(url + "/", node_cache_capable=cache_capable)  # a trailing slash is trimmed, as upstream
        try:
            result = await ext.filter(POD, nodes)
        finally:
            await ext.close()
        assert sorted(result.node_names) == ["node2", "node3"]
        assert result.failed_nodes == {"node1": "node1 is full"}
        verb, sent = server.requests[0]
        assert verb == "filter"
        assert sent["Pod"]["metadata"]["name"] == "web"
        if cache_capable:
            assert sent["Nodes"] is None and sorted(sent["NodeNames"]) == ["node1", "node2", "node3"]
        else:
            assert sent["NodeNames"] is None
            assert sorted(n["metadata"]["name"] for n in sent["Nodes"]["items"]) == ["node1", "node2", "node3"]

    with_server(server, body)


def test_prioritize_and_bind() -> None:
    server = ExtenderServer(scores={"node2": 7})

    async def body(url: str, nodes: list[Any]) -> None:
        ext = HTTPExtender(ExtenderConfig(url_prefix=url, prioritize_verb="prioritize", bind_verb="bind", weight=2))
        try:
            assert await ext.prioritize(POD, nodes) == [
                HostPriority("node1", 0),
                HostPriority("node2", 7),
                HostPriority("node3", 0),
            ]
            await ext.bind(POD, "node2")
        finally:
            await ext.close()
        assert server.requests[-1] == (
            "bind",
            {"PodName": "web", "PodNamespace": "default", "PodUID": "uid-default-web", "Node": "node2"},
        )

    with_server(server, body)


@pytest.mark.parametrize(
    ("server", "message"),
    [
        pytest.param(
            ExtenderServer(status=500), "failed filter with extender at URL {url}/filter, code 500", id="code"
        ),
        pytest.param(ExtenderServer(error="cannot decide"), "cannot decide", id="error-field"),
        pytest.param(ExtenderServer(delay=5), 'Post "{url}/filter": no answer within 0.2s (httpTimeout)', id="timeout"),
    ],
)
def test_errors(server: ExtenderServer, message: str) -> None:
    async def body(url: str, nodes: list[Any]) -> None:
        ext = client(url, http_timeout=0.2)
        try:
            with pytest.raises(ExtenderError) as info:
                await ext.filter(POD, nodes)
        finally:
            await ext.close()
        assert str(info.value) == message.format(url=url)

    with_server(server, body)


def test_connection_refused_is_an_extender_error() -> None:
    async def body() -> None:
        ext = client("http://127.0.0.1:9")  # discard port: nothing listens
        try:
            with pytest.raises(ExtenderError, match=r'^Post "http://127.0.0.1:9/filter": '):
                await ext.filter(POD, list(make_cache(NODES).node_infos()))
        finally:
            await ext.close()

    asyncio.run(body())


def test_answers_decode_case_insensitively() -> None:
    """Go's decoder matches ``nodenames`` to ``NodeNames``: so do we."""
    ext = client("http://unused", node_cache_capable=True)

    async def fake_send(verb: str, args: Any) -> Any:
        return {"nodenames": ["node2"], "failedNodes": {"node1": "x"}, "error": ""}

    ext.send_once = fake_send  # type: ignore[method-assign]
    result = asyncio.run(ext.filter(POD, list(make_cache(NODES).node_infos())))
    assert list(result.node_names) == ["node2"] and result.failed_nodes == {"node1": "x"}


def test_interest_in_managed_resources() -> None:
    """IsInterested: requests or limits of containers and init containers."""
    gpu = ExtenderConfig(url_prefix="http://x", managed_resources=(ManagedResource("example.com/gpu"),))
    ext = HTTPExtender(gpu)
    plain = make_pod("a").build()
    limits = make_pod("b").set("spec.containers", [{"name": "c", "resources": {"limits": {"example.com/gpu": 1}}}])
    init = make_pod("c").set("spec.initContainers", [{"name": "i", "resources": {"requests": {"example.com/gpu": 1}}}])
    assert not ext.is_interested(plain)
    assert ext.is_interested(limits.build())
    assert ext.is_interested(init.build())
    assert pod_resource_names(limits.build()) == {"example.com/gpu"}
    assert HTTPExtender(ExtenderConfig(url_prefix="http://x")).is_interested(plain)


def test_simulate_calls_the_configured_extender() -> None:
    """``simulate`` with an extenders config: the extender's filter and scores show in the result."""
    from scheduler.config import parse_config  # noqa: PLC0415
    from scheduler.schedule_one import Attempt  # noqa: PLC0415
    from scheduler.simulate import Simulation  # noqa: PLC0415

    server = ExtenderServer(reject={"node1": "node1 is reserved"}, scores={"node3": 10})
    thread = server.start_in_thread()
    try:
        cfg = parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": [
                    {"urlPrefix": server.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}
                ],
            }
        )
        extenders = http_extenders(cfg.extenders)
        sim = Simulation(cfg, seed=0, extenders=extenders)
        sim.add_objects([n.dict() for n in NODES] + [make_pod("web").scheduler("spread-scheduler").dict()])

        async def run() -> list[Attempt]:
            try:
                return await sim.run_async()
            finally:
                await close_extenders(extenders)

        (attempt,) = asyncio.run(run())
    finally:
        server.stop_thread(thread)
    assert attempt.host == "node3"
    status = attempt.diagnosis.node_to_status["node1"]
    assert (status.code, status.message(), status.plugin) == (Code.UNSCHEDULABLE, "node1 is reserved", server.url)
    row = next(s for s in attempt.scores if s.plugin == server.url)
    assert dict(zip(attempt.scored_nodes, row.normalized, strict=True)) == {"node2": 0, "node3": 100}


def make_self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for 127.0.0.1, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl CLI")
    cert, key = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN=127.0.0.1 {name}",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 made with the openssl CLI (skipped where there is none)."""
    return make_self_signed(tmp_path, "server")


def serving(cert: Path, key: Path, client_ca: Path | None = None) -> ssl.SSLContext:
    """The extender server's TLS; with ``client_ca`` it requires a client certificate signed by it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=client_ca)
    return context


def test_a_ca_in_the_config_is_the_only_ca_trusted(
    tmp_path: Path, self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go's rootCertPool: with caData, RootCAs holds that CA only. The server's CA is made a
    system root here (SSL_CERT_FILE); a client given another CA must still refuse the server (adding
    the CA to the default context, as before, accepted it). Control: with no CA (serverName only),
    the system roots apply and the same server is accepted."""
    cert, key = self_signed
    other, _ = make_self_signed(tmp_path, "other")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = ExtenderServer(ssl_context=serving(cert, key))

    async def body(url: str, nodes: list[Any]) -> None:
        system = client(url, tls_config=ExtenderTLSConfig(server_name="127.0.0.1"))
        only_other = client(url, tls_config=ExtenderTLSConfig(ca_data=other.read_bytes()))
        try:
            assert len((await system.filter(POD, nodes)).node_names) == 3
            with pytest.raises(ExtenderError, match=r"certificate verify failed"):
                await only_other.filter(POD, nodes)
        finally:
            await close_extenders([system, only_other])

    with_server(server, body)


def test_client_certificate_from_data_writes_no_file(
    tmp_path: Path, self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """certData/keyData reach a server that requires a client certificate, and no file is written
    for them (a read-only root filesystem refuses temporary files): every tempfile entry fails."""
    cert, key = self_signed
    client_cert, client_key = make_self_signed(tmp_path, "client")
    server = ExtenderServer(ssl_context=serving(cert, key, client_ca=client_cert))

    def no_files(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a temporary file was created for the client certificate")

    for name in ("TemporaryDirectory", "NamedTemporaryFile", "mkstemp", "mkdtemp"):
        monkeypatch.setattr(f"tempfile.{name}", no_files)

    async def body(url: str, nodes: list[Any]) -> None:
        with_cert = client(
            url,
            tls_config=ExtenderTLSConfig(
                ca_data=cert.read_bytes(), cert_data=client_cert.read_bytes(), key_data=client_key.read_bytes()
            ),
        )
        without = client(url, tls_config=ExtenderTLSConfig(ca_data=cert.read_bytes()))
        try:
            assert len((await with_cert.filter(POD, nodes)).node_names) == 3
            with pytest.raises(ExtenderError):  # the server does require one
                await without.filter(POD, nodes)
        finally:
            await close_extenders([with_cert, without])

    with_server(server, body)


@pytest.mark.parametrize("stream", [pytest.param(False, id="content-length"), pytest.param(True, id="chunked")])
def test_an_answer_over_the_size_limit_is_refused(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runaway extender cannot fill the scheduler's memory: past the limit the answer is dropped
    with an error naming the URL (announced by Content-Length or not)."""
    monkeypatch.setattr("scheduler.kube.extender.MAX_RESPONSE_BYTES", 4096)
    server = ExtenderServer(padding=10_000, stream=stream)
    small = ExtenderServer(padding=1_000, stream=stream)

    async def body(url: str, nodes: list[Any]) -> None:
        ext = client(url)
        try:
            with pytest.raises(ExtenderError, match=r'^Post "http://127.0.0.1:\d+/filter": answer .*over the limit'):
                await ext.filter(POD, nodes)
        finally:
            await ext.close()

    async def fits(url: str, nodes: list[Any]) -> None:
        ext = client(url)
        try:
            assert len((await ext.filter(POD, nodes)).node_names) == 3
        finally:
            await ext.close()

    with_server(server, body)
    with_server(small, fits)


@pytest.mark.parametrize(
    ("tls", "ok"),
    [
        pytest.param({"enable_https": True}, True, id="enableHTTPS-without-CA-skips-verification"),
        pytest.param({"ca": True}, True, id="caData-verifies"),
        pytest.param({}, False, id="unknown-CA-refused"),
    ],
)
def test_https(self_signed: tuple[Path, Path], tls: dict[str, Any], ok: bool) -> None:
    """makeTransport: enableHTTPS with no CA means insecure; a CA verifies; otherwise system roots."""
    cert, key = self_signed
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = ExtenderServer(ssl_context=context)

    async def body(url: str, nodes: list[Any]) -> None:
        tls_config = ExtenderTLSConfig(ca_data=cert.read_bytes()) if tls.get("ca") else None
        ext = client(url, enable_https=tls.get("enable_https", False), tls_config=tls_config)
        try:
            if ok:
                assert len((await ext.filter(POD, nodes)).node_names) == 3
            else:
                with pytest.raises(ExtenderError, match=r"^Post \"https://127.0.0.1:\d+/filter\": .*certificate"):
                    await ext.filter(POD, nodes)
        finally:
            await ext.close()

    with_server(server, body)


def test_a_config_with_extenders_needs_their_clients() -> None:
    """The scheduler never drops configured extenders silently: their clients must be passed in."""
    from scheduler.config import parse_config  # noqa: PLC0415
    from scheduler.scheduler import Scheduler  # noqa: PLC0415
    from tests.fakes import FakeBinder, FakeRecorder  # noqa: PLC0415

    cfg = parse_config({"extenders": [{"urlPrefix": "http://127.0.0.1:1", "filterVerb": "filter"}]})
    with pytest.raises(ValueError, match="pass their clients"):
        Scheduler(cfg, FakeBinder(), FakeRecorder())
    assert len(Scheduler(cfg, FakeBinder(), FakeRecorder(), extenders=http_extenders(cfg.extenders)).extenders) == 1
