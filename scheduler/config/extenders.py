"""The ``extenders:`` list of a KubeSchedulerConfiguration, parsed and validated as kube-scheduler does.

Field names and validation messages are upstream's (``apis/config/validation.validateExtenders``);
we also refuse what upstream would only discover at the first call (no urlPrefix, bad base64 in
tlsConfig data). Unknown fields were refused before this runs, by the strict decoding in ``scheme``.
No network: TLS material is loaded here once at start-up, so a bad file names its field.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scheduler.api.durations import nonnegative_seconds
from scheduler.api.names import label_key_errors

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "ExtenderConfig",
    "ExtenderConfigError",
    "ExtenderTLSConfig",
    "ManagedResource",
    "check_tls",
    "parse_extenders",
    "ssl_context",
]

DEFAULT_EXTENDER_TIMEOUT = 5.0  # seconds: upstream's DefaultExtenderTimeout, used when httpTimeout is 0/unset


class ExtenderConfigError(ValueError):
    """A bad ``extenders`` entry; the message starts with the field's path."""


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One ``Extender``; verbs are "" when the extender does not offer them."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""  # accepted and ignored: DefaultPreemption does not call extenders
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = ()
    ignorable: bool = False


def _str(obj: Mapping[str, Any], key: str, path: str) -> str:
    value = obj.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ExtenderConfigError(f"{path}.{key}: Invalid value: {value!r}: must be a string")
    return value


def _bool(obj: Mapping[str, Any], key: str, path: str) -> bool:
    value = obj.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ExtenderConfigError(f"{path}.{key}: Invalid value: {value!r}: must be a boolean")
    return value


def _bytes(obj: Mapping[str, Any], key: str, path: str) -> bytes:
    """A Go ``[]byte`` in JSON/YAML: base64 text."""
    text = _str(obj, key, path)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ExtenderConfigError(f"{path}.{key}: Invalid value: must be base64-encoded PEM data") from None


def _duration(value: object, path: str) -> float:
    """A ``metav1.Duration`` (Go's ``time.ParseDuration``: ``5s``, ``1m30s``, ``500ms``); unset or 0 means
    the 5 s default."""
    if value is None or value == 0:
        return DEFAULT_EXTENDER_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, str):
        raise ExtenderConfigError(f"{path}: Invalid value: {value!r}: must be a duration such as 5s")
    seconds = nonnegative_seconds(value)
    if seconds is None:  # a negative one too: Go's http.Client would time out at once
        raise ExtenderConfigError(f'{path}: Invalid value: "{value}": must be a duration such as 5s')
    return seconds or DEFAULT_EXTENDER_TIMEOUT


def _extended_resource_errors(name: str, path: str) -> list[str]:
    """``validateExtendedResourceName``: a qualified name outside ``*kubernetes.io/``, not ``requests.*``."""
    qualified = [str(e) for e in label_key_errors(name, path)]
    if qualified:
        return qualified
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or label_key_errors("requests." + name, path):
        return [f'{path}: Invalid value: "{name}": is an invalid extended resource name']
    return []


def _tls(value: object, path: str) -> ExtenderTLSConfig | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ExtenderConfigError(f"{path}: must be an object")
    return ExtenderTLSConfig(
        insecure=_bool(value, "insecure", path),
        server_name=_str(value, "serverName", path),
        cert_file=_str(value, "certFile", path),
        key_file=_str(value, "keyFile", path),
        ca_file=_str(value, "caFile", path),
        cert_data=_bytes(value, "certData", path),
        key_data=_bytes(value, "keyData", path),
        ca_data=_bytes(value, "caData", path),
    )


def _one(raw: object, path: str) -> ExtenderConfig:
    if not isinstance(raw, Mapping):
        raise ExtenderConfigError(f"{path}: must be an object")
    url = _str(raw, "urlPrefix", path)
    if not url:
        raise ExtenderConfigError(f"{path}.urlPrefix: Required value")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExtenderConfigError(f'{path}.urlPrefix: Invalid value: "{url}": must be an http:// or https:// URL')
    weight = raw.get("weight", 0)
    if weight is None:
        weight = 0
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise ExtenderConfigError(f"{path}.weight: Invalid value: {weight!r}: must be an integer")
    resources: list[ManagedResource] = []
    managed = raw.get("managedResources") or []
    if not isinstance(managed, list):
        raise ExtenderConfigError(f"{path}.managedResources: must be a list")
    for j, item in enumerate(managed):
        item_path = f"{path}.managedResources[{j}]"
        if not isinstance(item, Mapping):
            raise ExtenderConfigError(f"{item_path}: must be an object")
        resources.append(ManagedResource(_str(item, "name", item_path), _bool(item, "ignoredByScheduler", item_path)))
    return ExtenderConfig(
        url_prefix=url,
        filter_verb=_str(raw, "filterVerb", path),
        preempt_verb=_str(raw, "preemptVerb", path),
        prioritize_verb=_str(raw, "prioritizeVerb", path),
        bind_verb=_str(raw, "bindVerb", path),
        weight=weight,
        enable_https=_bool(raw, "enableHTTPS", path),
        tls_config=_tls(raw.get("tlsConfig"), f"{path}.tlsConfig"),
        http_timeout=_duration(raw.get("httpTimeout"), f"{path}.httpTimeout"),
        node_cache_capable=_bool(raw, "nodeCacheCapable", path),
        managed_resources=tuple(resources),
        ignorable=_bool(raw, "ignorable", path),
    )


