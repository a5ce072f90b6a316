"""The secure port's connection cap is given back by every connection that dies before its TLS handshake ends.

With the shipped limits (256 connections, 32 s deadlines): clients that connect and close without a
word, that send half a ClientHello and go, and that reset (RST) must neither fill the cap nor keep
``/healthz`` from answering. A port scan or a load balancer's TCP check does exactly this. The timed-out
handshake is the one case that needs its deadline shortened to be seen in a test's time.

Red before the fix by behaviour: the count was released only in ``connection_lost``, which asyncio's TLS
protocol does not call for a connection lost during its handshake, so ``/healthz`` was refused for good
once 256 such clients had come and gone.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Callable

import pytest

from scheduler.kube.serving import server as server_module
from scheduler.kube.serving.server import SecureServer, serving_ssl_context
from tests.kube.serving.test_secure_server import Scheduling, get, serve

CLIENTS = 1000
WAVE = 100  # clients open at once: below the cap, so every probe between waves has a slot
SETTLE = 5.0  # how long the server may take to notice that a wave has gone
HANDSHAKE_DEADLINE = 5.0  # shortened from 32 s; still longer than accepting the whole cap takes here


def _client_hello() -> bytes:
    """The first flight of a real TLS client, made without a socket."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


HALF_HELLO = _client_hello()[:40]


def _silent(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _half_handshake(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn.sendall(HALF_HELLO)
    return conn


def _reset(conn: socket.socket) -> None:
    """Close with RST instead of FIN, as a scanner or a TCP health check does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _healthz(port: int) -> int:
    """``/healthz``'s status code, or 0 where the connection itself was refused or closed."""
    try:
        return get(port, "/healthz")[0]
    except OSError:  # urllib's URLError, a reset, a closed connection
        return 0


def _count(server: SecureServer, target: int, within: float = SETTLE) -> int:
    """The server's open-connection count once it reached ``target``, or after ``within`` seconds."""
    deadline = time.monotonic() + within
    while server.connections != target and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.connections


def _waves(
    server: SecureServer, open_one: Callable[[int], socket.socket], close_one: Callable[[socket.socket], None]
) -> list[int]:
    """``CLIENTS`` clients in waves of ``WAVE``; ``/healthz`` asked after each wave. Returns the answers' codes."""
    codes = []
    for _ in range(CLIENTS // WAVE):
        conns = [open_one(server.port) for _ in range(WAVE)]
        time.sleep(0.05)  # the server has accepted them and started their handshakes
        for conn in conns:
            close_one(conn)
        codes.append(_healthz(server.port))
    return codes


CLIENT_KINDS = {
    "silent-then-close": (_silent, socket.socket.close),
    "half-handshake-then-close": (_half_handshake, socket.socket.close),
    "silent-then-reset": (_silent, _reset),
    "half-handshake-then-reset": (_half_handshake, _reset),
}


@pytest.mark.parametrize("kind", CLIENT_KINDS)
def test_clients_gone_mid_handshake_give_their_slot_back(kind: str) -> None:
    open_one, close_one = CLIENT_KINDS[kind]

    def body(server: SecureServer, _scheduling: Scheduling) -> tuple[list[int], int, int]:
        codes = _waves(server, open_one, close_one)
        left = _count(server, 0)
        return codes, left, _healthz(server.port)

    (codes, left, last), _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert codes == [200] * (CLIENTS // WAVE)  # answered throughout, with the shipped cap of 256
    assert left == 0  # every slot given back
    assert last == 200


def test_timed_out_handshakes_give_their_slot_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "TLS_HANDSHAKE_TIMEOUT", HANDSHAKE_DEADLINE)
    cap = server_module.MAX_CONNECTIONS

    def body(server: SecureServer, _scheduling: Scheduling) -> tuple[int, int, int]:
        held = [_half_handshake(server.port) for _ in range(cap)]  # the whole cap, then silence
        full = _count(server, cap)
        left = _count(server, 0, within=HANDSHAKE_DEADLINE + SETTLE)  # the handshake deadline closes them all ...
        code = _healthz(server.port)  # ... and their slots serve again while the clients still hold them
        for conn in held:
            conn.close()
        return full, left, code

    (full, left, code), _ = serve(serving_ssl_context(None, None, "127.0.0.1"), body)
    assert full == cap
    assert left == 0
    assert code == 200
