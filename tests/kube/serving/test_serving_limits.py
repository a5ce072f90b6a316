"""The secure port's bounds on time and connections (upstream's secure_serving.go), with deadlines shortened.

The port is driven only as the code before the limits could be: ``SecureServer`` as it was made then,
TLS connections from outside, and the bounds shortened on the module (``fast``; on code without them the
names are set and ignored). So every test here fails on that code for the behaviour, a connection still
open, not for a missing name.
"""

from __future__ import annotations

import socket
import ssl
import time

import pytest

from scheduler.kube.serving import server as server_module
from scheduler.kube.serving.server import SecureServer, serving_ssl_context
from tests.kube.serving.test_secure_server import Scheduling, _insecure, serve

HALF_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the head never ends
DEADLINE = 1.0  # every timeout, shortened
CAP = 8
SLACK = 2.0  # beyond a deadline, before a connection still open counts as kept


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("READ_HEADER_TIMEOUT", "IDLE_TIMEOUT", "TLS_HANDSHAKE_TIMEOUT"):
        monkeypatch.setattr(server_module, name, DEADLINE, raising=False)
    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", CAP, raising=False)


def _tls(port: int) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    return _insecure().wrap_socket(raw, server_hostname="localhost")


def _closed(conn: socket.socket, within: float) -> bool:
    """True once the server closes ``conn`` (EOF or reset) within ``within`` seconds."""
    conn.settimeout(max(within, 0.01))
    try:
        return conn.recv(1024) == b""
    except (ConnectionError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def test_half_sent_request_heads_are_closed_at_the_header_deadline() -> None:
    def body(server: SecureServer, _scheduling: Scheduling) -> list[bool]:
        conns = [_tls(server.port) for _ in range(6)]
        for conn in conns:
            conn.sendall(HALF_HEAD)
        started = time.monotonic()
        closed = [_closed(conn, DEADLINE + SLACK - (time.monotonic() - started)) for conn in conns]
        for conn in conns:
            conn.close()
        return closed

    closed, _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert all(closed), closed


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() -> None:
    def body(server: SecureServer, _scheduling: Scheduling) -> tuple[bytes, bool]:
        with _tls(server.port) as conn:
            conn.sendall(HALF_HEAD + b"\r\n")
            time.sleep(0.3)
            answer = conn.recv(4096)
            return answer, _closed(conn, DEADLINE + SLACK)

    (answer, closed), _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert answer.startswith(b"HTTP/1.1 200"), answer  # kept alive after the answer ...
    assert closed  # ... then closed once idle


def test_connections_beyond_the_cap_are_closed_at_once() -> None:
    def body(server: SecureServer, _scheduling: Scheduling) -> tuple[bool, bool]:
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(CAP)]
        time.sleep(0.2)
        extra = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        refused = _closed(extra, 0.5)  # before any TLS handshake
        for conn in held:
            conn.close()
        time.sleep(0.2)
        with _tls(server.port) as again:  # room again once they are gone
            again.sendall(HALF_HEAD + b"\r\n")
            served = again.recv(4096).startswith(b"HTTP/1.1 200")
        extra.close()
        return refused, served

    (refused, served), _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert refused and served


def test_a_silent_tls_handshake_is_closed_at_the_handshake_timeout() -> None:
    def body(server: SecureServer, _scheduling: Scheduling) -> bool:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:  # never says ClientHello
            return _closed(raw, DEADLINE + SLACK)

    closed, _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert closed
