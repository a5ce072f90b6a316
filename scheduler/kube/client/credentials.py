"""One credential stack, from the kubeconfig (or the pod's service account) read once, for every connection.

Lists, writes, the Lease, ``explain``, ``skew`` and the informer's watches all ask one
``Credentials`` for the Authorization to send and report a 401 to it; the TLS settings and proxy
come from it too. The credentials are renewed as client-go renews them:

* an exec plugin's (``scheduler.kube.client.exec_plugin``) when its ``expirationTimestamp`` has passed, and
  after a 401 for the credentials just sent (exec.go's ``getCreds`` and ``maybeRefreshCreds``);
* a token file's (``tokenFile``, the in-cluster token) re-read when a minute has passed, whitespace
  trimmed, the last good token kept while the file cannot be read (transport/token_source.go's
  ``NewCachedFileTokenSource``), and re-read at once after a 401 for its token;
* a certificate from an exec plugin presented by every connection opened after it, whichever client
  of the process opens it (``ssl_context``, ``request_class``).

Every TLS context for the API server is made here (``ssl_context``), one per client certificate and
never changed once handed out. A rotation makes a new one, and every client of the process (the
scheduling loop's, the Lease's, the secure port's delegated auth, the watches, the writes' own
connections) asks for the current one each time it opens a connection. Connections are pooled per
context, so one opened with the old certificate is never used for another request: the effect of
client-go's ``connTracker.CloseAll()`` on a new certificate (exec.go), without reaching into the pools.
A request already under way (a watch) ends on its connection; the API server authenticates a request
when it starts.

The stack is shared by the scheduling loop, the Lease's loop and the secure port's loop, so its state
is guarded by a thread lock and one plugin run at a time serves every loop that waits for it.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import os
import shutil
import ssl
import tempfile
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from aiohttp.client_reqrep import ConnectionKey
from kubernetes.aio import client

from scheduler.kube.client import exec_plugin, kubeconfig
from scheduler.kube.client.kubeconfig import KubeconfigError

__all__ = [
    "SERVICE_ACCOUNT_CA",
    "SERVICE_ACCOUNT_TOKEN",
    "TOKEN_FILE_PERIOD",
    "Credentials",
    "CredentialsError",
    "KubeconfigError",
    "credentials_of",
    "load",
    "tls_of",
]

log = structlog.get_logger("scheduler.kube.credentials")

# rest.InClusterConfig's files.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_ACCOUNT_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
# NewCachedFileTokenSource: re-read after a minute (half the time between the kubelet's refresh of a
# projected token and its expiry), less cachingTokenSource's leeway of 10 s.
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0
_MAX_TOKEN_BYTES = 64 * 1024  # a bound on what is read of a token file; a JWT is a few KiB


def _now() -> float:
    """Wall-clock time: an ExecCredential states its expiry as a wall-clock time."""
    return time.time()


@dataclass(frozen=True, eq=False)
class _Issued:
    """One generation of credentials. Compared by identity: a 401 renews only the generation it was for."""

    authorization: str | None
    certificate: tuple[str, str] | None  # PEM certificate and key, from an exec plugin
    renew_at: float | None  # wall-clock time after which the source is asked again


class _Source:
    """Where the credentials come from; ``issue`` gets a new generation (``previous`` may be None)."""

    async def issue(self, previous: _Issued | None) -> _Issued:
        raise NotImplementedError


class _Static(_Source):
    def __init__(self, authorization: str | None) -> None:
        self.authorization = authorization

    async def issue(self, previous: _Issued | None) -> _Issued:
        return _Issued(self.authorization, None, None)  # a new generation: a 401 is not remembered forever


class _TokenFile(_Source):
    """A token file, re-read as client-go's cachingTokenSource over a fileTokenSource."""

    def __init__(self, path: str, fallback: str | None = None) -> None:
        self.path = path
        self._fallback = fallback  # ``token`` beside ``tokenFile``: used while the file cannot be read

    def read(self) -> str:
        try:
            with open(self.path, "rb") as file:
                token = file.read(_MAX_TOKEN_BYTES + 1).decode("utf-8", errors="strict").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise KubeconfigError(
                f'failed to read token file "{self.path}": {getattr(exc, "strerror", None) or exc}'
            ) from exc
        if len(token) > _MAX_TOKEN_BYTES:
            raise KubeconfigError(f'token file "{self.path}" is larger than {_MAX_TOKEN_BYTES} bytes')
        if not token:
            raise KubeconfigError(f'read empty token from file "{self.path}"')  # fileTokenSource's words
        if any(c in token for c in "\r\n\0"):
            raise KubeconfigError(f'token file "{self.path}" holds more than one line')
        return token

    async def issue(self, previous: _Issued | None) -> _Issued:
        try:
            token = self.read()
        except KubeconfigError as exc:
            if previous is None and self._fallback is None:
                raise
            log.error("Unable to rotate token", err=str(exc))  # cachingTokenSource keeps the last token
            if previous is not None:
                return _Issued(previous.authorization, None, _now())  # the file is tried again next time
            token = self._fallback or ""
        return _Issued(f"Bearer {token}", None, _now() + TOKEN_FILE_PERIOD - TOKEN_FILE_LEEWAY)


