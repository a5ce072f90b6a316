"""One credential stack from the kubeconfig: exec plugins re-run at expiry and on 401, token files
re-read as client-go does, and kopf's watches on the same credentials.

The three defects reproduced on the old code (each test named for one): an exec plugin's token was
never refreshed, a ``tokenFile`` was read once with its newline, and kopf's login ignored ``exec``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kopf._cogs.clients.auth import APIContext

from scheduler.kube.client.apiclient import KubeconfigError, api_client
from scheduler.kube.client.rest import request_headers
from scheduler.kube.client.watch import watch_session
from tests.fakes import FakeClock

PLUGIN = """
import json, os, sys, time, datetime
count = os.environ["COUNT_FILE"]
n = (int(open(count).read()) if os.path.exists(count) else 0) + 1
open(count, "w").write(str(n))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
open(count + ".info", "w").write(json.dumps(info))
now = float(os.environ.get("NOW", time.time()))
expiry = datetime.datetime.fromtimestamp(now + float(os.environ["LIFETIME"]), datetime.timezone.utc)
status = {"token": f"token-{n}", "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


class Clock(FakeClock):
    """Wall-clock time as the credential stack sees it (its module's ``_now``): the test's start, moved by hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(time.time())
        try:
            from scheduler.kube.client import credentials  # noqa: PLC0415
        except ImportError:  # the old code: nothing to move, the test shows what it does instead
            return
        monkeypatch.setattr(credentials, "_now", self)


def _kubeconfig(tmp_path: Path, server: str, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def _plugin_user(script: Path, source: str, **stanza: Any) -> dict[str, Any]:
    """A user whose exec plugin is ``source``, run by this Python; ``stanza`` adds to or overrides its fields."""
    script.write_text(source)
    defaults = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(script)],
        "interactiveMode": "Never",
    }
    return {"exec": defaults | stanza}


def _exec_user(tmp_path: Path, lifetime: float, api_version: str = "client.authentication.k8s.io/v1") -> dict[str, Any]:
    env = [{"name": "COUNT_FILE", "value": str(tmp_path / "count")}, {"name": "LIFETIME", "value": str(lifetime)}]
    return _plugin_user(tmp_path / "plugin.py", PLUGIN, apiVersion=api_version, env=env, provideClusterInfo=True)


def _runs(tmp_path: Path) -> int:
    count = tmp_path / "count"
    return int(count.read_text()) if count.exists() else 0


@pytest.fixture(autouse=True)
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    try:
        from scheduler.kube.client import credentials  # noqa: PLC0415
    except ImportError:  # the old code
        return
    monkeypatch.setattr(credentials, "_loaded", {})  # each test's kubeconfig read anew, though at one path


async def _bearer(api: Any) -> str | None:
    """The Authorization header the stack gives the next request."""
    return (await request_headers(api, "application/json")).get("authorization")


@contextlib.asynccontextmanager
async def _client(kubeconfig: Path) -> AsyncIterator[Any]:
    """The API client the scheduler makes from ``kubeconfig``, closed after."""
    api = await api_client(str(kubeconfig))
    try:
        yield api
    finally:
        await api.close()  # type: ignore[no-untyped-call]


async def _authorization(kubeconfig: Path) -> str | None:
    async with _client(kubeconfig) as api:
        return await _bearer(api)


def test_an_exec_plugins_token_is_refreshed_once_it_expires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Old code: the plugin ran once, its token was sent forever (its expirationTimestamp ignored)."""
    clock = Clock(monkeypatch)
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", _exec_user(tmp_path, lifetime=15))

    async def main() -> list[str | None]:
        async with _client(kubeconfig) as api:
            seen = [await _bearer(api)]
            seen.append(await _bearer(api))  # still valid
            clock.advance(16)
            monkeypatch.setenv("NOW", str(clock.now))  # the plugin states its expiry from "now"
            seen.append(await _bearer(api))
            return seen

    assert asyncio.run(main()) == ["Bearer token-1", "Bearer token-1", "Bearer token-2"]
    assert _runs(tmp_path) == 2
    info = json.loads((tmp_path / "count.info").read_text())
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://127.0.0.1:1"  # provideClusterInfo


def test_a_token_file_is_read_without_its_newline_and_re_read_as_client_go_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: read once, with its trailing newline in the header (``Bearer A\\n``)."""
    clock = Clock(monkeypatch)
    token = tmp_path / "token"
    token.write_text("A\n")
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", {"tokenFile": str(token)})

    async def main() -> list[str | None]:
        async with _client(kubeconfig) as api:
            seen = [await _bearer(api)]
            token.write_text("B\n")
            seen.append(await _bearer(api))  # cached
            clock.advance(61)  # client-go's cachingTokenSource re-reads after a minute (less 10 s leeway)
            seen.append(await _bearer(api))
            token.unlink()  # unreadable: client-go keeps the last token it read
            clock.advance(61)
            seen.append(await _bearer(api))
            return seen

    assert asyncio.run(main()) == ["Bearer A", "Bearer A", "Bearer B", "Bearer B"]


class Echo:
    """An API server stand-in: answers 401 to the tokens in ``refused``, else the Authorization it got."""

    def __init__(self) -> None:
        self.refused: set[str] = set()
        self.seen: list[str | None] = []

    async def handle(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization")
        self.seen.append(auth)
        if auth in self.refused:
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        return web.json_response({"authorization": auth})


async def _serve(echo: Echo) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", echo.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _kopf_get(context: APIContext, path: str) -> tuple[int, Any]:
    """A request as kopf's list and watch make it: on the session of what the login returned."""
    async with context.session.get(context.server + path) as response:
        return response.status, await response.json()


async def _call_login(api: Any) -> Any:
    """What the informer's engine gets from its login (scheduler.kube.client.watch.watch_session)."""
    return await watch_session(api, lambda: None)()


def test_the_watches_login_uses_the_exec_plugin_and_a_401_runs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """b21169c: kopf.login_with_kubeconfig ignored ``exec`` (watches went out as system:anonymous);
    since the informer (f01cbf7) the watches ask the client's token, but a 401 still got the same one."""
    Clock(monkeypatch)
    echo = Echo()

    async def main() -> list[tuple[int, Any]]:
        results = []
        async for server in _serve(echo):
            kubeconfig = _kubeconfig(tmp_path, server, _exec_user(tmp_path, lifetime=3600))
            async with _client(kubeconfig) as api:
                first = APIContext(await _call_login(api))
                results.append(await _kopf_get(first, "/api/v1/pods"))
                echo.refused.add("Bearer token-1")  # revoked: the next request is refused ...
                results.append(await _kopf_get(first, "/api/v1/pods"))
                await first.close()
                again = APIContext(await _call_login(api))  # ... kopf empties its vault, the engine logs in again
                results.append(await _kopf_get(again, "/api/v1/pods"))
                await again.close()
        return results

    first, refused, again = asyncio.run(main())
    assert first == (200, {"authorization": "Bearer token-1"})
    assert refused[0] == 401
    assert again == (200, {"authorization": "Bearer token-2"})  # the 401 ran the plugin again
    assert _runs(tmp_path) == 2


def test_a_401_on_the_clients_requests_runs_the_plugin_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """client-go's exec round tripper: a 401 refreshes the credentials once (not once per request)."""
    Clock(monkeypatch)
    echo = Echo()

    async def main() -> list[int]:
        statuses = []
        async for server in _serve(echo):
            kubeconfig = _kubeconfig(tmp_path, server, _exec_user(tmp_path, lifetime=3600))
            async with _client(kubeconfig) as api:
                from scheduler.kube.client.rest import send  # noqa: PLC0415

                echo.refused.add("Bearer token-1")
                for _ in range(2):
                    reply = await send(api, "GET", "/api/v1/pods", {})
                    statuses.append(reply.status)
                    reply.release()
        return statuses

    assert asyncio.run(main()) == [401, 200]
    assert echo.seen == ["Bearer token-1", "Bearer token-2"]
    assert _runs(tmp_path) == 2


def test_an_exec_plugin_that_fails_says_so_in_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = "import sys\nprint('no credentials for you', file=sys.stderr)\nsys.exit(3)\n"
    user = _plugin_user(tmp_path / "broken.py", broken)
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", user)
    with pytest.raises(KubeconfigError) as raised:
        asyncio.run(_authorization(kubeconfig))
    message = str(raised.value)
    assert "\n" not in message
    assert sys.executable in message and "exit code 3" in message and "no credentials for you" in message


V1 = '"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"'


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("not json", "decoding stdout"),
        (
            '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {}}',
            "plugin returned version",
        ),
        ("{" + V1 + "}", "didn't return a status field"),
        (
            "{" + V1 + ', "status": {}}',
            "didn't return a token or cert/key pair",
        ),
        (
            "{" + V1 + ', "status": {"clientKeyData": "k"}}',
            "only certificate or key",
        ),
        (
            "{" + V1 + ', "status": {"token": "t", "expirationTimestamp": "soon"}}',
            "expirationTimestamp",
        ),
    ],
)
def test_a_plugins_bad_answer_is_one_line(tmp_path: Path, output: str, expected: str) -> None:
    user = _plugin_user(tmp_path / "answer.py", f"print({output!r})\n")
    with pytest.raises(KubeconfigError) as raised:
        asyncio.run(_authorization(_kubeconfig(tmp_path, "https://127.0.0.1:1", user)))
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_a_plugin_is_bounded_in_time_and_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.kube.client import credentials, exec_plugin  # noqa: PLC0415

    monkeypatch.setattr(exec_plugin, "PLUGIN_TIMEOUT", 0.5)
    monkeypatch.setattr(exec_plugin, "MAX_OUTPUT", 1000)
    user = _plugin_user(tmp_path / "unused.py", "", command="/bin/sleep", args=["30"])  # never answers
    started = time.monotonic()
    with pytest.raises(KubeconfigError, match="did not finish within"):
        asyncio.run(_authorization(_kubeconfig(tmp_path, "https://127.0.0.1:1", user)))
    assert time.monotonic() - started < 5
    monkeypatch.setattr(credentials, "_loaded", {})
    user = _plugin_user(tmp_path / "chatty.py", "print('x' * 100000)\n")
    with pytest.raises(KubeconfigError, match="more than 1000 bytes"):
        asyncio.run(_authorization(_kubeconfig(tmp_path, "https://127.0.0.1:1", user)))