def parse_extenders(value: object, path: str = "extenders") -> list[ExtenderConfig]:
    """Every entry, then upstream's checks; all errors found are reported together, one per line."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ExtenderConfigError(f"{path}: must be a list")
    extenders = [_one(raw, f"{path}[{i}]") for i, raw in enumerate(value)]
    errors: list[str] = []
    seen_resources: set[str] = set()
    for i, ext in enumerate(extenders):
        if ext.prioritize_verb and ext.weight <= 0:
            errors.append(f"{path}[{i}].weight: Invalid value: {ext.weight}: must have a positive weight applied to it")
        for j, resource in enumerate(ext.managed_resources):
            name_path = f"{path}[{i}].managedResources[{j}].name"
            errors.extend(_extended_resource_errors(resource.name, name_path))
            if resource.name in seen_resources:
                errors.append(
                    f'{name_path}: Invalid value: "{resource.name}": duplicate extender managed resource name'
                )
            seen_resources.add(resource.name)
    binders = sum(1 for ext in extenders if ext.bind_verb)
    if binders > 1:
        errors.append(
            f'{path}: Invalid value: "found {binders} extenders implementing bind": '
            "only one extender can implement bind"
        )
    if errors:
        raise ExtenderConfigError("\n".join(errors))
    return extenders


# client-go refuses this combination in ``TLSConfigFor`` (the scheduler does not start).
ERR_INSECURE_WITH_CA = "specifying a root certificates file with the insecure flag is not allowed"


def ssl_context(enable_https: bool, tls: ExtenderTLSConfig | None) -> ssl.SSLContext | bool | None:
    """``makeTransport`` + client-go's ``TLSConfigFor``: enableHTTPS without a CA skips verification;
    with caData/caFile only that CA is trusted (not the system roots); TLS 1.2 at least; a CA
    together with ``insecure`` is refused.

    None means aiohttp's defaults (system roots), as Go's default transport for an https URL.
    """
    tls = tls or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    if tls.insecure and has_ca:
        raise ExtenderConfigError(f"tlsConfig: Invalid value: {ERR_INSECURE_WITH_CA}")
    insecure = tls.insecure or (enable_https and not has_ca)
    has_cert = bool(tls.cert_file or tls.cert_data)
    if not (insecure or has_ca or has_cert or tls.server_name):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies peer and hostname; trusts nothing yet
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        if tls.ca_data:
            context.load_verify_locations(cadata=tls.ca_data.decode(errors="replace"))
        elif tls.ca_file:
            context.load_verify_locations(cafile=tls.ca_file)
        elif not insecure:
            context.load_default_certs()  # no CA given: the system roots, as Go's nil RootCAs
    except (OSError, ssl.SSLError, ValueError) as exc:
        field = "caData" if tls.ca_data else "caFile"
        raise ExtenderConfigError(f"tlsConfig.{field}: Invalid value: unable to load root certificates: {exc}") from exc
    try:
        if has_cert:
            _load_cert_chain(context, tls)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ExtenderConfigError(f"tlsConfig: Invalid value: cannot load certificates: {exc}") from exc
    return context


def check_tls(config: ExtenderConfig, path: str) -> None:
    """Load the TLS material once at start-up so a bad file or PEM stops it with the field's path."""
    try:
        ssl_context(config.enable_https, config.tls_config)
    except ExtenderConfigError as exc:
        raise ExtenderConfigError(f"{path}.{exc}") from exc


def _load_cert_chain(context: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    """certData/keyData take precedence over the files. ``ssl`` loads chains from paths only, so the
    PEM goes into anonymous memory files (``memfd_create``) read through ``/proc/self/fd``: nothing is
    written to disk, which a read-only root filesystem would refuse. Where memfd does not exist
    (not Linux: ``simulate`` on a laptop) a private temporary directory is used instead."""
    if not tls.cert_data and not tls.key_data:
        context.load_cert_chain(tls.cert_file, tls.key_file or None)
        return
    cert = tls.cert_data or Path(tls.cert_file).read_bytes()
    key = tls.key_data or (Path(tls.key_file).read_bytes() if tls.key_file else b"")
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        with _memory_file("cert.pem", cert) as cert_fd, _memory_file("key.pem", key) as key_fd:
            context.load_cert_chain(cert_fd, key_fd if key else None)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
        cert_path.write_bytes(cert)
        key_path.write_bytes(key)
        context.load_cert_chain(cert_path, key_path if key else None)


@contextlib.contextmanager
def _memory_file(name: str, data: bytes) -> Iterator[str]:
    """A path to ``data`` that lives in memory only, valid inside the block."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)