class _Exec(_Source):
    def __init__(self, config: exec_plugin.ExecConfig, cluster: dict[str, Any]) -> None:
        self.config = config
        self._cluster = cluster

    def __str__(self) -> str:
        return f"exec plugin {self.config.command}"

    async def issue(self, previous: _Issued | None) -> _Issued:
        answer = await exec_plugin.run(self.config, self._cluster)
        pair = (answer.certificate, answer.key) if answer.certificate else None
        return _Issued(f"Bearer {answer.token}" if answer.token else None, pair, answer.expires)


class CredentialsError(KubeconfigError, aiohttp.ClientConnectionError):
    """No credentials to send now (a plugin failed): to a request, as a connection that failed
    (retried, counted as an outage); to ``explain`` and ``skew``, one line."""


class _AbandonedError(Exception):
    """The task running a renewal was cancelled: whoever waited for it tries again."""


class _PrivateFiles:
    """Certificates and keys given as data, written where ``ssl`` can load them (it reads only files).

    One directory only this process may read, removed at exit; a rotated pair replaces the files.
    """

    def __init__(self) -> None:
        self._dir: str | None = None

    def write(self, name: str, data: bytes) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="spread-scheduler-credentials-")
            atexit.register(shutil.rmtree, self._dir, True)
        path = os.path.join(self._dir, name)
        staging = path + ".new"
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(staging, path)
        return path