@pytest.mark.parametrize(
    ("exec_config", "expected"),
    [
        ({"command": "x", "interactiveMode": "Never"}, "apiVersion must be specified"),
        ({"apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}, "command must be specified"),
        ({"apiVersion": "client.authentication.k8s.io/v1", "command": "x"}, "interactiveMode must be specified"),
        (
            {"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "interactiveMode": "Sometimes"},
            "invalid interactiveMode",
        ),
        (
            {"apiVersion": "client.authentication.k8s.io/v2", "command": "x", "interactiveMode": "Never"},
            'invalid apiVersion "client.authentication.k8s.io/v2"',
        ),
        (
            {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "/nonexistent/plugin",
                "interactiveMode": "Never",
            },
            "executable /nonexistent/plugin not found",
        ),
    ],
)
def test_an_exec_stanza_is_checked_as_clientcmd_checks_it(
    tmp_path: Path, exec_config: dict[str, Any], expected: str
) -> None:
    with pytest.raises(KubeconfigError) as raised:
        asyncio.run(_authorization(_kubeconfig(tmp_path, "https://127.0.0.1:1", {"exec": exec_config})))
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_v1beta1_defaults_to_if_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """clientcmd's SetDefaults_ExecConfig: v1beta1 without interactiveMode is IfAvailable (no terminal here)."""
    user = _exec_user(tmp_path, lifetime=3600, api_version="client.authentication.k8s.io/v1beta1")
    del user["exec"]["interactiveMode"]
    assert asyncio.run(_authorization(_kubeconfig(tmp_path, "https://127.0.0.1:1", user))) == "Bearer token-1"


def test_in_cluster_credentials_go_where_kubernetes_service_host_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go's InClusterConfig: the env's host and port, the ServiceAccount's token file re-read."""
    from scheduler.kube.client import credentials  # noqa: PLC0415

    token = tmp_path / "token"
    token.write_text("sa-token\n")
    monkeypatch.setattr(credentials, "SERVICE_ACCOUNT_TOKEN", str(token))
    monkeypatch.setattr(credentials, "SERVICE_ACCOUNT_CA", str(tmp_path / "absent-ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    stack = credentials.load(None)
    assert stack.server == "https://[fd00::1]:443"
    assert asyncio.run(stack.authorization()) == "Bearer sa-token"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    monkeypatch.setattr(credentials, "_loaded", {})  # read once per process: a new process, as it were
    with pytest.raises(KubeconfigError, match="no configuration has been provided"):
        credentials.load(None)


def test_the_kubeconfig_is_parsed_once_for_every_consumer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.kube.client import credentials  # noqa: PLC0415

    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", {"token": "t"})
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert credentials.load(None) is credentials.load(str(kubeconfig))


def test_proxies_apply_to_kopfs_session_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """b21169c: kopf's own session had trust_env False, so HTTPS_PROXY/NO_PROXY never applied to watches."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    kubeconfig = _kubeconfig(
        tmp_path, "https://127.0.0.1:1", {"token": "t"}, {"proxy-url": "http://proxy.invalid:3128"}
    )

    async def main() -> tuple[bool, Any]:
        api = await api_client(str(kubeconfig))
        context = APIContext(await _call_login(api))
        try:
            return context.session.trust_env, context.session._default_proxy
        finally:
            await context.close()
            await api.close()  # type: ignore[no-untyped-call]

    trust_env, proxy = asyncio.run(main())
    assert trust_env is True
    assert str(proxy) == "http://proxy.invalid:3128"


def test_a_401_on_a_write_over_our_own_connections_renews_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes go over scheduler.kube.client.transport, not the client's session: they report their 401s too."""
    from scheduler.kube.client.rest import note_reply  # noqa: PLC0415

    Clock(monkeypatch)
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", _exec_user(tmp_path, lifetime=3600))

    async def main() -> list[str | None]:
        async with _client(kubeconfig) as api:
            headers = await request_headers(api, "application/json")
            note_reply(api, headers, 200)
            seen = [await _bearer(api)]
            note_reply(api, headers, 401)
            note_reply(api, headers, 401)  # a second refusal of the same token: one renewal, not two
            seen.append(await _bearer(api))
            note_reply(api, headers, 401)  # late news about token-1: token-2 stays
            seen.append(await _bearer(api))
            return seen

    assert asyncio.run(main()) == ["Bearer token-1", "Bearer token-2", "Bearer token-2"]
    assert _runs(tmp_path) == 2


def test_renewal_is_shared_by_concurrent_requests_and_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One plugin run serves every request waiting for it, on this loop and on another thread's."""
    import threading  # noqa: PLC0415

    from scheduler.kube.client import credentials  # noqa: PLC0415

    Clock(monkeypatch)
    stack = credentials.load(str(_kubeconfig(tmp_path, "https://127.0.0.1:1", _exec_user(tmp_path, lifetime=3600))))
    results: list[str | None] = []

    async def many() -> None:
        results.extend(await asyncio.gather(*(stack.authorization() for _ in range(20))))

    other = threading.Thread(target=lambda: asyncio.run(many()))
    other.start()
    asyncio.run(many())
    other.join()
    assert results == ["Bearer token-1"] * 40
    assert _runs(tmp_path) == 1


CERT_PLUGIN = """
import json, os
status = {"clientCertificateData": open(os.environ["CERT"]).read(), "clientKeyData": open(os.environ["KEY"]).read()}
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
"""


def _cert_user(tmp_path: Path, cert: Path, key: Path) -> dict[str, Any]:
    env = [{"name": "CERT", "value": str(cert)}, {"name": "KEY", "value": str(key)}]
    return _plugin_user(tmp_path / "cert-plugin.py", CERT_PLUGIN, env=env)


def test_a_plugins_client_certificate_is_used_for_new_connections(tmp_path: Path) -> None:
    """exec.go's cert(): a certificate and key instead of a token, loaded for the client's TLS."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "c.crt", tmp_path / "c.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=plugin-user",
        ],
        check=True,
        capture_output=True,
    )
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1", _cert_user(tmp_path, cert, key))

    async def main() -> tuple[str | None, str]:
        async with _client(kubeconfig) as api:
            authorization = await _bearer(api)
            return authorization, Path(api.configuration.cert_file).read_text()

    authorization, loaded = asyncio.run(main())
    assert authorization is None  # no token: the certificate authenticates
    assert loaded == cert.read_text()  # and a client made later from the configuration loads it too
    cert.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(KubeconfigError, match="failed parsing client key/certificate") as raised:
        from scheduler.kube.client import credentials  # noqa: PLC0415

        credentials._loaded.clear()
        asyncio.run(_authorization(kubeconfig))
    assert "\n" not in str(raised.value)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class ThrowawayCA:
    """A CA made for one test, and the certificates it signs (P-256: fast to make)."""

    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def __post_init__(self) -> None:
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "throwaway-ca")])
        self.cert = (
            self._builder(self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def _builder(self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    def issue(self, common_name: str, usage: x509.ObjectIdentifier, *, ip: str | None = None) -> tuple[bytes, bytes]:
        """A certificate and key (PEM) for ``common_name``, for ``usage`` (client or server auth)."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = self._builder(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]), key.public_key()
        ).add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if ip is not None:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False
            )
        return _pem(builder.sign(self.key, hashes.SHA256())), _key_pem(key)


def test_a_certificate_only_plugin_sends_no_empty_authorization(tmp_path: Path) -> None:
    """A plugin that answers a certificate and no token: the generated API classes (the Lease's)
    put ``authorization: None`` in the request the first time (the client decides to send the key
    before asking for it); that request failed ("Cannot serialize non-str key None"), so the first
    Lease round of every client failed. Now no Authorization is sent, and the request goes out."""
    from kubernetes.aio import client  # noqa: PLC0415

    cert, key = ThrowawayCA().issue("plugin-user", ExtendedKeyUsageOID.CLIENT_AUTH)
    (tmp_path / "c.crt").write_bytes(cert)
    (tmp_path / "c.key").write_bytes(key)
    echo = Echo()

    async def main() -> list[int]:
        async for url in _serve(echo):
            kubeconfig = _kubeconfig(tmp_path, url, _cert_user(tmp_path, tmp_path / "c.crt", tmp_path / "c.key"))
            async with _client(kubeconfig) as api:
                versions = client.VersionApi(api)
                statuses = []
                for _ in range(2):
                    response = await versions.get_code_without_preload_content()
                    statuses.append(response.status)
                    response.release()
                return statuses
        raise AssertionError("unreachable")

    assert asyncio.run(main()) == [200, 200]
    assert echo.seen == [None, None]