def _data(value: Any, field: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except ValueError as exc:
        raise KubeconfigError(f"invalid configuration: {field} is not base64: {exc}") from exc


class Credentials:
    """The server, its TLS settings and proxy, and the Authorization to send now."""

    def __init__(
        self,
        server: str,
        source: _Source,
        *,
        ca_file: str | None = None,
        ca_data: str | None = None,
        insecure: bool = False,
        tls_server_name: str | None = None,
        proxy_url: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        namespace: str | None = None,
        files: _PrivateFiles | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.ca_file, self.ca_data, self.insecure = ca_file, ca_data, insecure
        self.tls_server_name, self.proxy_url = tls_server_name, proxy_url
        self.cert_file, self.key_file = cert_file, key_file
        self.namespace = namespace
        self._source = source
        self._files = files or _PrivateFiles()
        self._lock = threading.Lock()
        self._issued: _Issued | None = None
        self._refused: _Issued | None = None  # the generation a 401 was answered to
        self._renewing: concurrent.futures.Future[_Issued] | None = None
        self._context: ssl.SSLContext | None = None  # the current one, made at first use
        self._request_classes: dict[type[aiohttp.ClientRequest], type[aiohttp.ClientRequest]] = {}
        self._configurations: weakref.WeakSet[client.Configuration] = weakref.WeakSet()

    def __deepcopy__(self, memo: dict[int, Any]) -> Credentials:
        return self  # one stack per process: a copied client configuration shares it

    @property
    def may_send_bearer(self) -> bool:
        return not isinstance(self._source, _Static) or self._source.authorization is not None

    def _usable(self, issued: _Issued | None) -> bool:
        return (
            issued is not None and issued is not self._refused and (issued.renew_at is None or _now() < issued.renew_at)
        )

    async def authorization(self) -> str | None:
        """The Authorization header value to send now (None: none, e.g. client certificates only)."""
        issued = self._issued
        if not self._usable(issued):
            issued = await self._renew()
        assert issued is not None
        return issued.authorization

    def unauthorized(self, sent: str | None) -> None:
        """A request that sent ``sent`` was answered 401: renew, unless already renewed since."""
        with self._lock:
            issued = self._issued
            if issued is not None and issued.authorization == sent:
                self._refused = issued

    async def _renew(self) -> _Issued:
        while True:
            with self._lock:
                if self._usable(self._issued):
                    assert self._issued is not None
                    return self._issued
                renewing = self._renewing
                owner = renewing is None
                if renewing is None:
                    renewing = self._renewing = concurrent.futures.Future()
                    renewing.set_running_or_notify_cancel()  # a waiter's cancellation must not cancel it
                previous = self._issued
            if not owner:
                try:
                    return await asyncio.wrap_future(renewing)
                except _AbandonedError:
                    continue
            try:
                try:
                    issued = await self._source.issue(previous)
                except KubeconfigError as exc:
                    raise CredentialsError(str(exc)) from exc
                self._install(previous, issued)
            except BaseException as exc:
                with self._lock:
                    self._renewing = None
                renewing.set_exception(exc if isinstance(exc, Exception) else _AbandonedError())
                raise
            with self._lock:
                self._issued, self._renewing = issued, None
            renewing.set_result(issued)
            return issued

    def _install(self, previous: _Issued | None, issued: _Issued) -> None:
        """A new certificate from the plugin: a new TLS context for the connections opened from now
        on, and the files a client made later from a configuration loads."""
        if issued.certificate is None or (previous is not None and previous.certificate == issued.certificate):
            return
        certificate, key = (part.encode() for part in issued.certificate)
        try:  # loaded from files of their own: the files clients load are replaced only by a good pair
            context = self._new_context(
                self._files.write("exec-client.crt.check", certificate),
                self._files.write("exec-client.key.check", key),
            )
        except (ssl.SSLError, OSError) as exc:
            raise CredentialsError(f"{self._source}: failed parsing client key/certificate: {exc}") from exc
        self.cert_file = self._files.write("exec-client.crt", certificate)
        self.key_file = self._files.write("exec-client.key", key)
        with self._lock:
            self._context = context
        for configuration in list(self._configurations):
            configuration.cert_file, configuration.key_file = self.cert_file, self.key_file

    def _new_context(self, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
        """The one place a TLS context for the API server is made: the kubeconfig's CA (or the
        system's), its insecure-skip-tls-verify, and the client certificate given."""
        context = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
        if cert_file:
            context.load_cert_chain(cert_file, key_file)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for a connection to the API server opened now (with the current client
        certificate). Never changed once handed out: a new certificate comes in a new context.
        Raises ``OSError``/``ssl.SSLError`` for CA or certificate files that cannot be loaded."""
        context = self._context
        if context is None:
            with self._lock:
                if self._context is None:
                    self._context = self._new_context(self.cert_file, self.key_file)
                context = self._context
        return context

    def request_class(self, base: type[aiohttp.ClientRequest]) -> type[aiohttp.ClientRequest]:
        """``base`` made to present the stack's current TLS context (for an aiohttp session's
        ``request_class``): asked when the request looks for its connection, after the Authorization
        (and a renewed certificate) is settled, and part of its connection's pool key."""
        with self._lock:
            made = self._request_classes.get(base)
            if made is None:
                made = self._request_classes[base] = _presenting(base, self.ssl_context)
        return made

    # -- the consumers ----------------------------------------------------------------------------

    def configure(self, configuration: client.Configuration) -> None:
        """The client's configuration from the stack: host, TLS, proxy, and the token asked per request."""
        configuration.host = self.server
        configuration.ssl_ca_cert = self.ca_file
        configuration.ca_cert_data = self.ca_data
        configuration.cert_file, configuration.key_file = self.cert_file, self.key_file
        configuration.verify_ssl = not self.insecure
        configuration.tls_server_name = self.tls_server_name
        configuration.proxy = self.proxy_url
        setattr(configuration, "credentials", self)  # noqa: B010 (not a field of the generated class)
        self._configurations.add(configuration)
        if self.may_send_bearer:
            # The client asks for the key only when one is there, then calls the hook to refresh it.
            configuration.api_key = {"BearerToken": ""}
            configuration.refresh_api_key_hook = self._refresh_api_key  # type: ignore[assignment]  # typed None; an async hook is awaited

    async def _refresh_api_key(self, configuration: client.Configuration) -> None:
        value = await self.authorization()
        if value:
            configuration.api_key["BearerToken"] = value
        else:
            configuration.api_key.pop("BearerToken", None)

    async def middleware(
        self,
        request: aiohttp.ClientRequest,
        handler: Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]],
    ) -> aiohttp.ClientResponse:
        """For an aiohttp session: the Authorization (unless the request has one), the TLS server
        name, and a 401 reported, as client-go's exec and token-source round trippers do."""
        if not request.headers.get("Authorization"):
            # The generated API classes decide to send the key before asking for it: with no token
            # (a plugin answering only a certificate) they leave ``None`` here, which cannot be sent.
            request.headers.popall("Authorization", None)
            value = await self.authorization()
            if value:
                request.headers["Authorization"] = value
        if self.tls_server_name and request.server_hostname is None:
            request.server_hostname = self.tls_server_name
        response = await handler(request)
        if response.status == 401:
            self.unauthorized(request.headers.get("Authorization"))
        return response


def credentials_of(api: client.ApiClient) -> Credentials | None:
    """The stack a client was configured from (None for a client made some other way, as in tests)."""
    found = getattr(api.configuration, "credentials", None)
    return found if isinstance(found, Credentials) else None


def _presenting(
    base: type[aiohttp.ClientRequest], current: Callable[[], ssl.SSLContext]
) -> type[aiohttp.ClientRequest]:
    """A subclass of ``base`` whose default TLS context is ``current()`` at the time it is asked."""

    class Presenting(base):  # type: ignore[misc,valid-type]  # a base chosen at run time
        @property
        def ssl(self) -> ssl.SSLContext | bool | aiohttp.Fingerprint:
            chosen = super().ssl
            return current() if chosen is True else chosen

        @property
        def connection_key(self) -> ConnectionKey:
            key: ConnectionKey = super().connection_key
            return key._replace(ssl=self.ssl)  # connections are pooled per context

    return Presenting


def tls_of(api: client.ApiClient) -> Callable[[], ssl.SSLContext]:
    """Where ``api``'s connections get their TLS context: its stack's current one, or the client's
    own for a client made some other way (as in tests)."""
    stack = credentials_of(api)
    if stack is not None:
        return stack.ssl_context
    fixed: ssl.SSLContext = api.rest_client.ssl_context
    return lambda: fixed


def _from_kubeconfig(where: str, overrides: kubeconfig.Overrides = kubeconfig.NO_OVERRIDES) -> Credentials:
    selected = kubeconfig.read(where, overrides)
    cluster, user = selected.cluster, selected.user
    files = _PrivateFiles()
    prefix = f'invalid configuration in "{where}": '
    if "auth-provider" in user:
        name = (user.get("auth-provider") or {}).get("name")
        raise KubeconfigError(prefix + f'auth-provider "{name}" is not supported: use an exec credential plugin')
    ca_data = None
    if cluster.get("certificate-authority-data"):
        ca_data = _data(cluster["certificate-authority-data"], "certificate-authority-data").decode(errors="replace")
    cert_file, key_file = user.get("client-certificate"), user.get("client-key")
    if user.get("client-certificate-data"):
        cert_file = files.write("client.crt", _data(user["client-certificate-data"], "client-certificate-data"))
    if user.get("client-key-data"):
        key_file = files.write("client.key", _data(user["client-key-data"], "client-key-data"))
    if bool(cert_file) != bool(key_file):
        raise KubeconfigError(prefix + "client-certificate and client-key must both be set")
    proxy_url = cluster.get("proxy-url") or None
    if proxy_url and not str(proxy_url).startswith(("http://", "https://")):
        # aiohttp speaks to HTTP proxies only; client-go also takes socks5.
        raise KubeconfigError(prefix + f"proxy-url {proxy_url}: only http:// and https:// proxies are supported")
    source: _Source
    if "exec" in user:
        config = exec_plugin.ExecConfig.parse(user["exec"])
        source = _Exec(config, _exec_cluster(cluster, ca_data, selected.cluster_extensions))
    elif user.get("tokenFile"):
        source = _TokenFile(str(user["tokenFile"]), fallback=user.get("token") or None)
        if not user.get("token"):
            source.read()  # NewBearerAuthWithRefreshRoundTripper reads it once up front: a bad path fails now
    elif user.get("token"):
        source = _Static(f"Bearer {user['token']}")
    elif user.get("username") or user.get("password"):
        basic = base64.b64encode(f"{user.get('username') or ''}:{user.get('password') or ''}".encode()).decode()
        source = _Static(f"Basic {basic}")
    else:
        source = _Static(None)
    return Credentials(
        str(cluster["server"]),
        source,
        ca_file=cluster.get("certificate-authority") or None,
        ca_data=ca_data,
        insecure=cluster.get("insecure-skip-tls-verify") is True,
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy_url=proxy_url,
        cert_file=cert_file or None,
        key_file=key_file or None,
        namespace=selected.namespace,
        files=files,
    )


def _exec_cluster(cluster: dict[str, Any], ca_data: str | None, extensions: dict[str, Any]) -> dict[str, Any]:
    """clientauthentication's Cluster (rest.ConfigToExecCluster) for ``provideClusterInfo``."""
    info: dict[str, Any] = {"server": cluster["server"]}
    ca = ca_data
    if ca is None and cluster.get("certificate-authority"):
        try:
            with open(cluster["certificate-authority"], "rb") as file:
                ca = file.read(_MAX_TOKEN_BYTES * 16).decode(errors="replace")
        except OSError as exc:
            raise KubeconfigError(f"failed to load CA bundle for execProvider: {exc.strerror or exc}") from exc
    optional = {
        "tls-server-name": cluster.get("tls-server-name"),
        "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify") is True,
        "certificate-authority-data": base64.b64encode(ca.encode()).decode() if ca else None,
        "proxy-url": cluster.get("proxy-url"),
        "config": extensions.get("client.authentication.k8s.io/exec"),
    }
    info.update({k: v for k, v in optional.items() if v})
    return info


def _in_cluster() -> Credentials:
    """rest.InClusterConfig: the env's host and port, the ServiceAccount's token file and CA."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError(
            "invalid configuration: no configuration has been provided (no --kubeconfig, no $KUBECONFIG, "
            f"no {kubeconfig.DEFAULT_KUBECONFIG}) and not in a cluster: unable to load in-cluster configuration, "
            "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"
        )
    source = _TokenFile(SERVICE_ACCOUNT_TOKEN)
    source.read()
    host = f"[{host}]" if ":" in host else host  # net.JoinHostPort
    return Credentials(
        f"https://{host}:{port}",
        source,
        ca_file=SERVICE_ACCOUNT_CA if os.path.exists(SERVICE_ACCOUNT_CA) else None,
    )


_loaded: dict[tuple[str | None, kubeconfig.Overrides], Credentials] = {}
_loading = threading.Lock()


def load(kubeconfig_flag: str | None, overrides: kubeconfig.Overrides = kubeconfig.NO_OVERRIDES) -> Credentials:
    """The process's stack for this kubeconfig (the flag, $KUBECONFIG, ~/.kube/config, in-cluster)
    and ``overrides`` (kubectl's --context, --cluster, --user; in-cluster has no contexts), read
    the first time it is asked for and shared from then on."""
    where = kubeconfig.source(kubeconfig_flag)
    key = (where, overrides if where is not None else kubeconfig.NO_OVERRIDES)
    with _loading:
        found = _loaded.get(key)
        if found is None:
            found = _loaded[key] = _from_kubeconfig(where, overrides) if where is not None else _in_cluster()
        return found
